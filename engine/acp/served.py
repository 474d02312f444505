"""What agent-tui serves an ACP agent (the SDK's `Client` side), on the connection's loop.

Each request that needs the run (a permission, a file read or write, a new
terminal) becomes a `Gate` in the agent's inbox and waits for its answer; the
policy turns the gate into an action, and the action's tool or the engine's
decision answers it. A terminal's command runs to its end as that action (its
tool), so `terminal/output`, `terminal/wait_for_exit`, `terminal/kill` and
`terminal/release` are answered here from what it left.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from engine.acp.items import Gate, Note, Update


@dataclass
class Finished:
    """A terminal's command that ran (or was refused): what `terminal/*` answers from."""

    output: str
    truncated: bool
    exit_code: int | None
    signal: str | None = None


class Served:
    """The handlers for one agent (`engine.acp.connection.AgentProcess`: its `inbox` takes the gates)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.terminals: dict[str, Finished] = {}

    async def _gate(self, kind: str, params: dict[str, Any]) -> Any:
        gate = Gate(kind, params)
        self.agent.inbox.put(gate)
        return await asyncio.wrap_future(gate.future)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        return await self._gate("permission", {"tool_call": tool_call, "options": options})

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.agent.inbox.put(Update(update))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        return await self._gate("write", {"path": path, "content": content})

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any) -> Any:
        return await self._gate("read", {"path": path, "line": line, "limit": limit})

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None, env: list[Any] | None = None,
                              cwd: str | None = None, output_byte_limit: int | None = None, **kwargs: Any) -> Any:
        variables = {v.name: v.value for v in env or []}
        return await self._gate("terminal", {"command": command, "args": list(args or []), "env": variables, "cwd": cwd,
                                             "output_byte_limit": output_byte_limit})

    def _finished(self, terminal_id: str) -> Finished:
        from acp import RequestError

        found = self.terminals.get(terminal_id)
        if found is None:
            raise RequestError.invalid_params({"details": f"no terminal {terminal_id}"})
        return found

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        done = self._finished(terminal_id)
        status = schema.TerminalExitStatus(exit_code=done.exit_code, signal=done.signal)
        return schema.TerminalOutputResponse(output=done.output, truncated=done.truncated, exit_status=status)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        done = self._finished(terminal_id)
        return schema.WaitForTerminalExitResponse(exit_code=done.exit_code, signal=done.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self._finished(terminal_id)  # its command has ended already
        return None

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminals.pop(terminal_id, None)
        return None

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        from acp import RequestError

        self.agent.inbox.put(Note("agent-tui: the agent asked the operator a question (elicitation), which agent-tui does not offer (refused)"))
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        self.agent.inbox.put(Note(f"agent-tui: the agent sent an extension request '_{method}' (answered: method not found)"))
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None
