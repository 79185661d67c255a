"""Wall time of the offline demo sweep, measured side by side in one run.

Runs the README's demo sweep (scripted provider, real CLI, real bwrap) for each
worker count given, REPEAT times each, interleaved so machine noise hits every
variant alike, and prints the median wall time per variant and its ratio to
the first. This is the reference figure for "the hardened boundary keeps the
demo within 1.5x of before": run it before and after a change, on one machine.

    uv run --locked python benchmarks/demo_wall_time.py --workers 1 2 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_sweep(workers: int, include_expensive: bool) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="wfbench-bench-") as tmp:
        out = Path(tmp) / "out"
        argv = [
            sys.executable,
            "-m",
            "workflow_bench.runner",
            "--tasks",
            "tasks.scenarios.yaml",
            "--provider",
            "scripted",
            "--workers",
            str(workers),
            "--out",
            str(out),
        ]
        if include_expensive:
            argv.append("--include-expensive")
        started = time.monotonic()
        subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        elapsed = time.monotonic() - started
        return elapsed, len((out / "results.jsonl").read_text().splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--include-expensive", action="store_true")
    args = parser.parse_args()
    times: dict[int, list[float]] = {w: [] for w in args.workers}
    cells = 0
    for _ in range(args.repeat):
        for workers in args.workers:
            elapsed, cells = one_sweep(workers, args.include_expensive)
            times[workers].append(elapsed)
    first = statistics.median(times[args.workers[0]])
    print(f"demo sweep: {cells} cells, {args.repeat} repeats, interleaved")
    print("| workers | median wall s | per cell s | ratio |")
    print("| ---: | ---: | ---: | ---: |")
    for workers, samples in times.items():
        median = statistics.median(samples)
        print(f"| {workers} | {median:.1f} | {median / cells:.2f} | {median / first:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
