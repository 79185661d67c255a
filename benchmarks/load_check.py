"""Run the test suite (or a chosen part of it) and the canary N times beside a busy neighbour, and
report every test and every attack that failed in any run.

A flaky test fails "now and then" under load and passes when run alone, so a single run proves
nothing either way. This starts ``--busy K`` busy CPU loops (each a process of its own that dies
with this command, even on SIGKILL: it spins only while its parent is alive), then runs pytest
``--runs N`` times, each with its own junitxml, and the canary as many times (``--canary-runs``),
and prints, per failed test id or attack, in how many runs it failed. The busy loops are always
stopped (normal exit, error, Ctrl-C, SIGTERM).

    uv run --locked python benchmarks/load_check.py --runs 3 --busy 2                # ./dev test + canary
    uv run --locked python benchmarks/load_check.py --runs 5 --busy 2 --canary-runs 0 -- \\
        tests/component/test_relay.py -n 0 -k cap                                       # one test

Arguments after ``--`` go to pytest (default: the whole suite, as ``./dev test`` runs it: two
xdist workers, ``--dist loadscope``). Exit 0 when nothing failed, 1 when anything did, 2 on bad
arguments. ``--out DIR`` keeps each run's junitxml, output and a ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import defusedxml.ElementTree as ElementTree

from workflow_bench.process import ManagedProcess, spawn_group

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PYTEST_ARGS = ("-n", "2", "--dist", "loadscope")
# Spins only while its parent (this command, whose pid it is given) lives: a SIGKILLed load check
# leaves no busy loop. The pid comes from the argument, not from the loop's own first getppid(): a
# check killed before a loop's interpreter had started (seconds under load) would otherwise leave a
# loop that took its new parent for this one and spun for ever.
_BUSY_LOOP = "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n    pass\n"
_NOT_BLOCKED = re.compile(r"^(\S+)\s.*\bNOT BLOCKED\s*$")


@dataclass
class Tally:
    """Which run failed what: id → the 1-based runs it failed in."""

    runs: int = 0
    failed: dict[str, list[int]] = field(default_factory=dict)

    def add(self, run: int, ids: Sequence[str]) -> None:
        for test_id in ids:
            self.failed.setdefault(test_id, []).append(run)

    def lines(self, kind: str) -> list[str]:
        if not self.failed:
            return [f"{kind}: nothing failed in {self.runs} run(s)"]
        out = [f"{kind}: {len(self.failed)} failed in at least one of {self.runs} run(s)"]
        for test_id, runs in sorted(self.failed.items(), key=lambda item: (-len(item[1]), item[0])):
            out.append(f"  {len(runs)}/{self.runs}  {test_id}  (runs {', '.join(map(str, runs))})")
        return out


def junit_failures(path: Path) -> list[str]:
    """Test ids (``path::name`` as pytest prints them) with a failure or error in a junitxml file."""
    failed = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        if case.find("failure") is None and case.find("error") is None:
            continue
        classname, name = case.get("classname", ""), case.get("name", "")
        # pytest writes tests/unit/test_x.py::Cls::test as classname "tests.unit.test_x.Cls".
        failed.append(f"{classname}::{name}" if classname else name)
    return failed


def pytest_run_failures(returncode: int, junit: Path, output: str) -> list[str]:
    """What one pytest run failed: the junitxml's failures, or why there is no verdict at all."""
    if junit.is_file():
        failed = junit_failures(junit)
        if failed or returncode in (0, 5):  # 5: nothing collected, which the arguments asked for
            return failed
    tail = " ".join(output.strip().splitlines()[-1:])[:200]
    return [f"<pytest exited {returncode} without a failed test: {tail}>"]


def canary_failures(returncode: int, output: str) -> list[str]:
    """Attacks the canary's table calls NOT BLOCKED, or why it gave no table."""
    failed = [m.group(1) for line in output.splitlines() if (m := _NOT_BLOCKED.match(line.rstrip()))]
    if failed or returncode == 0:
        return failed
    tail = " ".join(output.strip().splitlines()[-1:])[:200]
    return [f"<canary exited {returncode}: {tail}>"]


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


@contextmanager
def busy_neighbour(count: int) -> Iterator[list[ManagedProcess]]:
    """``count`` busy CPU loops for the duration; always stopped on the way out."""
    loops: list[ManagedProcess] = []
    previous = signal.getsignal(signal.SIGTERM)

    def _terminate(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # unwinds through the finally below, which stops the loops

    signal.signal(signal.SIGTERM, _terminate)
    try:
        for _ in range(count):
            loops.append(spawn_group([sys.executable, "-c", _BUSY_LOOP, str(os.getpid())]))
        print(
            f"[load-check] busy loops: pids {' '.join(str(loop.pid) for loop in loops) or 'none'}", flush=True
        )
        yield loops
    finally:
        spent = [cpu_seconds(loop.pid) for loop in loops]
        for loop in loops:
            loop.stop()
        if loops:
            shown = " ".join("?" if s is None else f"{s:.0f}" for s in spent)
            print(f"[load-check] busy loops stopped; CPU seconds each: {shown}", flush=True)
        signal.signal(signal.SIGTERM, previous)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run(command: list[str], *, log: Path, env: dict[str, str]) -> tuple[int, str]:
    with open(log, "w+", encoding="utf-8", errors="replace") as handle:
        returncode = subprocess.call(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, env=env)
        handle.seek(0)
        return returncode, handle.read()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="benchmarks/load_check.py", description=__doc__.split("\n\n")[0], allow_abbrev=False
    )
    parser.add_argument("--runs", type=int, default=3, help="pytest runs (default 3; 0: none)")
    parser.add_argument("--canary-runs", type=int, default=None, help="canary runs (default: --runs)")
    parser.add_argument("--busy", type=int, default=2, help="busy CPU loops beside the runs (default 2)")
    parser.add_argument("--out", type=Path, default=None, help="keep junitxml, logs and summary.json here")
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest")
    args = parser.parse_args(argv)
    canary_runs = args.runs if args.canary_runs is None else args.canary_runs
    for name, value in (("--runs", args.runs), ("--canary-runs", canary_runs), ("--busy", args.busy)):
        if value < 0:
            print(f"load_check: {name} must be 0 or more, got {value}", file=sys.stderr)
            return 2
    if args.out is not None and args.out.exists() and any(args.out.iterdir()):
        print(f"load_check: --out {args.out} is not empty", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="wfbench-load-check-"))
    out.mkdir(parents=True, exist_ok=True)
    pytest_args = list(args.pytest_args) or list(DEFAULT_PYTEST_ARGS)
    env = dict(os.environ)
    tests, canary = Tally(), Tally()
    loads: list[str] = [load_average()]
    started = time.monotonic()
    interrupted = False
    try:
        with busy_neighbour(args.busy):
            for run in range(1, args.runs + 1):
                junit = out / f"pytest-{run}.xml"
                command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}"]
                returncode, output = _run([*command, *pytest_args], log=out / f"pytest-{run}.log", env=env)
                failed = pytest_run_failures(returncode, junit, output)
                tests.runs += 1
                tests.add(run, failed)
                loads.append(load_average())
                print(
                    f"[load-check] pytest run {run}/{args.runs}: {len(failed)} failed, load {loads[-1]}",
                    flush=True,
                )
            for run in range(1, canary_runs + 1):
                command = [sys.executable, "-m", "workflow_bench.canary"]
                returncode, output = _run(command, log=out / f"canary-{run}.log", env=env)
                failed = canary_failures(returncode, output)
                canary.runs += 1
                canary.add(run, failed)
                loads.append(load_average())
                said = f"{len(failed)} not blocked, load {loads[-1]}"
                print(f"[load-check] canary run {run}/{canary_runs}: {said}", flush=True)
    except KeyboardInterrupt:
        interrupted = True
        print("[load-check] interrupted: the busy loops are stopped; partial results follow", file=sys.stderr)
    report = [
        f"load check: {args.busy} busy loop(s), pytest {' '.join(pytest_args)}",
        f"load average (1/5/15 min) at start and after each run: {' | '.join(loads)}",
        *(tests.lines("tests") if args.runs else []),
        *(canary.lines("canary attacks") if canary_runs else []),
        f"wall {time.monotonic() - started:.0f} s; runs kept in {out}",
    ]
    print("\n".join(report))
    summary = {
        "busy": args.busy,
        "pytest_args": pytest_args,
        "load_averages": loads,
        "tests": {"runs": tests.runs, "failed": tests.failed},
        "canary": {"runs": canary.runs, "failed": canary.failed},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if interrupted:
        return 130
    return 1 if tests.failed or canary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
