"""`python -m workflow_bench.report DIR`: re-render report.md, report.html, stats.json and
promotion.json from DIR/results.jsonl, DIR/not-run.jsonl (when present) and DIR/sweep.json.

Byte-identical to the sweep's own output when nothing changed (both go through
`render.render_reports` on the stored bytes). Prints the files written and one
`[measurement-health]` line per arm. Exit 0 when written; 2 when DIR lacks a finished sweep.json.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from workflow_bench.reports.health import health_line
from workflow_bench.reports.render import render_reports
from workflow_bench.reports.sweep_record import SweepRecordError, read_sweep_record
from workflow_bench.schedule.not_run import NOT_RUN_FILE


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_bench.report", description=__doc__)
    parser.add_argument("dir", type=Path, help="a sweep's output directory")
    args = parser.parse_args(argv)
    try:
        record = read_sweep_record(args.dir)
        results = args.dir / "results.jsonl"
        text = results.read_text(encoding="utf-8") if results.exists() else ""
        not_run = args.dir / NOT_RUN_FILE
        not_run_text = not_run.read_text(encoding="utf-8") if not_run.exists() else ""
        rendered = render_reports(record, text, not_run_text)
    except (SweepRecordError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, content in rendered.files.items():
        path = args.dir / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, path)
        print(f"wrote {path}")
    for health in rendered.health.values():
        print(health_line(health))
    return 0
