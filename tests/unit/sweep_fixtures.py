"""Hand-built sweep directories (rows + sweep.json + rendered reports) for gate, verify and apply tests.

`write_sweep` goes through the same `render_reports` the sweep driver uses, so a directory built
here is exactly what a real sweep with these rows would have written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tests import builders
from workflow_bench.digests import canonical_digest
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.report import render_reports
from workflow_bench.reports.sweep_record import SWEEP_RECORD_FILE, SweepRecord, overlay_record
from workflow_bench.rows.model import Row

MODEL = "scripted-demo"
FINISHED = "2026-11-30T12:00:00+00:00"


def row(task: str = "t1", arm: str = "workflow", run: int = 0, **overrides: Any) -> Row:
    """A clean row of ``task``×``arm`` (``tests.builders.row``) recorded with this sweep's model."""
    return builders.row(task=task, arm=arm, run=run, **{"model": MODEL, "reused": None, **overrides})


def runs(n: int, task: str, arm: str, **overrides: Any) -> list[Row]:
    return [row(task, arm, r, **overrides) for r in range(n)]


def task_binding(task: str) -> dict[str, Any]:
    return {"id": task, "class": "bugfix", "oracle_digest": hashlib.sha256(task.encode()).hexdigest()}


def record(
    *,
    arms: Sequence[str] = ("workflow", "candidate_workflow"),
    tasks: Sequence[str] = ("t1",),
    status: str = "complete",
    policy: PromotionPolicy | None = None,
    overlay: dict[str, Any] | None = None,
    runs_per_cell: int = 3,
    finished_at: str = FINISHED,
) -> SweepRecord:
    candidates = any(a.startswith("candidate_") for a in arms)
    return SweepRecord(
        model=MODEL,
        effort=None,
        provider="scripted",
        claude_code_version="2.1.332",
        runs=runs_per_cell,
        arms=tuple(arms),
        tasks=tuple(task_binding(t) for t in tasks),
        skipped_expensive=(),
        started_at="2026-11-30T11:00:00+00:00",
        policy=(policy or PromotionPolicy()).to_json() if candidates else None,
        overlay=overlay,
        status=status,
        finished_at=finished_at,
        wall_s=3600.0,
    )


OVERLAY_FILES = (
    ("skills/plan/SKILL.md", b"# plan v2\ncandidate plan prose\n"),
    ("skills/work/SKILL.md", b"# work v2\ncandidate work prose\n"),
)


def make_toolkit(root: Path) -> Path:
    for relative, _ in OVERLAY_FILES:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(f"# incumbent {relative}\n".encode())
    (root / "skills" / "review").mkdir(parents=True, exist_ok=True)
    (root / "skills" / "review" / "SKILL.md").write_bytes(b"# review\n")
    return root


def overlay_for(toolkit: Path) -> dict[str, Any]:
    digest = canonical_digest([[p, hashlib.sha256(d).hexdigest(), len(d)] for p, d in OVERLAY_FILES])
    return overlay_record(digest=digest, files=OVERLAY_FILES, roles=["plan", "work"], toolkit_root=toolkit)


def results_text(rows: Iterable[Row]) -> str:
    return builders.rows_text(rows)


def write_sweep(out: Path, rec: SweepRecord, rows: Sequence[Row]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.jsonl").write_text(results_text(rows), encoding="utf-8")
    (out / SWEEP_RECORD_FILE).write_text(rec.to_text(), encoding="utf-8")
    if rec.overlay is not None:
        for relative, data in OVERLAY_FILES:
            (out / "candidate-overlay" / relative).parent.mkdir(parents=True, exist_ok=True)
            (out / "candidate-overlay" / relative).write_bytes(data)
    for name, text in render_reports(rec, (out / "results.jsonl").read_text()).files.items():
        (out / name).write_text(text, encoding="utf-8")
    return out
