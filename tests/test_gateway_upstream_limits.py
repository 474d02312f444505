"""What the upstream sends is bounded: a reply over 16 MB, whole or an endless stream, is
refused (502 to the agent) instead of growing the gateway's memory, and the next request
still reaches the upstream on a fresh connection."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest

from engine.model.http import MAX_REPLY_BYTES
from tests.support.fake_openai import FakeOpenAI, Raw, Reply, say
from tests.support.gateway_harness import gateway

USER = [{"role": "user", "content": "hi"}]


@dataclass
class Endless(Reply):
    """A stream of content chunks that never ends (until the reader hangs up)."""

    def send(self, handler, request) -> None:
        handler.start_stream()
        chunk = "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * 4000}, "finish_reason": None}]}) + "\n\n"
        try:
            while True:
                handler.send_chunk(chunk)
        except OSError:
            return


def huge_whole(request) -> Reply:
    content = "x" * (MAX_REPLY_BYTES + 10)
    return Raw(json.dumps({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}))


@pytest.mark.parametrize("stream, reply", [(False, huge_whole), (True, lambda request: Endless())], ids=["whole", "endless-stream"])
def test_a_reply_over_the_cap_is_refused_and_the_next_request_goes_through(tmp_path: Path, stream: bool, reply) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path) as (gw, server):
        fake.add(reply, say("small"))
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0, timeout=120)
        with pytest.raises(openai.APIError) as caught:
            if stream:
                list(client.chat.completions.create(model="m", messages=USER, stream=True))
            else:
                client.chat.completions.create(model="m", messages=USER)
        if not stream:  # a stream's text went to the agent as it came: the cap ends it with an error event
            assert isinstance(caught.value, openai.APIStatusError) and caught.value.status_code == 502
        assert "larger than 16 MB" in caught.value.message
        retry = client.chat.completions.create(model="m", messages=USER)
        assert retry.choices[0].message.content == "small"


def test_a_cookie_the_upstream_sets_is_never_sent_back() -> None:
    """The gateway's one upstream client serves every agent: a `Set-Cookie` of one reply is
    not kept, so no later request (another agent's) carries it upstream."""
    from engine.gateway.client import UpstreamClient
    from tests.support.fake_openai import Status

    with FakeOpenAI() as fake:
        fake.add(Status(429, headers={"Set-Cookie": "session=agent-one; Path=/"}), say("second"))
        client = UpstreamClient(10.0)
        try:
            for _ in range(2):
                with client.post(fake.url + "/chat/completions", json.dumps({"messages": USER}).encode(), {"Content-Type": "application/json"}) as response:
                    client.whole(response)
        finally:
            client.close()
        assert [r.headers.get("cookie") for r in fake.requests] == [None, None]
