"""`agent-tui bench`: scenarios x policies x tasks, headless, over a process pool.

Every run goes through the engine exactly as `run --headless` would, without
saving a transcript. A scenario may give a score hook, `Scenario(score=...)`:
`score(task, options, history, outcome) -> dict` with `success`, `steps`,
`optimum` (None if unknown) and `checks` (name -> bool); otherwise a run
succeeds when it ends with an answer containing the task's expected text.
Results go to stdout (a Rich table per scenario, or --json, or --csv); the
progress bar and diagnostics go to stderr. Rich is imported only when the
command runs, so building the CLI parser stays free of it.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from tui.cli.common import positive_int
from tui.exits import EXIT_CHECK_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

RUN_FIELDS = [
    "scenario",
    "policy",
    "task",
    "outcome",
    "reason",
    "success",
    "steps",
    "optimum",
    "extra",
    "tokens",
    "cost",
]


@dataclass(frozen=True)
class Job:
    """A slice of the matrix one worker runs: one scenario and policy, some tasks."""

    scenario: str
    policy: str
    tasks: tuple[str, ...]
    options: dict[str, Any]
    approve: str


# -- running (in the workers) ---------------------------------------------------


def _default_score(task: Any, options: dict[str, Any], history: list[Any], outcome: str, answer: str | None) -> dict[str, Any]:
    expected = task.expected
    success = outcome == "answer" and (expected is None or (answer is not None and expected in answer))
    return {"success": success, "steps": len(history), "optimum": None, "checks": {}}


def run_one(scenario: Any, policy: str, task_id: str, options: dict[str, Any], approve: str) -> dict[str, Any]:
    """One headless run through the engine, scored."""
    from engine.sessions.run import new_run

    run = new_run(scenario, task_id, policy, options=options, save=False, approve=approve)  # type: ignore[arg-type]
    engine = run.engine
    engine.run()
    if not engine.ended:
        engine.abort(f"bench: the run paused ({engine.status}) and nobody can answer it")
    state = engine.state
    ended = state.ended
    assert ended is not None
    scorer = scenario.score
    if scorer is not None:
        score = scorer(run.task, engine.header.options, state.history, ended.outcome)
    else:
        score = _default_score(run.task, engine.header.options, state.history, ended.outcome, ended.answer)
    steps, optimum = score["steps"], score.get("optimum")
    return {
        "scenario": scenario.name,
        "policy": policy,
        "task": run.task.id,
        "outcome": ended.outcome,
        "reason": ended.reason,
        "success": bool(score["success"]),
        "steps": steps,
        "optimum": optimum,
        "extra": steps - optimum if score["success"] and optimum is not None else None,
        "tokens": state.tokens,
        "cost": state.cost,
        "checks": dict(score.get("checks", {})),
    }


def run_job(job: Job) -> list[dict[str, Any]]:
    import scenarios

    scenario = scenarios.get(job.scenario)
    return [run_one(scenario, job.policy, task, job.options, job.approve) for task in job.tasks]


# -- planning the matrix --------------------------------------------------------


def _numbered(scenario: Any) -> bool:
    """Tasks are numbers drawn on demand (grids), not a fixed list."""
    return scenario.make_task is not None and scenario.default_task.isdigit()


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), _parse_value(value.strip())


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def plan(args: argparse.Namespace) -> tuple[list[Job], list[dict[str, Any]]]:
    """The jobs to run and, per scenario, what the tables need to know about it."""
    import scenarios

    # by default every built-in scenario with policies of its own (not mcp: its tools and policy are the operator's)
    names = args.scenarios or [n for n in scenarios.BUILTIN if scenarios.get(n).policies]
    wanted_policies = _split(args.policies)
    wanted_tasks = _split(args.tasks)
    workers = max(1, args.workers)
    jobs: list[Job] = []
    plans: list[dict[str, Any]] = []
    _check_option_keys(names, dict(args.option))
    for name in names:
        scenario = scenarios.get(name)
        options = dict(scenario.options)
        for key in ("seed", "size", "density"):
            value = getattr(args, key)
            if value is not None and key in scenario.options:
                options[key] = value
        options.update(dict(args.option))
        policies = wanted_policies or list(scenario.policies)
        missing = [p for p in policies if p not in scenario.policies]
        if missing:
            raise ValueError(
                f"scenario '{scenario.name}' has no policy {', '.join(missing)} (policies: {', '.join(scenario.policies)})"
            )
        if wanted_tasks is not None:
            tasks = wanted_tasks
        elif _numbered(scenario):
            tasks = [str(i) for i in range(args.grids)]
        else:
            tasks = list(scenario.tasks)
        _check_something_to_run(name, scenario, policies, tasks, numbered=_numbered(scenario))
        for task in tasks:
            scenario.task(task)  # fail early on an unknown task
        _check_world(scenario, options, tasks)
        chunk = max(1, math.ceil(len(tasks) / (workers * 4)))
        for policy in policies:
            for start in range(0, len(tasks), chunk):
                jobs.append(Job(name, policy, tuple(tasks[start : start + chunk]), options, args.approve))
        plans.append(
            {"name": name, "scenario": scenario.name, "policies": policies, "tasks": tasks, "options": options, "approve": args.approve}
        )
    return jobs, plans


def _check_option_keys(names: list[str], given: dict[str, Any]) -> None:
    """A typo is never ignored: an --option key none of the benched scenarios declares is refused."""
    import scenarios

    declared = {key: None for name in names for key in scenarios.get(name).options}
    unknown = [key for key in given if key not in declared]
    if unknown:
        takes = f"their options: {', '.join(declared)}" if declared else "they take no options"
        raise ValueError(f"none of the benched scenarios has option {', '.join(repr(k) for k in unknown)} ({takes})")


def _check_something_to_run(name: str, scenario: Any, policies: list[str], tasks: list[str], *, numbered: bool) -> None:
    """A scenario without policies or tasks of its own (mcp: the operator's tools, task and
    model) is refused with what bench needs, instead of an empty table."""
    import scenarios

    missing = [what for what, there in (("scripted policies", policies), ("tasks", tasks or numbered)) if not there]
    if not missing:
        return
    hint = ""
    if name == scenarios.MCP:
        hint = "; a run of your own MCP tools is agent-tui run --mcp 'COMMAND ARGS' -t TASK (or --headless)"
    raise ValueError(
        f"scenario '{scenario.name}' has nothing to bench: it has no {' and no '.join(missing)} of its own "
        f"(bench runs each of a scenario's scripted policies on each of its tasks){hint}"
    )


def _check_world(scenario: Any, options: dict[str, Any], tasks: list[str]) -> None:
    """Options the scenario cannot build a world from are refused before any worker starts."""
    if not tasks:
        return
    try:
        scenario.make_world(scenario.task(tasks[0]), options)
    except (ValueError, TypeError, KeyError) as exc:
        detail = exc.args[0] if exc.args else type(exc).__name__
        raise ValueError(f"scenario '{scenario.name}' cannot start with these options: {detail}") from None


def execute(jobs: list[Job], workers: int, advance: Callable[[int], None] = lambda n: None) -> list[dict[str, Any]]:
    """Run the jobs, in a process pool when there is more than one worker and job."""
    results: list[dict[str, Any]] = []
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            results.extend(run_job(job))
            advance(len(job.tasks))
        return results
    from multiprocessing import Pool  # only here: `--help` starts faster

    # Ctrl+C reaches only this process, which ends the pool at once: the workers are
    # forked with SIGINT blocked, and one that comes while they start waits until then.
    pool = None
    try:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pool = Pool(workers)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for done, count in pool.imap_unordered(_run_counted, jobs):
            results.extend(done)
            advance(count)
        pool.close()
    except BaseException:
        if pool is not None:
            pool.terminate()
        raise
    finally:
        if pool is not None:
            pool.join()
    return results


def _run_counted(job: Job) -> tuple[list[dict[str, Any]], int]:
    return run_job(job), len(job.tasks)


# -- summarising ----------------------------------------------------------------


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise(runs: list[dict[str, Any]], plans: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per scenario and policy: the figures; per scenario: the checks."""
    summary: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    for p in plans:
        mine = [r for r in runs if r["scenario"] == p["scenario"]]
        for policy in p["policies"]:
            rows = [r for r in mine if r["policy"] == policy]
            ok = [r for r in rows if r["success"]]
            extras = [r["extra"] for r in ok if r["extra"] is not None]
            summary.append(
                {
                    "scenario": p["scenario"],
                    "policy": policy,
                    "runs": len(rows),
                    "successes": len(ok),
                    "success_rate": len(ok) / len(rows) if rows else 0.0,
                    "mean_steps": _mean([r["steps"] for r in ok]),
                    "mean_extra": _mean(extras),
                    "mean_tokens": _mean([r["tokens"] for r in rows]),
                    "mean_cost": _mean([r["cost"] for r in rows]),
                    "outcomes": {o: sum(1 for r in rows if r["outcome"] == o) for o in sorted({r["outcome"] for r in rows})},
                }
            )
        per_task: dict[str, dict[str, bool]] = {}
        for r in mine:
            for check, passed in r["checks"].items():
                per_task.setdefault(check, {})
                per_task[check][r["task"]] = per_task[check].get(r["task"], True) and bool(passed)
        for check, by_task in per_task.items():
            checks.append(
                {"scenario": p["scenario"], "check": check, "passed": sum(by_task.values()), "total": len(by_task)}
            )
        scored = [r for r in mine if r["success"] and r["optimum"] is not None]
        if scored:
            below = sum(1 for r in scored if r["steps"] < r["optimum"])
            checks.append(
                {
                    "scenario": p["scenario"],
                    "check": "no policy beats the optimum",
                    "passed": len(scored) - below,
                    "total": len(scored),
                }
            )
    return summary, checks


def _order(runs: list[dict[str, Any]], plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rank: dict[tuple[str, str, str], int] = {}
    for p in plans:
        for policy in p["policies"]:
            for task in p["tasks"]:
                rank.setdefault((p["scenario"], policy, task), len(rank))
    return sorted(runs, key=lambda r: rank.get((r["scenario"], r["policy"], r["task"]), len(rank)))


# -- output ---------------------------------------------------------------------


def to_json(runs: list[dict[str, Any]], summary: list[dict[str, Any]], checks: list[dict[str, Any]], plans: list[dict[str, Any]]) -> str:
    scenarios_info = [
        {"scenario": p["scenario"], "options": p["options"], "policies": p["policies"], "tasks": len(p["tasks"])}
        for p in plans
    ]
    return json.dumps(
        {"scenarios": scenarios_info, "summary": summary, "checks": checks, "runs": runs}, indent=2, default=str
    )


def to_csv(runs: Iterable[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=RUN_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in runs:
        writer.writerow({k: ("" if r[k] is None else r[k]) for k in RUN_FIELDS})
    return out.getvalue()


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


APPROVALS_SHOWN = {
    "none": "approvals rejected (--approve all runs them)",
    "all": "approvals all approved",
}


def print_tables(summary: list[dict[str, Any]], checks: list[dict[str, Any]], plans: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    for p in plans:
        options = ", ".join(f"{k}={v}" for k, v in p["options"].items() if v is not None)  # None: the world's own
        title = f"{p['scenario']} · {len(p['tasks'])} task{'s' if len(p['tasks']) != 1 else ''}"
        title += f" · {options}" if options else ""
        title += f" · {APPROVALS_SHOWN[p['approve']]}"
        table = Table(title=Text(title), title_justify="left")
        table.add_column("policy")
        table.add_column("success", justify="right")
        table.add_column("rate", justify="right")
        table.add_column("mean steps", justify="right")
        table.add_column("extra over optimum", justify="right")
        table.add_column("tokens per run", justify="right")
        table.add_column("cost per run", justify="right")
        for s in summary:
            if s["scenario"] != p["scenario"]:
                continue
            table.add_row(
                Text(s["policy"]),
                f"{s['successes']}/{s['runs']}",
                f"{s['success_rate']:.1%}",
                _fmt(s["mean_steps"], ".1f"),
                _fmt(s["mean_extra"], ".1f"),
                _fmt(s["mean_tokens"], ",.0f"),
                "-" if s["mean_cost"] is None else f"${s['mean_cost']:.4f}",
            )
        console.print(table)
        console.print(Text("mean steps and extra steps are over the successful runs", style="dim"))
        for c in checks:
            if c["scenario"] == p["scenario"]:
                mark = "ok  " if c["passed"] == c["total"] else "FAIL"
                console.print(Text(f"{mark} {c['check']}: {c['passed']}/{c['total']}"))
        console.print()


# -- the command ----------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add `agent-tui bench` to the command line."""
    add_parser(subparsers).set_defaults(handler=run)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "bench",
        help="run scenarios x policies x tasks headless and tabulate the results",
        description=(
            "Run every policy of each scenario on each task through the engine, headless and in parallel, "
            "and print per scenario the success rate, mean steps, extra steps over the optimum (where known), "
            "tokens and cost. `agent-tui bench grid --grids 200 --seed 7` is seed 000's grid experiment."
        ),
    )
    p.add_argument("scenarios", nargs="*", help="scenario names or .py paths (default: every built-in scenario)")
    p.add_argument("--policies", help="comma-separated policy names (default: all of each scenario's)")
    p.add_argument("--tasks", help="comma-separated task ids (default: the scenario's tasks, or grids 0..N-1)")
    p.add_argument("--grids", type=int, default=200, help="for numbered tasks (grid): how many, from 0 (default 200)")
    p.add_argument("--seed", type=int, help="grid: the seed the grids are drawn from (default 7)")
    p.add_argument("--size", type=int, help="grid: side of the grid (default 8)")
    p.add_argument("--density", type=float, help="grid: share of cells that are walls (default 0.28)")
    p.add_argument("--option", action="append", type=_option, default=[], metavar="KEY=VALUE", help="scenario option")
    p.add_argument(
        "--approve",
        choices=["all", "none"],
        default="none",
        help="how irreversible actions are answered with nobody watching (default: none, they are rejected)",
    )
    p.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the summary, checks and every run as JSON")
    out.add_argument("--csv", action="store_true", help="print one CSV row per run")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def run(args: argparse.Namespace) -> int:
    """Plan, run and report the matrix; 1 if a check failed, 2 on a usage error."""
    import scenarios

    if args.grids < 0:
        print("agent-tui bench: --grids must be 0 or more", file=sys.stderr)
        return EXIT_USAGE
    try:
        jobs, plans = plan(args)
    except (KeyError, ValueError, scenarios.ScenarioError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"agent-tui bench: {message}", file=sys.stderr)
        return EXIT_USAGE
    total = sum(len(j.tasks) for j in jobs)
    started = time.perf_counter()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    with Progress(
        TextColumn("bench"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=args.no_progress or not err.is_terminal,
    ) as progress:
        bar = progress.add_task("runs", total=total)
        try:
            runs = execute(jobs, args.workers, lambda n: progress.advance(bar, n))
        except KeyboardInterrupt:
            progress.stop()
            print("agent-tui bench: interrupted (Ctrl+C); no table", file=sys.stderr)
            return EXIT_INTERRUPTED
    elapsed = time.perf_counter() - started
    runs = _order(runs, plans)
    summary, checks = summarise(runs, plans)
    if args.json:
        print(to_json(runs, summary, checks, plans))
    elif args.csv:
        sys.stdout.write(to_csv(runs))
    else:
        print_tables(summary, checks, plans)
    workers = max(1, args.workers)
    print(f"{total} runs in {elapsed:.2f} s ({workers} worker{'' if workers == 1 else 's'})", file=sys.stderr)
    return EXIT_OK if all(c["passed"] == c["total"] for c in checks) else EXIT_CHECK_FAILED
