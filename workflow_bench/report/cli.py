"""`python -m workflow_bench.report DIR`: re-render a finished sweep's reports from its directory.

Re-renders report.md, report.html, stats.json, promotion.json and the viewer from DIR/results.jsonl,
the artifacts its rows name, DIR/not-run.jsonl (when present) and DIR/sweep.json, prints the files
written and one `[measurement-health]` line per arm. Exit 0 when written; 2 when DIR lacks a
finished sweep.json. The promotion decisions are recomputed from the rows first, then rendered.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from workflow_bench import argtypes
from workflow_bench.output.directory import OutputDir
from workflow_bench.promotion.document import sweep_promotion
from workflow_bench.report.render import duration_line, render_reports, write_rendered
from workflow_bench.reports.health import health_line
from workflow_bench.reports.sweep_record import SweepRecordError, read_sweep_record
from workflow_bench.reports.viewer import DATA_DIR, DirectoryFiles
from workflow_bench.schedule.not_run import NOT_RUN_FILE


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=argtypes.prog("report"), description=__doc__)
    parser.add_argument("dir", type=Path, help="a sweep's output directory")
    args = parser.parse_args(argv)
    try:
        record = read_sweep_record(args.dir)
        results = args.dir / "results.jsonl"
        text = results.read_text(encoding="utf-8") if results.exists() else ""
        not_run = args.dir / NOT_RUN_FILE
        not_run_text = not_run.read_text(encoding="utf-8") if not_run.exists() else ""
        promotion = sweep_promotion(record, text)
        rendered = render_reports(
            record, text, not_run_text, promotion=promotion, files=DirectoryFiles(args.dir)
        )
    except (SweepRecordError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        written = write_rendered(OutputDir(args.dir), rendered)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print(f"wrote {args.dir / DATA_DIR}/ ({len(rendered.viewer.data)} cell data files)")
    for health in rendered.health.values():
        print(health_line(health))
    durations = duration_line(record, text)
    if durations is not None:
        print(durations)
    return 0
