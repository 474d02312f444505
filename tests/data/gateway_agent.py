"""An agent in its own process for the gateway's terminal test: the openai client's plain tool loop.

Usage: gateway_agent.py BASE_URL FOLDER RESULT_FILE. Writes the final answer and
the tools it ran, as JSON, to RESULT_FILE.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.gateway_harness import Files  # noqa: E402
from tests.support.gateway_harness import agent_loop  # noqa: E402


def main() -> None:
    url, folder, result = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    files = Files.__new__(Files)
    files.folder = folder
    client = openai.OpenAI(base_url=url, api_key="agent-key", max_retries=0, timeout=120)
    answer, seen = agent_loop(client, files)
    result.write_text(json.dumps({"answer": answer, "seen": seen}))


if __name__ == "__main__":
    main()
