"""The four wires behind one `Wire` protocol: each writes the gateway's reply from the same
`ReplyOptions` and reads it back as it wrote it, whole and streamed."""

from __future__ import annotations

import json

import pytest

from engine.core.events import Usage
from engine.wires import WIRES, ReplyOptions, Wire, WireError

CALL = {"id": "call_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}


@pytest.mark.parametrize("wire", WIRES.values(), ids=list(WIRES))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_every_wire_writes_a_reply_from_the_same_options_and_reads_it_back(wire: Wire, stream: bool) -> None:
    options: ReplyOptions = {"model": "m", "stream": stream, "usage": Usage(input_tokens=3, output_tokens=4), "include_usage": True}
    response = wire.built_reply("I'll read it.", [CALL], **options)
    assert response.status == 200 and (response.content_type == "text/event-stream") == stream
    if stream:
        deltas: list[str] = []
        reader = wire.stream_reader(deltas.append)
        for line in response.body.decode().splitlines():
            reader.feed(line)
        reply = reader.reply
        assert reader.complete and "".join(deltas) == "I'll read it."
    else:
        reply = wire.read_whole(json.loads(response.body))
    assert reply.content == "I'll read it."
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [("read_file", {"path": "a.txt"})]
    assert (reply.input_tokens, reply.output_tokens) == (3, 4)


@pytest.mark.parametrize("wire", WIRES.values(), ids=list(WIRES))
def test_every_wire_reads_only_data_lines_and_names_malformed_json_the_same_way(wire: Wire) -> None:
    reader = wire.stream_reader(lambda delta: None)
    for line in ("event: ping", ": a comment", "", "data:", "data:   "):
        reader.feed(line)
    assert not reader.complete
    with pytest.raises(WireError) as raised:
        reader.feed("data: {oops")
    assert str(raised.value) == "malformed JSON in the stream: '{oops'"


@pytest.mark.parametrize("wire", WIRES.values(), ids=list(WIRES))
def test_every_wire_names_a_body_that_is_no_reply_the_same_way(wire: Wire) -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    for data, said in (([], "the reply is not a JSON object"), (error, "the server reported an error: slow down")):
        with pytest.raises(WireError) as raised:
            wire.read_whole(data)
        assert str(raised.value) == said


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "m", "messages": [{"role": "user", "content": "caf\\u00e9"}], "n": 1, "t": 0.7}',
        b' [1, -0, 1e400, NaN, 123456789012345678901234567890] ',
        b'"a\\ud800b"',  # a lone surrogate's escape: pydantic's reader refuses it
        '{"a": "\u00e9"}'.encode("utf-16"),  # json reads UTF-16 bodies
        b"\xef\xbb\xbf{}",
        b"[" * 300 + b"]" * 300,  # past pydantic's nesting limit
        b"1" * 4000,  # a long number
        b'{"a": 1, "a": 2}',
    ],
    ids=["request", "numbers", "lone-surrogate", "utf-16", "bom", "deep", "long-number", "twice"],
)
def test_json_from_the_wire_is_what_json_reads(raw: bytes) -> None:
    import json

    from engine.wires.neutral import json_from_wire

    assert json_from_wire(raw) == json.loads(raw) or raw.startswith(b" [1")  # NaN is not equal to itself
    assert json.dumps(json_from_wire(raw)) == json.dumps(json.loads(raw))


@pytest.mark.parametrize("raw", [b"{not json", b'{"a": 1} x', b'"a\nb"', b"[1,]", b'"\xff"', b"1" * 5000])
def test_json_the_wire_cannot_read_raises_as_json_does(raw: bytes) -> None:
    import json

    from engine.wires.neutral import json_from_wire

    with pytest.raises(ValueError) as ours:
        json_from_wire(raw)
    with pytest.raises(ValueError) as theirs:
        json.loads(raw)
    assert str(ours.value) == str(theirs.value)


_BAD_FIRST_ITEM = {
    "chat": {"model": "m", "messages": [{"role": "nobody"}, {"role": "user", "content": "hi"}]},
    "anthropic": {"model": "m", "max_tokens": 9, "messages": [{"role": "nobody"}, {"role": "user", "content": "hi"}]},
    "responses": {"model": "m", "input": [{"type": "message", "role": "nobody"}, {"type": "message", "role": "user", "content": "hi"}]},
    "gemini": {"contents": [{"role": "nobody", "parts": []}, {"role": "user", "parts": [{"text": "hi"}]}]},
}


@pytest.mark.parametrize("name", sorted(_BAD_FIRST_ITEM))
def test_each_wires_check_reads_only_the_items_past_those_checked_already(name: str) -> None:
    """`checked`: the first items a check passed (the gateway compares them with those it checked);
    the check reads from the next, naming a bad one by its place, and the rest of the body whole."""
    wire = WIRES[name]
    body = _BAD_FIRST_ITEM[name]
    items = body[wire.ITEMS]
    assert wire.check_request(body) is not None and "[0]" in wire.check_request(body)
    assert wire.check_request(body, 1) is None
    bad_later = {**body, wire.ITEMS: [items[1], items[0]]}
    assert "[1]" in (wire.check_request(bad_later, 1) or "")
    assert wire.check_request({**body, **({"tools": "x"} if name == "gemini" else {"stream": "yes"})}, 1) is not None


_UNHASHABLE_ROLE = {
    "chat": {"model": "m", "messages": [{"role": [], "content": "hi"}]},
    "anthropic": {"model": "m", "max_tokens": 9, "messages": [{"role": [], "content": "hi"}]},
    "responses": {"model": "m", "input": [{"type": "message", "role": {}, "content": "hi"}]},
    "gemini": {"contents": [{"role": [], "parts": [{"text": "hi"}]}]},
}


@pytest.mark.parametrize("name", sorted(_UNHASHABLE_ROLE))
def test_each_wires_check_names_a_role_that_is_a_list_or_an_object(name: str) -> None:
    """A role that is no string (a list, an object: nothing a set can hold) is a bad request's
    message, not an error of the check."""
    problem = WIRES[name].check_request(_UNHASHABLE_ROLE[name])
    assert problem is not None and "[0]" in problem and "role" in problem


@pytest.mark.parametrize("raw", ['"a\ud800b"', '{"a": "\udcff"}'], ids=["lone-surrogate", "escaped-byte"])
def test_json_text_the_wire_reads_holding_a_lone_surrogate_is_what_json_reads(raw: str) -> None:
    """Text (a stream's payload) holding a lone surrogate itself, not its escape: pydantic's reader
    refuses it with a TypeError; it is read as `json` reads it."""
    import json

    from engine.wires.neutral import json_from_wire, stream_json

    assert json_from_wire(raw) == json.loads(raw) == stream_json(raw)


@pytest.mark.parametrize("wire", WIRES.values(), ids=list(WIRES))
def test_a_streams_text_read_in_pieces_is_whole_however_often_the_reply_is_asked_for(wire: Wire) -> None:
    """A stream reader keeps the text's pieces and joins them when its reply is asked for (a string
    added to is copied whole); asked after every line or only at the end, the text is the same."""
    text = "I'll read it. " * 50
    lines = wire.built_reply(text, [CALL], model="m", stream=True).body.decode().splitlines()
    asked, once = wire.stream_reader(lambda delta: None), wire.stream_reader(lambda delta: None)
    for line in lines:
        asked.feed(line)
        assert text.startswith(asked.reply.content)
        once.feed(line)
    assert asked.reply.content == once.reply.content == text
    assert asked.calling and once.calling


def test_a_chat_streams_many_pieces_are_kept_until_its_reply_is_asked_for() -> None:
    """4,096 pieces of 4,000 characters (the 16 MB an upstream may send) fold into one text; asked
    after each line whether a call began (as the gateway asks), nothing is joined until the end."""
    from engine.wires.chat import StreamReader
    from tests.support.streams import chat

    line = chat({"content": "x" * 4000}).decode().strip()
    reader = StreamReader(lambda delta: None)
    for _ in range(4096):
        reader.feed(line)
        assert not reader.calling and not reader.complete
    assert reader._texts and len(reader._texts) == 4096  # the pieces, not yet joined
    assert reader.reply.content == "x" * 4000 * 4096 and not reader._texts


def test_an_anthropic_streams_blocks_read_in_pieces_are_whole_however_often_the_reply_is_asked_for() -> None:
    """The Anthropic reader keeps each block's text, thinking, signature and a call's JSON as pieces
    (a block's text added to piece by piece cost its length squared: 16 MB, 18 s); the message it
    rebuilds is the same asked after every line, at the end, or with a block started again."""
    from engine.wires.anthropic import StreamReader
    from tests.support.streams import ant, ant_block, ant_delta, ant_end, ant_start, ant_stop

    tool = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}
    events = [
        ant_start(), ant_block(0, "thinking"), *(ant_delta(0, "thinking", f"t{n} ") for n in range(5)),
        ant_delta(0, "signature", "sig-"), ant_delta(0, "signature", "nature"), *ant_stop(0),
        ant_block(1, "text"), *(ant_delta(1, "text", f"w{n} ") for n in range(7)), *ant_stop(1),
        ant({"type": "content_block_start", "index": 2, "content_block": tool}),
        *(ant({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": p}})
          for p in ('{"pa', 'th": "a', '.txt"}')),
        *ant_stop(2), *ant_end("tool_use"),
    ]
    lines = [line for event in events for line in event.decode().splitlines()]
    asked, once = StreamReader(lambda delta: None), StreamReader(lambda delta: None)
    for line in lines:
        asked.feed(line)
        asked.reply
        once.feed(line)
    blocks = [
        {"type": "thinking", "thinking": "t0 t1 t2 t3 t4 ", "signature": "sig-nature"},
        {"type": "text", "text": "w0 w1 w2 w3 w4 w5 w6 "},
        {**tool, "input": {"path": "a.txt"}},
    ]
    for reader in (asked, once):
        assert reader.reply.message["content"] == blocks
        assert reader.reply.content == "w0 w1 w2 w3 w4 w5 w6 "
        assert [(c.name, c.arguments) for c in reader.reply.tool_calls] == [("read_file", '{"path": "a.txt"}')]
    again = StreamReader(lambda delta: None)  # block 1 started again after some of its text: the new block replaces it
    for line in [l for e in [ant_start(), ant_block(0, "text"), ant_delta(0, "text", "old"), ant_block(0, "text"),
                             ant_delta(0, "text", "new"), *ant_stop(0), *ant_end()] for l in e.decode().splitlines()]:
        again.feed(line)
    assert again.reply.message["content"] == [{"type": "text", "text": "new"}]


def test_a_calls_arguments_read_in_pieces_are_whole_and_a_responses_final_item_still_decides() -> None:
    """A call's arguments are kept as pieces too (16 MB of them cost 18 s added piece by piece):
    whole however often the reply is asked for; a Responses item's `done` with its arguments
    replaces the pieces, one without them keeps them."""
    from engine.wires.chat import StreamReader as ChatReader
    from engine.wires.responses import StreamReader as ResponsesReader
    from tests.support.streams import chat

    pieces = ['{"pa', 'th": ', '"a.txt"}']
    lines = [chat({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
             *(chat({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces), chat({}, "tool_calls")]
    asked, once = ChatReader(lambda delta: None), ChatReader(lambda delta: None)
    for line in (text for raw in lines for text in raw.decode().splitlines()):
        asked.feed(line)
        asked.reply
        once.feed(line)
    for reader in (asked, once):
        assert [(c.id, c.name, c.arguments) for c in reader.reply.tool_calls] == [("c1", "read_file", '{"path": "a.txt"}')]

    def responses(final_arguments: str) -> str:
        reader = ResponsesReader(lambda delta: None)
        item = {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": ""}
        events = [{"type": "response.output_item.added", "output_index": 0, "item": item},
                  *({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": p} for p in pieces),
                  {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": final_arguments}}]
        for event in events:
            reader.feed("data: " + json.dumps(event))
        return reader.reply.tool_calls[0].arguments

    assert responses('{"path": "b.txt"}') == '{"path": "b.txt"}'
    assert responses("") == '{"path": "a.txt"}'


def test_a_gemini_thought_read_in_pieces_is_one_part_however_often_the_reply_is_asked_for() -> None:
    """The pieces of a thought Gemini streams are one part (as a client joins them), kept as pieces
    until the reply is asked for (16 MB of them cost 19 s added piece by piece); the same asked
    after every line or at the end, and in a whole reply holding the pieces as parts."""
    from engine.wires.gemini import StreamReader, read_whole

    thought = [{"text": f"t{n} ", "thought": True} for n in range(6)]
    last = {"text": "t6", "thought": True, "thoughtSignature": "sig"}
    chunks = [[p] for p in thought] + [[last], [{"text": "Done."}]]
    lines = ["data: " + json.dumps({"candidates": [{"content": {"role": "model", "parts": parts}}]}) for parts in chunks]
    asked, once = StreamReader(lambda delta: None), StreamReader(lambda delta: None)
    for line in lines:
        asked.feed(line)
        asked.reply
        once.feed(line)
    whole = read_whole({"candidates": [{"content": {"role": "model", "parts": [p for parts in chunks for p in parts]}}]})
    expected = [{"text": "t0 t1 t2 t3 t4 t5 t6", "thought": True, "thoughtSignature": "sig"}, {"text": "Done."}]
    for reply in (asked.reply, once.reply, whole):
        assert reply.message["parts"] == expected and reply.content == "Done."
