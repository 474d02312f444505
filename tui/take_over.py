"""The cockpit's take-over and hand-back: the operator types steps, then gives control back.

`TakeOverCockpit` is a base of `tui.app.CockpitApp`. Control goes back to the
policy the operator took over from, else to the first policy the run offers;
a run that offers none but the operator (a fork of an imported log without a
configured model) has nobody to hand back to: `h` is not offered there, and
the take-over form's "one step, then hand back" keeps the operator in control
and says so (it used to end the cockpit with a traceback).
"""

from __future__ import annotations

from typing import Callable

from textual.app import App

from engine.core.engine import Engine
from engine.core.operating import Operating
from engine.core.policy import Policy
from engine.sessions.run import Run
from tui.screens.forms import TakeOver, TakeOverScreen

NOBODY_TO_HAND_BACK = "There is no policy to hand back to: you stay in control (p lists the policies)."


class TakeOverCockpit(App[None]):
    """Take over and hand back; the app sets these attributes and methods."""

    run_: Run
    engine: Engine
    _previous_policy: Policy | None
    human_in_control: bool
    policy_names: Callable[[], list[str]]
    make_policy: Callable[[str], Policy]
    start: Callable[[str, Callable[[Operating], object]], None]

    def action_take_over(self) -> None:
        self.push_screen(TakeOverScreen(list(self.engine.tools.values()), stay=False), self._took_over)

    def _took_over(self, take: TakeOver | None) -> None:
        if take is None:
            return
        human = self.run_.human
        if not self.human_in_control:
            self._previous_policy = self.engine.policy
        back_to = None if take.stay else self._fallback_policy()
        if not take.stay and back_to is None:
            self.notify(NOBODY_TO_HAND_BACK, severity="warning", markup=False)

        engine = self.engine

        def op(_operating: Operating) -> None:
            if engine.policy is not human:
                engine.swap_policy(human)
            human.supply(take.decision)
            engine.step()
            if back_to is not None:
                engine.swap_policy(back_to)

        self.start("take over", op)

    def _fallback_name(self) -> str | None:
        """The policy the operator hands back to: the one taken over from, else the first
        one there is; None when there is none (a fork of an imported log has no scripted
        policy, and no model unless one is configured)."""
        if self._previous_policy is not None and self._previous_policy is not self.run_.human:
            return self._previous_policy.name
        return next((name for name in self.policy_names() if name != "human"), None)

    def _fallback_policy(self) -> Policy | None:
        if self._previous_policy is not None and self._previous_policy is not self.run_.human:
            return self._previous_policy
        name = self._fallback_name()
        return self.make_policy(name) if name is not None else None

    def action_hand_back(self) -> None:
        policy = self._fallback_policy()
        if policy is None:
            self.notify(NOBODY_TO_HAND_BACK, severity="warning", markup=False)
            return
        engine = self.engine
        self.start(f"hand back to {policy.name}", lambda _operating: engine.swap_policy(policy))
