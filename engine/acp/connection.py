"""One ACP agent as a child process, spoken to through the `acp` SDK on an event-loop thread.

`AgentProcess` starts the agent (`initialize` with the file-system and terminal
capabilities, then `session/new`), sends prompts and `session/cancel`, and puts
everything the agent says into `inbox`, in order, for the policy's thread:
`Update`s (the session's notifications), `Gate`s (a request that waits for an
answer: a permission, a file read or write, a command), `Note`s (what the agent
did wrong: an unknown method, a line that is not JSON-RPC) and, at the end of a
turn, `TurnEnded`, or `Gone` when the agent's process went away. A gate is
answered once (`Gate.answer`), from any thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import shlex
import shutil
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any, Sequence

from engine.acp.items import Gone, Item, Note, TurnEnded, Update
from engine.acp.served import Served
from engine.mcp.guard import NOISE

GUARD = Path(__file__).resolve().parents[1] / "mcp" / "guard.py"
"""The guard the agent starts under, as an MCP server does (engine/mcp/guard.py): it dies with
agent-tui, a line over MAX_LINE_BYTES stops it, text that is not JSON-RPC goes to its log."""
MAX_LINE_BYTES = 16 * 1024 * 1024
START_TIMEOUT = 60.0
"""Seconds the agent has to answer `initialize` and `session/new`."""
STDERR_TAIL_BYTES = 2000
NO_LOAD = "the agent does not offer session/load (loadSession), so its session cannot be loaded again"


class AgentStartError(Exception):
    """The agent could not be started or did not open a session (its words, one line)."""




def agent_argv(command: str | Sequence[str]) -> list[str]:
    """The agent's command line as a list (a string is split as a shell would, without a shell);
    AgentStartError for an empty one or a program that is not found."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    except ValueError as exc:
        raise AgentStartError(f"the agent's command cannot be read: {exc}") from None
    if not argv:
        raise AgentStartError("the agent's command is empty")
    if shutil.which(argv[0]) is None:
        raise AgentStartError(f"the agent's command is not found: {argv[0]}")
    return argv


class _ParseErrors(logging.Filter):
    """The SDK logs a line it cannot parse (and a failure of its own handlers) on the root logger
    with a traceback, which would land on the operator's screen: such records become notes of
    the agent whose connection is live, and are not printed."""

    WORDS = {
        "Error parsing JSON-RPC message": "the agent sent a line that is not JSON (not passed on)",
        "Unhandled error while handling": "agent-tui could not handle the agent's message",
    }

    def __init__(self) -> None:
        super().__init__()
        self.listeners: list[AgentProcess] = []

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        for start, words in self.WORDS.items():
            if message.startswith(start):
                text = f"agent-tui: {words}"
                exc = record.exc_info[1] if record.exc_info else None
                if "handling" in start:
                    method = record.getMessage().rsplit("method=", 1)[-1]
                    if type(exc).__name__ == "ValidationError":
                        where = exc.errors()[0] if exc.errors() else {}  # type: ignore[union-attr]
                        field = ".".join(str(p) for p in where.get("loc", ()))
                        text = f"agent-tui: the agent sent a {method} that is not valid ACP ({field}: {where.get('msg', '')}); it was not used"
                    else:
                        text = f"agent-tui: {words}: {method} ({_describe(exc) if exc else 'no detail'})"
                for agent in list(self.listeners):
                    agent.inbox.put(Note(text))
                return not self.listeners
        return True


_PARSE_ERRORS = _ParseErrors()


class AgentProcess:
    """The agent, its session, and the queue of what it says."""

    def __init__(self, command: str | Sequence[str], cwd: str | Path, env: dict[str, str] | None = None,
                 log_path: Path | None = None, load: str | None = None) -> None:
        self.argv = agent_argv(command)
        self.load = load
        """The session to open with `session/load` (a resume), instead of a new one."""
        self.cwd = Path(cwd).resolve()
        self.env = dict(env or {})
        self.log_path = log_path
        self.inbox: queue.Queue[Item] = queue.Queue()
        self.session_id: str | None = None
        self.agent_info = ""
        self.capabilities: Any = None
        self.modes: Any = None
        self.config_options: Any = None
        self.returncode: int | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="acp-loop", daemon=True)
        self._conn: Any = None
        self._process: Any = None
        self._stop: asyncio.Event | None = None
        self._main: Future[None] | None = None
        self._log: IO[bytes] | None = None
        self._closed = False
        self.turn: Future[Any] | None = None
        self.served: Any = None
        self.went: str | None = None
        self.pid_file: Path | None = None
        self._noise_said = False
        """Why the agent went away (its process exited, its connection ended), once it has."""
        """The `Served` handlers (terminals' results live there)."""

    @property
    def guard_pid(self) -> int | None:
        """The PID of the guard the agent runs under (`engine.mcp.guard`), once started: the leader
        of a session that holds the agent and all it starts."""
        return self._process.pid if self._process is not None else None

    # -- start ---------------------------------------------------------------

    def start(self) -> None:
        """Start the agent and open its session; AgentStartError (the process stopped) if it fails."""
        self._thread.start()
        if not self.cwd.is_dir():
            raise AgentStartError(f"no such folder for the agent: {self.cwd}")
        ready: Future[None] = Future()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            ready.result(START_TIMEOUT)
        except TimeoutError:
            self.close()
            raise AgentStartError(f"the agent did not open a session within {START_TIMEOUT:g} s{self._stderr_hint()}") from None
        except AgentStartError:
            self.close()
            raise
        except BaseException as exc:
            self.close()
            raise AgentStartError(f"the agent did not start: {_describe(exc)}{self._stderr_hint()}") from None

    async def _serve(self, ready: Future[None]) -> None:
        import acp
        from acp import schema

        self._stop = asyncio.Event()
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "wb")
        env = {**os.environ, **self.env}
        stderr = self._log.fileno() if self._log is not None else asyncio.subprocess.DEVNULL
        self.pid_file = self.log_path.with_suffix(".pid") if self.log_path is not None else None
        guarded = [sys.executable, "-I", "-S", str(GUARD), str(os.getpid()), str(self.pid_file or os.devnull), str(MAX_LINE_BYTES),
                   *self.argv]
        logging.getLogger().addFilter(_PARSE_ERRORS)
        _PARSE_ERRORS.listeners.append(self)
        try:
            self.served = Served(self)
            async with acp.spawn_agent_process(
                self.served, guarded[0], *guarded[1:], env=env, cwd=self.cwd,
                transport_kwargs={"stderr": stderr}, observers=[self._observe],
            ) as (conn, process):
                self._conn, self._process = conn, process
                waiter = asyncio.ensure_future(process.wait())
                try:
                    caps = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
                    opened = asyncio.ensure_future(self._open(conn, caps))
                    done, _ = await asyncio.wait({opened, waiter}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
                    if opened not in done:
                        opened.cancel()
                        raise AgentStartError(f"the agent exited with code {process.returncode} before it opened a session{self._stderr_hint()}"
                                              if waiter in done else f"the agent did not open a session within {START_TIMEOUT:g} s")
                    opened.result()
                    ready.set_result(None)
                    stop = asyncio.ensure_future(self._stop.wait())
                    await asyncio.wait({stop, waiter}, return_when=asyncio.FIRST_COMPLETED)
                    stop.cancel()
                    if waiter.done():
                        self.returncode = process.returncode
                        self._gone(f"the agent's process exited with code {process.returncode}{self._stderr_hint()}")
                finally:
                    waiter.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else AgentStartError(type(exc).__name__))
            elif not self._closed:
                self._gone(f"the connection to the agent ended ({_describe(exc)})")
        finally:
            _PARSE_ERRORS.listeners.remove(self)
            if not _PARSE_ERRORS.listeners:
                logging.getLogger().removeFilter(_PARSE_ERRORS)
            if self._process is not None:
                self.returncode = self._process.returncode
                transport = getattr(self._process, "_transport", None)  # closed on this loop, not at exit
                if transport is not None:
                    transport.close()
            if self._log is not None:
                self._log.close()
            if self.pid_file is not None:
                for path in (self.pid_file, Path(str(self.pid_file) + NOISE)):
                    try:
                        path.unlink()
                    except OSError:
                        pass

    async def _open(self, conn: Any, caps: Any) -> None:
        import acp
        from acp.schema import Implementation

        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=caps,
                                     client_info=Implementation(name="agent-tui", version="0.1.0"))
        self.capabilities = init.agent_capabilities
        if init.agent_info is not None:
            self.agent_info = f"{init.agent_info.name} {init.agent_info.version}".strip()
        if self.load is not None:
            if not getattr(self.capabilities, "load_session", False):
                raise AgentStartError(NO_LOAD)
            try:
                session = await conn.load_session(cwd=str(self.cwd), session_id=self.load, mcp_servers=[])
            except acp.RequestError as exc:
                raise AgentStartError(f"the agent refused session/load: {_refusal(exc)}") from None
            self.session_id = self.load
            await asyncio.sleep(0.1)  # the history's notifications the agent sent before its reply, handled
            self._drop_replayed()
        else:
            session = await conn.new_session(cwd=str(self.cwd), mcp_servers=[])
            self.session_id = session.session_id
        self.modes = session.modes
        self.config_options = session.config_options

    def _drop_replayed(self) -> None:
        """The session's history the agent replayed on `session/load` is not a new turn: its updates go."""
        kept = []
        while True:
            try:
                item = self.inbox.get_nowait()
            except queue.Empty:
                break
            if not isinstance(item, Update):
                kept.append(item)
        for item in kept:
            self.inbox.put(item)

    def _observe(self, event: Any) -> None:
        """Every message the agent sends, as the SDK parsed it: one it would drop or answer with an
        error without a word (an unknown method, a reply to nothing) becomes a note."""
        from acp.connection import StreamDirection
        from acp.meta import CLIENT_METHODS

        if event.direction != StreamDirection.INCOMING:
            return
        message = event.message
        method = message.get("method") if isinstance(message, dict) else None
        if isinstance(method, str):
            if method not in CLIENT_METHODS.values() and not method.startswith("_"):
                kind = "request" if "id" in message else "notification"
                self.inbox.put(Note(f"agent-tui: the agent sent an unknown {kind} '{method}' (answered: method not found)"
                                    if kind == "request" else f"agent-tui: the agent sent an unknown notification '{method}' (ignored)"))
            return
        if not isinstance(message, dict) or "id" not in message or not ({"result", "error"} & message.keys()):
            self.inbox.put(Note("agent-tui: the agent sent a message that is not JSON-RPC (ignored)"))

    # -- a turn --------------------------------------------------------------

    def prompt(self, text: str) -> None:
        """Send a prompt; its end (or the agent's going) arrives in `inbox`."""
        self.turn = asyncio.run_coroutine_threadsafe(self._prompt(text), self._loop)

    async def _prompt(self, text: str) -> None:
        import acp

        try:
            response = await self._conn.prompt(session_id=self.session_id, prompt=[acp.text_block(text)])
        except Exception as exc:
            if not self._closed:
                try:  # a connection that closed mid-turn: most often the agent's process died
                    await asyncio.wait_for(asyncio.shield(self._process.wait()), 2.0)
                except (asyncio.TimeoutError, AttributeError):
                    pass
                code = getattr(self._process, "returncode", None)
                self._gone(f"the agent's process exited with code {code} mid-turn{self._stderr_hint()}" if code is not None
                           else f"the agent's turn failed ({_describe(exc)}){self._stderr_hint()}")
            return
        self._say_noise()
        self.inbox.put(TurnEnded(str(response.stop_reason), response.usage))

    def _say_noise(self) -> None:
        """One note, the first time the guard found text that is not JSON-RPC on the agent's stdout."""
        if self.pid_file is not None and not self._noise_said and Path(str(self.pid_file) + NOISE).exists():
            self._noise_said = True
            self.inbox.put(Note(f"agent-tui: the agent printed text that is not JSON-RPC on stdout; it went to its log ({self.log_path})"))

    def _gone(self, why: str) -> None:
        """Say once that the agent went away."""
        self._say_noise()
        if not self.went:
            self.went = why
            self.inbox.put(Gone(why))

    def cancel(self) -> None:
        """`session/cancel` for the turn in flight (any thread)."""
        if self._conn is not None and self.session_id is not None and not self._closed:
            asyncio.run_coroutine_threadsafe(self._cancel(), self._loop)

    async def _cancel(self) -> None:
        try:
            await self._conn.cancel(session_id=self.session_id)
        except Exception as exc:
            self.inbox.put(Note(f"agent-tui: session/cancel could not be sent ({_describe(exc)})"))

    def set_mode(self, mode_id: str) -> None:
        """`session/set_mode`; ValueError in one line when the agent refuses it."""
        self._ask(f"session/set_mode {mode_id}", lambda: self._conn.set_session_mode(session_id=self.session_id, mode_id=mode_id))

    def set_config_option(self, config_id: str, value: str) -> None:
        """`session/set_config_option` (how ACP 1.19 switches a model); ValueError in one line when refused."""
        self._ask(f"session/set_config_option {config_id}={value}",
                  lambda: self._conn.set_config_option(config_id=config_id, session_id=self.session_id, value=value))

    def _ask(self, what: str, request: Any) -> Any:
        if self._conn is None or self._closed or self.went:
            raise ValueError(f"{what} cannot be sent: the agent is not running")

        async def asked() -> Any:
            return await request()

        try:
            return asyncio.run_coroutine_threadsafe(asked(), self._loop).result(START_TIMEOUT)
        except TimeoutError:
            raise ValueError(f"the agent did not answer {what} within {START_TIMEOUT:g} s") from None
        except Exception as exc:
            raise ValueError(f"the agent refused {what}: {_refusal(exc)}") from None

    # -- stop ----------------------------------------------------------------

    def close(self) -> None:
        """Stop the agent (its stdin closed, then terminated, then killed) and the loop."""
        if self._closed:
            return
        self._closed = True
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._main is not None:
            try:
                self._main.result(10)
            except BaseException:
                if self._process is not None and self._process.returncode is None:
                    try:
                        self._process.kill()
                    except ProcessLookupError:
                        pass
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def _stderr_hint(self) -> str:
        """The last words the agent wrote on stderr, when it wrote any, and where its log is."""
        from engine.core.text import visible

        if self.log_path is None:
            return ""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log_path) - STDERR_TAIL_BYTES))
                tail = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        last = visible(tail[-1], one_line=True)[:200] if tail else ""
        return f": {last} (its log: {self.log_path})" if last else f" (its log: {self.log_path})"


def _refusal(exc: Any) -> str:
    """An agent's JSON-RPC error in one line: its message, and its data's `details` when it gives them."""
    from engine.core.text import visible

    data = getattr(exc, "data", None)
    details = data.get("details") if isinstance(data, dict) else None
    text = str(exc).strip() + (f" ({details})" if isinstance(details, str) and details else "")
    return visible(text, one_line=True)[:500]


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
