"""An ACP agent for tests, on the `acp` SDK's agent side: `python tests/support/fake_acp_agent.py BEHAVIOUR`.

Each prompt is answered by one behaviour (`a,b`: the first prompt by `a`, the next ones by `b`):
- `terminal`: runs `sh -c 'echo made > made.txt; echo done'` through the client's terminal,
  then says the terminal's output;
- `unknown`: sends the client a request and a notification of methods ACP does not have;
- `malformed`: writes lines that are not JSON, and JSON that is not JSON-RPC, on stdout;
- `flood`: 5,000 message chunks and 2,000 updates of one call, then ends its turn;
- `crash`: starts a call, then exits (code 3) before saying how it ended;
- `anyway`: asks permission for a call, then reports it completed whatever the answer;
- `wait`: waits for `session/cancel`, then ends its turn `cancelled`;
- `ask`: shows its plan and its usage, asks permission (allow always, allow once, reject) for
  a call, and says the option it got;
- `echo`: says "you said: " and the prompt's text, and its mode when it has one;
- `costly`: reports its usage with the session's cost so far (a quarter of a dollar more each
  prompt, in `FAKE_ACP_CURRENCY`, default USD), then echoes.

With `FAKE_ACP_MODES=a,b` in its environment the session offers these modes (the first
current) and `session/set_mode` switches them (but to one named `broken...`); with `FAKE_ACP_MODELS=x,y` its config option
`model` (category "model") offers these models and `session/set_config_option` switches it;
with `FAKE_ACP_LOAD=1` it offers `loadSession` (`lost`: and refuses it, as Gemini CLI does a session it has not kept), and `session/load` replays a message of the
session, then answers the next prompts as its second behaviour (and `echo` says it loaded).
With `FAKE_ACP_PROMPTS=FILE` it appends each prompt's text to FILE, a line each.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import acp
from acp import schema

BEHAVIOURS = (sys.argv[1] if len(sys.argv) > 1 else "terminal").split(",")
MODES = [m for m in os.environ.get("FAKE_ACP_MODES", "").split(",") if m]
MODELS = [m for m in os.environ.get("FAKE_ACP_MODELS", "").split(",") if m]
FLOOD_CHUNKS = 5000


class FakeAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.cancelled = asyncio.Event()
        self.prompts = 0
        self.mode = MODES[0] if MODES else None
        self.text = ""
        self.model = MODELS[0] if MODELS else None
        self.loaded: str | None = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any) -> Any:
        caps = schema.AgentCapabilities(load_session=os.environ.get("FAKE_ACP_LOAD") in ("1", "lost"))
        return schema.InitializeResponse(protocol_version=protocol_version, agent_capabilities=caps,
                                         agent_info=schema.Implementation(name="fake-acp", version="1"))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        if os.environ.get("FAKE_ACP_LOAD") == "lost":
            print("Error handling request {\n  details: 'No previous sessions found'\n}", file=sys.stderr, flush=True)
            raise acp.RequestError.internal_error({"details": "No previous sessions found for this project."})
        self.loaded, self.prompts = session_id, 1
        await self.say("an old message of the session, replayed")
        return schema.LoadSessionResponse()

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        self.cwd = cwd
        modes = None if not MODES else schema.SessionModeState(
            current_mode_id=MODES[0], available_modes=[schema.SessionMode(id=m, name=m.title()) for m in MODES])
        return schema.NewSessionResponse(session_id="s1", modes=modes, config_options=self.config() or None)

    def config(self) -> list[Any]:
        if not MODELS:
            return []
        return [schema.SessionConfigOptionSelect(id="model", name="Model", category="model", type="select", current_value=self.model,
                                                 options=[schema.SessionConfigSelectOption(value=m, name=m.upper()) for m in MODELS])]

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **kwargs: Any) -> Any:
        if config_id != "model" or value not in MODELS:
            raise acp.RequestError.invalid_params({"configId": config_id, "value": value})
        self.model = value
        return schema.SetSessionConfigOptionResponse(config_options=self.config())

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any:
        if mode_id not in MODES or mode_id.startswith("broken"):
            raise acp.RequestError.invalid_params({"modeId": mode_id})
        self.mode = mode_id
        return schema.SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.set()

    async def say(self, text: str) -> None:
        await self.conn.session_update("s1", acp.update_agent_message_text(text))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        self.text = "".join(getattr(block, "text", "") for block in prompt)
        if os.environ.get("FAKE_ACP_PROMPTS"):
            with open(os.environ["FAKE_ACP_PROMPTS"], "a") as f:
                f.write(self.text + "\n")
        behaviour = BEHAVIOURS[min(self.prompts, len(BEHAVIOURS) - 1)]
        self.prompts += 1
        self.cancelled.clear()
        await getattr(self, f"_{behaviour}")()
        return schema.PromptResponse(stop_reason="cancelled" if self.cancelled.is_set() else "end_turn")

    async def _terminal(self) -> None:
        made = await self.conn.create_terminal(session_id="s1", command="sh", args=["-c", "echo made > made.txt; echo done"])
        exited = await self.conn.wait_for_terminal_exit(session_id="s1", terminal_id=made.terminal_id)
        output = await self.conn.terminal_output(session_id="s1", terminal_id=made.terminal_id)
        await self.conn.release_terminal(session_id="s1", terminal_id=made.terminal_id)
        await self.say(f"exit {exited.exit_code}: {output.output.strip()}")

    async def _unknown(self) -> None:
        raw = self.conn._conn  # the SDK's JSON-RPC connection: a method ACP does not have
        try:
            await raw.send_request("made/up", {"x": 1})
        except Exception as exc:
            await self.say(f"refused: {exc}. ")
        await raw.send_notification("made/up/note", {"x": 2})
        await self.say("still here")

    async def _malformed(self) -> None:
        await self.say("before ")
        await asyncio.sleep(0.05)
        sys.stdout.buffer.write(b'{"jsonrpc": "2.0", "method": broken\nnot json at all\n{"jsonrpc": "2.0", "neither": true}\n')
        sys.stdout.buffer.flush()
        await asyncio.sleep(0.05)
        await self.say("after")

    async def _flood(self) -> None:
        for n in range(FLOOD_CHUNKS):
            await self.say(f"{n} ")
        await self.conn.session_update("s1", acp.start_tool_call("c1", "count", kind="other", status="in_progress"))
        for n in range(2000):
            await self.conn.session_update("s1", acp.update_tool_call("c1", status="in_progress", raw_output={"n": n}))
        await self.conn.session_update("s1", acp.update_tool_call("c1", status="completed", raw_output={"n": "last"}))

    async def _crash(self) -> None:
        await self.say("starting")
        await self.conn.session_update("s1", acp.start_tool_call("c1", "delete the cache", kind="delete", status="in_progress"))
        await asyncio.sleep(0.1)
        os._exit(3)

    async def _anyway(self) -> None:
        call = schema.ToolCallUpdate(tool_call_id="c1", title="rm -rf build", kind="execute", raw_input={"command": "rm -rf build"})
        options = [schema.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                   schema.PermissionOption(option_id="no", name="Reject", kind="reject_once")]
        answer = await self.conn.request_permission(session_id="s1", tool_call=call, options=options)
        await self.conn.session_update("s1", acp.update_tool_call("c1", status="completed", raw_output="removed build/"))
        await self.say(f"answered {answer.outcome.outcome}")

    async def _wait(self) -> None:
        await self.conn.session_update("s1", acp.start_tool_call("c1", "a long job", kind="execute", status="in_progress"))
        await self.cancelled.wait()
        await self.conn.session_update("s1", acp.update_tool_call("c1", status="failed", raw_output="cancelled"))

    async def _ask(self) -> None:
        entries = [schema.PlanEntry(content="look around", priority="high", status="completed"),
                   schema.PlanEntry(content="clean up", priority="medium", status="pending")]
        await self.conn.session_update("s1", acp.update_plan(entries))
        await self.conn.session_update("s1", schema.UsageUpdate(session_update="usage_update", used=1234, size=200000))
        call = schema.ToolCallUpdate(tool_call_id="c1", title="tidy", kind="delete", raw_input={"path": "tmp/"})
        options = [schema.PermissionOption(option_id="always", name="Always", kind="allow_always"),
                   schema.PermissionOption(option_id="once", name="Once", kind="allow_once"),
                   schema.PermissionOption(option_id="no", name="No", kind="reject_once")]
        answer = await self.conn.request_permission(session_id="s1", tool_call=call, options=options)
        await self.say(getattr(answer.outcome, "option_id", answer.outcome.outcome))

    async def _costly(self) -> None:
        cost = schema.Cost(amount=0.25 * self.prompts, currency=os.environ.get("FAKE_ACP_CURRENCY", "USD"))
        await self.conn.session_update("s1", schema.UsageUpdate(session_update="usage_update", used=1000 * self.prompts, size=200000,
                                                                cost=cost))
        await self._echo()

    async def _echo(self) -> None:
        await self.say(f"you said: {self.text}" + (f" (mode {self.mode})" if self.mode else "") + (f" (model {self.model})" if self.model else "")
                       + (f" (loaded {self.loaded})" if self.loaded else ""))


if __name__ == "__main__":
    asyncio.run(acp.run_agent(FakeAgent()))
