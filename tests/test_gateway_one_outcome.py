"""`agent-tui gateway --headless` ends with its outcome line once, as a headless run does
(the run's end was printed as it happened and then again by the exit)."""

from __future__ import annotations

from pathlib import Path

import openai

from tests.support.fake_openai import FakeOpenAI, call
from tests.support.gateway_harness import TOOLS
from tests.support.gateway_harness import start_headless_gateway, stop_gateway


def test_sigterm_prints_the_aborted_outcome_once(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.add(call("read_file", path="notes.txt", id="c1"))
        proc, url = start_headless_gateway(fake, tmp_path, "--approve", "all")
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "read"}], tools=TOOLS)
        code, out, err = stop_gateway(proc)
    outcome = "outcome: aborted after 1 step: the gateway stopped (SIGTERM)"
    assert code == 5, err
    assert out.strip().splitlines()[-1] == outcome and out.count(outcome) == 1
