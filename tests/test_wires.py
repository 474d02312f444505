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
