"""The tools of an ACP run: what agent-tui serves the agent, and the agent's own calls as actions.

- `fs.read_text_file` (ordinary): a file of the session folder, never outside it;
- `fs.write_text_file` (irreversible): a file written, after approval unless a rule allows
  it; the operator may edit the content, and a rejection's reason is the agent's error;
- `terminal.run` (irreversible): a command run to its end in the session folder (not
  through a shell); the operator may edit the command;
- `agent.permission.KIND` (irreversible; KIND the agent's kind of tool: edit, execute, read,
  delete, move, search, fetch, think, switch_mode, other): the agent asks to run one of its
  own tools; approve answers its `allow_once` option (`allow_always` only when the operator
  chose "always", whose rule then allows that kind only), reject its `reject_once`;
- `agent.call` (ordinary): a call the agent ran itself, reported when it ended;
- `agent.prompt` (ordinary, the operator's: take over, or a follow-up given up front): the
  agent's next prompt, sent between its turns (`engine.acp.policy.AcpPolicy.prompt_tool`);
- `agent.answer` (irreversible): the agent ended its turn and its answer waits for the operator
  (`engine.acp.policy.AcpPolicy.answer_tool`): approved, the run ends with it; with a `prompt`
  (edited in) or rejected with a reason, that text is the agent's next prompt, a follow-up.

Each tool answers the agent's request that it stands for (`Gate.answer`) when it runs;
one that does not run (rejected, denied) is answered by `settle` with the observation.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engine.core.tools import Param, Tool, ToolError

if TYPE_CHECKING:
    from engine.acp.items import Gate

READ, WRITE, TERMINAL, PERMISSION, CALL = "fs.read_text_file", "fs.write_text_file", "terminal.run", "agent.permission", "agent.call"
PROMPT, ANSWER = "agent.prompt", "agent.answer"
GATE_TOOLS = {"read": READ, "write": WRITE, "terminal": TERMINAL}
TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
"""ACP's kinds of tool (schema ToolKind): one permission tool each."""


def permission_tool(kind: str | None) -> str:
    """The tool a permission request for a tool of this kind is an action of."""
    return f"{PERMISSION}.{kind if kind in TOOL_KINDS else 'other'}"


MAX_READ_BYTES = 16 << 20
TERMINAL_SECONDS = 300.0
"""How long a command may run before it is killed."""
TERMINAL_OUTPUT_BYTES = 1 << 20
"""The output a terminal keeps when the agent sets no limit (its last bytes)."""


class Confined:
    """Paths as the session folder allows them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()

    def resolve(self, path: str) -> Path:
        given = Path(path)
        return (given if given.is_absolute() else self.folder / given).resolve()

    def inside(self, path: str) -> Path:
        real = self.resolve(path)
        if real != self.folder and self.folder not in real.parents:
            raise ToolError(f"{path} is outside the session folder {self.folder}: not read")
        return real


def gate_tools(folder: Path, gate_of: Callable[[str], Gate], always: Callable[[], bool], served: Callable[[], Any],
               outcome_of: Callable[[str], tuple[str, bool]], edited: Callable[[str], None] = lambda _text: None) -> list[Tool]:
    """The tools, answering the gate `gate_of(kind)` gives (the one the current decision stands for);
    `always()` says whether the operator's answer to the current approval was "approve always";
    `served()` is the connection's `Served` (where a terminal's result is kept); `outcome_of(id)`
    what one of the agent's own calls reported (its text, and whether it failed); `edited(text)` takes
    what to tell the agent of a permission the operator edited (its next prompt says it)."""
    confined = Confined(folder)

    def read_text_file(path: str, line: int | None = None, limit: int | None = None) -> str:
        from acp import RequestError, schema

        gate = gate_of("read")
        try:
            real = confined.inside(path)
            if real.is_dir():
                raise ToolError(f"{path} is a folder")
            try:
                if real.stat().st_size > MAX_READ_BYTES:
                    raise ToolError(f"{path} is over {MAX_READ_BYTES >> 20} MiB: not read")
                content = real.read_text(encoding="utf-8", errors="replace")
                missing = False
            except FileNotFoundError:
                content, missing = "", True  # as an editor does: an empty buffer for a new file
            except OSError as exc:
                raise ToolError(f"{path}: {exc.strerror or exc}") from None
        except ToolError as exc:
            gate.answer(RequestError(-32002 if "outside" in str(exc) else -32603, str(exc)))
            raise
        if line is not None or limit is not None:
            lines = content.splitlines(keepends=True)
            start = max(0, (line or 1) - 1)
            content = "".join(lines[start: None if limit is None else start + limit])
        gate.result = content
        gate.answer(schema.ReadTextFileResponse(content=content))
        if missing:
            return f"no such file: {real} (answered as an empty file, as an editor opens a new one)"
        return content

    def write_text_file(path: str, content: str) -> str:
        from acp import RequestError, schema

        gate = gate_of("write")
        real = confined.resolve(path)
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            real.write_text(content, encoding="utf-8")
        except OSError as exc:
            gate.answer(RequestError(-32603, f"{path}: {exc.strerror or exc}"))
            raise ToolError(f"{path}: {exc.strerror or exc}") from None
        gate.answer(schema.WriteTextFileResponse())
        edited = content != gate.params.get("content") or path != gate.params.get("path")
        return f"wrote {len(content):,} characters to {real}" + (" (as the operator edited it)" if edited else "")

    def run_command(command: str, args: list[Any] | None = None, cwd: str | None = None, env: dict[str, Any] | None = None) -> str:
        from acp import RequestError, schema

        from engine.acp.served import Finished

        gate = gate_of("terminal")
        argv = [command, *[str(a) for a in args or []]]
        where = confined.resolve(cwd) if cwd else confined.folder
        limit = gate.params.get("output_byte_limit") or TERMINAL_OUTPUT_BYTES
        try:
            done = subprocess.run(argv, cwd=where, env={**os.environ, **{str(k): str(v) for k, v in (env or {}).items()}},
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TERMINAL_SECONDS)
            raw, code, signal = done.stdout, (done.returncode if done.returncode >= 0 else None), (None if done.returncode >= 0 else f"signal {-done.returncode}")
        except subprocess.TimeoutExpired as exc:
            raw, code, signal = exc.output or b"", None, "SIGKILL"
        except OSError as exc:
            gate.answer(RequestError(-32603, f"{command}: {exc.strerror or exc}"))
            raise ToolError(f"{command}: {exc.strerror or exc}") from None
        truncated = len(raw) > limit
        output = raw[-limit:].decode("utf-8", "replace")
        terminals = served().terminals
        terminal_id = f"term-{len(terminals) + 1}"
        while terminal_id in terminals:
            terminal_id += "+"
        terminals[terminal_id] = Finished(output, truncated, code, signal)
        gate.answer(schema.CreateTerminalResponse(terminal_id=terminal_id))
        ended = f"exit code {code}" if code is not None else f"killed ({signal})" + (f" after {TERMINAL_SECONDS:g} s" if signal == "SIGKILL" else "")
        return f"$ {shlex.join(argv)}\n{output}{'' if output.endswith(chr(10)) or not output else chr(10)}({ended})"

    def permission(call: str, title: str, kind: str = "", input: Any = None, options: str = "", path: str | None = None,
                   content: str | None = None) -> str:
        from acp import schema

        gate = gate_of("permission")
        offered = gate.params["options"]
        given = {"call": call, "title": title, "kind": kind, "input": input, "options": options, "path": path, "content": content}
        if any(gate.params["args"].get(key) != value for key, value in given.items() if value is not None):
            reject = choose(offered, "reject_once", "reject_always")
            gate.answer(schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=reject.option_id)
                                                         if reject is not None else schema.DeniedOutcome(outcome="cancelled")))
            changed = {key: value for key, value in given.items() if value is not None and gate.params["args"].get(key) != value}
            edited(f"{title}: the operator edited its arguments to {as_json(changed)}; run it with these instead")
            raise ToolError("an agent's permission cannot carry edited arguments: refused, and the edited arguments are "
                            "sent to the agent as its next prompt")
        chosen = choose(offered, "allow_always" if always() else "allow_once", "allow_once", "allow_always")
        if chosen is None:
            gate.answer(schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled")))
            raise ToolError("the agent offered no option that allows the call: answered 'cancelled'")
        gate.answer(schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen.option_id)))
        gate.result = "allowed"
        return f"allowed: answered '{chosen.name}' ({chosen.kind})"

    def agent_call(call: str, title: str, kind: str = "", input: Any = None, status: str = "") -> str:
        try:
            text, error = outcome_of(call)
        except KeyError:
            raise ToolError(f"the agent reported no call {call} (agent.call only records what the agent ran)") from None
        if error:
            raise ToolError(text)
        return text

    call_params = (Param("call", description="the agent's id of the call"), Param("title", description="what the agent says the call does"),
                   Param("kind", required=False, description="the agent's kind of tool (read, edit, execute, ...)"),
                   Param("input", "json", required=False, description="the call's arguments as the agent sent them"))
    return [
        Tool(READ, "a text file of the session folder, read for the agent", (
            Param("path"), Param("line", "integer", required=False), Param("limit", "integer", required=False)), read_text_file),
        Tool(WRITE, "a text file written for the agent", (Param("path"), Param("content")), write_text_file, kind="irreversible"),
        Tool(TERMINAL, "a command run for the agent in the session folder (not through a shell)", (
            Param("command"), Param("args", "json", required=False), Param("cwd", required=False), Param("env", "json", required=False)),
            run_command, kind="irreversible", timeout=TERMINAL_SECONDS + 10),
        *(Tool(permission_tool(kind), f"the agent asks to run one of its own tools (a tool of kind {kind})", (
            *call_params, Param("options", required=False, description="the options the agent offers"),
            Param("path", required=False, description="the file the call edits, when it says (its diff's)"),
            Param("content", required=False, description="the file's content after the call, when it says")), permission, kind="irreversible")
          for kind in TOOL_KINDS),
        Tool(CALL, "a call the agent ran itself, with its result", (*call_params, Param("status", required=False)), agent_call),
    ]


def choose(options: list[Any], *kinds: str) -> Any:
    """The first offered option of the first kind of `kinds` that is offered."""
    for kind in kinds:
        for option in options:
            if str(option.kind) == kind:
                return option
    return None


def as_json(value: Any) -> str:
    """A value the agent sent, as JSON text (what JSON cannot hold, as its text)."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
