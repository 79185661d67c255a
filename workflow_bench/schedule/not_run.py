"""Cells that were planned but never started: ``not-run.jsonl`` records and the report section.

``results.jsonl`` holds only cells that ran. A sweep that ends early (outage
breaker, signal, budget) lists every planned cell it never started here, one
record per cell with ``task``, ``arm``, ``run`` and ``why`` (the scheduler's
stop reason), so "missing" is never confused with "not measured yet".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workflow_bench.providers.access import CellKey
from workflow_bench.schedule.pool import SchedulePolicy

NOT_RUN_FILE = "not-run.jsonl"


def not_run_record(key: CellKey, why: str) -> dict[str, object]:
    return {"task": key.task_id, "arm": key.arm, "run": key.run, "why": why}


def schedule_section(
    policy: SchedulePolicy,
    not_run: Sequence[tuple[CellKey, str]],
    *,
    order: str = "plan",
    reused: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Markdown appended to report.md: how cells were scheduled and which never started."""
    window = f", window {policy.effective_window}, order `{order}`" if policy.scheduler == "packed" else ""
    lines = [
        "",
        "## Scheduling",
        "",
        f"- Scheduler: `{policy.scheduler}` ({policy.workers} worker(s){window}); "
        f"outage streak {policy.outage_streak or 'disabled'}",
        f"- Cells planned but not run: {len(not_run)}"
        + (f" (listed in `{NOT_RUN_FILE}`)" if not_run else ""),
    ]
    if not_run:
        lines += ["", "| task | arm | run | why |", "|---|---|---|---|"]
        lines += [f"| {key.task_id} | {key.arm} | {key.run} | {why} |" for key, why in not_run]
    lines += ["", f"- Rows reused from an earlier sweep (`--reuse-results`, not paid here): {len(reused)}"]
    if reused:
        lines += ["", "| task | arm | run | reused from | measured at |", "|---|---|---|---|---|"]
        lines += [
            f"| {r['task']} | {r['arm']} | {r['run']} | `{r.get('reused_from_dir')}` "
            f"| {r.get('reused_from_recorded_at')} |"
            for r in reused
        ]
    return "\n".join(lines) + "\n"
