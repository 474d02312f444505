"""The key never reaches the agent in the shapes a server may give an echo of it.

Beside tests/test_gateway_key_joins.py: a bad UTF-8 byte or a byte-order mark that one reader
skips and a client reads past; text a block, item or part starts with, then its deltas; an index
written as 0.0, or a stray one inside a delta; a call's arguments begun in the item that adds it;
Gemini text around a thought, beside a field no client reads, or of two candidates; a key written
with `\\u` escapes in a body this reader cannot parse (a bad byte, 5,000 levels deep); a key split
over two rate-limit headers or put in a content type. And two inputs whose cost grew with the
square or the power of what they hold, now bounded (each test's timeout is its bound).
Every server is a real one on 127.0.0.1; the agent reads as its client does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from engine.core.answers import Answer
from engine.gateway.echo import StreamEcho, masked_json
from engine.model.config import Secret
from engine.model.keymask import KeyMask
from tests.support import gateway_harness as harness
from tests.support.canned import Canned
from tests.support.gateway_harness import Operator
from tests.support.scripted import Scripted, sse_json
from tests.support.streams import HI, KEY, Numbered, ant, ant_block, ant_delta, ant_end, ant_start, ant_stop, anthropic_blocks, stream

A, B = KEY[:16], KEY[16:]
READ = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
ESCAPED = "".join(f"\\u{ord(c):04x}" for c in KEY)
"""The key written with `\\u` escapes, as JSON may write it."""


def chat(choices: list[dict[str, Any]]) -> bytes:
    return f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'created': 1, 'model': 'm', 'choices': choices})}\n\n".encode()


def choice(index: Any, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


def gemini(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


def per_choice(raw: str) -> dict[int, str]:
    got: dict[int, str] = {}
    for event in sse_json(raw):
        for c in event.get("choices") or []:
            got[int(c["index"])] = got.get(int(c["index"]), "") + ((c.get("delta") or {}).get("content") or "")
    return got


def through(tmp_path: Path, wire: str, script: list[bytes | None]) -> str:
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, wire, key=Secret(KEY)) as (_, server):
        return stream(server, wire)


def posted(tmp_path: Path, wire: str, path: str, replies: list[tuple[int, bytes, list[tuple[str, str]]]]) -> httpx.Response:
    with Canned(replies) as upstream, harness.gateway(upstream, tmp_path, wire, key=Secret(KEY)) as (_, server):
        return httpx.post(f"http://127.0.0.1:{server.port}{path}", json={"model": "m", "messages": HI}, timeout=30)


def test_a_bad_byte_in_a_line_hides_nothing_from_the_key_check(tmp_path: Path) -> None:
    """A byte UTF-8 cannot hold: the agent's client reads the line with it replaced, so the gateway does."""
    first = chat([choice(0, {"role": "assistant", "content": "Key: " + A})]).replace(b'"model": "m"', b'"model": "m\xff"')
    raw = through(tmp_path, "chat", [first, chat([choice(0, {"content": B + " end"}, "stop")]), b"data: [DONE]\n\n"])
    assert per_choice(raw) == {0: "Key: *** end"}, per_choice(raw)


def test_a_bad_byte_beside_an_escaped_key_hides_nothing_from_the_mask(tmp_path: Path) -> None:
    line = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m\xff","choices":[{"index":0,'
            b'"delta":{"role":"assistant","content":"Key: ' + ESCAPED.encode() + b'"},"finish_reason":null}]}\n\n')
    raw = through(tmp_path, "chat", [line, chat([choice(0, {"content": " end"}, "stop")]), b"data: [DONE]\n\n"])
    assert KEY not in json.dumps(per_choice(raw)) and per_choice(raw)[0].endswith(" end"), per_choice(raw)


def test_a_byte_order_mark_at_the_streams_start_hides_nothing(tmp_path: Path) -> None:
    script = [b"\xef\xbb\xbf" + chat([choice(0, {"role": "assistant", "content": "Key: " + A})]), chat([choice(0, {"content": B + " end"}, "stop")]), b"data: [DONE]\n\n"]
    raw = through(tmp_path, "chat", script)
    assert per_choice(raw) == {0: "Key: *** end"}, per_choice(raw)


def test_text_an_anthropic_block_starts_with_is_joined_with_its_deltas(tmp_path: Path) -> None:
    script = [ant_start(), ant({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Key: " + A}}),
              ant({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "zz"}}),
              ant_delta(0, "text", B + " end"), *ant_stop(0, 1), *ant_end()]
    blocks = anthropic_blocks(sse_json(through(tmp_path, "anthropic", script)))
    assert not any(KEY in b.get("text", "") for b in blocks) and blocks[0]["text"].startswith("Key: "), blocks


def test_an_anthropic_block_index_written_as_a_float_is_the_same_block(tmp_path: Path) -> None:
    script = [ant_start(), ant_block(0, "text"), ant_block(1, "text"), ant_delta(0, "text", "Key: " + A), ant_delta(1, "text", "zz"),
              ant({"type": "content_block_delta", "index": 0.0, "delta": {"type": "text_delta", "text": B + " end"}}), *ant_stop(0, 1), *ant_end()]
    raw = through(tmp_path, "anthropic", script)
    texts: dict[int, str] = {}
    for event in sse_json(raw):
        if event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta":
            texts[int(event["index"])] = texts.get(int(event["index"]), "") + event["delta"]["text"]
    assert not any(KEY in t for t in texts.values()), texts


@pytest.mark.parametrize("via", ["item", "part"])
def test_text_a_responses_item_or_part_starts_with_is_joined_with_its_deltas(tmp_path: Path, via: str) -> None:
    """The openai SDK's own accumulator (`client.responses.stream`) joins them."""
    event = Numbered()
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}
    start = {"type": "output_text", "text": "Key: " + A, "annotations": []}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": [start] if via == "item" else []}
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    script = [event({"type": "response.created", "response": response}), event({"type": "response.output_item.added", "output_index": 0, "item": message})]
    if via == "part":
        script.append(event({"type": "response.content_part.added", **at, "part": start}))
    script.append(event({"type": "response.output_text.delta", **at, "delta": B + " end"}))
    done = {**message, "status": "completed", "content": [{"type": "output_text", "text": "Key: *** end", "annotations": []}]}
    script += [event({"type": "response.output_item.done", "output_index": 0, "item": done}),
               event({"type": "response.completed", "response": {**response, "status": "completed", "output": [done]}})]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "responses", key=Secret(KEY)) as (_, server):
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=30)
        seen = []
        with client.responses.stream(model="m", input="hi") as events:
            seen = [e.snapshot for e in events if e.type == "response.output_text.delta"]
    assert seen and all(KEY not in s for s in seen), seen  # (the gateway's reader takes a message's text from its deltas: the rest, rebuilt)


@pytest.mark.parametrize("stray", ["in the delta", "a float"])
def test_a_chat_choice_is_one_however_its_index_is_written(tmp_path: Path, stray: str) -> None:
    """A second choice between; the first's rest with an `index` inside its delta, or its index as
    0.0: the openai SDK's accumulator joins it to the first choice."""
    rest = choice(0, {"content": B + " end", "index": 9}) if stray == "in the delta" else choice(0.0, {"content": B + " end"})
    script = [chat([choice(0, {"role": "assistant", "content": "Key: " + A})]), chat([choice(1, {"role": "assistant", "content": "zz"})]),
              chat([rest]), chat([choice(0, {}, "stop"), choice(1, {}, "stop")]), b"data: [DONE]\n\n"]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "chat", key=Secret(KEY)) as (_, server):
        raw = stream(server, "chat")
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=30)
        with client.chat.completions.stream(model="m", messages=HI) as events:  # type: ignore[arg-type]
            for _ in events:
                pass
            final = events.get_final_completion()
    assert not any(KEY in t for t in per_choice(raw).values()), per_choice(raw)
    assert not any(KEY in (c.message.content or "") for c in final.choices), final.choices


def test_a_calls_arguments_begun_in_the_item_that_adds_it_are_joined_with_their_deltas(tmp_path: Path) -> None:
    event = Numbered()
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "call_1", "name": "read_file", "arguments": '{"path": "' + A}
    done = {**item, "status": "completed", "arguments": '{"path": "x"}'}
    script = [event({"type": "response.created", "response": response}), event({"type": "response.output_item.added", "output_index": 0, "item": item}),
              event({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": B + '"}'}),
              event({"type": "response.output_item.done", "output_index": 0, "item": done}),
              event({"type": "response.completed", "response": {**response, "status": "completed", "output": [done]}})]
    body = {"model": "m", "input": HI, "stream": True, "tools": [{"type": "function", "name": "read_file", "description": "r", "parameters": READ}]}
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "responses", key=Secret(KEY)) as (_, server):  # read_* calls allowed
        raw = httpx.post(f"http://127.0.0.1:{server.port}/v1/responses", json=body, timeout=30).text
    arguments: dict[int, str] = {}
    for e in sse_json(raw):
        if e.get("type") in ("response.output_item.added", "response.output_item.done"):
            arguments[e["output_index"]] = e["item"].get("arguments", "")
        elif e.get("type") == "response.function_call_arguments.delta":
            arguments[e["output_index"]] += e["delta"]
    assert arguments and not any(KEY in a for a in arguments.values()) and KEY not in raw, arguments


def test_a_chat_calls_arguments_are_one_however_its_function_is_written(tmp_path: Path) -> None:
    """Call 0's arguments, call 1's, then call 0's rest with a stray `index` in its function."""
    def call(index: int, arguments: str, **named: Any) -> dict[str, Any]:
        return {"index": index, **named, "function": {"arguments": arguments}}
    script = [chat([choice(0, {"role": "assistant", "tool_calls": [call(0, '{"path": "' + A, id="call_a", type="function") | {"function": {"name": "read_file", "arguments": '{"path": "' + A}}]})]),
              chat([choice(0, {"tool_calls": [call(1, '{"path": "notes.txt"}', id="call_b", type="function") | {"function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}]})]),
              chat([choice(0, {"tool_calls": [{"index": 0, "function": {"arguments": B + '"}', "index": 5}}]})]),
              chat([choice(0, {}, "tool_calls")]), b"data: [DONE]\n\n"]
    raw = through(tmp_path, "chat", script)
    arguments: dict[int, str] = {}
    for e in sse_json(raw):
        for c in e.get("choices") or []:
            for t in (c.get("delta") or {}).get("tool_calls") or []:
                arguments[t["index"]] = arguments.get(t["index"], "") + (t.get("function") or {}).get("arguments", "")
    assert arguments and not any(KEY in a for a in arguments.values()), arguments


@pytest.mark.parametrize("shape", ["a field no client reads", "two candidates"])
def test_geminis_text_is_joined_per_candidate_and_around_its_thoughts(tmp_path: Path, shape: str) -> None:
    """As google-genai's `.text` reads it: a candidate's parts without its thoughts."""
    def candidate(index: int, parts: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
        return {"index": index, "content": {"role": "model", "parts": parts}, **more}
    rest = candidate(0, [{"text": "t", "thought": True}, {"text": B + " end"}])
    between = {"extra": {"text": "zz"}, "candidates": [rest]} if shape == "a field no client reads" else {"candidates": [candidate(1, [{"text": "zz"}]), rest]}
    script = [gemini({"candidates": [candidate(0, [{"text": "Key: " + A}])]}), gemini(between), gemini({"candidates": [candidate(0, [{"text": "."}], finishReason="STOP")]})]
    raw = through(tmp_path, "gemini", script)
    texts: dict[int, str] = {}
    for e in sse_json(raw):
        for c in e.get("candidates") or []:
            texts[c.get("index", 0)] = texts.get(c.get("index", 0), "") + "".join(p.get("text", "") for p in c["content"]["parts"] if not p.get("thought"))
    assert not any(KEY in t for t in texts.values()) and texts[0].startswith("Key: "), texts


@pytest.mark.parametrize("fault", ["a bad byte", "5,000 levels deep"])
def test_an_escaped_key_in_a_body_this_reader_cannot_parse_is_masked(tmp_path: Path, fault: str) -> None:
    """The agent's client may read what this reader cannot (a bad byte replaced, a deeper parser):
    the escapes are written out and the key masked in that text."""
    after = b'", "type": "x\xff"}}' if fault == "a bad byte" else b'", "deep": ' + b"[" * 5000 + b"]" * 5000 + b"}}"
    body = b'{"error": {"message": "bad key ' + ESCAPED.encode() + after
    response = posted(tmp_path, "chat", "/v1/chat/completions", [(401, body, [("content-type", "application/json")])])
    text = response.content.decode("utf-8", "replace")
    assert response.status_code == 401 and KEY not in text and ESCAPED not in text and "bad key ***" in text, text[:200]
    client_reads = json.loads(masked_json(KeyMask(KEY), body).decode("utf-8", "replace")) if fault == "a bad byte" else None
    assert client_reads is None or client_reads["error"]["message"] == "bad key ***"


def test_a_key_split_over_two_rate_limit_headers_is_masked(tmp_path: Path) -> None:
    headers = [("content-type", "application/json"), ("x-ratelimit-a", KEY[:16]), ("x-ratelimit-b", KEY[16:])]
    response = posted(tmp_path, "chat", "/v1/chat/completions", [(429, b'{"error": {"message": "slow down"}}', headers)])
    assert response.status_code == 429 and KEY[16:] not in str(response.headers) and response.headers["x-ratelimit-a"] == "***", response.headers


def test_a_key_in_a_passed_routes_content_type_is_masked(tmp_path: Path) -> None:
    response = posted(tmp_path, "anthropic", "/v1/messages/count_tokens", [(200, b'{"input_tokens": 3}', [("content-type", "application/json; note=" + KEY)])])
    assert response.json() == {"input_tokens": 3} and KEY not in str(response.headers), response.headers


@pytest.mark.timeout(20)
def test_a_text_that_nearly_spells_the_key_with_gaps_costs_the_mask_little() -> None:
    """Its first 31 characters a space apart, then a wrong one, in a text with a backslash: each
    gap has one reading (it had two: the pattern tried 2 to the 31 of them, hours)."""
    mask = KeyMask(KEY)
    text = "a\\b " + " ".join(KEY[:31]) + " X"
    assert mask(text) == text and mask("a\\b " + " ".join(KEY) + " Y") == "a\\b *** Y"


@pytest.mark.timeout(20)
def test_joining_every_two_text_fields_costs_what_they_hold() -> None:
    """20,000 text fields of a whole reply: only the pairs whose join could make the key are joined
    (every pair was: 400 million joins)."""
    message = {"role": "assistant", "content": "hi", **{f"k{i}": {"content": str(i)} for i in range(20_000)}}
    echo = StreamEcho(KeyMask(KEY))
    echo.line(b"data: " + json.dumps({"choices": [{"index": 0, "message": message}]}).encode())
    assert not echo.carries_key
    message["k7"] = {"content": "x " + A}
    message["k8"] = {"content": B + " y"}
    echo = StreamEcho(KeyMask(KEY))
    echo.line(b"data: " + json.dumps({"choices": [{"index": 0, "message": message}]}).encode())
    assert echo.carries_key


def test_an_index_that_is_no_number_a_client_reads_is_kept_as_it_is(tmp_path: Path) -> None:
    """"²" passes `str.isdigit` and is no number `int` reads: the stream goes on (it was a 502 with a key set)."""
    script = [chat([choice("\u00b2", {"role": "assistant", "content": "Hi"})]), chat([choice(0, {"content": " there"}, "stop")]), b"data: [DONE]\n\n"]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "chat", key=Secret(KEY)) as (_, server):
        response = httpx.post(f"http://127.0.0.1:{server.port}/v1/chat/completions", json={"model": "m", "messages": HI, "stream": True}, timeout=30)
    assert response.status_code == 200 and "there" in response.text, response.text[:200]


def test_a_body_this_reader_cannot_parse_goes_as_it_came_without_a_key() -> None:
    mask = KeyMask(KEY)
    for body in (b"<html>caf\\u00e9</html>", b'{"a": "\\u00e9", "x": "\xff"', b'{"deep": ' + b"[" * 3000 + b'"\\u0041"' + b"]" * 3000 + b"}"):
        assert masked_json(mask, body) == body


def test_a_gemini_thought_whose_keys_start_went_early_goes_on_from_the_mask_once(tmp_path: Path) -> None:
    """The thought ends with the key's first 3 characters and goes; the key's rest follows in it:
    the agent's thoughts read "Here: sk-*** is the key.", the thought not sent again."""
    script = [gemini({"candidates": [{"content": {"role": "model", "parts": [{"text": "Here: " + KEY[:3], "thought": True}]}, "index": 0}]}),
              gemini({"candidates": [{"content": {"role": "model", "parts": [{"text": KEY[3:] + " is the key.", "thought": True}]}, "index": 0}]}),
              gemini({"candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}, "index": 0, "finishReason": "STOP"}]})]
    raw = through(tmp_path, "gemini", script)
    parts = [p for e in sse_json(raw) for c in e["candidates"] for p in c["content"]["parts"]]
    assert "".join(p["text"] for p in parts if p.get("thought")) == "Here: " + KEY[:3] + "*** is the key.", parts


@pytest.mark.timeout(20)
def test_a_long_line_in_many_chunks_is_split_once() -> None:
    """A 10 MB line in 16 KB chunks: the line ends are looked for in a chunk that has one (each
    chunk made the whole line read again: minutes)."""
    from engine.gateway.client import UpstreamClient

    class Chunked:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def iter_bytes(self) -> Any:
            return (self.data[i : i + 16384] for i in range(0, len(self.data), 16384))

    client = UpstreamClient(timeout=60)
    line = b"data: " + b"x" * 10_000_000 + b"\n"
    assert list(client.lines(Chunked(line + b"\n"))) == [line, b"\n"]  # type: ignore[arg-type]


# -- a stream not shaped as the API's servers write it: with a key, passed on only rebuilt --------


def _sdk_blocks(events: list[Any]) -> list[dict[str, Any]]:
    """The blocks as the Anthropic SDKs build them: a start added at the end whatever its index
    (Python: "TODO: check index"), a delta to `content[index]` (TypeScript's `.at`: -1 the last)."""
    content: list[dict[str, Any]] = []
    for event in events:
        if event.get("type") == "content_block_start":
            content.append(dict(event["content_block"]))
        elif event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta":
            content[event["index"]]["text"] = content[event["index"]].get("text", "") + event["delta"]["text"]
    return content


def _start(index: int, text: str) -> bytes:
    return ant({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": text}})


@pytest.mark.parametrize("order", ["started out of order", "a negative index"])
def test_anthropic_blocks_are_joined_in_the_order_a_client_builds_them(tmp_path: Path, order: str) -> None:
    if order == "started out of order":
        script = [ant_start(), _start(1, KEY[:12]), _start(0, "w"), ant_delta(0, "text", KEY[12:]), *ant_stop(0, 1), *ant_end()]
    else:
        script = [ant_start(), _start(0, "x"), _start(1, KEY[:12]), ant_delta(0, "text", "w"), ant_delta(-1, "text", KEY[12:]), *ant_stop(0, 1), *ant_end()]
    raw = through(tmp_path, "anthropic", script)
    assert KEY not in raw and not any(KEY in b.get("text", "") for b in _sdk_blocks(sse_json(raw))), raw[-400:]


def test_a_responses_part_added_out_of_order_is_joined_as_the_sdk_builds_it(tmp_path: Path) -> None:
    """The openai SDK adds a content part at the end whatever its `content_index`."""
    event = Numbered()
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    at = {"item_id": "msg_1", "output_index": 0}
    done = {**message, "status": "completed", "content": [{"type": "output_text", "text": "w", "annotations": []}]}
    script = [event({"type": "response.created", "response": response}), event({"type": "response.output_item.added", "output_index": 0, "item": message}),
              event({"type": "response.content_part.added", **at, "content_index": 1, "part": {"type": "output_text", "text": KEY[:12], "annotations": []}}),
              event({"type": "response.content_part.added", **at, "content_index": 0, "part": {"type": "output_text", "text": "w", "annotations": []}}),
              event({"type": "response.output_text.delta", **at, "content_index": 0, "delta": KEY[12:]}),
              event({"type": "response.output_item.done", "output_index": 0, "item": done}),
              event({"type": "response.completed", "response": {**response, "status": "completed", "output": [done]}})]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "responses", key=Secret(KEY)) as (_, server):
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=30)
        with client.responses.stream(model="m", input="hi") as events:
            seen = [e.snapshot for e in events if e.type == "response.output_text.delta"]
    assert seen and all(KEY not in s for s in seen), seen


@pytest.mark.parametrize("wire", ["chat", "gemini"])
def test_a_second_choice_or_candidate_is_never_joined_with_the_first_by_position(tmp_path: Path, wire: str) -> None:
    """A client reading `choices[0]` (`candidates[0]`: Gemini CLI, @google/genai) whatever its index:
    the key's start in choice 0, then choice 1 first in a chunk and holding its rest."""
    if wire == "chat":
        script = [chat([choice(0, {"role": "assistant", "content": "Here: " + KEY[:12]})]), chat([choice(0, {}), choice(1, {"content": "zz"})]),
                  chat([choice(1, {"content": KEY[12:] + " end"})]), chat([choice(0, {}, "stop")]), b"data: [DONE]\n\n"]
    else:
        def candidate(index: int, texts: list[str], finish: bool = False) -> dict[str, Any]:
            return {"content": {"role": "model", "parts": [{"text": t} for t in texts]}, "index": index, **({"finishReason": "STOP"} if finish else {})}
        script = [gemini({"candidates": [candidate(0, ["Here: " + KEY[:12]])]}), gemini({"candidates": [candidate(0, []), candidate(1, ["zz"])]}),
                  gemini({"candidates": [candidate(1, [KEY[12:] + " end"], finish=True)]})]
    raw = through(tmp_path, wire, script)
    listed = "choices" if wire == "chat" else "candidates"
    first = [(e.get(listed) or [{}])[0] for e in sse_json(raw)]
    text = "".join((c.get("delta") or {}).get("content") or "" for c in first) if wire == "chat" else \
        "".join(p.get("text", "") for c in first for p in (c.get("content") or {}).get("parts", []) if not p.get("thought"))
    assert KEY not in raw and KEY not in text, text


def test_a_reply_asked_again_never_completes_a_summary_that_went_early_behind_a_reasoning_text(tmp_path: Path) -> None:
    """The first reply's reasoning summary ends with the key's first characters and goes early;
    every call refused, the reply asked again has a reasoning item whose text (which a client
    showing summaries skips) comes before its summary holding the key's rest."""
    def events(items: list[dict[str, Any]]) -> list[bytes]:
        return [f"event: {d['type']}\ndata: {json.dumps({**d, 'sequence_number': n})}\n\n".encode() for n, d in enumerate(items)]
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    where = {"item_id": "rs_1", "output_index": 0, "summary_index": 0}
    call = {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "delete_file", "arguments": '{"path": "notes.txt"}'}
    first = events([{"type": "response.created", "response": response},
                    {"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}},
                    {"type": "response.reasoning_summary_part.added", **where, "part": {"type": "summary_text", "text": ""}},
                    {"type": "response.reasoning_summary_text.delta", **where, "delta": "Here: " + KEY[:3]},
                    {"type": "response.output_item.added", "output_index": 1, "item": {**call, "arguments": ""}},
                    {"type": "response.output_item.done", "output_index": 1, "item": call},
                    {"type": "response.completed", "response": {**response, "status": "completed", "output": [
                        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Here: " + KEY[:3]}]}, call]}}])
    reasoning = {"id": "rs_2", "type": "reasoning", "content": [{"type": "reasoning_text", "text": "zz"}], "summary": [{"type": "summary_text", "text": KEY[3:] + " is the rest."}]}
    message = {"id": "msg_2", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Left it.", "annotations": []}]}
    again = events([{"type": "response.created", "response": {**response, "id": "resp_2"}},
                    {"type": "response.output_item.added", "output_index": 0, "item": reasoning}, {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
                    {"type": "response.output_item.added", "output_index": 1, "item": {**message, "content": []}},
                    {"type": "response.output_text.delta", "item_id": "msg_2", "output_index": 1, "content_index": 0, "delta": "Left it."},
                    {"type": "response.output_item.done", "output_index": 1, "item": message},
                    {"type": "response.completed", "response": {**response, "id": "resp_2", "status": "completed", "output": [reasoning, message]}}])
    with Scripted([first, again]) as upstream, harness.gateway(upstream, tmp_path, "responses", rules=[], key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep them")))
        raw = stream(server, "responses")
        operator.join()
    summaries = "".join(e["delta"] for e in sse_json(raw) if e.get("type") == "response.reasoning_summary_text.delta")
    summaries += "".join(s["text"] for e in sse_json(raw) if e.get("type") == "response.output_item.done" and e["item"].get("type") == "reasoning"
                         for s in e["item"].get("summary") or [])
    assert len(upstream.requests) == 2 and KEY not in summaries and "Left it." in raw, summaries


@pytest.mark.parametrize("index", [[0], {"a": 1}], ids=["a list", "an object"])
def test_an_index_a_list_or_an_object_is_answered_not_raised(tmp_path: Path, index: Any) -> None:
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": index, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    response = posted(tmp_path, "chat", "/v1/chat/completions", [(200, json.dumps(body).encode(), [("content-type", "application/json")])])
    assert response.status_code < 500, (response.status_code, response.text)
    raw = through(tmp_path, "chat", [chat([choice(index, {"role": "assistant", "content": "hi"}, "stop")]), b"data: [DONE]\n\n"])
    assert "policy raised" not in raw and "Traceback" not in raw, raw


def test_a_rebuilt_response_keeps_an_output_item_without_a_type(tmp_path: Path) -> None:
    """A key spelled across two deltas makes the response rebuilt; an item without a `type` in it
    was a 500 (`item["type"]`)."""
    event = Numbered()
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    done = {**message, "status": "completed", "content": [{"type": "output_text", "text": "Here: " + KEY, "annotations": []}]}
    script = [event({"type": "response.created", "response": response}), event({"type": "response.output_item.added", "output_index": 0, "item": message}),
              event({"type": "response.output_text.delta", **at, "delta": "Here: " + KEY[:12]}), event({"type": "response.output_text.delta", **at, "delta": KEY[12:]}),
              event({"type": "response.output_item.done", "output_index": 0, "item": done}),
              event({"type": "response.completed", "response": {**response, "status": "completed", "output": [{"id": "odd"}, done]}})]
    raw = through(tmp_path, "responses", script)
    assert KEY not in raw and "response.completed" in raw, raw[-400:]


@pytest.mark.parametrize("event", [
    {"type": "content_block_start", "index": 3_000_000, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": -1, "delta": {"type": "text_delta", "text": "x"}},
    {"type": "content_block_stop", "index": 7},
], ids=["a block far ahead", "a negative block", "a stop of no block"])
def test_an_anthropic_event_for_a_block_not_in_order_is_refused_at_once(event: dict[str, Any]) -> None:
    """A block 3,000,000 ahead grew the message by as many blocks (688 MB for 10,000,000)."""
    from engine.wires.anthropic import StreamReader
    from engine.wires.neutral import WireError

    reader = StreamReader(lambda _: None)
    reader.feed("data: " + json.dumps({"type": "message_start", "message": {"id": "m", "content": []}}))
    with pytest.raises(WireError):
        reader.feed("data: " + json.dumps(event))
    assert reader.reply.message is not None and reader.reply.message["content"] == []


def test_a_chat_call_at_an_index_a_client_takes_as_a_place_is_never_joined_apart(tmp_path: Path) -> None:
    """The openai SDK adds a call's pieces at `tool_calls[index]` of its list: -2 is the first call
    of three. The key's start as call 0's id, a call between, its rest at index -2."""
    def call(index: int, ident: str) -> dict[str, Any]:
        return {"index": index, "id": ident, "type": "function", "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}
    script = [chat([choice(0, {"role": "assistant", "tool_calls": [call(0, KEY[:15])]})]), chat([choice(0, {"tool_calls": [call(1, "zz")]})]),
              chat([choice(0, {"tool_calls": [call(-2, KEY[15:])]})]), chat([choice(0, {}, "tool_calls")]), b"data: [DONE]\n\n"]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "chat", key=Secret(KEY)) as (_, server):  # read_* calls allowed
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=30)
        with client.chat.completions.stream(model="m", messages=HI, tools=harness.TOOLS) as events:  # type: ignore[arg-type]
            for _ in events:
                pass
            final = events.get_final_completion()
    ids = [c.id for c in final.choices[0].message.tool_calls or []]
    assert ids and not any(KEY in i for i in ids), ids


def test_anthropic_blocks_whose_deltas_interleave_are_never_passed_on_as_they_came(tmp_path: Path) -> None:
    """Block 1's delta before block 0's: a client shows the blocks in order (`get_final_text`)."""
    script = [ant_start(), ant_block(0, "text"), ant_block(1, "text"), ant_delta(1, "text", KEY[15:] + " is the rest."),
              ant_delta(0, "text", "Here: " + KEY[:15]), *ant_stop(0, 1), *ant_end()]
    blocks = anthropic_blocks(sse_json(through(tmp_path, "anthropic", script)))
    assert KEY not in "".join(b.get("text", "") for b in blocks), blocks


def test_a_responses_stream_whose_items_interleave_and_whose_end_has_no_output_is_rebuilt(tmp_path: Path) -> None:
    """Item 1's text and end before item 0's, and a `response.completed` without its output: the
    openai SDK builds the output from the items, by index (`get_final_response().output_text`)."""
    event = Numbered()
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}

    def message(n: int, text: str | None = None) -> dict[str, Any]:
        m = {"id": f"msg_{n}", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        return m if text is None else {**m, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    part = {"type": "output_text", "text": "", "annotations": []}
    first, second = "Here: " + KEY[:15], KEY[15:] + " is the rest."
    ended = {k: v for k, v in response.items() if k != "output"} | {"status": "completed"}
    script = [event({"type": "response.created", "response": response})]
    for n in (0, 1):
        script += [event({"type": "response.output_item.added", "output_index": n, "item": message(n)}),
                   event({"type": "response.content_part.added", "item_id": f"msg_{n}", "output_index": n, "content_index": 0, "part": part})]
    for n, text in ((1, second), (0, first)):
        script += [event({"type": "response.output_text.delta", "item_id": f"msg_{n}", "output_index": n, "content_index": 0, "delta": text}),
                   event({"type": "response.output_item.done", "output_index": n, "item": message(n, text)})]
    script.append(event({"type": "response.completed", "response": ended}))
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "responses", key=Secret(KEY)) as (_, server):
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=30)
        with client.responses.stream(model="m", input="hi") as events:
            for _ in events:
                pass
            final = events.get_final_response()
    assert KEY not in final.output_text, final.output_text


@pytest.mark.parametrize("arguments", [7, ["x"]], ids=["a number", "a list"])
def test_a_calls_arguments_of_the_wrong_kind_are_read_as_their_json(tmp_path: Path, arguments: Any) -> None:
    """As a chat stream's delta, a chat reply's call, a Responses item: they raised inside the policy."""
    from engine.wires import chat as chat_wire
    from engine.wires import responses

    reader = chat_wire.StreamReader(lambda _: None)
    reader.feed("data: " + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": 5, "arguments": arguments}}]}}]}))
    assert reader.reply.tool_calls[0].arguments == json.dumps(arguments) and reader.reply.tool_calls[0].name == "5"
    whole = chat_wire.read_whole({"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read_file", "arguments": arguments}}]}}]})
    assert whole.tool_calls[0].arguments == json.dumps(arguments)
    item = responses.read_whole({"output": [{"type": "function_call", "call_id": "c", "name": "read_file", "arguments": arguments}]})
    assert item.tool_calls[0].arguments == json.dumps(arguments)
