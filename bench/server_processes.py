"""The gateway benches' servers each in a process of its own, as a user runs them (`--processes`).

In use `agent-tui gateway` is its own process, the agent another and the model server another:
none shares an interpreter lock with the others. `gateway_latency.py --processes` and
`gateway_first_byte.py --processes` run so: the fake upstream in a child Python process
(`serve`: the bench's own fake, its port on stdout, serving until stdin closes), each bare
proxy as `python bench/bare_proxy.py UPSTREAM` (the same protocol), and the gateway as the
real command, `agent-tui gateway --headless` with a rules file allowing every call and its
transcripts in a temporary folder (ready once it prints the address it listens on; stopped
with SIGTERM, as its help says). Only the agent's client stays in the bench's process.

Each child's output goes to a file (nobody has to drain a pipe meanwhile); it is waited for
by polling that file, within a bound, and stopped when the block ends, however it ends (an
error, Ctrl+C, SIGTERM to the bench). `Child.cpu()` is its CPU seconds so far (user and
system, every thread: /proc/PID/stat), so a bench can tell each server's CPU a request.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

BENCH = Path(__file__).resolve().parent
_TICKS = os.sysconf("SC_CLK_TCK")
_PORT_LINE = re.compile(r"^(\d+)$", re.M)
_LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)/")


class ChildFailed(RuntimeError):
    """A server process that ended or said nothing in time; its message quotes what it wrote."""


class Child:
    """A server in a child process (`command`), its output in `log`; ready once `ready` (a
    pattern whose first group is the port) matches that output. `stop_by_signal`: stopped with
    SIGTERM (else by closing its stdin). `stops`: the stack that stops it when it closes, on
    which it is put as soon as it starts, before a Ctrl+C or SIGTERM can take effect."""

    def __init__(
        self, name: str, command: list[str], log: Path, ready: re.Pattern[str], stop_by_signal: bool = False,
        env: dict[str, str] | None = None, cwd: Path | None = None, stops: ExitStack | None = None,
    ) -> None:
        self.name, self.log, self.stop_by_signal = name, log, stop_by_signal
        self._process: subprocess.Popen[bytes] | None = None
        try:
            with signals_held():  # else a signal inside Popen leaves the started process unknown, and running
                with open(log, "wb") as out:
                    self._process = subprocess.Popen(
                        command, stdin=subprocess.DEVNULL if stop_by_signal else subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                        env=env, cwd=cwd, start_new_session=True,  # Ctrl+C reaches the bench alone, which stops its children
                    )
                if stops is not None:
                    stops.callback(self.stop)
            self.port = self._wait(ready)
        except BaseException:
            self.stop()
            raise

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self._process is not None, f"{self.name} did not start"
        return self._process

    @property
    def pid(self) -> int:
        return self.process.pid

    def _wait(self, ready: re.Pattern[str], within: float = 60.0) -> int:
        deadline = time.monotonic() + within
        while True:
            found = ready.search(self.log.read_text(errors="replace"))
            if found:
                return int(found.group(1))
            if self.process.poll() is not None:
                raise ChildFailed(f"{self.name} ended with code {self.process.returncode} before it served: {self._said()}")
            if time.monotonic() > deadline:
                raise ChildFailed(f"{self.name} did not serve within {within:.0f} s: {self._said()}")
            time.sleep(0.01)

    def _said(self) -> str:
        lines = self.log.read_text(errors="replace").strip().splitlines()
        return " / ".join(lines[-5:]) or "nothing"

    def cpu(self) -> float:
        """CPU seconds the process has used so far, user and system, all its threads."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS

    def stop(self) -> None:
        """Ends the process (SIGTERM or stdin closed; killed if it has not ended within 30 s) and waits for it."""
        if self._process is None:
            return
        if self.process.poll() is None:
            if self.stop_by_signal:
                self.process.send_signal(signal.SIGTERM)
            elif self.process.stdin is not None:
                self.process.stdin.close()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()


def serve(server: Any) -> None:
    """Serve `server` (a fake upstream: a context manager with `url`) in this process, a child
    of a bench: its port on stdout, then until stdin closes."""
    with server:
        print(server.url.split(":")[2].split("/")[0], flush=True)
        try:
            sys.stdin.read()
        except KeyboardInterrupt:
            pass


def _gateway_command() -> list[str]:
    """The `agent-tui` command beside this interpreter (the project's own virtualenv), else on PATH, else `python -m tui.cli`."""
    beside = Path(sys.executable).parent / "agent-tui"
    found = str(beside) if beside.exists() else shutil.which("agent-tui")
    return [found] if found else [sys.executable, "-m", "tui.cli"]


class Servers:
    """The children of one measurement, in `folder`: the upstream (`upstream_command`, which
    must `serve`), a bare proxy for each client of `bare`, and the gateway in front of the
    upstream at `gateway_upstream` (an `--upstream` value). Stopped in the reverse order."""

    def __init__(self, folder: Path, upstream_command: list[str], bare: tuple[str, ...], gateway_upstream: str, key: str | None = None) -> None:
        """`gateway_upstream`: `{root}` in it is the upstream's address (`http://127.0.0.1:PORT`);
        `key`: the upstream key the gateway is given (in `AGENT_TUI_API_KEY`), which it masks."""
        self.folder, self.upstream_command, self.bare, self.gateway_upstream = folder, upstream_command, bare, gateway_upstream
        self.key = key
        self.upstream: Child
        self.proxies: dict[str, Child] = {}
        self.gateway: Child
        self._stack = ExitStack()
        self._started = 0
        self._marked: dict[str, float] = {}

    def __enter__(self) -> Servers:
        try:
            self.upstream = self._child("the fake upstream", [sys.executable, *self.upstream_command], _PORT_LINE)
            upstream_url = f"http://127.0.0.1:{self.upstream.port}"
            for client in self.bare:
                proxy = [sys.executable, str(BENCH / "bare_proxy.py"), upstream_url, "--client", client]
                self.proxies[client] = self._child(f"the bare proxy ({client})", proxy, _PORT_LINE)
            self.gateway = self._gateway(self.gateway_upstream.format(root=upstream_url))
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _child(self, name: str, command: list[str], ready: re.Pattern[str], **options: Any) -> Child:
        self._started += 1
        log = self.folder / f"server-{self._started}.log"
        return Child(name, command, log, ready, stops=self._stack, **options)

    def _gateway(self, upstream: str) -> Child:
        rules = self.folder / "allow-every-call.toml"
        rules.write_text('[[rule]]\ntool = "*"\neffect = "allow"\n')
        home = self.folder / "home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(AGENT_TUI_HOME=str(home), XDG_CONFIG_HOME=str(home / "config"))
        if self.key is not None:
            env["AGENT_TUI_API_KEY"] = self.key
        command = [
            *_gateway_command(), "gateway", "--headless", "--approve", "all", "--rules", str(rules),
            "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", str(self.folder / "gateway.jsonl"),
        ]
        return self._child("the gateway", command, _LISTENING, stop_by_signal=True, env=env, cwd=home)

    def children(self) -> dict[str, Child]:
        """Each child by the way it serves: `direct` (the upstream), `bare CLIENT`, `through` (the gateway)."""
        return {"direct": self.upstream, **{f"bare {c}": p for c, p in self.proxies.items()}, "through": self.gateway}

    def root(self, way: str) -> str:
        """`http://127.0.0.1:PORT` of the child serving `way` (as `children` names them)."""
        return f"http://127.0.0.1:{self.children()[way].port}"

    def mark(self) -> None:
        """From now on `cpu_each` counts."""
        self._marked = {way: child.cpu() for way, child in self.children().items()}

    def cpu_each(self, requests: int) -> dict[str, float]:
        """Each child's CPU milliseconds since `mark`, over `requests`."""
        return {way: (child.cpu() - self._marked[way]) * 1000 / requests for way, child in self.children().items()}


@contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl+C and SIGTERM that arrive inside the block take effect as it ends (in the main
    thread; elsewhere signals cannot arrive in Python code, and the block holds nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, lambda number, _frame: got.append(number)) for number in held}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(got):
            signal.raise_signal(number)  # to the handler the block held it from


@contextmanager
def stopped_on_sigterm() -> Iterator[None]:
    """SIGTERM to the bench raises SystemExit, so the blocks holding children stop them; a
    child that failed, and Ctrl+C, end the bench with one line (after those blocks)."""

    def on_signal(number: int, _frame: Any) -> None:
        raise SystemExit(128 + number)

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        yield
    except ChildFailed as exc:
        raise SystemExit(f"bench: {exc}") from None
    except KeyboardInterrupt:
        raise SystemExit("bench: interrupted (Ctrl+C); its servers are stopped") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
