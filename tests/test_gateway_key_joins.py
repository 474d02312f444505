"""The upstream's key never reaches the agent however its client joins a stream's pieces.

An upstream that echoes the key can spell it across the pieces of a stream in any order a client
joins them: per Anthropic block, per Responses output item or summary, Gemini's text without its
thoughts, the thinking of a reply and of the one asked again after a refusal, a line hidden after a
bare CR (which an event-stream client reads as a line end), an escaped gap begun by a backslash at
the end of what went early. Each attack here streams from a real server on 127.0.0.1 through a real
`GatewayServer` holding the key, and reads the result as the agent's client does
(`tests.support.scripted.sse_events`): the agent never has the key, however its pieces are joined,
and reads the rest of a reply once, not again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from engine.core.answers import Answer
from engine.gateway.client import split_lines
from engine.model.config import Secret
from engine.model.keymask import KeyMask
from tests.support import gateway_harness as harness
from tests.support.gateway_harness import Operator
from tests.support.scripted import GATE, Scripted, sse_json
from tests.support.streams import CALLED, HI, KEY, Numbered, ant, ant_block, ant_delta, ant_end, ant_start, ant_stop, anthropic_blocks, arrival, chat, gem, gemini_parts, stream

A, B = KEY[:15], KEY[15:]

def test_a_backslash_after_a_keys_start_holds_it_back_as_the_start_of_an_escaped_gap(tmp_path: Path) -> None:
    """`\\n` written out is a gap the mask takes inside a key: a text ending with the key's start
    and a backslash waits for what follows, so none of the key goes early."""
    script = [chat({"role": "assistant", "content": "Here: " + KEY[:12] + "\\"}), chat({"content": "n" + KEY[12:] + " is the key."}, "stop"), b"data: [DONE]\n\n"]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "chat", key=Secret(KEY)) as (_, server):
        raw = stream(server, "chat")
    text = "".join((c.get("delta") or {}).get("content") or "" for e in sse_json(raw) for c in e.get("choices") or [])
    assert text == "Here: *** is the key.", text
    assert KeyMask(KEY).tail_state("Here: " + KEY[:12] + "\\")[1] and not KeyMask(KEY).tail_state("a\\")[1]


def test_a_thinking_delta_to_an_earlier_block_after_text_is_never_sent_unmasked(tmp_path: Path) -> None:
    """Text block 1 ends with the key's first characters; its rest comes in thinking block 0, which
    the message holds before the text. Block 1 started before block 0 stopped: not as the API's
    servers write a stream, so nothing of it goes as it came, and the agent's stream, read in
    arrival order or by block, never spells the key."""
    script = [ant_start(), ant_block(0, "thinking"), ant_block(1, "text"), ant_delta(1, "text", "Here: " + KEY[:3]),
              ant_delta(0, "thinking", KEY[3:] + " is the key."), ant_delta(0, "signature", "sig"), *ant_stop(0, 1), *ant_end()]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "anthropic", key=Secret(KEY)) as (_, server):
        raw = stream(server, "anthropic")
    events = sse_json(raw)
    assert KEY not in arrival(events) and all(KEY not in json.dumps(b) for b in anthropic_blocks(events)), arrival(events)


def test_a_thought_merged_into_an_earlier_thought_after_text_went_early_is_never_sent_unmasked(tmp_path: Path) -> None:
    script = [gem([{"text": "", "thought": True}, {"text": "Here: " + KEY[:3]}]), GATE,
              gem([{"text": KEY[3:] + " is the key.", "thought": True}]), gem([{"text": " ok"}], finish=True)]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "gemini", key=Secret(KEY)) as (_, server):
        raw = stream(server, "gemini", upstream, KEY[:3])
    assert upstream.went_on == [True] and KEY not in arrival(sse_json(raw)), arrival(sse_json(raw))


def test_the_rest_of_a_reply_whose_key_went_in_part_follows_it_once(tmp_path: Path) -> None:
    """Text block 0 ends with the key's first characters, goes early and stops; the key's rest
    begins thinking block 1. The message, masked across its blocks, has "Here: ***" where the agent
    has "Here: sk-": the agent's block stays as it has it, the thinking follows with the key's rest
    masked, and no block comes twice."""
    script = [ant_start(), ant_block(0, "text"), ant_delta(0, "text", "Here: " + KEY[:3]), *ant_stop(0), GATE,
              ant_block(1, "thinking"), ant_delta(1, "thinking", KEY[3:] + " is the key."), ant_delta(1, "signature", "sig"), *ant_stop(1), *ant_end()]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "anthropic", key=Secret(KEY)) as (_, server):
        raw = stream(server, "anthropic", upstream, KEY[:3])
    blocks = anthropic_blocks(sse_json(raw))
    assert upstream.went_on == [True] and KEY not in arrival(sse_json(raw))
    assert [(b["type"], b.get("text", b.get("thinking"))) for b in blocks] == [("text", "Here: " + KEY[:3]), ("thinking", " is the key.")], blocks


def test_a_block_whose_key_went_in_part_goes_on_from_the_mask(tmp_path: Path) -> None:
    """The same with the key's rest in the same text block, still open: the block goes on from the
    mask (the agent reads "Here: sk-*** is the key."), once."""
    script = [ant_start(), ant_block(0, "text"), ant_delta(0, "text", "Here: " + KEY[:3]), GATE,
              ant_delta(0, "text", KEY[3:] + " is the key."), *ant_stop(0), *ant_end()]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "anthropic", key=Secret(KEY)) as (_, server):
        raw = stream(server, "anthropic", upstream, KEY[:3])
    blocks = anthropic_blocks(sse_json(raw))
    assert upstream.went_on == [True] and [b.get("text") for b in blocks] == ["Here: " + KEY[:3] + "*** is the key."], blocks


@pytest.mark.parametrize("wire", ["anthropic", "gemini", "responses"])
def test_the_thinking_of_a_reply_asked_again_never_completes_a_key_begun_in_the_thinking_that_went(tmp_path: Path, wire: str) -> None:
    """The first reply's thinking ends with the key's first characters and goes early; every call
    refused, the reply asked again has its text first, then thinking that begins with the key's rest:
    a client joining all the thinking it reads never reads the key."""
    rest = KEY[3:] + " is the rest."
    if wire == "anthropic":
        first = [ant_start("msg_1"), ant_block(0, "thinking"), ant_delta(0, "thinking", "Here: " + KEY[:3]), ant_delta(0, "signature", "s1"), *ant_stop(0),
                 ant_block(1, "text"), ant_delta(1, "text", "Removing it."), *ant_stop(1),
                 ant({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "delete_file", "input": {}}}),
                 ant({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": json.dumps(CALLED)}}), *ant_stop(2), *ant_end("tool_use")]
        again = [ant_start("msg_2"), ant_block(0, "text"), ant_delta(0, "text", "Left it."), *ant_stop(0),
                 ant_block(1, "thinking"), ant_delta(1, "thinking", rest), ant_delta(1, "signature", "s2"), *ant_stop(1), *ant_end()]
    elif wire == "gemini":
        first = [gem([{"text": "Here: " + KEY[:3], "thought": True}]), gem([{"text": "Removing it."}]), gem([{"functionCall": {"name": "delete_file", "args": CALLED}}], finish=True)]
        again = [gem([{"text": "Left it."}]), gem([{"text": rest, "thought": True}], finish=True)]
    else:
        first, again = _responses(1, [("reasoning", "Here: " + KEY[:3]), ("message", "Removing it."), ("call", CALLED)]), _responses(2, [("message", "Left it."), ("reasoning", rest)])
    with Scripted([first, again]) as upstream, harness.gateway(upstream, tmp_path, wire, rules=[], key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.reject("keep them")))
        raw = stream(server, wire)
        operator.join()
        asked = len(upstream.requests)
    events = sse_json(raw)
    if wire == "anthropic":
        thinking = "".join(b.get("thinking", "") for b in anthropic_blocks(events))
    elif wire == "gemini":
        thinking = "".join(p.get("text", "") for p in gemini_parts(events) if p.get("thought"))
    else:
        thinking = "".join(e["delta"] for e in events if e.get("type") == "response.reasoning_summary_text.delta")
        thinking += "".join(s["text"] for e in events if e.get("type") == "response.output_item.done" and e["item"]["type"] == "reasoning"
                            and e["item"]["id"] != "rs_1" for s in e["item"].get("summary") or [])
    assert asked == 2 and thinking.startswith("Here: " + KEY[:3]) and KEY not in thinking and KEY not in arrival(events), thinking
    assert "Left it." in arrival(events)


def _responses(number: int, items: list[tuple[str, Any]]) -> list[bytes]:
    """A Responses stream of reasoning summaries, messages and calls, one delta each."""
    event = Numbered()
    response = {"id": f"resp_{number}", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}
    out, output = [event({"type": "response.created", "response": response})], []
    for index, (kind, value) in enumerate(items):
        if kind == "reasoning":
            item: dict[str, Any] = {"id": f"rs_{number}", "type": "reasoning", "summary": [{"type": "summary_text", "text": value}], "encrypted_content": "enc"}
            where: dict[str, Any] = {"item_id": item["id"], "output_index": index, "summary_index": 0}
            out += [event({"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}}),
                    event({"type": "response.reasoning_summary_text.delta", **where, "delta": value})]
        elif kind == "message":
            item = {"id": f"msg_{number}", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": value, "annotations": []}]}
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            out += [event({"type": "response.output_item.added", "output_index": index, "item": {**item, "content": []}}),
                    event({"type": "response.output_text.delta", **where, "delta": value})]
        else:
            item = {"id": f"fc_{number}", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "delete_file", "arguments": json.dumps(value)}
            out.append(event({"type": "response.output_item.added", "output_index": index, "item": {**item, "arguments": ""}}))
        out.append(event({"type": "response.output_item.done", "output_index": index, "item": item}))
        output.append(item)
    return out + [event({"type": "response.completed", "response": {**response, "status": "completed", "output": output}})]


def test_a_thought_that_went_early_is_not_sent_again_with_an_edited_call(tmp_path: Path) -> None:
    """Gemini's rest after an edit is rebuilt from the upstream's reply, whose thoughts the agent
    has already: they are not sent twice."""
    script = [gem([{"text": "They asked.", "thought": True}]), gem([{"text": "Hello"}]), GATE, gem([{"functionCall": {"name": "delete_file", "args": CALLED}}], finish=True)]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "gemini", rules=[], key=Secret(KEY)) as (gw, server):
        operator = Operator(gw, lambda g: g.answer(Answer.edit({"path": "other.txt"})))
        raw = stream(server, "gemini", upstream, "Hello")
        operator.join()
    parts = gemini_parts(sse_json(raw))
    assert upstream.went_on == [True]
    assert "".join(p.get("text", "") for p in parts if p.get("thought")) == "They asked.", parts
    assert [p["functionCall"]["args"] for p in parts if "functionCall" in p] == [{"path": "other.txt"}]


def _hidden(wire: str, piece: str, event: Numbered) -> bytes:
    """An event that carries `piece` behind a comment line ended by a bare CR (and its name's line
    too, on the wires that name their events): a reader that ends lines at LF alone sees one comment."""
    if wire == "chat":
        return b": x\r" + chat({"content": piece})
    if wire == "anthropic":
        return b": x\r" + ant_delta(0, "text", piece).replace(b"\n", b"\r", 1)
    if wire == "gemini":
        return b": x\r" + gem([{"text": piece}])
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": piece}
    return event(delta, before=": x\r").replace(b"\n", b"\r", 1)


@pytest.mark.parametrize("wire", ["chat", "anthropic", "gemini", "responses"])
def test_a_line_after_a_bare_cr_is_read_as_the_agents_client_reads_it(tmp_path: Path, wire: str) -> None:
    """An event-stream client ends a line at a CR alone: a `data:` line after a comment and a CR
    is an event it reads. The gateway reads the same lines, so the key it spells is masked."""
    event = Numbered()
    if wire == "chat":
        script = [chat({"role": "assistant", "content": "Hi "}), _hidden(wire, A, event), _hidden(wire, B, event), chat({"content": " bye"}, "stop"), b"data: [DONE]\n\n"]
    elif wire == "anthropic":
        script = [ant_start(), ant_block(0, "text"), ant_delta(0, "text", "Hi "), _hidden(wire, A, event), _hidden(wire, B, event), ant_delta(0, "text", " bye"), *ant_stop(0), *ant_end()]
    elif wire == "gemini":
        script = [gem([{"text": "Hi "}]), _hidden(wire, A, event), _hidden(wire, B, event), gem([{"text": " bye"}], finish=True)]
    else:
        message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}
        at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        done = {**message, "status": "completed", "content": [{"type": "output_text", "text": "Hi " + KEY + " bye", "annotations": []}]}
        script = [event({"type": "response.created", "response": response}), event({"type": "response.output_item.added", "output_index": 0, "item": message}),
                  event({"type": "response.output_text.delta", **at, "delta": "Hi "}), _hidden(wire, A, event), _hidden(wire, B, event),
                  event({"type": "response.output_text.delta", **at, "delta": " bye"}), event({"type": "response.output_item.done", "output_index": 0, "item": done}),
                  event({"type": "response.completed", "response": {**response, "status": "completed", "output": [done]}})]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, wire, key=Secret(KEY)) as (_, server):
        raw = stream(server, wire)
        if wire == "chat":  # and as the openai SDK reads it
            client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=30)
            chunks = client.chat.completions.create(model="m", messages=HI, stream=True)  # type: ignore[call-overload]
            sdk = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert KEY not in sdk and sdk.startswith("Hi ") and sdk.endswith(" bye"), sdk
    said = arrival(sse_json(raw)) if wire != "chat" else "".join((c.get("delta") or {}).get("content") or "" for e in sse_json(raw) for c in e.get("choices") or [])
    assert KEY not in said and KEY not in raw and said.startswith("Hi ") and said.endswith(" bye"), said


def test_split_lines_ends_a_line_where_an_event_stream_does() -> None:
    assert split_lines(b"a\r\nb\nc\rd\r") == ([b"a\r\n", b"b\n", b"c\r"], b"d\r")  # a last CR may begin a CRLF
    assert split_lines(b"a\r\nb\nc\rd\r", final=True) == ([b"a\r\n", b"b\n", b"c\r", b"d\r"], b"")
    assert split_lines(b": x\rdata: 1\n\n") == ([b": x\r", b"data: 1\n", b"\n"], b"")


def test_the_pieces_of_one_anthropic_block_are_joined_apart_from_the_others(tmp_path: Path) -> None:
    """Block 0 gets the key's start, block 1 other text, block 0 the key's rest: in arrival order
    nothing is spelled, in block 0 (as the SDK joins it) the key is."""
    script = [ant_start(), ant_block(0, "text"), ant_delta(0, "text", "Key: "), ant_block(1, "text"), ant_delta(0, "text", A),
              ant_delta(1, "text", "zz"), ant_delta(0, "text", B), ant_delta(0, "text", " end"), *ant_stop(0, 1), *ant_end()]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "anthropic", key=Secret(KEY)) as (_, server):
        raw = stream(server, "anthropic")
    blocks = anthropic_blocks(sse_json(raw))
    assert not any(KEY in b.get("text", "") for b in blocks) and blocks[0]["text"].startswith("Key: "), blocks


@pytest.mark.parametrize("one_event", [False, True], ids=["events", "one event"])
def test_geminis_text_is_joined_without_the_thoughts_between_its_parts(tmp_path: Path, one_event: bool) -> None:
    """A thought between two text parts: a client's text (google-genai's `.text`) joins the parts
    around it."""
    parts = [{"text": A}, {"text": "zz", "thought": True}, {"text": B}]
    script = [gem([{"text": "Key: "}]), gem(parts, finish=True)] if one_event else [gem([{"text": "Key: "}]), *(gem([p]) for p in parts), gem([{"text": " end"}], finish=True)]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "gemini", key=Secret(KEY)) as (_, server):
        raw = stream(server, "gemini")
    text = "".join(p.get("text", "") for p in gemini_parts(sse_json(raw)) if not p.get("thought"))
    assert KEY not in text and text.startswith("Key: "), text


@pytest.mark.parametrize("between", ["reasoning", "another item"])
def test_a_responses_messages_text_is_joined_apart_from_the_other_deltas(tmp_path: Path, between: str) -> None:
    """The message's text deltas around a reasoning summary's delta (or another message's): a client
    joins each output item's text apart."""
    event = Numbered()
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": []}
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": []}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    at = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
    script = [event({"type": "response.created", "response": response}), event({"type": "response.output_item.added", "output_index": 0, "item": reasoning}),
              event({"type": "response.output_item.added", "output_index": 1, "item": message}),
              event({"type": "response.output_text.delta", **at, "delta": "Key: "}), event({"type": "response.output_text.delta", **at, "delta": A})]
    if between == "reasoning":
        script.append(event({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "zz"}))
    else:
        script += [event({"type": "response.output_item.added", "output_index": 2, "item": {**message, "id": "msg_2"}}),
                   event({"type": "response.output_text.delta", "item_id": "msg_2", "output_index": 2, "content_index": 0, "delta": "zz"})]
    done = {**message, "status": "completed", "content": [{"type": "output_text", "text": "Key: " + KEY, "annotations": []}]}
    script += [event({"type": "response.output_text.delta", **at, "delta": B}),
               event({"type": "response.completed", "response": {**response, "status": "completed", "output": [{**reasoning, "summary": []}, done]}})]
    with Scripted([script]) as upstream, harness.gateway(upstream, tmp_path, "responses", key=Secret(KEY)) as (_, server):
        raw = stream(server, "responses")
    texts: dict[int, str] = {}
    for e in sse_json(raw):
        if e.get("type") == "response.output_text.delta":
            texts[e["output_index"]] = texts.get(e["output_index"], "") + e["delta"]
    assert texts and not any(KEY in t for t in texts.values()) and texts[1].startswith("Key: "), texts
