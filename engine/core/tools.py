"""Tools: a spec, argument validation, and execution that never raises.

Every failure (unknown tool, bad arguments, an exception inside the tool, a
timeout) becomes an `ToolResult` with `error=True` whose text the policy reads.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from engine.core.deadline import DeadlineExceeded, call_with_deadline
from engine.core.events import ToolInfo

ToolKind = Literal["ordinary", "irreversible", "exit"]
ParamType = Literal["string", "integer", "number", "boolean", "json"]
"""`json`: any JSON value, taken as it is (the tools of an imported log, whose types are not known)."""

DEFAULT_TIMEOUT = 10.0
DEFAULT_OBSERVATION_CAP = 4000


class ToolError(Exception):
    """Raised by a tool to report a failure in its own words."""


class ToolFault(ToolError):
    """The tool's provider failed (an MCP server died, hung or sent garbage).

    The observation is an error like any other, and the run pauses (the
    cockpit) or stops (headless) so the operator sees it.
    """


@dataclass(frozen=True)
class Param:
    name: str
    type: ParamType = "string"
    description: str = ""
    required: bool = True
    enum: tuple[str, ...] | None = None

    def info(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required}
        if self.description:
            data["description"] = self.description
        if self.enum:
            data["enum"] = list(self.enum)
        return data


@dataclass(frozen=True)
class Tool:
    """A tool a policy may call.

    `kind` is "ordinary", "irreversible" (asks for approval by default) or
    "exit" (ends the run and is never executed). An exit tool's `outcome` says
    how the run ends ("answer" or "handed_off") and `answer_param` names the
    argument that carries the answer or the reason.
    """

    name: str
    description: str
    params: tuple[Param, ...] = ()
    fn: Callable[..., Any] | None = None
    kind: ToolKind = "ordinary"
    timeout: float | None = DEFAULT_TIMEOUT
    outcome: Literal["answer", "handed_off"] = "answer"
    answer_param: str | None = None
    extra_args: bool = False
    """Accept arguments not in `params`, as they are (the tools of an imported log, known only from their calls)."""
    input_schema: dict[str, Any] | None = field(default=None, compare=False)
    """A JSON schema for the arguments; when set it, not `params`, checks them
    (`engine.core.schema`): an MCP server's `inputSchema`, or the `parameters` of
    a tool an agent declared in its request to the gateway."""
    server: str | None = None
    """The MCP server that provides the tool (the tool panel groups by it)."""

    @classmethod
    def exit(cls, name: str, description: str, answer: Param, outcome: Literal["answer", "handed_off"] = "answer") -> Tool:
        """An exit tool whose one parameter, `answer`, carries the answer (or, handed off, the reason)."""
        return cls(name, description, (answer,), kind="exit", outcome=outcome, answer_param=answer.name)

    def info(self) -> ToolInfo:
        return ToolInfo(
            name=self.name,
            description=self.description,
            kind=self.kind,
            parameters=[p.info() for p in self.params] if self.input_schema is None else schema_params(self.input_schema),
            server=self.server,
        )

    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON schema object (for function-calling models)."""
        if self.input_schema is not None:
            return self.input_schema
        props: dict[str, Any] = {}
        for p in self.params:
            prop: dict[str, Any] = {} if p.type == "json" else {"type": p.type}
            if p.description:
                prop["description"] = p.description
            if p.enum:
                prop["enum"] = list(p.enum)
            props[p.name] = prop
        return {
            "type": "object",
            "properties": props,
            "required": [p.name for p in self.params if p.required],
        }


@dataclass
class ToolResult:
    text: str
    error: bool = False
    executed: bool = False
    truncated: bool = False
    duration: float = 0.0
    fault: bool = False


def schema_params(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON schema's top-level properties as the header's parameter list."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return []
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    out = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        kind = prop.get("type", "any")
        shown = kind if isinstance(kind, str) else "/".join(map(str, kind)) if isinstance(kind, list) else "any"
        item: dict[str, Any] = {"name": str(name), "type": shown, "required": name in required}
        if isinstance(prop.get("description"), str):
            item["description"] = prop["description"]
        out.append(item)
    return out


_NUMBERS: dict[str, tuple[type[int] | type[float], str]] = {
    "integer": (int, "expected an integer"),
    "number": (float, "expected a number"),
}
"""A numeric parameter type: the Python type its value becomes, and the message when it cannot."""


def _number(value: Any, kind: type[int] | type[float], message: str) -> int | float:
    """An int as it is, a float (a whole one for an integer) or a number's text; never a boolean."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and (kind is float or value.is_integer()):
        return kind(value)
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            pass
    raise ValueError(message)


def _coerce(param: Param, value: Any) -> Any:
    if param.type == "json":
        return value
    if param.type == "string":
        if isinstance(value, (dict, list)):
            raise ValueError("expected a string")
        if isinstance(value, bool):
            return "true" if value else "false"
        return value if isinstance(value, str) else str(value)
    if param.type in _NUMBERS:
        return _number(value, *_NUMBERS[param.type])
    if param.type == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ValueError("expected true or false")
    raise ValueError(f"unsupported type {param.type}")


def validate_args(tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
    """Check and coerce `args` against the tool's parameters.

    Raises ValueError with a message naming every problem.
    """
    if not isinstance(args, dict):
        raise ValueError("arguments must be an object of name=value pairs")
    if tool.input_schema is not None:
        from engine.core.schema import check_args

        return check_args(tool.input_schema, args)
    known = {p.name: p for p in tool.params}
    problems: list[str] = []
    clean: dict[str, Any] = {}
    for key in args:
        if key not in known:
            if tool.extra_args:
                clean[key] = args[key]
            else:
                problems.append(f"unknown argument '{key}'")
    for p in tool.params:
        if p.name not in args or args[p.name] is None:
            if p.required:
                problems.append(f"missing argument '{p.name}' ({p.type})")
            continue
        try:
            value = _coerce(p, args[p.name])
        except ValueError as exc:
            problems.append(f"argument '{p.name}': {exc}")
            continue
        if p.enum and value not in p.enum:
            problems.append(f"argument '{p.name}' must be one of {', '.join(p.enum)}")
            continue
        clean[p.name] = value
    if problems:
        expected = ", ".join(f"{p.name}: {p.type}" + ("" if p.required else "?") for p in tool.params)
        raise ValueError("; ".join(problems) + f". Expected {tool.name}({expected})")
    return clean


def cap_text(text: str, cap: int | None) -> tuple[str, bool]:
    """Cut `text` to `cap` characters with a visible marker saying how much was cut."""
    if cap is None or len(text) <= cap:
        return text, False
    cut = len(text) - cap
    return text[:cap] + f"\n[... truncated: {cut} more characters]", True


def unknown_tool_text(name: str, tools: dict[str, Tool]) -> str:
    return f"ERROR: tool '{name}' does not exist, available: {', '.join(sorted(tools))}"


def execute(
    tool: Tool,
    args: dict[str, Any],
    *,
    cap: int | None = DEFAULT_OBSERVATION_CAP,
    clock: Callable[[], float] = time.monotonic,
) -> ToolResult:
    """Run a tool on already-validated arguments; never raises."""
    start = clock()
    if tool.fn is None:
        return ToolResult(f"ERROR: tool '{tool.name}' cannot be executed", error=True)
    try:
        if tool.timeout is None:
            value = tool.fn(**args)
        else:
            value = call_with_deadline(tool.fn, args, tool.timeout)
    except DeadlineExceeded:
        return ToolResult(
            f"ERROR: tool '{tool.name}' timed out after {tool.timeout:g} s",
            error=True,
            executed=True,
            duration=clock() - start,
        )
    except ToolFault as exc:
        result = _failed(f"ERROR: {exc}", cap, clock() - start)
        result.fault = True
        return result
    except ToolError as exc:
        return _failed(f"ERROR: {exc}", cap, clock() - start)
    except (Exception, SystemExit) as exc:  # a broken tool must not break the run
        detail = str(exc)
        return _failed(f"ERROR: {type(exc).__name__}" + (f": {detail}" if detail else ""), cap, clock() - start)
    duration = clock() - start
    text = value if isinstance(value, str) else str(value)
    text, truncated = cap_text(text, cap)
    return ToolResult(text, executed=True, truncated=truncated, duration=duration)


def _failed(message: str, cap: int | None, duration: float) -> ToolResult:
    text, truncated = cap_text(message, cap)
    return ToolResult(text, error=True, executed=True, truncated=truncated, duration=duration)


@dataclass(frozen=True)
class Progress:
    """A progress notification of a running call (an MCP server's `notifications/progress`)."""

    server: str
    tool: str
    progress: float
    total: float | None
    message: str | None
