"""One sweep: bound tasks → per-task templates → cells on the scheduler → rows → reports.

``SweepConfig`` is the whole validated input (built by the runner from
argv); ``run_sweep`` does the work and returns the status and exit code.
Everything that could reject the input has already happened before this
module is entered: no clone, no session and no output exist on bad input.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench.cells.context import CellResult, SweepSettings, TaskContext
from workflow_bench.cells.run import run_cell
from workflow_bench.cells.templates import TemplateCache
from workflow_bench.promotion.apply import CANDIDATE_OVERLAY_DIR
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.report import render_reports
from workflow_bench.reports.console import Console, cell_summary
from workflow_bench.reports.health import health_line, sweep_exit_code, unusable_arms
from workflow_bench.reports.sweep_record import SWEEP_RECORD_FILE, SweepRecord, overlay_record
from workflow_bench.schedule.budget import Budget, BudgetGuard
from workflow_bench.schedule.not_run import NOT_RUN_FILE, not_run_record, schedule_record
from workflow_bench.schedule.order import Order, predicted_walls
from workflow_bench.schedule.pool import WHY_BREAKER, SchedulePolicy, SweepOutcome, run_cells
from workflow_bench.schedule.ray_cells import RESOURCE as RAY_RESOURCE
from workflow_bench.schedule.ray_cells import ExecutorError, ExecutorSpec, RayCells, open_executor
from workflow_bench.schedule.resume import harness_version, tree_digest, write_lock
from workflow_bench.schedule.reuse import Expected, expected_cell, materialize, runtime_digest, select_reuse
from workflow_bench.taskspec.spec import TaskBinding
from workflow_bench.toolkit.comparator import ComparatorPlugin
from workflow_bench.toolkit.overlay import Overlay
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.clone import remove_tree
from workflow_bench.workspace.paths import collect_stale_work_roots, make_work_root

from .arms import ArmSpec
from .output.directory import OutputDir, OutputWriteError
from .sandbox import CellLimits, SandboxKind, write_runtime_dir

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


@dataclass(frozen=True, slots=True)
class SweepConfig:
    tasks: tuple[TaskBinding, ...]
    skipped_expensive: tuple[str, ...]
    arms: tuple[ArmSpec, ...]
    runs: int
    policy: SchedulePolicy
    out_dir: Path
    model: str
    effort: str | None
    session_timeout_s: float
    verify_timeout_s: float
    max_retries: int
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
    budget: Budget = field(default_factory=Budget)
    order: Order = "plan"
    prior_rows: tuple[dict, ...] = ()  # rows from --reuse-results: what longest-first learns from
    done_rows: tuple[dict, ...] = ()  # --resume: rows already kept in out_dir; their cells do not run again
    reuse_from: Path | None = None  # --reuse-results: prior_rows came from here
    provider: str = "anthropic"
    script_digest: str | None = None  # --provider scripted: sha256 of the script file
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)  # threads, or cells as Ray tasks
    resuming: bool = False  # --resume: out_dir already holds its sweep.lock.json (checked by the runner)


def plan_keys(config: SweepConfig) -> tuple[CellKey, ...]:
    """The plan's cell identities, task-major, then run, then arm (reference order)."""
    return tuple(
        CellKey(task_id=t.spec.task_id, run=r, arm=a.name)
        for t in config.tasks
        for r in range(config.runs)
        for a in config.arms
    )


def config_lock(config: SweepConfig) -> dict[str, object]:
    """What ``sweep.lock.json`` pins: everything that makes a resumed sweep's rows comparable."""
    comparator = config.comparator
    return {
        "model": config.model,
        "effort": config.effort,
        "provider": config.provider,
        "script_digest": config.script_digest,
        "arms": [a.name for a in config.arms],
        "runs": config.runs,
        "task_binding_digests": {t.spec.task_id: t.binding_digest for t in config.tasks},
        "oracle_digests": {t.spec.task_id: t.oracle.digest for t in config.tasks},
        "skill_digest": tree_digest(Path(config.toolkit.root) / "skills"),
        "overlay_digest": config.overlay.digest if config.overlay else None,
        "comparator": [comparator.version, comparator.manifest_digest] if comparator else None,
        "claude_code_version": config.claude_version,
        "harness_version": harness_version(),
        "sandbox_backend": config.sandbox_kind.value,
        "scheduler": config.policy.scheduler,
    }


@dataclass(frozen=True, slots=True)
class PlannedCell:
    binding: TaskBinding
    arm: ArmSpec
    key: CellKey
    templates: TemplateCache

    @property
    def task(self) -> TaskContext:
        """The task's context; waits for its (shared) template to be built."""
        return self.templates.context(self.binding)


def plan_cells(
    tasks: Sequence[TaskBinding], arms: Sequence[ArmSpec], runs: int, templates: TemplateCache
) -> tuple[PlannedCell, ...]:
    """Task-major, then run, then arm (reference order)."""
    return tuple(
        PlannedCell(
            binding=t, arm=a, key=CellKey(task_id=t.spec.task_id, run=r, arm=a.name), templates=templates
        )
        for t in tasks
        for r in range(runs)
        for a in arms
    )


def timed_cell(
    settings: SweepSettings, cell: PlannedCell, runtime: str, *, remote: RayCells | None = None
) -> CellResult:
    """Run one cell here or as a Ray task; record its whole wall time and what it ran on."""
    began = time.monotonic()
    if remote is None:
        result = run_cell(settings, cell.task, cell.arm, cell.key)
    else:
        result = remote.run(settings, cell.task, cell.arm, cell.key)
    row = {
        **result.row,
        "cell_wall_s": round(time.monotonic() - began, 3),
        "runtime_digest": runtime,
        "reused": False,
    }
    return CellResult(row=row, artifacts=result.artifacts)


def _runtime(config: SweepConfig) -> str:
    return runtime_digest(
        claude_code_version=config.claude_version,
        sandbox_backend=config.sandbox_kind.value,
        provider=config.provider,
        script_digest=config.script_digest,
    )


def _expected(config: SweepConfig, cell: PlannedCell, runtime: str) -> Expected:
    """What a --reuse-results row must match to stand in for ``cell``."""
    sweep_values = {
        "model": config.model,
        "effort": config.effort,
        "sandbox_backend": config.sandbox_kind.value,
        "provider": config.provider,
        "runtime_digest": runtime,
    }
    return expected_cell(
        cell.key, cell.task, cell.arm, comparator=config.comparator, sweep_values=sweep_values
    )


def run_sweep(
    config: SweepConfig,
    *,
    access: ModelAccess,
    cancel: threading.Event,
) -> tuple[SweepOutcome, int]:
    started_at, started = datetime.now(UTC), time.monotonic()
    console = Console(started, access.static_secrets)
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
    try:
        remote = open_executor(config.executor, settings, workers=config.policy.workers)
    except ExecutorError as exc:
        remove_tree(work_root)
        console.error(f"{exc}; nothing was run")
        return SweepOutcome("aborted", (), str(exc)), EXIT_USAGE
    if remote is not None:
        console(f"cells run as Ray tasks on nodes advertising {RAY_RESOURCE}")
    if not config.resuming:  # after the executor's preflight: a refused sweep leaves no lock behind
        write_lock(config.out_dir, config_lock(config))
    record = _start_record(config, access, started_at, output)
    rows: list[dict] = list(config.done_rows)
    done = {CellKey(task_id=r["task"], run=r["run"], arm=r["arm"]) for r in rows}
    write_failures: list[OutputWriteError] = []
    guard = BudgetGuard(config.budget, started=started)
    for row in rows:
        guard.finished(row["arm"], row)
    templates = TemplateCache(
        toolkit=config.toolkit, root=work_root / "templates", bwrap_bin=config.bwrap_bin, progress=console
    )
    try:
        planned = plan_cells(config.tasks, config.arms, config.runs, templates)
        total = len(plan_keys(config))
        console(f"{total} cells: {len(config.tasks)} tasks × {config.runs} runs × {len(config.arms)} arms")
        if done:
            console(f"resuming: {len(done)} cell(s) already done")
        runtime = _runtime(config)
        if config.reuse_from is not None:
            todo = [c for c in planned if c.key not in done]
            chosen = select_reuse(
                [_expected(config, c, runtime) for c in todo], config.prior_rows, log=console
            )

            def keep(key: CellKey, row: dict, artifacts: dict[str, bytes]) -> None:
                rows.append(output.persist(key.slug, row, artifacts))

            reused = materialize(chosen, source=config.reuse_from, persist=keep, log=console)
            done |= reused
            console(f"reused {len(reused)} row(s) from {config.reuse_from}")
        cells = [c for c in planned if c.key not in done]
        task_ids = list(dict.fromkeys(c.key.task_id for c in cells))
        bindings = {b.spec.task_id: b for b in config.tasks}
        if cells:
            templates.prefetch(cells[0].binding)

        def on_start(cell: PlannedCell, index: int) -> None:
            console(f"{cell.key.label} starting ({index + 1}/{len(cells)}, {console.elapsed()} elapsed)")
            position = task_ids.index(cell.key.task_id)
            if position + 1 < len(task_ids):  # build the next task's template while this one's cells run
                templates.prefetch(bindings[task_ids[position + 1]])

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
            guard.finished(cell.arm.name, stored)
            console(cell_summary(cell.key, stored) + f" ({len(rows)}/{total} done, {console.elapsed()})")
            if stored.get("error_kind") and stored.get("error_detail"):
                console(f"{cell.key.label} detail: {str(stored['error_detail'])[:1200]}")

        priority = None
        if config.order == "longest-first":
            keys = [(c.key.task_id, c.arm.name, c.binding.spec.expensive) for c in cells]
            priority = predicted_walls(keys, config.prior_rows + config.done_rows)
        outcome = run_cells(
            cells,
            execute=lambda c: timed_cell(settings, c, runtime, remote=remote),
            priority=priority,
            persist=persist,
            row_of=lambda r: r.row,
            policy=config.policy,
            cancel=cancel,
            group_of=lambda c: c.key.task_id,
            may_start=lambda c: guard.check(c.arm.name),
            on_start=on_start,
        )
    finally:
        templates.close()  # joins a build still running before its directory goes
        if remote is not None:
            remote.close()  # a local Ray instance stops here, its workers with it
        with contextlib.suppress(OSError):
            remove_tree(work_root)  # deep-safe: a cell's leftovers may be any depth
    if outcome.status == "aborted":
        # Reference wording for the breaker, so log scrapers keep finding it.
        label = "[systemic-outage]" if outcome.why == WHY_BREAKER else f"[{outcome.why}]"
        console(f"{label} {outcome.detail}; sweep aborted, partial evidence kept")
    not_run = tuple((cells[index].key, why) for index, why in outcome.not_run)
    if not_run:
        output.write_jsonl(NOT_RUN_FILE, [not_run_record(key, why) for key, why in not_run])
        console(f"{len(not_run)} planned cell(s) not run ({not_run[0][1]}); listed in {NOT_RUN_FILE}")
    else:
        (output.root / NOT_RUN_FILE).unlink(missing_ok=True)  # a resumed sweep ran what an earlier one left
    if write_failures:
        console.error(
            f"the output directory failed: {write_failures[0]}. {len(rows)} rows were written "
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
        console.error(f"{exc}. {len(rows)} rows are kept in {output.root / 'results.jsonl'}")
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
            origin=config.overlay.origin,
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
        schedule=schedule_record(config.policy, order=config.order),
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
    not_run_path = output.root / NOT_RUN_FILE
    not_run_text = not_run_path.read_text(encoding="utf-8") if not_run_path.exists() else ""
    rendered = render_reports(record, results_text, not_run_text)
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
