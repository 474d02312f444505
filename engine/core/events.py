"""The run as a stream of events.

Every event the engine produces is one of the pydantic models below. The
transcript file is a header line followed by these events, one JSON object a
line; run state is a fold over them (see `engine.core.state`).
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, ClassVar, Literal, Union

from typing_extensions import Self

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from engine.core.jsonvalues import call_text

FORMAT_VERSION = 3
"""2: `tool_started` lines (intent before a tool runs). 3: an optional `seal` on the
header and on an "approve always" (engine.sessions.seals); a reader of version 2
refuses a sealed line, so such a reader says the file is newer instead."""

Outcome = Literal["answer", "stopped", "handed_off", "aborted"]
ApprovalChoice = Literal["approve", "approve_always", "reject", "modify", "abort"]
BudgetKind = Literal["steps", "tokens", "cost", "seconds"]


_SHARED_FIELD_SETS: dict[frozenset[str], set[str]] = {}
_SET_DICT, _SET_FIELDS_SET, _SET_EXTRA, _SET_PRIVATE = (
    BaseModel.__dict__[slot].__set__ for slot in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))
"""Each slot of a model set directly (what `object.__setattr__` finds after a look-up in the class's MRO)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    _all_fields: ClassVar[set[str]] = set()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._all_fields = _shared_fields(set(cls.model_fields))
        cls.trusted = staticmethod(_trusted_maker(cls))  # type: ignore[method-assign,assignment]

    def model_post_init(self, context: Any, /) -> None:
        # A replay holds every event of a run: share the (immutable in practice,
        # the models are frozen) field-name sets instead of one per event. This
        # roughly halves the memory of 100,000 events. A line the engine wrote
        # sets every field, so the usual case is the class's own set.
        fields = self.__pydantic_fields_set__
        shared = self._all_fields
        object.__setattr__(self, "__pydantic_fields_set__", shared if len(fields) == len(shared) else _shared_fields(fields))

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """An instance built without validation, for values of the right types made by
        the engine itself (every event of a step goes through here); anything read from
        outside (files, servers, a policy's return value before `check_decision`) is
        validated instead. Missing fields take their defaults (a required one None); the
        fields keep their declared order (the serialiser writes them in the order of
        `__dict__`). Each model class has its own, made by `_trusted_maker`."""
        raise TypeError(f"{cls.__name__} has no fields")


_MISSING = object()


def _trusted_maker(cls: type[_Model]) -> Callable[..., Any]:
    """`cls.trusted`: a function of one keyword argument a field, with the field's default (None
    for a required one, a factory called when it is not given), that fills the instance's slots
    with the fields in declared order. Written out and compiled once a class, as `dataclasses`
    writes an `__init__`: taking the fields as keyword arguments costs half what a generic
    `**values` merged into a template does (four of these a step, every import's events)."""
    env: dict[str, Any] = {"_new": cls.__new__, "_cls": cls, "_fields": cls._all_fields, "_MISSING": _MISSING,
                           "_dict": _SET_DICT, "_fields_set": _SET_FIELDS_SET, "_extra": _SET_EXTRA, "_private": _SET_PRIVATE}
    params, factories, items = [], [], []
    for i, (name, info) in enumerate(cls.model_fields.items()):
        if info.default_factory is not None:
            env[f"_factory{i}"] = info.default_factory
            params.append(f"{name}=_MISSING")
            factories.append(f"    if {name} is _MISSING:\n        {name} = _factory{i}()\n")
        else:
            env[f"_default{i}"] = None if info.is_required() else info.default
            params.append(f"{name}=_default{i}")
        items.append(f"{name!r}: {name}")
    # its own names start with "_", which no field's name can (`PolicySwapped.new` is a field)
    keywords = f"*, {', '.join(params)}" if params else ""  # (a bare `*` with none after it does not compile)
    source = (f"def trusted({keywords}):\n{''.join(factories)}    _made = _new(_cls)\n"
              f"    _dict(_made, {{{', '.join(items)}}})\n    _fields_set(_made, _fields)\n    _extra(_made, None)\n"
              "    _private(_made, None)\n    return _made\n")
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<{cls.__name__}.trusted>", "exec"), env, namespace)  # noqa: S102 (field names only)
    trusted = namespace["trusted"]
    trusted.__doc__ = _Model.trusted.__doc__
    return trusted


def _shared_fields(fields: set[str]) -> set[str]:
    key = frozenset(fields)
    shared = _SHARED_FIELD_SETS.get(key)
    if shared is None:
        shared = _SHARED_FIELD_SETS.setdefault(key, set(key))
    return shared


class Action(_Model):
    """One tool call proposed by a policy."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    args_error: str | None = None
    """Why the policy could not read this call's arguments (a model sent invalid
    JSON, say); the engine answers it with this text and never runs the tool."""

    def with_call_id(self, call_id: str) -> Action:
        """A copy with `call_id` set (the engine numbers each call). The fields are
        already valid, so the copy is made as `model_copy` makes one, without
        its update machinery: this runs once per action."""
        new = Action.__new__(Action)
        data = self.__dict__.copy()
        data["call_id"] = call_id
        object.__setattr__(new, "__dict__", data)
        object.__setattr__(new, "__pydantic_fields_set__", _shared_fields(self.__pydantic_fields_set__ | {"call_id"}))
        object.__setattr__(new, "__pydantic_extra__", None)
        object.__setattr__(new, "__pydantic_private__", None)
        return new

    def signature(self) -> str:
        """A canonical text used to compare actions."""
        import json

        return self.tool + json.dumps(self.args, sort_keys=True, default=str)

    def render(self) -> str:
        """`tool(key=value, ...)` as shown to people and to text-format policies
        (`engine.core.jsonvalues.call_text`, the one way a call is written)."""
        if self.args_error is not None:
            return f"{self.tool}(<unreadable arguments>)"
        return call_text(self.tool, self.args)


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = True


_LIMIT_FIELDS = {"steps": "max_steps", "tokens": "max_tokens", "cost": "max_cost", "seconds": "max_seconds"}


class Budget(_Model):
    """Limits for one run; None means no limit."""

    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    max_seconds: float | None = None
    price_in_per_1k: float = 0.0
    price_out_per_1k: float = 0.0
    warn_at: float = 0.8

    def limit(self, kind: BudgetKind) -> float | None:
        return getattr(self, _LIMIT_FIELDS[kind])

    def with_limit(self, kind: BudgetKind, value: float | None) -> Budget:
        field = {"steps": "max_steps", "tokens": "max_tokens", "cost": "max_cost", "seconds": "max_seconds"}[kind]
        if kind == "steps" and value is not None:
            value = int(value)
        if kind == "tokens" and value is not None:
            value = int(value)
        return self.model_copy(update={field: value})


class ToolInfo(_Model):
    """What the header records of a tool (the callable itself is not saved)."""

    name: str
    description: str = ""
    kind: Literal["ordinary", "irreversible", "exit"] = "ordinary"
    parameters: list[dict[str, Any]] = Field(default_factory=list)
    server: str | None = None
    """The MCP server that provides the tool; None for a scenario's own tools."""


class RuleInfo(_Model):
    tool: str
    effect: Literal["allow", "ask", "deny"]
    args: dict[str, str] = Field(default_factory=dict)
    source: str = ""


_SEALED = ConfigDict(cache_strings="keys")
"""The config of the sealed lines (header, approval): their values stay out of pydantic's cache
of parsed strings (16,384 of them, about 1 MB, for the life of the process), since each seal
reads its line back (`engine.sessions.seals`) and a gateway that seals a run a request would
fill that cache with one-off names and ids."""


class Header(_Model):
    model_config = _SEALED
    type: Literal["header"] = "header"
    format_version: int = FORMAT_VERSION
    scenario: str
    task: str
    task_text: str
    options: dict[str, Any] = Field(default_factory=dict)
    tools: list[ToolInfo] = Field(default_factory=list)
    budget: Budget = Field(default_factory=Budget)
    rules: list[RuleInfo] = Field(default_factory=list)
    policy: str
    repetition_threshold: int | None = 2
    started_at: float = 0.0
    parent: str | None = None
    fork_at: int | None = None
    """A fork: the file it was forked from, and how many of its events were copied."""
    fork_step: int | None = None
    """A fork: the last step kept from the parent (None in forks written before this field)."""
    fork_policy: str | None = None
    """A fork: the policy that takes over from step fork_step + 1 (the header's `policy` ran before)."""
    mcp: list[dict[str, Any]] = Field(default_factory=list)
    """The MCP tool servers the run started (name, command and args or url, trusted,
    timeout; never the environment's values): resume and fork start them again."""
    seal: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """HMAC of this header by the operator's key (`engine.sessions.seals`): its rules are
    believed on resume and fork only with a good seal. Written only when there is one."""


class _Event(_Model):
    at: float = 0.0


class DecisionMade(_Event):
    """The policy decided: a thought and actions, or a final answer, or garbage."""

    type: Literal["decision"] = "decision"
    step: int
    policy: str
    thought: str = ""
    actions: list[Action] = Field(default_factory=list)
    answer: str | None = None
    parse_error: str | None = None
    raw: str | None = None
    usage: Usage = Field(default_factory=Usage)
    duration: float = 0.0
    cost: float | None = None
    """Dollars this decision cost at its own policy's prices; None: the budget's prices apply."""


class ApprovalRequested(_Event):
    """Action `index` of step `step` is held until it is answered: its tool, its arguments, and
    why it is held (`reason`: irreversible, a rule's ask, ...)."""

    type: Literal["approval_requested"] = "approval_requested"
    step: int
    index: int
    tool: str
    args: dict[str, Any]
    reason: str


class ApprovalDecided(_Event):
    """The answer to a held action: its `choice`; a rejection's `reason`, which the policy reads;
    a modify's edited `args`; the `rule` that answered, if one did, and `by` whom (the operator,
    a rule, `--approve`)."""
    model_config = _SEALED

    type: Literal["approval_decided"] = "approval_decided"
    step: int
    index: int
    choice: ApprovalChoice
    reason: str | None = None
    args: dict[str, Any] | None = None
    rule: RuleInfo | None = None
    by: str = "operator"
    seal: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """An "approve always" made on this machine: the HMAC of the event and its run's header by the
    operator's key (`engine.sessions.seals`); written only when there is one."""


class Observed(_Event):
    """The result of one action: a tool execution or an engine-made observation.

    `executed` is true only when the tool's code ran; a rejection, a denial, an
    unknown tool or invalid arguments are observations the policy reads, with
    `executed` false.
    """

    type: Literal["observation"] = "observation"
    step: int
    index: int
    tool: str | None
    args: dict[str, Any] = Field(default_factory=dict)
    text: str
    error: bool = False
    executed: bool = False
    truncated: bool = False
    duration: float = 0.0


class ToolStarted(_Event):
    """A tool is about to run: a line written (and flushed) before its code runs.

    Not an event of the run (the fold, the viewers and event positions never
    see it): a write-ahead note. A transcript whose last word on an action is
    this line stopped while the tool ran, so its outcome is unknown; resume
    answers that action with an "unknown outcome" observation instead of
    running it again.
    """

    type: Literal["tool_started"] = "tool_started"
    step: int
    index: int
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class PolicySwapped(_Event):
    type: Literal["policy_swapped"] = "policy_swapped"
    step: int
    old: str
    new: str


class PolicyFailed(_Event):
    """The policy raised or its backend failed; no decision was recorded."""

    type: Literal["policy_error"] = "policy_error"
    step: int
    policy: str
    message: str


class _BudgetLimit(_Event):
    """A budget's use measured against its limit."""

    type: str
    kind: BudgetKind
    used: float
    limit: float


class BudgetWarning(_BudgetLimit):
    type: Literal["budget_warning"] = "budget_warning"


class BudgetExhausted(_BudgetLimit):
    """A limit was reached in a run that pauses instead of ending (the cockpit)."""

    type: Literal["budget_exhausted"] = "budget_exhausted"


class BudgetExtended(_Event):
    type: Literal["budget_extended"] = "budget_extended"
    kind: BudgetKind
    limit: float


NoteKind = Literal["user", "system", "subagent", "unrecognised"]


class Note(_Event):
    """Text of an imported log that is not a step of its own: a user message in
    the middle of the run, a system prompt, a sub-agent's work (nested under the
    step that started it), or a part the importer could not map, kept raw.

    `step` is the step it follows (0: before the first); `source` says where in
    the original file it was (e.g. "line 12"). The fold only counts its words
    into the context; no state changes.
    """

    type: Literal["note"] = "note"
    step: int
    kind: NoteKind
    text: str
    source: str = ""


class RunEnded(_Event):
    """The run's last event: how it ended (`outcome`), why in words, at which step, and the
    policy's answer when it gave one."""

    type: Literal["run_ended"] = "run_ended"
    outcome: Outcome
    reason: str
    step: int
    answer: str | None = None


Event = Annotated[
    Union[
        DecisionMade,
        ApprovalRequested,
        ApprovalDecided,
        Observed,
        PolicySwapped,
        PolicyFailed,
        BudgetWarning,
        BudgetExhausted,
        BudgetExtended,
        Note,
        RunEnded,
    ],
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
