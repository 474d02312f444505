"""An ACP agent as the run's policy: what it says and asks becomes decisions.

`decide` first answers the agent's request the last decision stood for when its
action did not run (rejected: the reason is the agent's error; denied), then
reads what the agent says until the next decision point:

- a request that waits for agent-tui (a permission, a file read or write, a
  command) is one action of an agent-tui tool (`engine.acp.tools`), whose
  approval is the ordinary one;
- one of the agent's own calls that ended (`tool_call_update` completed or
  failed) is an `agent.call` action, its result the observation;
- the end of the turn is the answer (the agent's last message), unless the
  operator follows up: a follow-up given up front (`follow_ups`, `run --acp
  --follow-up TEXT`) is the turn's `agent.prompt` action, sent as the agent's next
  `session/prompt`; else, in the cockpit, the answer is an `agent.answer` action
  held for the operator, whose approval ends the run with it and whose prompt (edited
  in, or the reason of a rejection) is the agent's next prompt.

Between turns (a turn the operator cancelled, a policy error of an interactive
run) the operator's take-over is an `agent.prompt` action: its text is the
agent's next `session/prompt`, and the agent's next decision reads that turn.

The agent's messages and thoughts since the last decision are its thought, its
plan and agent-tui's notes (what the agent did wrong) are said there too, and
`usage_update` gives the decision's usage. A turn cut off (the agent exited)
reports each call still open as an unknown outcome, then fails for good.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from engine.acp.items import Gate, Gone, Note, TurnEnded, Update
from engine.acp.tools import ANSWER, CALL, GATE_TOOLS, PROMPT, as_json, choose, gate_tools, permission_tool
from engine.core.events import Action, ApprovalDecided, Usage
from engine.core.policy import Decision, PolicyError, RunView
from engine.core.tools import Param, Tool, ToolError

if TYPE_CHECKING:
    from engine.acp.connection import AgentProcess
    from engine.core.engine import Engine

MAX_THOUGHT_CHARS = 1 << 20
"""What one decision keeps of the agent's messages and thoughts; the rest is counted and said."""
CANCEL_WAIT = 10.0
CONTINUE_TEXT = "The operator interrupted your last turn. Continue with the task."
REASONS_TEXT = "agent-tui: the operator refused calls of your last turn, saying why:\n{reasons}\nTake this into account and go on with the task."
REJECTED = "REJECTED by the operator: "
NOT_ACCEPTED_TEXT = "The operator did not accept this as the end of the task. Go on with it."
FOLLOW_UP_NOTE = "agent-tui: the agent ended its turn ({stop}); the operator's follow-up {n} of {of} (given up front) is its next prompt"
UNKNOWN = "UNKNOWN OUTCOME: {why} before the agent said how this call ended; it may or may not have run"


@dataclass
class Call:
    """One of the agent's own tool calls, as its updates have told it so far."""

    id: str
    title: str = ""
    kind: str = ""
    status: str = ""
    raw_input: Any = None
    content: list[Any] = field(default_factory=list)
    raw_output: Any = None
    permission: str = ""  # "", "allowed", "refused"
    reported: bool = False
    updates: int = 0


class AcpPolicy:
    """The agent behind `agent` (started) as a policy; `attach(engine)` once the run is built."""

    def __init__(self, agent: AgentProcess, name: str = "acp", follow_ups: Sequence[str] = ()) -> None:
        self.agent = agent
        self.name = name
        self._follow_ups = deque(text for text in follow_ups if text.strip())
        """The operator's prompts given up front, each sent when the agent ends a turn."""
        self._follow_ups_given = len(self._follow_ups)
        self._switched: dict[str, str] = {}
        """The mode and the model the operator switched to (their policy names), by kind."""
        self.engine: Engine | None = None
        self._outcomes: dict[str, tuple[str, bool]] = {}
        """What each of the agent's own calls reported, by its id, until its `agent.call` runs."""
        self.tools: list[Tool] = gate_tools(agent.cwd, self._gate_of, self._chose_always, lambda: agent.served, self._outcomes.pop,
                                            self._reasons_append)
        self.tools.extend([self.prompt_tool(), self.answer_tool()])
        self._open: dict[str, Gate] = {}
        """Gates by the call id of the action that stands for them, not yet settled."""
        self._current: Gate | None = None
        self._calls: dict[str, Call] = {}
        self._said: list[str] = []
        self._thought: list[str] = []
        self._notes: list[str] = []
        self._kept = 0
        self._dropped = 0
        self._plan: str | None = None
        self._usage: tuple[int, int] | None = None
        self._usage_new = False
        self._cost_total: float | None = None
        """The session's cost in dollars, as the agent's last `usage_update` said it."""
        self._cost_counted = 0.0
        self._currency_said = False
        self._prompted = False
        self._next_prompt: str | None = None
        """The prompt an `agent.prompt` or `agent.answer` action gave, sent at the next decision."""
        self._reasons: list[str] = []
        self._reasons_sent: list[str] = []
        """The operator's reasons for refusing calls of this turn: the next prompt carries them (an agent
        may not pass an error's text on to its model: Gemini CLI 0.61 writes '[object Object]')."""
        self._turn_open = False
        self._gone: str | None = None
        self._numbered = 0
        self._cancelled = threading.Event()
        self._cancel_at: float | None = None
        self._closed = False

    def swaps(self) -> dict[str, tuple[str, str, str]]:
        """What the agent offers to switch to, by policy name: `mode:ID` for each mode of its session
        (`session/set_mode`), `model:VALUE` for each value of its config option of category "model"
        (`session/set_config_option`); each as (kind, the option's id, the value)."""
        out: dict[str, tuple[str, str, str]] = {}
        for mode in getattr(self.agent.modes, "available_modes", None) or []:
            out[f"mode:{mode.id}"] = ("mode", "", mode.id)
        for option in self.agent.config_options or []:
            if getattr(option, "category", None) != "model" or getattr(option, "type", "") != "select":
                continue
            for item in option.options:
                for value in getattr(item, "options", None) or [item]:  # a group's options, or the option itself
                    out.setdefault(f"model:{value.value}", ("model", option.id, value.value))
        return out

    def switch(self, name: str) -> Switched:
        """This policy after the agent switched to the mode or model `name` (one of `swaps`), under
        a name saying what it runs on now (the swap's event says from what to what); ValueError in
        one line when the agent refuses."""
        kind, option, value = self.swaps()[name]
        if kind == "mode":
            self.agent.set_mode(value)
        else:
            self.agent.set_config_option(option, value)
        self._switched[kind] = name
        return Switched(self, " ".join([self.name, *self._switched.values()]))

    def resumed(self) -> None:
        """The agent's session was loaded again (a resume): its next prompt asks it to go on."""
        self._prompted = True

    def attach(self, engine: Engine) -> None:
        self.engine = engine

    # -- the tools' side -----------------------------------------------------

    def _gate_of(self, kind: str) -> Gate:
        gate = self._current
        if gate is None or (gate.kind != kind):
            raise ToolError("no request of the agent waits for this call (the agent's turn has moved on)")
        return gate

    def prompt_tool(self) -> Tool:
        """`agent.prompt`: the operator's text as the agent's next prompt, between its turns."""

        def prompt(text: str) -> str:
            if self._turn_open:
                raise ToolError("the agent's turn is still open: a prompt goes between turns (cancel the turn first)")
            if self._gone is not None:
                raise ToolError(self._gone)
            if not text.strip():
                raise ToolError("the prompt is empty: not sent")
            self._queue_prompt(text)
            return "the agent's next prompt: sent (session/prompt) when the agent is next asked, with the next step"

        return Tool(PROMPT, "the operator's next prompt to the agent, sent between its turns",
                    (Param("text", description="what the agent is asked next"),), prompt)

    def answer_tool(self) -> Tool:
        """`agent.answer`: the agent's answer at the end of its turn, held for the operator."""

        def answer(answer: str, prompt: str | None = None) -> str:
            if prompt is None or not prompt.strip():
                return "accepted: the run ends with this answer"
            if self._turn_open:
                raise ToolError("the agent's turn is still open: a prompt goes between turns")
            if self._gone is not None:
                raise ToolError(self._gone)
            self._queue_prompt(prompt)
            return "the operator's follow-up is the agent's next prompt: sent (session/prompt) with the next step"

        return Tool(ANSWER, "the agent ended its turn: approve ends the run with its answer; a prompt (edit) or the reason "
                            "of a rejection is its next prompt instead", (
                        Param("answer", description="the agent's last message, the run's answer when it ends here"),
                        Param("prompt", required=False, description="the operator's follow-up: the agent's next prompt instead of the end")),
                    answer, kind="irreversible")

    def _queue_prompt(self, text: str) -> None:
        """`text` is the agent's next prompt, sent when the engine next asks the agent (after its limits are checked)."""
        if self._next_prompt is not None:
            raise ToolError("a prompt already waits to be sent to the agent with the next step")
        self._next_prompt = text

    def _start_turn(self, text: str) -> None:
        self._cancelled.clear()
        self._cancel_at = None
        self.agent.prompt(text)
        self._prompted = self._turn_open = True

    def _reasons_append(self, text: str) -> None:
        self._reasons.append(text)

    def _chose_always(self) -> bool:
        engine = self.engine
        if engine is None or not len(engine.events):
            return False
        last = engine.events[len(engine.events) - 1]
        return isinstance(last, ApprovalDecided) and last.choice == "approve_always"

    # -- deciding ------------------------------------------------------------

    def decide(self, view: RunView) -> Decision:
        self._settle(view)
        if self._gone is not None and not self._turn_open:
            raise PolicyError(self._gone, retryable=False)
        if not self._turn_open:
            text, self._next_prompt = self._next_prompt, None
            if text is None:
                held = _after_held_answer(view)
                if held is not None and held[0] == "answer":
                    decision = self._decision([])
                    decision.answer = held[1]
                    return decision
                text = held[1] if held is not None else CONTINUE_TEXT if self._prompted else view.task
            self._start_turn(text)
        deadline = None if view.time_left is None else time.monotonic() + view.time_left
        while True:
            try:
                item = self.agent.inbox.get(timeout=0.25)
            except queue.Empty:
                self._waited(deadline)
                continue
            decision = self._take(item, view)
            if decision is not None:
                return decision

    def _waited(self, deadline: float | None) -> None:
        """Nothing from the agent yet: cancel its turn when the time budget ran out, and give up
        waiting (PolicyError) when it does not end the turn within CANCEL_WAIT of a cancel."""
        now = time.monotonic()
        if deadline is not None and now > deadline and self._cancel_at is None:
            self._notes.append("agent-tui: the time budget ran out while the agent worked: session/cancel sent")
            self.cancel()
        if self._cancel_at is not None and now - self._cancel_at > CANCEL_WAIT:
            self._cancel_at = now  # the next wait gives it as long again
            raise PolicyError(f"session/cancel was sent and the agent has not ended its turn within {CANCEL_WAIT:g} s")

    def _take(self, item: Any, view: RunView) -> Decision | None:
        if isinstance(item, Update):
            return self._update(item.update, view)
        if isinstance(item, Note):
            self._notes.append(item.text)
            return None
        if isinstance(item, Gate):
            return self._gate(item)
        if isinstance(item, TurnEnded):
            return self._turn_ended(item)
        if isinstance(item, Gone):
            self._gone = f"{item.why}; a live agent session cannot be restored"
            self._turn_open = False
            left = self._cut_off("the agent went away")
            if left is not None:
                return left
            raise PolicyError(self._gone, retryable=False)
        return None

    def _update(self, update: Any, view: RunView) -> Decision | None:
        kind = getattr(update, "session_update", "")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            text = _block_text(update.content)
            self._keep(self._said if kind == "agent_message_chunk" else self._thought, text)
            view.stream(text)
        elif kind == "plan":
            self._plan = "\n".join(f"  [{e.status}] {e.content}" for e in update.entries)
        elif kind == "usage_update":
            self._usage = (update.used, update.size)
            self._usage_new = True
            self._cost_update(update.cost)
        elif kind in ("tool_call", "tool_call_update"):
            return self._call_update(update)
        elif kind == "current_mode_update":
            self._notes.append(f"agent-tui: the agent's mode is now {update.current_mode_id}")
        return None

    def _cost_update(self, cost: Any) -> None:
        """The session's cost so far as the agent reports it (ACP's `cost: {amount, currency}`): dollars count
        against the run's cost budget; another currency cannot, and is said once."""
        if cost is None:
            return
        if str(cost.currency).upper() != "USD":
            if not self._currency_said:
                self._currency_said = True
                self._notes.append(f"agent-tui: the agent reports its cost in {cost.currency!r}, not dollars: "
                                   "it is not counted against the run's cost budget")
            return
        if math.isfinite(cost.amount) and cost.amount >= 0:
            self._cost_total = cost.amount

    def _cost_since(self) -> float | None:
        """The dollars the agent reported since the last decision (None until it reports any); a total
        lower than the last (a session loaded again counts from zero) is taken as spent since."""
        total = self._cost_total
        if total is None:
            return None
        if total == self._cost_counted:
            return 0.0
        spent = total - self._cost_counted if total > self._cost_counted else total
        self._cost_counted = total
        return spent

    def _keep(self, into: list[str], text: str) -> None:
        room = MAX_THOUGHT_CHARS - self._kept
        if room <= 0:
            self._dropped += len(text)
            return
        into.append(text[:room])
        self._kept += min(room, len(text))
        self._dropped += max(0, len(text) - room)

    def _call_update(self, update: Any) -> Decision | None:
        call = self._calls.setdefault(update.tool_call_id, Call(update.tool_call_id))
        call.updates += 1
        for name in ("title", "kind", "status"):
            value = getattr(update, name, None)
            if value is not None:
                setattr(call, name, str(value))
        if update.raw_input is not None:
            call.raw_input = update.raw_input
        if update.content is not None:
            call.content = list(update.content)
        if update.raw_output is not None:
            call.raw_output = update.raw_output
        if call.status not in ("completed", "failed") or call.reported:
            return None
        call.reported = True
        text = self._outcome_text(call)
        error = call.status == "failed"
        if call.permission == "refused" and call.status == "completed":
            said = "agent-tui: the agent ran this call after its permission was refused"
            self._notes.append(f"{said} ({call.title or call.id})")
            text = f"{said}\n{text}"
        return self._decision([self._call_action(call, (text, error))])

    def _outcome_text(self, call: Call) -> str:
        parts: list[str] = []
        for item in call.content:
            kind = getattr(item, "type", "")
            if kind == "content":
                parts.append(_block_text(item.content))
            elif kind == "diff":
                parts.append(f"(edit of {item.path})")
            elif kind == "terminal":
                done = getattr(self.agent.served, "terminals", {}).get(item.terminal_id)
                parts.append(done.output if done is not None else f"(terminal {item.terminal_id})")
        if not parts and call.raw_output is not None:
            parts.append(as_json(call.raw_output))
        text = "\n".join(p for p in parts if p)
        return text or f"({call.status}, no output)"

    def _call_action(self, call: Call, outcome: tuple[str, bool]) -> tuple[Action, Gate | None]:
        self._outcomes[call.id] = outcome
        args = {"call": call.id, "title": call.title or call.id, "kind": call.kind, "input": _jsonable(call.raw_input), "status": call.status}
        return Action(tool=CALL, args=args), None

    def _gate(self, gate: Gate) -> Decision:
        params = gate.params
        if gate.kind == "permission":
            tool_call = params["tool_call"]
            call = self._calls.setdefault(tool_call.tool_call_id, Call(tool_call.tool_call_id))
            call.title = tool_call.title or call.title
            call.kind = str(tool_call.kind or call.kind or "")
            if tool_call.raw_input is not None:
                call.raw_input = tool_call.raw_input
            offered = ", ".join(f"{o.name} ({o.kind})" for o in params["options"])
            args: dict[str, Any] = {"call": call.id, "title": call.title or call.id, "kind": call.kind,
                                    "input": _jsonable(call.raw_input if call.raw_input is not None else _diffs(tool_call)), "options": offered}
            diff = next((item for item in tool_call.content or [] if getattr(item, "type", "") == "diff"), None)
            if diff is not None:  # the file and its content after the edit: the approval shows their diff
                args["path"], args["content"] = diff.path, diff.new_text
            params["args"] = args
        elif gate.kind == "terminal":
            args = {"command": params["command"], "args": params["args"]}
            if params.get("cwd"):
                args["cwd"] = params["cwd"]
            if params.get("env"):
                args["env"] = params["env"]
        else:
            args = {k: v for k, v in params.items() if v is not None}
        tool = permission_tool(args["kind"]) if gate.kind == "permission" else GATE_TOOLS[gate.kind]
        return self._decision([(Action(tool=tool, args=args), gate)])

    def _turn_ended(self, ended: TurnEnded) -> Decision | None:
        self._turn_open = False
        self._answer_open("the agent's turn ended")
        left = self._cut_off("the agent's turn ended", keep_said=True)
        if left is not None:
            self.agent.inbox.put(ended)  # the answer comes after the calls it left open
            self._turn_open = True
            return left
        ours = ended.stop_reason == "cancelled" and self._cancelled.is_set()
        if not ours and self._reasons:  # Codex ends its turn "cancelled" at a refusal
            reasons = "\n".join(f"- {r}" for r in self._reasons)
            self._reasons_sent.extend(self._reasons)
            self._reasons = []
            self._notes.append("agent-tui: the operator's reasons were sent to the agent as its next prompt")
            self._keep(self._thought, "".join(self._said).strip() + "\n\n")
            self._said = []
            self.agent.prompt(REASONS_TEXT.format(reasons=reasons))
            self._turn_open = True
            return None
        if ours:
            raise PolicyError("interrupted by the operator: the agent's turn was cancelled (session/cancel)")
        if self._follow_ups:
            text = self._follow_ups.popleft()
            self._notes.append(FOLLOW_UP_NOTE.format(stop=ended.stop_reason, n=self._follow_ups_given - len(self._follow_ups),
                                                     of=self._follow_ups_given))
            return self._decision([(Action(tool=PROMPT, args={"text": text}), None)])
        answer = "".join(self._said).strip()
        self._said = []
        if ended.stop_reason != "end_turn":
            self._notes.append(f"agent-tui: the agent stopped its turn: {ended.stop_reason}")
        answer = answer or f"(the agent ended its turn without a message: {ended.stop_reason})"
        if self._operator_follows_up():
            return self._decision([(Action(tool=ANSWER, args={"answer": answer}), None)], keep_said=True)
        decision = self._decision([])
        decision.answer = answer
        return decision

    def _operator_follows_up(self) -> bool:
        """Whether the operator is there to answer an `agent.answer` (the cockpit, approvals not automatic)."""
        engine = self.engine
        return engine is not None and engine.interactive and engine.approve_mode == "ask"

    def _cut_off(self, why: str, *, keep_said: bool = False) -> Decision | None:
        """The agent's calls still open, each with an unknown outcome, as one decision (None if none)."""
        open_calls = [c for c in self._calls.values() if not c.reported and c.permission != "refused"]
        if not open_calls:
            return None
        actions = []
        for call in open_calls:
            call.reported = True
            actions.append(self._call_action(call, (UNKNOWN.format(why=why), True)))
        return self._decision(actions, keep_said=keep_said)

    def _decision(self, actions: list[tuple[Action, Gate | None]], *, keep_said: bool = False) -> Decision:
        """A decision of these actions (each with the gate it answers) and what was said since the last
        (but the agent's messages when `keep_said`: the answer that follows is made of them)."""
        said = bool(actions) and not keep_said
        parts = ["".join(self._thought).strip(), "".join(self._said).strip() if said else ""]
        if self._plan is not None:
            parts.append(f"Plan:\n{self._plan}")
            self._plan = None
        if self._dropped:
            self._notes.append(f"agent-tui: {self._dropped:,} more characters of the agent's messages were not kept")
        parts.extend(_counted(self._notes))
        self._thought, self._notes, self._kept, self._dropped = [], [], 0, 0
        if said:
            self._said = []
        numbered = []
        for action, gate in actions:
            self._numbered += 1
            call_id = f"acp{self._numbered}"
            numbered.append(action.with_call_id(call_id))
            if gate is not None:
                self._open[call_id] = gate
                self._current = gate
        usage = None
        if self._usage is not None:
            usage = Usage(input_tokens=self._usage[0] if self._usage_new else 0, output_tokens=0, estimated=False)
            self._usage_new = False
        return Decision(thought="\n\n".join(p for p in parts if p), actions=numbered, usage=usage, cost=self._cost_since())

    # -- answers -------------------------------------------------------------

    def _settle(self, view: RunView) -> None:
        """Answer each open gate whose action has its observation and whose tool did not answer it."""
        if not self._open:
            return
        seen: dict[str, Any] = {}
        for step in reversed(view.history[-3:]):
            for index, action in enumerate(step.actions):
                if action.call_id in self._open and index < len(step.observations):
                    seen[action.call_id] = step.observations[index]
        for call_id, observation in seen.items():
            gate = self._open.pop(call_id)
            if not gate.answered:
                self._refuse(gate, observation.text)
        self._current = None

    def _refuse(self, gate: Gate, text: str) -> None:
        from acp import RequestError, schema

        if text.startswith(REJECTED):
            what = gate.params["tool_call"].title if gate.kind == "permission" else (
                f"writing {gate.params['path']}" if gate.kind == "write" else
                f"reading {gate.params['path']}" if gate.kind == "read" else f"running {gate.params['command']}")
            self._reasons.append(f"{what}: {text[len(REJECTED):]}")

        if gate.kind == "permission":
            option = choose(gate.params["options"], "reject_once", "reject_always")
            outcome = (schema.AllowedOutcome(outcome="selected", option_id=option.option_id) if option is not None
                       else schema.DeniedOutcome(outcome="cancelled"))
            call = self._calls.get(gate.params["tool_call"].tool_call_id)
            if call is not None:
                call.permission = "refused"
            gate.answer(schema.RequestPermissionResponse(outcome=outcome))
        else:
            gate.answer(RequestError(-32000, text))

    def _answer_open(self, why: str) -> None:
        """Every gate still open is answered (cancelled, or an error saying `why`)."""
        from acp import RequestError, schema

        for gate in list(self._open.values()):
            if gate.kind == "permission":
                gate.answer(schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled")))
            else:
                gate.answer(RequestError(-32000, f"not done: {why}"))
        self._open.clear()
        self._current = None

    # -- from outside --------------------------------------------------------

    def cancel(self) -> None:
        """`session/cancel` (any thread): the agent's turn ends `cancelled`, and `decide` says so."""
        self._cancel_at = time.monotonic()
        self._cancelled.set()
        self.agent.cancel()

    def close(self) -> None:
        """Answer what is still open, then stop the agent."""
        if self._closed:
            return
        self._closed = True
        if self._turn_open:
            self.agent.cancel()  # session/cancel before the gates are answered, as a client cancels a turn
        self._answer_open("the run ended")
        while True:
            try:
                item = self.agent.inbox.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Gate):
                self._open["left"] = item
                self._answer_open("the run ended")
        self.agent.close()


class Switched:
    """The agent's policy under the name of the mode or model it was switched to."""

    def __init__(self, policy: AcpPolicy, name: str) -> None:
        self.policy = policy
        self.name = name

    def decide(self, view: RunView) -> Decision:
        return self.policy.decide(view)

    def cancel(self) -> None:
        self.policy.cancel()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)


def _after_held_answer(view: RunView) -> tuple[str, str] | None:
    """What the operator made of the agent's answer the last step held (`agent.answer`): ("answer", TEXT)
    to end the run with it, ("prompt", TEXT) when TEXT is the agent's next prompt (a rejection's
    reason, or the prompt edited in that an earlier session took); None when the last step held none."""
    if not view.history:
        return None
    last = view.history[-1]
    if len(last.actions) != 1 or last.actions[0].tool != ANSWER or not last.observations:
        return None
    observed = last.observations[0]
    args = observed.args or last.actions[0].args  # as the operator edited them
    if observed.text.startswith(REJECTED):
        return "prompt", observed.text[len(REJECTED):].strip() or NOT_ACCEPTED_TEXT
    if observed.executed and str(args.get("prompt") or "").strip():
        return "prompt", str(args["prompt"])  # given to an earlier session (a resume), which may not have sent it
    return "answer", str(args.get("answer", ""))


def _counted(notes: list[str]) -> list[str]:
    """Each note once, in order, with how many times it came when more than once (a flood says so once)."""
    counts: dict[str, int] = {}
    for note in notes:
        counts[note] = counts.get(note, 0) + 1
    return [note if n == 1 else f"{note} ({n:,} times)" for note, n in counts.items()]


def _block_text(block: Any) -> str:
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    kind = getattr(block, "type", "content")
    return f"[{kind}]"


def _diffs(tool_call: Any) -> Any:
    out = []
    for item in tool_call.content or []:
        if getattr(item, "type", "") == "diff":
            out.append({"path": item.path, "oldText": item.old_text, "newText": item.new_text})
    return out or None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return as_json(value)
