"""Every report of a sweep from its stored bytes and its decisions: rendering, never deciding.

`render_reports(record, results_text, not_run_text, promotion=..., files=...)` is one pure
function: file name → text for report.md, report.html, stats.json and (when candidate arms ran)
promotion.json, the cell viewer (viewer.html and one data file per cell under viewer/, built from
the rows and the files they point at, read through ``files``), plus the per-arm health the exit
code is decided from. The promotion decisions are handed in (``promotion.document.sweep_promotion``
decides them first, where the sweep finishes and where a report is re-rendered): this module shows
them and imports no gate (tests/unit/test_layering.py checks). The sweep driver, regrade and
`python -m workflow_bench.report` (``report.cli``) all call it on the bytes of the stored
`results.jsonl` and `not-run.jsonl` (the Scheduling section) and the directory's artifacts, so a
re-render is byte-identical when nothing changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.output.directory import OutputDir
from workflow_bench.reports.accounting import usage_accounting
from workflow_bench.reports.aggregate import ArmHealth, aggregate_all
from workflow_bench.reports.health import duration_health, duration_section, sweep_health
from workflow_bench.reports.html import render_html
from workflow_bench.reports.markdown import render_markdown
from workflow_bench.reports.markdown_sections import firing_section, promotion_section, stats_section
from workflow_bench.reports.promotion_model import PROMOTION_FILE, PromotionDocument, document_text
from workflow_bench.reports.stats import STATS_FILE, paired_statistics, stats_text
from workflow_bench.reports.sweep_record import PREDICTIONS_PROVIDER, SweepRecord
from workflow_bench.reports.viewer import (
    DATA_DIR,
    PAGE_FILE,
    SweepFiles,
    Viewer,
    render_viewer,
)
from workflow_bench.rows.migrate import read_rows
from workflow_bench.rows.model import Row
from workflow_bench.schedule.not_run import read_not_run, schedule_section


@dataclass(frozen=True, slots=True)
class Rendered:
    files: Mapping[str, str]
    health: Mapping[str, ArmHealth]
    promotion: PromotionDocument | None
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


def _workers(record: SweepRecord) -> int | None:
    """The sweep's ``--workers`` as sweep.json recorded it (None: not recorded)."""
    workers = (record.schedule or {}).get("workers")
    return workers if isinstance(workers, int) else None


def duration_line(record: SweepRecord, results_text: str) -> str | None:
    """``duration_health`` of a sweep's stored rows (printed with the health lines)."""
    return duration_health(read_rows(results_text), workers=_workers(record))


def render_reports(
    record: SweepRecord,
    results_text: str,
    not_run_text: str = "",
    *,
    promotion: PromotionDocument | None,
    files: SweepFiles | None = None,
) -> Rendered:
    """Every report, showing ``promotion`` (``sweep_promotion``'s document, decided before this)."""
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
    # A regraded predictions file has no baseline arm: its models are paired with the first one.
    reference = arms[0] if record.provider == PREDICTIONS_PROVIDER and arms else None
    stats = paired_statistics(ordered, arms=arms, tasks=tasks, runs=record.runs, reference=reference)
    markdown = render_markdown(
        results,
        provenance=provenance,
        accounting=usage_accounting(ordered),
        extra_sections=[
            *firing_section(stats.treatment_firing),
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
    viewer = render_viewer(
        provenance, ordered, files or NoFiles(), firing=stats.treatment_firing.model_dump(mode="json")
    )
    return Rendered(files=texts, health=health, promotion=promotion, viewer=viewer)
