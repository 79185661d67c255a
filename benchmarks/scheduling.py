"""Scheduling benchmark: waves vs packed vs packed longest-first on a skewed corpus.

Runs the real runner (real CLI, real bwrap, scripted provider whose turns wait
``delay_s``) on a corpus it generates from the demo's first task: 6 tasks × 3
arms × 3 runs; per run of a task one slow arm and two fast ones (cells spread
about 1:6), and one task, marked ``expensive``, twice as slow as the rest.
With ``--workers 3`` it prints, per scheduler, the makespan (first cell start
to last cell end, from the rows' ``recorded_at`` and ``cell_wall_s``), the
lower bound max(longest cell, Σ cell wall / workers) of that run, and their
ratio. Then it injects an outage (every arm of one task answers 529) at three
positions and reports, per scheduler, the overrun: cells started after the
plan cell on which the breaker tripped. The last line is one JSON object.

    uv run --locked python benchmarks/scheduling.py [--scale 1.0]

It takes ~15-25 min on a quiet 2-core machine; other sweeps on the machine
slow cells and widen the spread, so compare schedulers within one run only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 3
RUNS = 3
ARMS = ("baseline", "baseline_nomcp", "workflow_direct")
TASKS = 6
LONG_TASK = 3  # the expensive one: neither first nor last in the plan
DELAYS = {
    "baseline": 0.2,
    "baseline_nomcp": 0.6,
    "workflow_direct": 10.0,
}  # s per cell, × 2 for the long task
STREAK = 3
USAGE = {
    "input_tokens": 100,
    "output_tokens": 10,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def write_corpus(folder: Path, *, scale: float, outage_task: int | None) -> tuple[Path, Path]:
    demo = yaml.safe_load((ROOT / "tasks.scenarios.yaml").read_text())["tasks"][0]
    (folder / "oracles").mkdir(parents=True, exist_ok=True)
    for entry in demo["oracle"]["files"]:
        source = ROOT / entry["source"]
        (folder / "oracles" / source.name).write_bytes(source.read_bytes())
        entry["source"] = f"oracles/{source.name}"
    demo["repo"] = str((ROOT / demo["repo"]).resolve())
    tasks = [{**demo, "id": f"t{i}", "expensive": i == LONG_TASK} for i in range(TASKS)]
    (folder / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    cells = []
    if outage_task is not None:
        turn = {"fault": {"http_status": 529}, "text": "never served"}
        cells.append({"match": {"task": f"t{outage_task}"}, "sessions": [{"turns": [turn]}]})
    for i in range(TASKS):
        for arm, delay in DELAYS.items():
            seconds = round(delay * scale * (2 if i == LONG_TASK else 1), 3)
            turn = {"text": "done", "fault": {"delay_s": seconds}, "usage": USAGE}
            cells.append({"match": {"task": f"t{i}", "arm": arm}, "sessions": [{"turns": [turn]}]})
    script = {"schema_version": 1, "model": "scripted-scheduling", "cells": cells}
    (folder / "script.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    return folder / "tasks.yaml", folder / "script.yaml"


def sweep(tmp: Path, name: str, *, scale: float, runs: int, extra: list[str], outage_task: int | None = None):
    folder = tmp / name
    tasks, script = write_corpus(folder, scale=scale, outage_task=outage_task)
    out = folder / "out"
    argv = [sys.executable, "-m", "workflow_bench.runner", "--tasks", str(tasks), "--include-expensive",
            "--provider", "scripted", "--script", str(script), "--arms", *ARMS, "--runs", str(runs),
            "--workers", str(WORKERS), "--outage-streak", str(STREAK), "--max-retries", "0",
            "--out", str(out), *extra]  # fmt: skip
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def timing(rows: list[dict]) -> dict[str, float]:
    ends = [datetime.fromisoformat(r["recorded_at"]).timestamp() for r in rows]
    walls = [r["cell_wall_s"] for r in rows]
    makespan = max(ends) - min(e - w for e, w in zip(ends, walls, strict=True))
    bound = max(max(walls), sum(walls) / WORKERS)
    return {
        "makespan_s": round(makespan, 1),
        "lower_bound_s": round(bound, 1),
        "ratio": round(makespan / bound, 3),
    }


def overrun(rows: list[dict], outage_task: int) -> int:
    plan = [(f"t{t}", r, a) for t in range(TASKS) for r in range(1) for a in ARMS]
    trip = plan.index((f"t{outage_task}", 0, ARMS[STREAK - 1]))
    return sum(1 for row in rows if plan.index((row["task"], row["run"], row["arm"])) > trip)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every scripted delay")
    args = parser.parse_args()
    window = 2 * WORKERS
    variants = {
        "waves": ["--scheduler", "waves"],
        "packed": ["--scheduler", "packed"],
        "packed_longest_first": ["--scheduler", "packed", "--order", "longest-first"],
    }
    results: dict[str, dict[str, float]] = {}
    overruns: dict[str, list[int]] = {"waves": [], "packed": []}
    with tempfile.TemporaryDirectory(prefix="wfbench-scheduling-") as name:
        tmp = Path(name)
        for variant, extra in variants.items():
            rows = sweep(tmp, variant, scale=args.scale, runs=RUNS, extra=extra)
            assert len(rows) == TASKS * RUNS * len(ARMS), f"{variant}: {len(rows)} rows"
            results[variant] = timing(rows)
            print(f"{variant:>22}: {results[variant]}", flush=True)
        for position in (1, 3, 5):
            for variant in overruns:
                rows = sweep(tmp, f"{variant}-outage{position}", scale=args.scale, runs=1,
                             extra=variants[variant], outage_task=position)  # fmt: skip
                overruns[variant].append(overrun(rows, position))
            print(f"outage at task {position}: overrun {[v[-1] for v in overruns.values()]}", flush=True)
    lf, waves = results["packed_longest_first"], results["waves"]
    print(
        f"packed longest-first: {lf['ratio']:.3f} × lower bound (target ≤ 1.10), "
        f"{1 - lf['makespan_s'] / waves['makespan_s']:.0%} below waves (target ≥ 35 %); overrun bounds: "
        f"waves ≤ {WORKERS - 1}, packed ≤ {window - 1}",
        flush=True,
    )
    summary = {
        "workers": WORKERS,
        "lower_bound_s": lf["lower_bound_s"],
        "makespan_s": {k: v["makespan_s"] for k, v in results.items()},
        "overrun": overruns,
        "window": window,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
