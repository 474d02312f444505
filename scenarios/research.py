"""The research assistant (seed 003): search, read the primary source, finish.

An offline corpus of a few short pages and one long one (scenarios/data/research)
stands in for the web. `web_search` ranks the corpus by word overlap,
`read_page` returns a whole page (the engine caps every observation at 4000
characters with a visible marker, so the long page arrives cut), and `finish`
is the exit that carries the answer. The budget is in tokens and dollars,
priced from `PRICES`; every step's input is the whole transcript so far, so
cost grows faster than the step count.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from engine import Budget, Decision, Param, RunView, Scenario, ScriptedPolicy, Task, Tool, ToolError
from engine.core.events import Observed

CORPUS_DIR = Path(__file__).parent / "data" / "research"
OFFICIAL = "postgresql.org"
TRUNCATED = "[... truncated"

PRICES: dict[str, tuple[float, float]] = {
    "small": (0.00015, 0.0006),
    "medium": (0.003, 0.015),
    "large": (0.015, 0.075),
}
"""Illustrative prices in dollars per 1000 tokens, (input, output), by model tier."""
DEFAULT_TIER = "medium"

QUESTION = "Has Postgres 17 shipped a native change-data-capture module?"


def budget_for(tier: str = DEFAULT_TIER, *, max_steps: int = 6, max_tokens: int = 20_000, max_cost: float = 0.10) -> Budget:
    """A budget in steps, tokens and dollars priced by a tier of `PRICES`."""
    if tier not in PRICES:
        raise KeyError(f"no price tier '{tier}' (tiers: {', '.join(PRICES)})")
    price_in, price_out = PRICES[tier]
    return Budget(
        max_steps=max_steps,
        max_tokens=max_tokens,
        max_cost=max_cost,
        price_in_per_1k=price_in,
        price_out_per_1k=price_out,
    )


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    text: str


@lru_cache(maxsize=4)
def load_corpus(folder: Path = CORPUS_DIR) -> tuple[Page, ...]:
    entries = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    return tuple(
        Page(e["url"], e["title"], (folder / e["file"]).read_text(encoding="utf-8")) for e in entries
    )


_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _matches(term: str, words: set[str]) -> bool:
    """A query term matches a word it equals or is a prefix of ("postgres" finds "postgresql")."""
    return term in words or (len(term) >= 4 and any(w.startswith(term) for w in words))


def search(pages: tuple[Page, ...], query: str, limit: int = 3) -> list[Page]:
    """Pages ranked by how many query terms they contain, title words counting twice."""
    terms = set(_words(query))
    scored = []
    for order, page in enumerate(pages):
        title, body = set(_words(page.title)), set(_words(page.text))
        score = sum(2 * _matches(t, title) + _matches(t, body) for t in terms)
        if score:
            scored.append((-score, order, page))
    return [page for _, _, page in sorted(scored)[:limit]]


def _snippet(text: str, length: int = 140) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= length else flat[: length - 1].rsplit(" ", 1)[0] + " ..."


@dataclass
class ResearchWorld:
    pages: tuple[Page, ...]
    tools: list[Tool] = field(init=False)

    def __post_init__(self) -> None:
        self.tools = [
            Tool(
                "web_search", "Search the web (an offline corpus); returns up to three results with title, URL and snippet.",
                (Param("query", description="A few keywords."),), self.web_search, timeout=None,
            ),
            Tool("read_page", "The text of a page by its URL.", (Param("url", description="A URL from the search results."),), self.read_page, timeout=None),
            Tool.exit("finish", "Ends the run with the answer to the question, citing sources.", Param("answer", description="The final answer.")),
        ]

    def web_search(self, query: str) -> str:
        results = search(self.pages, query)
        if not results:
            return f"no results for '{query}'"
        return "\n".join(
            f"{i}. {p.title}\n   {p.url}\n   {_snippet(p.text)}" for i, p in enumerate(results, start=1)
        )

    def read_page(self, url: str) -> str:
        wanted = url.strip().rstrip("/")
        for page in self.pages:
            if page.url.rstrip("/") == wanted:
                return page.text
        raise ToolError(f"no page at {url} (search first and use a URL from the results)")

    def restore(self, executed: Sequence[Observed]) -> None:
        """Nothing to rebuild on resume or fork: the tools only read."""


_URL = re.compile(r"https?://\S+")


def _urls(text: str) -> list[str]:
    return _URL.findall(text)


def careful(view: RunView) -> Decision:
    """Searches, reads the official page, checks the release notes, then answers with the nuance."""
    observations = view.observations()
    searches = [o for o in observations if o.tool == "web_search" and not o.error]
    reads = [o for o in observations if o.tool == "read_page" and not o.error]
    if not searches:
        return Decision.act("I need recent official information; I search first.", "web_search", query="Postgres 17 native CDC")
    read_urls = {o.args.get("url") for o in observations if o.tool == "read_page"}
    found = [u.rstrip(".,;)") for o in [*searches, *reads] for u in _urls(o.text)]
    unread = [u for u in dict.fromkeys(found) if OFFICIAL in u and u not in read_urls]
    if not reads:
        if not unread:
            return Decision.final(
                "No official source turned up.",
                "I found no official PostgreSQL source on this, so I cannot confirm a native CDC module in Postgres 17.",
            )
        return Decision.act("The official page on postgresql.org is the primary source.", "read_page", url=unread[0])
    docs = reads[0].text
    if len(reads) == 1 and unread and (TRUNCATED in docs or "change data capture" not in docs.lower()):
        return Decision.act(
            "The page covers logical replication but is cut off before any word on CDC; its link to the release notes will say whether anything is called CDC.",
            "read_page",
            url=unread[0],
        )
    everything = " ".join(o.text for o in reads).lower()
    sources = ", ".join(o.args.get("url", "") for o in reads)
    if "logical replication" in everything and "none of the items" in everything:
        answer = (
            "Not as a module called CDC. PostgreSQL 17 ships logical replication, built on logical decoding, "
            "which covers change-data-capture use cases (and 17 makes it sturdier: slots that survive a failover "
            "and a pg_upgrade, pg_createsubscriber), but neither the documentation nor the release notes name any "
            f"feature 'CDC'; streaming changes to Kafka still needs a consumer such as Debezium. Sources: {sources}"
        )
        return Decision.act(
            "The sources confirm logical replication but do not call it CDC; I finish with that nuance.", "finish", answer=answer
        )
    answer = (
        "PostgreSQL 17 ships logical replication, which covers change-data-capture use cases; I could not confirm "
        f"from the release notes whether anything is named CDC. Sources: {sources}"
    )
    return Decision.act("I have the primary source but not the release notes; I answer with what I know.", "finish", answer=answer)


def hasty(view: RunView) -> Decision:
    """Trusts the first search result's headline and answers without reading anything."""
    searches = [o for o in view.observations() if o.tool == "web_search" and not o.error]
    if not searches:
        return Decision.act("I search for it.", "web_search", query="Postgres 17 native CDC")
    headline = searches[0].text.splitlines()[0].split(". ", 1)[-1]
    return Decision.act("The first result answers it.", "finish", answer=f"Yes: {headline}")


def bench_score(task: Task, options: dict[str, Any], history: list[Any], outcome: str) -> dict[str, Any]:
    """Success is an answer that names logical replication and does not claim a CDC module."""
    answer = next((a.args.get("answer", "") for s in history for a in s.actions if a.tool == "finish"), "")
    answer = answer.lower()
    good = outcome == "answer" and "logical replication" in answer and not answer.startswith("yes")
    return {"success": good, "steps": len(history), "optimum": None, "checks": {}}


SCENARIO = Scenario(
    name="research",
    description="A research assistant over an offline corpus: search, read the primary source, finish (seed 003).",
    tasks={"pg17-cdc": Task("pg17-cdc", QUESTION, expected="logical replication")},
    policies={
        "careful": lambda world, task: ScriptedPolicy("careful", careful),
        "hasty": lambda world, task: ScriptedPolicy("hasty", hasty),
    },
    make_world=lambda task, options: ResearchWorld(load_corpus()),
    budget=budget_for(DEFAULT_TIER),
)
