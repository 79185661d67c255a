"""A cell's ``duration_s`` beside a CPU hog, against its solo value: the per-cell CPU bound, measured.

``duration_s`` is a promotion metric; with ``--workers 2`` a neighbour's busy processes once made
a cell's ``duration_s`` 3.3x its solo value. This runs real sweeps (scripted provider, real CLI,
real bwrap) with ``--workers 2`` on the canary task: a *victim* cell (arm ``baseline``) whose one
Bash call does a fixed amount of single-threaded CPU work, alone or beside a *hog* cell (arm
``baseline_nomcp``) that keeps ``--hog-processes`` busy loops (each in a session of its own:
autogroup scheduling would hold one session to a share) running for longer than the victim
needs. Four variants, interleaved ``--repeat`` times so machine noise hits each alike:

- ``solo``: the victim alone, under its default quota (host cores / 2 workers);
- ``hog``: the victim beside the hog, both under the default quota;
- ``solo-unbounded`` / ``hog-unbounded``: the same with ``--cell-cpus 0`` (the negative control).

It prints the victim's median ``duration_s`` per variant, ``hog/solo`` and its control
``hog-unbounded/solo-unbounded``, and the machine's load average before and after (the cores
are shared: a figure measured under other load must say so). Needs root (the cpu cgroup).

    uv run --locked python benchmarks/fair_cells.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "workflow_bench" / "corpus" / "canary.tasks.yaml"
USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
VARIANTS = {
    "solo": (["baseline"], []),
    "hog": (["baseline", "baseline_nomcp"], []),
    "solo-unbounded": (["baseline"], ["--cell-cpus", "0"]),
    "hog-unbounded": (["baseline", "baseline_nomcp"], ["--cell-cpus", "0"]),
}


def script(work: int, hog_processes: int, hog_s: int) -> dict:
    victim = f"python3 -c 'sum(i * i for i in range({work}))' && echo worked"
    # Each spinner in a session of its own (setsid): the scheduler's autogroups share the CPU
    # between sessions, so one session of busy loops would be held to a share by autogroup alone;
    # a hog that knows this starts one session per loop, which only the cell's quota holds.
    spin = f"setsid timeout {hog_s} python3 -c 'while True: pass'"
    hog = f"for i in $(seq {hog_processes}); do {spin} & done; wait; echo hogged"

    def cell(arm: str, command: str) -> dict:
        turns = [
            {
                "tool_calls": [{"name": "Bash", "input": {"command": command, "timeout": 600000}}],
                "usage": USAGE,
            }
        ]
        return {"match": {"arm": arm}, "sessions": [{"turns": [*turns, {"text": "Done.", "usage": USAGE}]}]}

    return {
        "schema_version": 1,
        "model": "scripted-fairness",
        "cells": [cell("baseline", victim), cell("baseline_nomcp", hog)],
    }


def one_sweep(script_path: Path, arms: list[str], extra: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="wfbench-fair-") as tmp:
        out = Path(tmp) / "out"
        argv = [sys.executable, "-m", "workflow_bench.runner", "--tasks", str(TASKS),
                "--provider", "scripted", "--script", str(script_path), "--workers", "2",
                "--arms", *arms, "--out", str(out), *extra]  # fmt: skip
        subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        (victim,) = [r for r in rows if r["arm"] == "baseline"]
        if victim["duration_s"] is None:
            raise SystemExit(
                f"the victim cell measured no duration: {victim['error_kind']} {victim['error_detail']}"
            )
        return float(victim["duration_s"]), victim["resource_limits"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--work", type=int, default=30_000_000, help="victim's loop size (30M: ~1 s of one core here)"
    )
    parser.add_argument("--hog-processes", type=int, default=4)
    parser.add_argument("--hog-seconds", type=int, default=40)
    args = parser.parse_args()
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    limits = {}
    with tempfile.TemporaryDirectory(prefix="wfbench-fair-script-") as tmp:
        path = Path(tmp) / "fairness.json"
        path.write_text(json.dumps(script(args.work, args.hog_processes, args.hog_seconds)))
        for _ in range(args.repeat):
            for name, (arms, extra) in VARIANTS.items():
                duration, limits[name] = one_sweep(path, arms, extra)
                times[name].append(duration)
                print(f"{name:15} duration_s {duration:7.2f}  cpus={limits[name].get('cpus')}", flush=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    print()
    for name, value in median.items():
        print(f"{name:15} median duration_s {value:7.2f}  ({', '.join(f'{v:.2f}' for v in times[name])})")
    print(f"bounded:   hog / solo = {median['hog'] / median['solo']:.2f}  (target <= 1.3)")
    print(
        "unbounded: hog / solo = "
        f"{median['hog-unbounded'] / median['solo-unbounded']:.2f}  (negative control)"
    )
    print(
        f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
