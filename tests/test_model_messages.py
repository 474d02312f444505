"""The model policy builds each request from the previous one plus the new messages."""

from __future__ import annotations

import random

import pytest

from engine import Action, Param, Tool
from engine.core.policy import ObservationView, RunView, StepView
from engine.model import wire
from engine.model.messages import MessageLog

TOOLS = [Tool("lookup", "Look a key up.", (Param("key"),), lambda key: key), Tool("pay", "Pay.", (Param("amount", "integer"),), lambda amount: amount, kind="irreversible")]


def random_step(rng: random.Random, n: int) -> StepView:
    kind = rng.random()
    if kind < 0.1:
        return StepView(n, "p", "done", [], f"answer {n}", None, None)
    if kind < 0.2:
        return StepView(n, "p", "", [], None, "ERROR: invalid format", f"garbled {n}", [ObservationView(None, {}, "ERROR: invalid format", True, False)])
    calls = [
        Action(tool=rng.choice(["lookup", "pay"]), args={"key": f"k{n}"} if rng.random() < 0.7 else {"amount": n},
               call_id=rng.choice([None, f"s{n}.0", "dup", "bad id!"]))
        for _ in range(rng.randint(1, 2))
    ]
    return StepView(n, "p", f"thinking about {n}", calls, None, None, None)


def observe(rng: random.Random, step: StepView) -> None:
    for a in step.actions:
        if rng.random() < 0.9:
            args = dict(a.args) if rng.random() < 0.8 else {"amount": 7}
            step.observations.append(ObservationView(a.tool, args, f"result of {a.tool} {step.step}", rng.random() < 0.2, True))


@pytest.mark.parametrize("mode", ["tools", "text"])
def test_incremental_messages_equal_a_full_build_at_every_step(mode):
    rng = random.Random(12)
    log = MessageLog(mode)
    history: list[StepView] = []
    for n in range(1, 300):
        view = RunView(task="Find the keys.", tools=TOOLS, history=history, step=n)
        assert log.messages(view) == wire.build_messages(view, mode), n
        sent = " ".join(wire_words(m) for m in wire.build_messages(view, mode))
        assert log.sent_words == len(sent.split())
        step = random_step(rng, n)
        history.append(step)
        # The decision is in the history before its observations arrive.
        view = RunView(task="Find the keys.", tools=TOOLS, history=history, step=n + 1)
        assert log.messages(view) == wire.build_messages(view, mode)
        observe(rng, step)


def wire_words(message: dict) -> str:
    from engine.model.messages import message_words

    return message_words(message)


def test_a_history_that_is_not_the_one_kept_is_built_again():
    log = MessageLog("tools")
    steps = [StepView(n, "p", f"t{n}", [Action(tool="lookup", args={"key": str(n)}, call_id="same")], None, None, None) for n in range(1, 6)]
    for s in steps:
        s.observations.append(ObservationView("lookup", dict(s.actions[0].args), "ok", False, True))
    view = RunView(task="t", tools=TOOLS, history=steps, step=6)
    assert log.messages(view) == wire.build_messages(view, "tools")
    # A fork: the same steps up to 3, then other ones.
    forked = [*steps[:3], StepView(4, "q", "other", [], "fine", None, None)]
    view = RunView(task="t", tools=TOOLS, history=forked, step=5)
    assert log.messages(view) == wire.build_messages(view, "tools")
    shorter = RunView(task="t", tools=TOOLS, history=steps[:2], step=3)
    assert log.messages(shorter) == wire.build_messages(shorter, "tools")
    other_tools = RunView(task="t", tools=TOOLS[:1], history=steps, step=6)
    assert log.messages(other_tools) == wire.build_messages(other_tools, "tools")


def test_the_model_policy_reuses_the_messages_of_finished_steps():
    from engine.model.policy import ModelConfig, ModelPolicy

    policy = ModelPolicy(ModelConfig(model="m", base_url="http://127.0.0.1:9/v1"))
    history: list[StepView] = []
    built: list[int] = []
    real = wire.step_messages

    def counting(s, *args):
        built.append(s.step)
        return real(s, *args)

    import engine.model.messages as messages

    messages.step_messages = counting
    try:
        for n in range(1, 51):
            step = StepView(n, "p", f"t{n}", [Action(tool="lookup", args={"key": str(n)})], None, None, None)
            step.observations.append(ObservationView("lookup", {"key": str(n)}, f"v{n}", False, True))
            history.append(step)
            body = policy.request_body(RunView(task="t", tools=TOOLS, history=history, step=n + 1))
            assert body["messages"] == wire.build_messages(RunView(task="t", tools=TOOLS, history=history, step=n + 1), "tools")
    finally:
        messages.step_messages = real
    # Each step is built once when it finishes, and once more while it is the last one.
    assert len(built) == 50 + 49


class _CountingIds(dict):
    """The kept call ids, counting every id read (a copy reads them all)."""

    reads = 0

    def __iter__(self):
        type(self).reads += len(self)
        return super().__iter__()

    def __getitem__(self, key):
        type(self).reads += 1
        return super().__getitem__(key)


def test_a_request_reads_the_ids_of_the_last_step_only():
    """What a request costs grows with its new messages, not with the run: the ids of
    the 300 finished steps are not copied for the one still open."""
    log = MessageLog("tools")
    history: list[StepView] = []
    for n in range(1, 301):
        step = StepView(n, "p", f"t{n}", [Action(tool="lookup", args={"key": str(n)})], None, None, None)
        step.observations.append(ObservationView("lookup", {"key": str(n)}, f"v{n}", False, True))
        history.append(step)
    log.messages(RunView(task="t", tools=TOOLS, history=history, step=301))
    log._ids = _CountingIds(log._ids)
    history.append(StepView(301, "p", "t301", [Action(tool="lookup", args={"key": "a"}), Action(tool="pay", args={"amount": 3})], None, None, None))
    view = RunView(task="t", tools=TOOLS, history=history, step=302)
    for _ in range(3):  # the open step, asked for again: the same messages, the same ids
        assert log.messages(view) == wire.build_messages(view, "tools")
    # Each id of a new step is read twice (the call, then its result): step 300's once as it
    # is kept, step 301's in each request. A copy of the kept ids would read 300 a request.
    assert _CountingIds.reads <= 2 * 1 + 3 * 2 * 2
    assert len(log._ids) == len(log._used) == 300  # steps 1-300 kept; the open step's ids taken back


def test_a_request_changes_the_list_it_returned_last_in_place():
    """The messages go on from one request to the next in one list: the last step's
    messages are replaced and the new ones added, and nothing before them is copied."""
    log = MessageLog("tools")
    history: list[StepView] = []
    sent: list[list] = []
    for n in range(1, 40):
        step = StepView(n, "p", f"t{n}", [Action(tool="lookup", args={"key": str(n)})], None, None, None)
        history.append(step)
        view = RunView(task="t", tools=TOOLS, history=history, step=n + 1)
        sent.append(log.messages(view))
        assert sent[-1] == wire.build_messages(view, "tools")
        step.observations.append(ObservationView("lookup", {"key": str(n)}, f"v{n}", False, True))
        assert log.messages(view) == wire.build_messages(view, "tools")
    assert all(messages is sent[0] for messages in sent)
    shorter = RunView(task="t", tools=TOOLS, history=history[:5], step=6)  # another history: built anew
    assert log.messages(shorter) is not sent[0] and log.messages(shorter) == wire.build_messages(shorter, "tools")
