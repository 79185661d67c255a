"""Cells that were planned but never started: ``not-run.jsonl`` records and the report section.

``results.jsonl`` holds only cells that ran. A sweep that ends early (outage
breaker, signal, budget) lists every planned cell it never started here, one
record per cell with ``task``, ``arm``, ``run`` and ``why`` (the scheduler's
stop reason), so "missing" is never confused with "not measured yet".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from workflow_bench.providers.access import CellKey
from workflow_bench.rows.model import Row
from workflow_bench.schedule.pool import SchedulePolicy

NOT_RUN_FILE = "not-run.jsonl"


def not_run_record(key: CellKey, why: str) -> dict[str, object]:
    return {"task": key.task_id, "arm": key.arm, "run": key.run, "why": why}


def schedule_record(policy: SchedulePolicy, *, order: str) -> dict[str, Any]:
    """How cells were scheduled, as stored in ``sweep.json`` so a re-render can print it."""
    return {
        "scheduler": policy.scheduler,
        "workers": policy.workers,
        "window": policy.effective_window if policy.scheduler == "packed" else None,
        "order": order,
        "outage_streak": policy.outage_streak,
    }


def read_not_run(text: str) -> list[dict[str, Any]]:
    """The records of a ``not-run.jsonl`` text (empty when the file is absent or empty)."""
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def schedule_section(
    schedule: Mapping[str, Any] | None,
    not_run: Sequence[Mapping[str, Any]],
    *,
    reused: Sequence[Row] = (),
) -> list[str]:
    """report.md lines: how cells were scheduled, which never started, which rows were reused.

    Built from stored data only (``sweep.json``'s schedule record, ``not-run.jsonl``, the rows),
    so ``python -m workflow_bench.report DIR`` re-renders it byte-identically. No record, no section.
    """
    if schedule is None:
        return []
    window = (
        f", window {schedule['window']}, order `{schedule['order']}`"
        if schedule["scheduler"] == "packed"
        else ""
    )
    lines = [
        "## Scheduling",
        "",
        f"- Scheduler: `{schedule['scheduler']}` ({schedule['workers']} worker(s){window}); "
        f"outage streak {schedule['outage_streak'] or 'disabled'}",
        f"- Cells planned but not run: {len(not_run)}"
        + (f" (listed in `{NOT_RUN_FILE}`)" if not_run else ""),
    ]
    if not_run:
        lines += ["", "| task | arm | run | why |", "|---|---|---|---|"]
        lines += [f"| {n['task']} | {n['arm']} | {n['run']} | {n['why']} |" for n in not_run]
    lines += ["", f"- Rows reused from an earlier sweep (`--reuse-results`, not paid here): {len(reused)}"]
    if reused:
        lines += ["", "| task | arm | run | reused from | measured at |", "|---|---|---|---|---|"]
        lines += [
            f"| {r.task} | {r.arm} | {r.run} | `{r.reused_from_dir}` | {r.reused_from_recorded_at} |"
            for r in reused
        ]
    return [*lines, ""]
