"""A chat message's content is read as text one way: the gateway reading a client's
messages and the model client reading a reply agree on every content they both take."""

from __future__ import annotations

import pytest

from engine.gateway.conversation import message_text
from engine.model.wire import WireError, reply_from_json

CONTENTS = [
    None,
    "plain text",
    [{"type": "text", "text": "one "}, {"type": "text", "text": "text"}],
    [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "data:..."}}, {"type": "text", "text": "b"}],
    [{"type": "text", "text": 5}, {"type": "text", "text": "kept"}, "a bare string part"],
    [],
]


def _reply_text(content: object) -> str:
    return reply_from_json({"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).content


@pytest.mark.parametrize("content", CONTENTS)
def test_the_gateway_and_the_model_client_read_a_content_the_same(content: object) -> None:
    assert message_text(content) == _reply_text(content)


def test_content_neither_text_nor_parts_is_refused_by_the_client_and_kept_whole_by_the_gateway() -> None:
    with pytest.raises(WireError):
        _reply_text({"odd": 1})
    assert message_text({"odd": 1}) == '{"odd": 1}'
