"""What goes back to the agent for a held request (see `engine.gateway.controller`).

The upstream's bytes as they came when the operator changed nothing and the wire, the
streaming and the key allow it; otherwise a reply rebuilt in the agent's wire
(`engine.wires`): the released calls with their (edited) arguments, the answer, the end of
the run, or the upstream's failure said in the agent's terms. The calls the operator
refused go into the conversation the upstream sees, with their reasons.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from engine.core.events import DecisionMade, RunEnded
from engine.core.policy import PolicyError, RunView
from engine.core.text import one_line
from engine.gateway.early import EarlyStream
from engine.gateway.runs import Line
from engine.gateway.upstream import Failure, UpstreamPolicy
from engine.wires import Wire, wire_named
from engine.wires.chat import tool_call
from engine.wires.neutral import Response, passthrough


def call_ids(actions: Sequence[Any]) -> list[str]:
    """The id each of a decision's calls goes to the agent (and upstream) with: the upstream's,
    except that a call with no id, or one an earlier call of the decision already has, gets
    a distinct one (two calls sharing an id would get one result between them)."""
    taken = {a.call_id for a in actions if a.call_id}
    used: set[str] = set()
    tried: dict[str, int] = {}
    out: list[str] = []
    for i, action in enumerate(actions):
        given = action.call_id or f"call_{i}"
        chosen = given
        while chosen in used or (chosen != action.call_id and chosen in taken):
            tried[given] = tried.get(given, 1) + 1
            chosen = f"{given}_{tried[given]}"
        used.add(chosen)
        out.append(chosen)
    return out


def refused_go_upstream(line: Line, decision: DecisionMade, now: bool) -> None:
    """The calls of `decision` the operator refused, and their reasons, spliced into the
    conversation the upstream sees (`now`: before the agent sees the others' results)."""
    ids = call_ids(decision.actions)
    refused = line.turn.refused
    calls = [tool_call(ids[i], a.tool, a.args) for i, a in enumerate(decision.actions) if i in refused]
    answers = [(ids[i], refused[i]) for i, a in enumerate(decision.actions) if i in refused]
    if calls:
        line.conversation.rejected(decision.thought, calls, answers, now)

def released_response(line: Line, decision: DecisionMade, model: str | None) -> Response:
    """What a held request gets once every call of `decision` is decided: the upstream's
    bytes when nothing changed, else a reply rebuilt with the released calls."""
    run = line.run
    engine = run.engine
    released = engine.released
    reply = line.turn.reply
    ids = call_ids(decision.actions)
    renamed = [(i, a.call_id, ids[i]) for i, a in enumerate(decision.actions) if a.call_id != ids[i]]
    run.sent_ids = {i: ids[i] for i in released}
    unchanged = (
        reply is not None
        and not renamed
        and len(released) == len(decision.actions)
        and all(released[i] == a.args for i, a in enumerate(decision.actions))
    )
    thought = decision.thought or ""

    def calls() -> list[dict[str, Any]]:
        """The released calls as the agent's wire writes them (for a reply rebuilt, not one passed on as it came)."""
        return [tool_call(ids[i], a.tool, released[i]) for i, a in enumerate(decision.actions) if i in released]

    rest = _rest(line, thought, calls, decision, model)
    if unchanged and as_it_came(line, reply):
        return _with_rest(line, passthrough(reply.raw, reply.stream), reply.raw, rest)
    if renamed:
        said = "; ".join(f"call {i + 1} had {old!r}, sent as {new!r}" for i, old, new in renamed)
        engine.note(f"the upstream gave several calls the same id (or none): each gets its own ({said})")
    refused_go_upstream(line, decision, now=False)
    return _with_rest(line, built(line, thought or None, calls(), decision, model), None, rest)


def _rest(line: Line, text: str, calls: Callable[[], list[dict[str, Any]]], decision: DecisionMade, model: str | None) -> Callable[[EarlyStream, int], Response]:
    """The tail of a reply whose `text` (and `calls()`) follows what went early of it (`_with_rest`):
    at `fallback` 0 as `EarlyStream.rest` says, 1 written anew, 2 written anew without the text."""

    def rest(early: EarlyStream, fallback: int) -> Response:
        following, anew = early.rest(text)
        return built(line, following if fallback < 2 and following else None, calls(), decision, model, shown=early.shown, anew=anew or fallback > 0)

    return rest


def _with_rest(line: Line, response: Response, raw: bytes | None, rest: Callable[[EarlyStream, int], Response]) -> Response:
    """`response`, with its `rest` for the held request's connection when that already got the
    stream's first bytes (`engine.gateway.early`): the upstream's `raw` bytes after those sent of
    this reply, when it goes as it came and some of it went; else `rest(early, 0)`, a tail rebuilt
    to continue what was sent (a reply asked again after a refusal starts no stream again). A
    rebuilt tail that would spell the key with what went, joined as a client may join them, is
    written anew from the masked text and the calls (`rest(early, 1)`), else from the calls alone
    (`rest(early, 2)`): its own pieces, in their order, may complete a key begun in what went."""
    early = line.held.early
    if early is not None and early.started:
        if raw is not None and early.sent:
            response.rest = raw[early.sent :]
        else:
            body = rest(early, 0).body
            for fallback in (1, 2):
                if not early.spells_key(body):
                    break
                body = rest(early, fallback).body
            response.rest = body
    return response


def built(
    line: Line, content: str | None, calls: list[dict[str, Any]], decision: DecisionMade | None, model: str | None, shown: bytes | None = None,
    anew: bool = False,
) -> Response:
    """A reply in the held request's wire (`model`: the upstream's, else the request's); `shown`:
    the stream's bytes the agent has already, when this is their rest (`engine.gateway.early`);
    `anew`: written from `content` and `calls` only, not from the upstream's reply (its text
    would complete a key the agent has the start of, `EarlyStream.following`; its thinking is
    masked where it would, `EarlyStream.followed`)."""
    body = line.held.body
    usage = decision.usage if decision is not None and not decision.usage.estimated else None
    include = bool((body.get("stream_options") or {}).get("include_usage"))
    model = str(model or body.get("model") or "agent-tui")
    original = line.turn.reply.reply if line.turn.reply is not None and not anew else None
    if original is not None and shown is not None and line.held.early is not None:
        original = line.held.early.followed(original)
    return line.held.wire.built_reply(
        content, calls, model=model, stream=line.held.stream, usage=usage, include_usage=include, original=original,
        continued=shown is not None, shown=shown or b"",
    )

def as_it_came(line: Line, reply: Any) -> bool:
    """Whether the upstream's reply can go to the held request byte for byte: the same wire,
    streamed or not as asked, and no key spelled across its pieces."""
    return reply.reply.wire == line.held.wire.NAME and reply.stream == line.held.stream and reply.raw_safe

def end_response(line: Line, model: str | None) -> Response:
    """What a held request gets when its run has ended: the answer, or the end in the wire's error shape."""
    ended: RunEnded = line.run.ended
    decision, reply = line.turn.decision, line.turn.reply
    if ended.outcome == "answer" and decision is not None and decision.answer is not None:
        answer = decision.answer

        rest = _rest(line, answer, lambda: [], decision, model)
        if reply is not None and as_it_came(line, reply):
            return _with_rest(line, passthrough(reply.raw, reply.stream), reply.raw, rest)
        return _with_rest(line, built(line, answer, [], decision, model), None, rest)
    code = "budget_exhausted" if "budget reached" in ended.reason else "run_ended"
    return line.held.wire.error_response(400, f"agent-tui gateway: the run has ended ({ended.outcome}): {ended.reason}", "agent_tui", code)

def policy_failure_response(line: Line) -> Response:
    """What a held request gets when the upstream failed: its own failure when kept, else a 502."""
    failure = line.turn.failure
    line.turn.failure = None
    policy = line.run.engine.policy
    kept = policy.last_failure if isinstance(policy, UpstreamPolicy) else None
    wire = line.held.wire
    if kept is not None:
        return failure_response(wire, kept)
    return wire.error_response(502, f"agent-tui gateway: {failure.message if failure else 'the policy failed'}", "upstream_error")


def failure_response(wire: Wire, failure: Failure) -> Response:
    """The upstream's failure for an agent of `wire`: its status, headers and body, the body
    said again in the agent's wire when the upstream speaks another."""
    body = failure.body
    if failure.wire != wire.NAME:
        body = wire.error_response(failure.status, wire_named(failure.wire).error_detail(body), "upstream_error").body
    return Response(failure.status, body, "application/json", dict(failure.headers))


def side_response(policy: UpstreamPolicy, body: dict[str, Any], wire: Wire) -> tuple[Response, str]:
    """The upstream's answer to a side request, for the agent in its `wire`, and what to note
    of it. Its bytes as they came; rebuilt when they spell the key across a stream, come in
    another wire, or have tool calls (the request declared no tools: none is passed on)."""
    stream = bool(body.get("stream"))
    try:
        policy.decide(RunView(task="", tools=[], history=[], step=0))
    except PolicyError as exc:
        failure = policy.last_failure
        if failure is None:
            return wire.error_response(502, f"agent-tui gateway: {exc}", "upstream_error"), str(exc)
        return failure_response(wire, failure), f"status {failure.status}"
    got = policy.last_reply
    calls = len(got.reply.tool_calls)
    said = f"answered {one_line(got.reply.content or '')!r}"
    if calls == 0 and got.raw_safe and got.stream == stream and got.reply.wire == wire.NAME:
        return passthrough(got.raw, got.stream), said
    if calls:
        said += f"; its {calls} tool call{'s' if calls != 1 else ''} not passed on (the request declared no tools)"
    model = str(policy.upstream.model or body.get("model") or "agent-tui")
    return wire.built_reply(got.reply.content or "", [], model=model, stream=stream, original=None if calls else got.reply), said
