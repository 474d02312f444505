"""The upstream's key never reaches a file or the agent, whatever way the upstream echoes it.

The gateway sends its own key upstream; an upstream that echoes it back (in a
reply's text, split by a line break, or in an error body) must not put it in
the gateway's transcript or hand it to the agent, which has only its own token.
Every file and everything the agent received is searched for any 10-character
piece of the key.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from engine.model.config import Secret
from tests.fake_openai import FakeOpenAI, Status, say
from tests.gateway_harness import gateway

KEY = "sk-upstream-7c1e9a3f5b2d4e6081a9c3e7b5d1f2a4c6e8"
PIECES = {KEY[i : i + 10] for i in range(len(KEY) - 9)}
USER = [{"role": "user", "content": "Tidy the folder."}]


def _key(request) -> str:
    return request.headers["authorization"].removeprefix("Bearer ")


ECHOES = {
    "the reply's text": lambda r: say(f"Your key is {_key(r)}, keep it safe."),
    "the reply's text split by a newline": lambda r: say(f"Key: {_key(r)[:20]}\n{_key(r)[20:]}"),
    "an error body": lambda r: Status(400, "x" * 280 + " Authorization: " + r.headers["authorization"]),
    "an error body split by a newline": lambda r: Status(400, f"bad key {_key(r)[:15]}\n{_key(r)[15:]}"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("echo", list(ECHOES))
def test_an_echoed_upstream_key_reaches_no_file_and_not_the_agent(tmp_path: Path, echo: str, stream: bool) -> None:
    with FakeOpenAI() as fake, gateway(fake, tmp_path, key=Secret(KEY)) as (_gw, server):
        fake.add(ECHOES[echo])
        client = openai.OpenAI(base_url=server.url, api_key="agent-key", max_retries=0)
        try:
            if stream:
                got = "".join(c.model_dump_json() for c in client.chat.completions.create(model="m", messages=USER, stream=True))
            else:
                got = client.chat.completions.create(model="m", messages=USER).model_dump_json()
        except openai.APIStatusError as exc:
            got = f"{exc} {exc.response.text}"
        assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert sorted(p for p in PIECES if p in got) == [], f"the agent received the key ({echo})"
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert sorted(p for p in PIECES if p in path.read_text(errors="replace")) == [], f"the key is in {path}"
    assert "***" in got + "".join(p.read_text(errors="replace") for p in files), "the echo never arrived"
