"""One sweep: bound tasks → per-task templates → cells on the scheduler → rows → reports.

``SweepConfig`` is the whole validated input (built by the runner from
argv); ``run_sweep`` does the work and returns the status and exit code.
Everything that could reject the input has already happened before this
module is entered: no clone, no session and no output exist on bad input.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench.cells.context import CellResult, SweepSettings, TaskContext, prepare_task_context
from workflow_bench.cells.index import build_index
from workflow_bench.cells.paths import collect_stale_work_roots, make_work_root
from workflow_bench.cells.run import run_cell
from workflow_bench.cells.workspace import remove_tree
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.reports.health import health_line, sweep_exit_code, unusable_arms
from workflow_bench.reports.promotion.apply import CANDIDATE_OVERLAY_DIR
from workflow_bench.reports.promotion.policy import PromotionPolicy
from workflow_bench.reports.render import render_reports
from workflow_bench.reports.sweep_record import SWEEP_RECORD_FILE, SweepRecord, overlay_record
from workflow_bench.schedule.pool import SweepOutcome, run_cells
from workflow_bench.tasks.spec import TaskBinding
from workflow_bench.toolkit.comparator import ComparatorPlugin
from workflow_bench.toolkit.overlay import Overlay
from workflow_bench.toolkit.spec import Toolkit

from .arms import ArmSpec
from .output import OutputDir, OutputWriteError
from .sandbox import CellLimits, SandboxKind, write_runtime_dir

EXIT_OK, EXIT_FAILED, EXIT_CANCELLED = 0, 1, 130
CONSOLE_LINE_CHARS = 2000  # one live line at most; longer agent text is cut with "…"


@dataclass(frozen=True, slots=True)
class SweepConfig:
    tasks: tuple[TaskBinding, ...]
    skipped_expensive: tuple[str, ...]
    arms: tuple[ArmSpec, ...]
    runs: int
    workers: int
    out_dir: Path
    model: str
    effort: str | None
    session_timeout_s: float
    verify_timeout_s: float
    max_retries: int
    outage_streak: int
    claude_bin: Path
    claude_version: str
    bwrap_bin: str
    toolkit: Toolkit
    overlay: Overlay | None = None
    comparator: ComparatorPlugin | None = None
    sandbox_kind: SandboxKind = SandboxKind.BWRAP
    promotion_policy: PromotionPolicy | None = None
    """The gate's policy; the default policy when candidate arms run and none was given."""
    limits: CellLimits = field(default_factory=CellLimits)


@dataclass(frozen=True, slots=True)
class PlannedCell:
    task: TaskContext
    arm: ArmSpec
    key: CellKey


def plan_cells(tasks: Sequence[TaskContext], arms: Sequence[ArmSpec], runs: int) -> tuple[PlannedCell, ...]:
    """Task-major, then run, then arm (reference order)."""
    return tuple(
        PlannedCell(task=t, arm=a, key=CellKey(task_id=t.binding.spec.task_id, run=r, arm=a.name))
        for t in tasks
        for r in range(runs)
        for a in arms
    )


class _Console:
    """Thread-safe live progress lines with elapsed time."""

    def __init__(self, started: float, secrets: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self._started = started
        self._secrets = tuple(secrets)

    def __call__(self, line: str) -> None:
        from .redaction import printable, redact_text

        with self._lock:  # printable: agent text (tool names, error tails) must not drive the terminal
            print(printable(redact_text(line, self._secrets), CONSOLE_LINE_CHARS), flush=True)

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self._started)
        return f"{seconds // 60}m{seconds % 60:02d}s"


def _task_contexts(config: SweepConfig, work_root: Path, console: _Console) -> list[TaskContext]:
    contexts = []
    indexes: dict[tuple[str, str], TaskContext] = {}  # (repository, SHA) → the task that built it
    for binding in config.tasks:
        context = prepare_task_context(
            binding, toolkit=config.toolkit, dest=work_root / "templates" / binding.spec.task_id
        )
        snapshot, base = context.sanitized_sha[:12], binding.resolved_sha[:12]
        console(f"[{binding.spec.task_id}] sanitized snapshot {snapshot} of {base}")
        if config.toolkit.index is not None:
            context = _with_index(config, context, indexes, console)
        contexts.append(context)
    return contexts


def _with_index(config: SweepConfig, context: TaskContext, built: dict, console: _Console) -> TaskContext:
    """The toolkit's index on the template: built once per (repository, SHA), copied for the rest."""
    binding = context.binding
    key = (str(binding.repo_path), binding.resolved_sha)
    first = built.get(key)
    if first is not None and first.index is not None and first.index.digest is not None:
        shutil.copytree(
            first.template / first.index.output, context.template / first.index.output, symlinks=True
        )
        console(f"[{binding.spec.task_id}] index reused from {first.binding.spec.task_id}")
        return replace(context, index=first.index)
    index = build_index(context.template, toolkit=config.toolkit, bwrap_bin=config.bwrap_bin)
    if index is not None and index.digest is not None:
        built[key] = replace(context, index=index)
        console(f"[{binding.spec.task_id}] index built: {index.output} {index.digest[:19]}")
    elif index is not None:
        console(f"[{binding.spec.task_id}] index build FAILED: its cells will be infra-error")
    return replace(context, index=index)


def cell_summary(key: CellKey, row: dict) -> str:
    def show(value, fmt="{}"):
        return "n/a" if value is None else fmt.format(value)

    return (
        f"{key.label} resolved={row.get('resolved')} authored={row.get('authored_tests_passed')} "
        f"oracle={row.get('oracle_passed')} in={show(row.get('input_tokens'))} "
        f"out={show(row.get('output_tokens'))} cost={show(row.get('cost_usd'), '${:.4f}')} "
        f"took={show(row.get('duration_s'), '{:.1f}s')} turns={show(row.get('num_turns'))} "
        f"error_kind={row.get('error_kind') or 'none'}"
    )


def run_sweep(
    config: SweepConfig,
    *,
    access: ModelAccess,
    cancel: threading.Event,
) -> tuple[SweepOutcome, int]:
    started_at, started = datetime.now(UTC), time.monotonic()
    console = _Console(started, access.static_secrets)
    output = OutputDir(config.out_dir)
    removed, failed = collect_stale_work_roots()
    for path in removed:
        console(f"removed a stale cell directory left by a killed runner: {path}")
    for message in failed:
        console(f"could not remove a stale cell directory: {message}")
    work_root = make_work_root()
    settings = SweepSettings(
        model=config.model,
        effort=config.effort,
        session_timeout_s=config.session_timeout_s,
        verify_timeout_s=config.verify_timeout_s,
        max_retries=config.max_retries,
        claude_bin=config.claude_bin,
        claude_version=config.claude_version,
        bwrap_bin=config.bwrap_bin,
        access=access,
        toolkit=config.toolkit,
        work_root=work_root,
        runtime_dir=write_runtime_dir(work_root / "runtime"),
        comparator=config.comparator,
        overlay=config.overlay,
        cancel=cancel,
        progress=console,
        sandbox_kind=config.sandbox_kind,
        limits=config.limits,
    )
    record = _start_record(config, access, started_at, output)
    rows: list[dict] = []
    write_failures: list[OutputWriteError] = []
    try:
        cells = plan_cells(_task_contexts(config, work_root, console), config.arms, config.runs)
        console(
            f"{len(cells)} cells: {len(config.tasks)} tasks × {config.runs} runs × {len(config.arms)} arms"
        )

        def on_start(cell: PlannedCell, index: int) -> None:
            console(f"{cell.key.label} starting ({index + 1}/{len(cells)}, {console.elapsed()} elapsed)")

        def persist(cell: PlannedCell, result: CellResult) -> None:
            if write_failures:
                console(f"{cell.key.label} finished, but --out failed earlier: its row is not written")
                return
            try:
                stored = output.persist(cell.key.slug, result.row, result.artifacts)
            except OutputWriteError as exc:
                # Disk full or unwritable --out: stop paying for cells whose rows cannot be kept.
                write_failures.append(exc)
                console(f"[output] {exc}; stopping the sweep (rows already written are kept)")
                cancel.set()
                return
            rows.append(stored)
            console(cell_summary(cell.key, stored) + f" ({len(rows)}/{len(cells)} done, {console.elapsed()})")
            if stored.get("error_kind") and stored.get("error_detail"):
                console(f"{cell.key.label} detail: {str(stored['error_detail'])[:1200]}")

        outcome = run_cells(
            cells,
            execute=lambda c: run_cell(settings, c.task, c.arm, c.key),
            persist=persist,
            row_of=lambda r: r.row,
            workers=config.workers,
            cancel=cancel,
            outage_streak=config.outage_streak,
            on_start=on_start,
        )
    finally:
        with contextlib.suppress(OSError):
            remove_tree(work_root)  # deep-safe: a cell's leftovers may be any depth
    if outcome.status == "aborted":
        console(f"[systemic-outage] {outcome.detail}; sweep aborted, partial evidence kept")
    if write_failures:
        console(
            f"error: the output directory failed: {write_failures[0]}. {len(rows)} rows were written "
            f"to {output.root / 'results.jsonl'} and are kept; no report was written"
        )
        return outcome, EXIT_FAILED
    record = record.finished(
        status=outcome.status,
        detail=outcome.detail,
        finished_at=datetime.now(UTC),
        wall_s=round(time.monotonic() - started, 1),
    )
    try:
        exit_code = _write_reports(record, outcome.status, rows, output, console)
    except OutputWriteError as exc:
        console(f"error: {exc}. {len(rows)} rows are kept in {output.root / 'results.jsonl'}")
        return outcome, EXIT_FAILED
    return outcome, exit_code


def _start_record(
    config: SweepConfig, access: ModelAccess, started_at: datetime, output: OutputDir
) -> SweepRecord:
    """sweep.json before any cell: provenance, policy and the overlay snapshot `promotion apply` uses."""
    candidates = any(a.candidate_of for a in config.arms)
    policy = (config.promotion_policy or PromotionPolicy()) if candidates else None
    overlay = None
    if config.overlay is not None:
        overlay = overlay_record(
            digest=config.overlay.digest,
            files=config.overlay.files,
            roles=sorted(config.overlay.roles),
            toolkit_root=Path(config.toolkit.root),
        )
        for relative, data in config.overlay.files:
            target = output.root / CANDIDATE_OVERLAY_DIR / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    record = SweepRecord(
        model=config.model,
        effort=config.effort,
        provider=access.provider,
        claude_code_version=config.claude_version,
        runs=config.runs,
        arms=tuple(a.name for a in config.arms),
        tasks=tuple(t.to_json() for t in config.tasks),
        skipped_expensive=tuple(config.skipped_expensive),
        started_at=started_at.isoformat(),
        policy=None if policy is None else policy.to_json(),
        overlay=overlay,
    )
    output.write_text(SWEEP_RECORD_FILE, record.to_text())
    return record


def _write_reports(
    record: SweepRecord, status: str, rows: list[dict], output: OutputDir, console: Callable[[str], None]
) -> int:
    """Every report from the stored rows, then one health line per arm, then the exit code."""
    output.write_text(SWEEP_RECORD_FILE, record.to_text())
    results_path = output.root / "results.jsonl"
    results_text = results_path.read_text(encoding="utf-8") if results_path.exists() else ""
    rendered = render_reports(record, results_text)
    written = [output.write_text(name, text) for name, text in rendered.files.items()]
    console(f"wrote {len(rows)} rows to {results_path} and {', '.join(p.name for p in written)}")
    if rendered.promotion is not None:
        verdicts = ", ".join(f"{d['candidate_arm']}={d['decision']}" for d in rendered.promotion["decisions"])
        console(f"[promotion] {verdicts}")
    # After every report is on disk (reference: enforce_measurement_health runs last).
    for health in rendered.health.values():
        console(health_line(health))
    unusable = unusable_arms(rendered.health)
    if unusable:
        console(f"no usable measurement for arm(s): {', '.join(unusable)}")
    return sweep_exit_code(status, rendered.health)
