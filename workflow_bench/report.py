"""Every report of a sweep from its stored bytes, and `python -m workflow_bench.report DIR`.

`render_reports(record, results_text, not_run_text, files=...)` is one pure function: file name →
text for report.md, report.html, stats.json and (when candidate arms ran) promotion.json, the cell
viewer (viewer.html and one data file per cell under viewer/, built from the rows and the files
they point at, read through ``files``), plus the per-arm health the exit code is decided from.
The sweep driver and `main` (the re-render command) both call it on the bytes of the stored
`results.jsonl` and `not-run.jsonl` (the Scheduling section) and the directory's artifacts, so a
re-render is byte-identical when nothing changed.

`python -m workflow_bench.report DIR` re-renders report.md, report.html, stats.json,
promotion.json and the viewer from DIR/results.jsonl, the artifacts its rows name,
DIR/not-run.jsonl (when present) and DIR/sweep.json, prints the files written and one
`[measurement-health]` line per arm. Exit 0 when written; 2 when DIR lacks a finished sweep.json.

Above both `reports` (the renderers) and `promotion` (the gate): it composes them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_bench import argtypes
from workflow_bench.output.directory import OutputDir
from workflow_bench.promotion.document import (
    PROMOTION_FILE,
    PromotionInputs,
    document_text,
    promotion_document,
)
from workflow_bench.reports.accounting import usage_accounting
from workflow_bench.reports.aggregate import ArmHealth, aggregate_all
from workflow_bench.reports.health import duration_health, duration_section, health_line, sweep_health
from workflow_bench.reports.html import render_html
from workflow_bench.reports.markdown import render_markdown
from workflow_bench.reports.markdown_sections import firing_section, promotion_section, stats_section
from workflow_bench.reports.stats import STATS_FILE, paired_statistics, stats_text
from workflow_bench.reports.sweep_record import (
    PREDICTIONS_PROVIDER,
    SweepRecord,
    SweepRecordError,
    read_sweep_record,
)
from workflow_bench.reports.viewer import (
    DATA_DIR,
    PAGE_FILE,
    DirectoryFiles,
    SweepFiles,
    Viewer,
    render_viewer,
)
from workflow_bench.rows.migrate import read_rows
from workflow_bench.rows.model import Row
from workflow_bench.schedule.not_run import NOT_RUN_FILE, read_not_run, schedule_section


@dataclass(frozen=True, slots=True)
class Rendered:
    files: Mapping[str, str]
    health: Mapping[str, ArmHealth]
    promotion: Mapping[str, Any] | None
    viewer: Viewer


class NoFiles:
    """A sweep whose artifacts are not at hand: the viewer shows rows without trajectories."""

    def read(self, relative: str, *, limit: int) -> None:
        return None


def write_rendered(output: OutputDir, rendered: Rendered) -> list[Path]:
    """Every rendered file into the output directory (reports, the viewer page, its data files)."""
    written = [output.write_text(name, text) for name, text in rendered.files.items()]
    output.replace_folder(DATA_DIR, rendered.viewer.data)
    written.append(output.write_text(PAGE_FILE, rendered.viewer.page))
    return written


def results_lines(results_text: str) -> list[str]:
    return [line for line in results_text.split("\n") if line.strip()]


def promotion_inputs(record: SweepRecord) -> PromotionInputs:
    return PromotionInputs(
        generated_at=str(record.finished_at),
        run_status=record.status,
        benchmark_model=record.model,
        effort=record.effort,
        provider=record.provider,
        arms=record.arms,
        runs=record.runs,
        tasks=record.tasks,
        policy=record.policy or {},
        overlay=record.overlay,
    )


def _workers(record: SweepRecord) -> int | None:
    """The sweep's ``--workers`` as sweep.json recorded it (None: not recorded)."""
    workers = (record.schedule or {}).get("workers")
    return workers if isinstance(workers, int) else None


def duration_line(record: SweepRecord, results_text: str) -> str | None:
    """``duration_health`` of a sweep's stored rows (printed with the health lines)."""
    return duration_health(read_rows(results_text), workers=_workers(record))


def render_reports(
    record: SweepRecord, results_text: str, not_run_text: str = "", *, files: SweepFiles | None = None
) -> Rendered:
    lines = results_lines(results_text)
    rows = read_rows(results_text)
    tasks, arms = list(record.task_ids), list(record.arms)

    def order(row: Row) -> tuple[int, int, int]:
        return (
            tasks.index(row.task) if row.task in tasks else len(tasks),
            row.run,
            arms.index(row.arm) if row.arm in arms else len(arms),
        )

    ordered = sorted(rows, key=order)
    results = aggregate_all(ordered)
    health = sweep_health(results, arms=arms)
    provenance = record.provenance()
    promotion = (
        promotion_document(promotion_inputs(record), lines, rows, health)
        if record.policy is not None
        else None
    )
    # A regraded predictions file has no baseline arm: its models are paired with the first one.
    reference = arms[0] if record.provider == PREDICTIONS_PROVIDER and arms else None
    stats = paired_statistics(ordered, arms=arms, tasks=tasks, runs=record.runs, reference=reference)
    markdown = render_markdown(
        results,
        provenance=provenance,
        accounting=usage_accounting(ordered),
        extra_sections=[
            *firing_section(stats["treatment_firing"]),
            *promotion_section(promotion),
            *stats_section(stats),
            *schedule_section(
                record.schedule, read_not_run(not_run_text), reused=[r for r in ordered if r.reused]
            ),
            *duration_section(ordered, workers=_workers(record)),
        ],
    )
    html = render_html(
        results=results,
        provenance=provenance,
        health=health,
        promotion=promotion,
        stats=stats,
        accounting=usage_accounting(ordered),
    )
    texts = {"report.md": markdown, "report.html": html, STATS_FILE: stats_text(stats)}
    if promotion is not None:
        texts[PROMOTION_FILE] = document_text(promotion)
    viewer = render_viewer(provenance, ordered, files or NoFiles(), firing=stats["treatment_firing"])
    return Rendered(files=texts, health=health, promotion=promotion, viewer=viewer)


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
        rendered = render_reports(record, text, not_run_text, files=DirectoryFiles(args.dir))
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


if __name__ == "__main__":
    sys.exit(main())
