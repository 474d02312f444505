"""`agent-tui gateway`: serve an OpenAI-compatible endpoint and steer the agent behind it.

The cockpit (default) or `--headless`, which prints every event as `run
--headless` does and, when the gateway stops (SIGTERM, Ctrl+C), ends the open
run and prints its outcome line; the exit code follows the run conventions
(0 answered, 3 stopped, 4 handed off, 5 aborted, 2 usage error).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import urlsplit

from tui.cli.gateway_agent import add_agent_arguments, agent_command, gateway_token
from tui.cli.common import add_command, budget_limits, file_name, positive_float, positive_int, price
from tui.cli.secrets import SecretFlag, add_secret_arguments, secret_value, url_argument
from tui.exits import EXIT_CODES, EXIT_INTERNAL, UsageError

if TYPE_CHECKING:
    from engine.core.answers import Answer

DEFAULT_LISTEN = "127.0.0.1:8765"
GATEWAY_TOKEN = SecretFlag("token", "AGENT_TUI_GATEWAY_TOKEN", "the bearer token agents must send")


def register(sub: Any) -> None:
    gw = add_command(sub, "gateway", cmd_gateway, help="an endpoint between an agent and its model (chat completions, Anthropic Messages, OpenAI Responses, Gemini), steered here")
    gw.add_argument(
        "--upstream",
        action="append",
        default=[],
        metavar="[NAME=][WIRE+]URL[#MODEL]",
        help="the model endpoint the agent's requests go to (WIRE: chat, the default, anthropic, responses or gemini); repeat to swap between several (p in the cockpit)",
        type=url_argument("--upstream", "give the key in $AGENT_TUI_API_KEY or $OPENAI_API_KEY instead"),
    )
    gw.add_argument("--model", metavar="NAME", help="the model to ask upstream (default: the one the agent names)")
    gw.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT", help=f"where agents connect (default {DEFAULT_LISTEN})")
    gw.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="serve requests a web page at ORIGIN (e.g. https://tool.example) sends; repeat for several (default: none, * for any)",
    )
    add_secret_arguments(gw, GATEWAY_TOKEN, purpose="required off 127.0.0.1")
    gw.add_argument("--headless", action="store_true", help="no cockpit: print each step; stop with SIGTERM or Ctrl+C")
    gw.add_argument("--approve", choices=["ask", "all", "none"], default="ask", help="held calls: ask (default), approve all, reject all")
    gw.add_argument("--rules", type=file_name, help="TOML file of approval rules (allow read_*, deny drop_*...)")
    gw.add_argument("--max-steps", type=positive_int, help="step cap per run")
    gw.add_argument("--max-tokens", type=positive_int, help="token budget per run (from the upstream's usage)")
    gw.add_argument("--max-cost", type=positive_float, help="cost budget per run in dollars (with --price-in/--price-out)")
    gw.add_argument("--max-seconds", type=positive_float, help="time budget per run in seconds of upstream time")
    gw.add_argument("--price-in", type=price, default=0.0, metavar="USD", help="dollars per 1,000 input tokens")
    gw.add_argument("--price-out", type=price, default=0.0, metavar="USD", help="dollars per 1,000 output tokens")
    gw.add_argument("--max-body", type=positive_int, default=None, metavar="BYTES", help="largest request body accepted (default 10 MiB)")
    gw.add_argument(
        "--timeout", type=positive_float, default=600.0, metavar="SECONDS",
        help="the most an upstream reply may take (a stream: between two of its lines; default 600)",
    )
    gw.add_argument("-o", "--out", type=file_name, metavar="FILE", help="transcript of the first run (later runs: the next free of FILE-2, FILE-3...; default: the data folder)")
    add_agent_arguments(gw)


def _upstreams(entries: list[str], model: str | None):
    from engine.gateway import Upstream
    from engine.wires import WIRES

    if not entries:
        raise UsageError("give the model endpoint: --upstream URL (e.g. https://api.openai.com/v1)")
    out = []
    for n, entry in enumerate(entries, 1):
        name, url = "", entry
        head = entry.split("=", 1)[0]
        if "=" in entry and "/" not in head and ":" not in head:
            name, url = entry.split("=", 1)
        url, _, chosen = url.partition("#")
        wire = "chat"
        scheme = url.split("://", 1)[0]
        if "+" in scheme:
            wire, url = url.split("+", 1)
            if wire not in WIRES:
                raise UsageError(f"--upstream {entry!r}: no wire {wire!r} (wires: {', '.join(WIRES)})")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"--upstream {entry!r}: expected an http(s) URL such as https://api.openai.com/v1")
        if not name:
            name = parts.hostname or f"upstream-{n}"
            if any(u.name == name for u in out):
                name = f"{name}-{n}"
        if any(u.name == name for u in out):
            raise UsageError(f"--upstream: the name {name!r} is given twice")
        out.append(Upstream(name, url, chosen or model, wire))
    return out


def _listen(text: str, token: str | None) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {text!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    loopback = host == "localhost"
    try:
        loopback = loopback or ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if not loopback and not token:
        raise UsageError(f"--listen {host}: an address other than 127.0.0.1 needs --token-file PATH (or ${GATEWAY_TOKEN.env}): "
                         "the token agents send as their bearer token")
    return host, int(port)


def build(args: argparse.Namespace):
    """The Gateway and its server from the flags (UsageError for anything wrong)."""
    from engine.core.approvals import RulesError, load_rules
    from engine.core.events import Budget
    from engine.gateway import DEFAULT_MAX_BODY, Gateway, GatewayServer
    from engine.model.config import Secret
    from engine.stored.lock import check_new

    token = gateway_token(agent_command(args), secret_value(args, GATEWAY_TOKEN))
    host, port = _listen(args.listen, token)
    upstreams = _upstreams(args.upstream, args.model)
    if args.headless and args.approve == "ask" and not sys.stdin.isatty():
        raise UsageError("--headless --approve ask needs a terminal to ask on; pass --approve all or --approve none")
    rules = []
    if args.rules:
        try:
            rules = load_rules(args.rules)
        except RulesError as exc:
            raise UsageError(str(exc)) from None
    budget = Budget(**budget_limits(args), price_in_per_1k=args.price_in, price_out_per_1k=args.price_out)
    key = _upstream_key()
    if args.out:
        try:
            check_new(args.out)
        except (FileExistsError, IsADirectoryError) as exc:
            raise UsageError(str(exc)) from None
    gateway = Gateway(
        upstreams,
        rules=rules,
        budget=budget,
        approve=args.approve,
        headless=args.headless,
        mode="continue" if args.headless else "step",
        out=args.out,
        key=Secret(key) if key else None,
        timeout=args.timeout,
    )
    server = GatewayServer(gateway, host, port, token=token, max_body=args.max_body or DEFAULT_MAX_BODY, allow_origins=args.allow_origin)
    try:
        server.start()
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.listen}: {exc.strerror or exc}") from None
    return gateway, server


def _upstream_key() -> str | None:
    """The upstream's key, from its usual variables."""
    from engine.model.config import KEY_VARIABLES

    return next((os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None)


class _Operator:
    """One run of the gateway seen as an engine by the terminal prompt of `run --headless`."""

    ask_again: frozenset[tuple[int, int]] = frozenset()

    def __init__(self, gateway, run) -> None:
        self.gateway = gateway
        self.run = run
        self.seen = run.engine.state.pending
        """The approval the prompt shows: an answer applies to it only (see `Gateway._operate`)."""

    @property
    def state(self):
        return self.run.engine.state

    def answer(self, answer: Answer) -> None:
        from engine.core.guards import RecordError
        from engine.core.text import clean
        from engine.gateway.controller import StaleApproval

        with _DEFER.held():
            try:
                self.gateway.answer(answer, expected=self.seen, run=self.run)
            except StaleApproval as exc:
                print(f"agent-tui: {clean(str(exc))}", file=sys.stderr, flush=True)
            except RecordError as exc:
                print(f"agent-tui: {clean(str(exc))}: nothing was released, the agent was answered 503; "
                      "the gateway goes on serving", file=sys.stderr, flush=True)


def cmd_gateway(args: argparse.Namespace) -> int:
    gateway, server = build(args)
    upstream = gateway.upstream
    from engine.core.urls import safe_url

    banner = f"agent-tui gateway: listening on {server.url} -> {upstream.label} ({safe_url(upstream.url)})"
    launch = None
    command = agent_command(args)
    if command:
        from tui.cli.gateway_agent import launch_for, print_paste_lines

        launch = launch_for(args, command, server, _upstream_key())
        if launch.interactive or args.paste:
            print_paste_lines(launch)
            launch = None
            if not args.headless and sys.stdin.isatty():  # the cockpit would cover the lines
                input("agent-tui gateway: press Enter to open the cockpit ")
    if args.headless:
        return _headless(gateway, server, args.approve, banner, launch)
    print(banner, file=sys.stderr, flush=True)
    return _cockpit(gateway, server, launch)


class _Deferred:
    """A stop signal that comes inside `held()` waits until the block is done: while an
    operator's answer is applied and the prompt says what came of it (the agent's reply to
    that answer may be what makes whoever runs the gateway stop it), and while the agent is
    started (else a signal inside `subprocess.Popen`, just after the fork, leaves the agent
    running with nobody to stop it)."""

    applying = False
    pending = False

    @contextmanager
    def held(self) -> Iterator[None]:
        self.applying = True
        try:
            yield
        finally:
            self.applying = False
            if self.pending:
                self.pending = False
                raise _Stopped


_DEFER = _Deferred()


class _Stopped(BaseException):
    """SIGTERM or Ctrl+C: raised in the main thread, even inside the approval prompt (a
    BaseException, as KeyboardInterrupt: raised inside a future's callbacks, which log and
    drop an Exception, it must still stop the gateway)."""


def _headless(gateway, server, approve: str, banner: str, launch=None) -> int:
    """`banner` is printed once SIGTERM and Ctrl+C are handled: whoever waits for it to
    stop the gateway gets the outcome line, however soon the signal comes. With `launch`,
    the agent is started then, its output printed (`agent| ...`), and the gateway ends
    when it ends, with its exit code."""
    from engine.core.text import clean
    from tui.plain import event_lines, header_lines, outcome_line

    changed = threading.Event()
    why: list[str] = []
    shown = [0]
    headed: set[int] = set()
    last_line = [""]

    def printer(run, event) -> None:
        if run.number != shown[0]:  # several conversations at once: each switch says whose events follow
            shown[0] = run.number
            print(f"run {run.number}: conversation {run.conversation.number}, turn {run.turn}", flush=True)
            if run.number not in headed:
                headed.add(run.number)
                for line in header_lines(run.engine.header):
                    print(line, flush=True)
        for line in event_lines(event):
            print(line, flush=True)
            last_line[0] = line

    def on_signal(number: int, _frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        why.append("SIGTERM" if number == signal.SIGTERM else "Ctrl+C")
        if _DEFER.applying:
            _DEFER.pending = True
            return
        raise _Stopped

    gateway.event_listeners.append(printer)
    gateway.change_listeners.append(changed.set)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    child = None
    try:
        print(banner, file=sys.stderr, flush=True)
        if launch is not None:
            from tui.cli.gateway_agent import start_child

            with _DEFER.held():
                child = start_child(launch, lambda line: print(f"agent| {clean(line)}", flush=True), lambda code: changed.set())
        while True:
            changed.wait(0.5)
            changed.clear()
            if child is not None and child.exited.is_set():
                why.append(f"the agent exited with code {child.returncode}")
                print(f"agent-tui gateway: {why[-1]}", file=sys.stderr, flush=True)
                break
            if approve == "ask":
                from tui.cli.run import _ask_on_terminal

                for run in gateway.open_runs():
                    if run.engine.status == "awaiting_approval":
                        _ask_on_terminal(_Operator(gateway, run))
    except _Stopped:
        pass
    finally:
        if child is not None:
            child.stop()
        _interrupt_upstream(gateway)
        end = gateway.stop(f"the gateway stopped ({why[0] if why else 'closed'})")
        server.close()
    code = _finish(gateway, end, outcome_line, printed=last_line[0])
    return child.returncode if child is not None and child.returncode is not None else code


def _cockpit(gateway, server, launch=None) -> int:
    """With `launch`, the agent is started with the cockpit and the cockpit closes when it
    ends; its output lines are kept in `child.lines` for a pane to show. SIGTERM closes the
    cockpit as `q` does (the terminal given back, the agent stopped, the open run ended), also
    while the agent starts or before the cockpit is drawn."""
    from tui.gateway_cockpit import GatewayCockpit
    from tui.plain import outcome_line
    from tui.run_guard import sigterm_closes

    app = GatewayCockpit(gateway, server.url)
    child = None
    closed = threading.Event()
    with sigterm_closes(app):
        try:
            if launch is not None:
                from tui.cli.gateway_agent import start_child

                def ended(code: int) -> None:
                    while not app.is_running and not closed.is_set():
                        closed.wait(0.05)
                    if not closed.is_set():
                        try:
                            app.call_from_thread(app.exit)
                        except RuntimeError:
                            pass  # closed meanwhile

                child = start_child(launch, lambda line: None, ended)
            if not app.terminated:
                app.run()
        finally:
            closed.set()
            if child is not None:
                child.stop()
            _interrupt_upstream(gateway)
            end = gateway.stop(f"the gateway stopped ({'SIGTERM' if app.terminated else 'q'})")
            server.close()
    return _finish(gateway, end, outcome_line)


def _interrupt_upstream(gateway) -> None:
    """Cut the upstream replies being read, so stopping does not wait for them (they hold their runs)."""
    gateway.interrupt()


def _finish(gateway, end, outcome_line, printed: str = "") -> int:
    """The transcripts on stderr, then the outcome line, unless the last line printed was that one."""
    for run in gateway.runs:
        if run.path is not None:
            print(f"transcript: {run.path}", file=sys.stderr)
    if gateway.older.count:
        print(f"transcripts: {gateway.older.words()}", file=sys.stderr)
    last = gateway.current
    if end is None and last is not None and last.engine.halted is not None:
        from engine.core.text import clean

        print(f"outcome: halted: {clean(last.engine.halted)}", flush=True)
        return EXIT_INTERNAL
    if end is None:
        print("outcome: no run began; the side requests that came are noted in the transcript above" if gateway.runs else "outcome: no request came; no run", flush=True)
        return 0
    if outcome_line(end) != printed:
        print(outcome_line(end), flush=True)
    return EXIT_CODES[end.outcome]
