"""The MCP client side of a run: servers started with the run, tools called from the engine's thread.

The official `mcp` SDK is asynchronous; the engine steps synchronously in a
worker thread. `McpHub` owns one event-loop thread: each server lives in one
task there (its transport and `ClientSession` are entered and left by that
task), and `call` hands a coroutine to the loop with
`run_coroutine_threadsafe` and waits for it. A call is the SDK's `tools/call`
request; its result's structured content is checked against the tool's output
schema as `ClientSession.call_tool` checks it, by a validator built once per
schema (`structured_problem`; the SDK's builds one at every call). Stdio servers are started through
`guard.py`, which records the PID of their process group, makes Linux kill
them if agent-tui dies and caps each message a server sends at
`MAX_MESSAGE_BYTES` (the SDK
holds a whole line in memory before it parses it: a server sending an
endless line would grow it without bound; it is stopped instead, and the call
is a fault saying so). An HTTP server's replies and events are capped the same
way by the httpx client given to the SDK (`capped_http`), and a server that
runs past the cap is disconnected. `close` stops them (the SDK closes stdin,
then terminates, then kills) and kills what is left by PID, so no server
outlives the run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import IO, Any, Callable, Iterable

from engine.core.tools import Progress
from engine.mcp.guard import NOISE, TOO_LONG
from engine.core.urls import safe_url
from engine.model.config import KEY_VARIABLES
from engine.mcp.servers import McpServerConfig

GUARD = Path(__file__).with_name("guard.py")
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest message a server may send (a stdio line, an HTTP reply or SSE event): 16 MB, as a model's reply."""
WITHHELD = (*KEY_VARIABLES, "AGENT_TUI_GATEWAY_TOKEN")
"""Variables a stdio server never inherits: the model's key and the gateway's token are
agent-tui's, not the tool server's (a server's own `env` in the configuration can still set one)."""
STOP_GRACE = 3.0
START_TIMEOUT = 30.0
"""Seconds a server may take to start and list its tools (at least; its call timeout if longer)."""
_LIVE: set[McpHub] = set()


class McpStartError(Exception):
    """A server that cannot be started or reached; the message names it and says why."""


class McpFault(Exception):
    """A server died, hung past its timeout or answered with garbage during a call."""



@dataclass
class Connection:
    config: McpServerConfig
    log_path: Path | None = None
    pid: int | None = None
    session: Any = None
    tools: list[Any] = field(default_factory=list)
    server_info: str = ""
    stop: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None
    closed: str | None = None
    """Why the connection ended while the run went on (the server exited, say)."""
    too_long: bool = False
    """An HTTP server sent a message over the cap and was disconnected (a stdio one: its guard says so in the log)."""
    calls: set[asyncio.Task[Any]] = field(default_factory=set)
    """The calls in flight (an HTTP server over the cap fails them at once)."""
    log_file: Any = None
    unreadable: int = 0
    """Lines of a stdio server that looked like JSON but were not JSON-RPC (each written to its log)."""
    output_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each listed tool's output schema, which its results' structured content must fit."""


class McpHub:
    """Starts the run's MCP servers, lists their tools, calls them, and stops them."""

    def __init__(self, servers: list[McpServerConfig], log_dir: Path, withheld: Iterable[str] = ()) -> None:
        """`withheld`: more environment variables that hold secrets (a named policy's `api_key_env`)."""
        self.connections = [Connection(s) for s in servers]
        self.log_dir = log_dir
        self.withheld = frozenset([*WITHHELD, *withheld])
        self.progress_listeners: list[Callable[[Progress], None]] = []
        self.warnings: list[str] = []
        """What the operator should know of the servers (a tool cut or left out, a schema checked
        loosely, noise on a server's stdout), one line each."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-loop", daemon=True)
        self._logs: list[IO[str]] = []
        self._closed = False

    # -- start ----------------------------------------------------------------------

    def start(self) -> None:
        """Start every server and list its tools; McpStartError (after stopping the others) if one fails."""
        self._thread.start()
        _LIVE.add(self)
        try:
            for conn in self.connections:
                self._check_command(conn)
            futures = [(c, asyncio.run_coroutine_threadsafe(self._open(c), self._loop)) for c in self.connections]
            for conn, future in futures:
                try:
                    future.result(_start_timeout(conn) + 5)
                except FutureTimeout:
                    future.cancel()
                    raise McpStartError(
                        f"MCP server '{conn.config.name}' did not answer within {_start_timeout(conn):g} s{self._log_hint(conn)}"
                    ) from None
                except McpStartError:
                    raise
                except BaseException as exc:  # anything the transport raises
                    raise McpStartError(self._start_failure(conn, exc)) from None
            for conn in self.connections:
                self._warn_of_noise(conn)
        except BaseException:
            self.close()
            raise

    def _warn_of_noise(self, conn: Connection) -> None:
        """One warning for a stdio server that printed text other than JSON-RPC on stdout (its guard
        put it in the log and left a flag file)."""
        pid_file = getattr(conn, "pid_file", None)
        if (pid_file is not None and Path(str(pid_file) + NOISE).exists()) or conn.unreadable:
            self.warnings.append(f"MCP server '{conn.config.name}' printed text that is not JSON-RPC on stdout; "
                                 f"it went to its log ({conn.log_path}), not to the screen")

    def _check_command(self, conn: Connection) -> None:
        cfg = conn.config
        if cfg.command is None:
            return
        if shutil.which(cfg.command, path=(cfg.env or {}).get("PATH")) is None:
            where = f" (in {cfg.cwd})" if cfg.cwd else ""
            raise McpStartError(f"MCP server '{cfg.name}': command not found: {cfg.command}{where}")
        if cfg.cwd and not Path(cfg.cwd).is_dir():
            raise McpStartError(f"MCP server '{cfg.name}': no such folder for cwd: {cfg.cwd}")

    async def _open(self, conn: Connection) -> None:
        ready: asyncio.Future[None] = self._loop.create_future()
        conn.stop = asyncio.Event()
        conn.task = asyncio.create_task(self._serve(conn, ready))
        await asyncio.wait_for(ready, _start_timeout(conn))

    async def _serve(self, conn: Connection, ready: asyncio.Future[None]) -> None:
        """Connect, initialize, list tools, then hold the connection until `stop` (one task owns it)."""
        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(conn))
                session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._incoming(conn)))
                init = await session.initialize()
                conn.server_info = f"{init.serverInfo.name} {init.serverInfo.version}".strip()
                conn.tools = await _list_tools(session)
                conn.output_schemas = {str(t.name): t.outputSchema for t in conn.tools if isinstance(t.outputSchema, dict)}
                conn.session = session
                if not ready.done():
                    ready.set_result(None)
                assert conn.stop is not None
                await conn.stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(type(exc).__name__))
            else:
                conn.closed = conn.closed or f"the connection ended ({_describe(exc)})"
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            conn.session = None
            if conn.closed is None and not (conn.stop and conn.stop.is_set()):
                conn.closed = "the server closed the connection"

    def _incoming(self, conn: Connection) -> Callable[[Any], Any]:
        """What the server sends unasked: a line the SDK could not read as JSON-RPC (it hands the
        error over) is written to the server's log and counted, never dropped without a word."""

        async def incoming(message: Any) -> None:
            if isinstance(message, Exception):
                conn.unreadable += 1
                if conn.log_file is not None:
                    conn.log_file.write(f"agent-tui: a line on stdout was not JSON-RPC and was not passed on ({_describe(message)})\n")
                    conn.log_file.flush()
            await asyncio.sleep(0)

        return incoming

    def _transport(self, conn: Connection) -> Any:
        cfg = conn.config
        if cfg.url is not None:
            return _http_only(cfg.url, lambda: self._disconnect_too_long(conn))
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        _quiet_stdio_parse_errors()

        self.log_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        conn.log_path = self.log_dir / f"{stamp}-{os.getpid()}-{cfg.name}.log"
        log = open(conn.log_path, "a", encoding="utf-8", errors="replace")
        self._logs.append(log)
        conn.log_file = log
        pidfile = self.log_dir / f".{stamp}-{os.getpid()}-{cfg.name}.pid"
        conn.pid_file = pidfile  # type: ignore[attr-defined]
        params = StdioServerParameters(
            command=sys.executable,
            args=["-I", "-S", str(GUARD), str(os.getpid()), str(pidfile), str(MAX_MESSAGE_BYTES), cfg.command or "", *cfg.args],
            env={**{k: v for k, v in os.environ.items() if k not in self.withheld}, **cfg.env},
            cwd=cfg.cwd,
            encoding_error_handler="replace",
        )
        return _remember_pid(stdio_client(params, errlog=log), conn, pidfile)

    def _disconnect_too_long(self, conn: Connection) -> None:
        """An HTTP server sent a message over the cap. The SDK neither ends the session nor fails the
        request it was reading for: the calls in flight fail now (cancelled, then told why in
        `_call`), a start fails with the reason, and the connection ends."""
        conn.too_long = True
        conn.closed = f"it sent a message over {MAX_MESSAGE_BYTES >> 20} MB and was disconnected"
        if conn.session is None and conn.task is not None:
            conn.task.cancel()
            return
        conn.session = None  # no new call goes to a session being torn down
        for call in list(conn.calls):
            call.cancel()
        if conn.stop is not None:
            conn.stop.set()

    def _log_hint(self, conn: Connection) -> str:
        if conn.log_path is None:
            return ""
        tail = _last_line(conn.log_path)
        return f" (its log: {conn.log_path}" + (f"; last line: {tail}" if tail else "") + ")"

    def _too_long(self, conn: Connection, when: str) -> str | None:
        """The fault of a server stopped (stdio: by its guard) or disconnected for a message over the cap, if it was."""
        what = f"MCP server '{conn.config.name}' sent a message over {MAX_MESSAGE_BYTES >> 20} MB {when}"
        if conn.too_long:
            return f"{what}; it was disconnected"
        if conn.log_path is None or not _last_line(conn.log_path).startswith(TOO_LONG):
            return None
        return f"{what}; it was stopped (its log: {conn.log_path})"

    def _start_failure(self, conn: Connection, exc: BaseException) -> str:
        cfg = conn.config
        too_long = self._too_long(conn, "at start")
        if too_long is not None:
            return too_long
        if cfg.url is not None:
            return f"MCP server '{cfg.name}' at {safe_url(cfg.url)} cannot be reached: {_describe(exc)}"
        return f"MCP server '{cfg.name}' exited at start ({_describe(exc)}){self._log_hint(conn)}"

    # -- calls ------------------------------------------------------------------------

    def call(self, server: str, tool: str, args: dict[str, Any]) -> Any:
        """Call a tool and wait; returns the SDK's CallToolResult. McpFault when the server fails,
        McpCallError when it answers the call with a JSON-RPC error."""
        conn = next(c for c in self.connections if c.config.name == server)
        timeout = conn.config.timeout
        if conn.pid is not None and not _alive(conn.pid):
            conn.closed = conn.closed or "the server process exited"
            conn.session = None
        if conn.session is None:
            raise McpFault(f"MCP server '{server}' is not running: {conn.closed or 'it stopped'}{self._log_hint(conn)}")
        future = asyncio.run_coroutine_threadsafe(self._call(conn, tool, args, timeout), self._loop)
        try:
            return future.result(timeout + 5)
        except FutureTimeout:
            future.cancel()
            raise McpFault(f"MCP server '{server}' did not answer {tool} within {timeout:g} s") from None

    async def _call(self, conn: Connection, tool: str, args: dict[str, Any], timeout: float) -> Any:
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED, CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest

        name = conn.config.name

        async def progress(value: float, total: float | None, message: str | None) -> None:
            update = Progress(name, tool, value, total, message)
            for listener in list(self.progress_listeners):
                try:
                    listener(update)
                except Exception:  # a broken display must not break the call
                    pass

        session = conn.session
        if session is None:
            raise McpFault(f"MCP server '{name}' is not running: {conn.closed or 'it stopped'}")
        task = asyncio.current_task()
        if task is not None:
            conn.calls.add(task)
        try:
            result = await session.send_request(
                ClientRequest(CallToolRequest(params=CallToolRequestParams(name=tool, arguments=args))),
                CallToolResult, request_read_timeout_seconds=timedelta(seconds=timeout), progress_callback=progress,
            )
        except asyncio.CancelledError:
            too_long = self._too_long(conn, f"during {tool}") if conn.too_long else None
            if too_long is None:
                raise
            raise McpFault(too_long) from None
        except McpError as exc:
            code = exc.error.code
            if code == CONNECTION_CLOSED or conn.session is None:
                too_long = self._too_long(conn, f"during {tool}")
                raise McpFault(too_long or f"MCP server '{name}' exited during {tool}{self._log_hint(conn)}") from None
            if code == 408:
                raise McpFault(f"MCP server '{name}' did not answer {tool} within {timeout:g} s") from None
            raise McpCallError(f"MCP server '{name}' refused {tool}: {exc.error.message}") from None
        except (McpFault, McpCallError):
            raise
        except Exception as exc:
            raise McpFault(f"MCP server '{name}' sent a reply that cannot be read: {_describe(exc)}") from None
        finally:
            conn.calls.discard(task)  # type: ignore[arg-type]
        problem = None if result.isError else structured_problem(conn.output_schemas.get(tool), result)
        if problem is not None:
            raise McpFault(f"MCP server '{name}' sent a reply that cannot be read: {tool} {problem}")
        return result

    # -- stop -------------------------------------------------------------------------

    def public(self) -> list[dict[str, Any]]:
        """What the transcript header records of each server (with its log file)."""
        out = []
        for conn in self.connections:
            data = conn.config.public()
            if conn.log_path is not None:
                data["log"] = str(conn.log_path)
            data["tools"] = len(conn.tools)
            out.append(data)
        return out

    def pids(self) -> list[int]:
        return [c.pid for c in self.connections if c.pid is not None]

    def close(self) -> None:
        """Stop every server (the SDK's close, then a kill by PID for any left) and the loop thread."""
        if self._closed:
            return
        self._closed = True
        _LIVE.discard(self)
        if self._thread.is_alive():
            future: Future[None] = asyncio.run_coroutine_threadsafe(self._stop_all(), self._loop)
            try:
                future.result(STOP_GRACE + 4)
            except BaseException:
                future.cancel()
        self.kill()
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(2)
        for log in self._logs:
            try:
                log.close()
            except OSError:
                pass

    async def _stop_all(self) -> None:
        try:
            await self._stop_tasks()
        finally:
            await self._loop.shutdown_asyncgens()  # a reader left inside a body (capped_http) is closed, not dropped

    async def _stop_tasks(self) -> None:
        tasks = []
        for conn in self.connections:
            if conn.stop is not None:
                conn.stop.set()
            if conn.task is not None:
                tasks.append(conn.task)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=STOP_GRACE + 2)
            for task in pending:
                task.cancel()

    def kill(self) -> None:
        """Terminate, then kill, every stdio server still alive, by process group (signal-safe)."""
        alive = [pid for pid in self.pids() if _alive(pid)]
        for pid in alive:
            _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + 1.0
        while alive and time.monotonic() < deadline:
            time.sleep(0.02)
            alive = [pid for pid in alive if _alive(pid)]
        for pid in alive:
            _signal_group(pid, signal.SIGKILL)


def _quiet_stdio_parse_errors() -> None:
    """The SDK logs a line it cannot read as JSON-RPC with a traceback, which would land on the
    operator's screen. The guard sends lines that cannot be JSON-RPC to the server's log; one that
    starts like JSON but is not JSON-RPC reaches the session as an error, and `McpHub._incoming`
    writes it to the server's log and counts it for the warning."""
    import logging

    logger = logging.getLogger("mcp.client.stdio")
    if logger.propagate:
        logger.propagate = False
        logger.addHandler(logging.NullHandler())


def structured_problem(schema: dict[str, Any] | None, result: Any) -> str | None:
    """What is wrong with a result's structured content against its tool's output schema (None
    when it fits, or the tool has none), as the SDK's `ClientSession.call_tool` checks it; the
    schema's validator is built once (`engine.core.schema`), not at every call as the SDK's is."""
    if schema is None:
        return None
    if result.structuredContent is None:
        return "has an output schema but returned no structured content"
    from engine.core.schema import MAX_PROBLEMS, value_problems

    try:
        problems = value_problems(schema, result.structuredContent, "output")
    except ValueError as exc:
        return str(exc).replace("the tool's output schema", "has an output schema that", 1)
    if not problems:
        return None
    return "returned structured content that does not fit its output schema: " + "; ".join(problems[:MAX_PROBLEMS])


def _start_timeout(conn: Connection) -> float:
    return max(START_TIMEOUT, conn.config.timeout)


class McpCallError(Exception):
    """The server answered a call with a JSON-RPC error (an unknown tool, bad parameters)."""


def kill_all() -> None:
    """Kill the servers of every hub still open (SIGTERM handler, exit hook)."""
    for hub in list(_LIVE):
        hub.kill()


async def _list_tools(session: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(100):
        from mcp.types import PaginatedRequestParams

        result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(result.tools)
        cursor = result.nextCursor
        if not cursor:
            break
    return tools


class _http_only:
    """streamable_http_client over an httpx client that caps each message (`capped_http`; closed
    here, as the SDK leaves a given client open). It yields three values; ClientSession needs the
    two streams."""

    def __init__(self, url: str, too_long: Callable[[], None]) -> None:
        from mcp.client.streamable_http import streamable_http_client

        from engine.mcp.capped_http import capped_client

        self.client = capped_client(MAX_MESSAGE_BYTES, too_long)
        self.inner = streamable_http_client(url, http_client=self.client)

    async def __aenter__(self) -> tuple[Any, Any]:
        await self.client.__aenter__()
        try:
            read, write, _session_id = await self.inner.__aenter__()
        except BaseException:
            await self.client.aclose()
            raise
        return read, write

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self.inner.__aexit__(*exc)
        finally:
            await self.client.aclose()


class _remember_pid:
    """Enter the stdio transport and read the guard's PID (the server runs in its process group) from its file."""

    def __init__(self, inner: Any, conn: Connection, pidfile: Path) -> None:
        self.inner, self.conn, self.pidfile = inner, conn, pidfile

    async def __aenter__(self) -> Any:
        streams = await self.inner.__aenter__()
        for _ in range(200):
            try:
                self.conn.pid = int(self.pidfile.read_text())
                break
            except (OSError, ValueError):
                await asyncio.sleep(0.005)
        return streams

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self.inner.__aexit__(*exc)
        finally:
            for path in (self.pidfile, Path(str(self.pidfile) + NOISE)):
                try:
                    path.unlink()
                except OSError:
                    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _describe(exc: BaseException) -> str:
    """One line about an exception, looking inside the task groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    from mcp.shared.exceptions import McpError

    if isinstance(exc, McpError):
        if exc.error.code == -32000:
            return "it closed the connection"
        return exc.error.message
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 2000))
            lines = [l for l in f.read().decode("utf-8", "replace").splitlines() if l.strip()]
    except OSError:
        return ""
    from engine.core.text import clean

    return clean(lines[-1].strip())[:200] if lines else ""
