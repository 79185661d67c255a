"""One sweep's driver: the plan's cells on the scheduler, each row persisted, then every report.

``run_sweep`` sets the sweep up (console, output directory, work root, executor, lock, sweep.json),
builds the ``SweepPlan``, hands it to a ``SweepDriver`` and writes the reports. The driver owns
the mutable state of a running sweep (the rows kept so far, a failed output directory, the budget
guard) and its methods are what the scheduler calls back: ``on_start``, ``execute``, ``persist``.
Only the driver writes the output directory (through ``OutputDir``); cells return data.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench.cells.context import CellResult, SweepSettings
from workflow_bench.cells.run import run_cell
from workflow_bench.cells.templates import TemplateCache
from workflow_bench.output.directory import OutputDir, OutputWriteError
from workflow_bench.promotion.apply import CANDIDATE_OVERLAY_DIR
from workflow_bench.promotion.document import sweep_promotion
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.report.render import duration_line, render_reports, write_rendered
from workflow_bench.reports.console import Console, cell_summary
from workflow_bench.reports.health import health_line, sweep_exit_code, unusable_arms
from workflow_bench.reports.sweep_record import (
    SWEEP_RECORD_FILE,
    AgentScriptRecord,
    SweepRecord,
    overlay_record,
)
from workflow_bench.reports.viewer import DirectoryFiles
from workflow_bench.rows.model import Row
from workflow_bench.sandbox import write_runtime_dir
from workflow_bench.schedule.budget import BudgetGuard
from workflow_bench.schedule.not_run import NOT_RUN_FILE, not_run_record, schedule_record
from workflow_bench.schedule.pool import WHY_BREAKER, SweepOutcome, run_cells
from workflow_bench.schedule.ray_cells import RESOURCE as RAY_RESOURCE
from workflow_bench.schedule.ray_cells import ExecutorError, RayCells, open_executor
from workflow_bench.schedule.resume import write_lock
from workflow_bench.schedule.reuse import materialize
from workflow_bench.workspace.paths import collect_stale_work_roots, make_work_root
from workflow_bench.workspace.remove import remove_tree

from .config import EXIT_FAILED, EXIT_USAGE, SweepConfig, config_lock
from .plan import PlannedCell, SweepPlan


def timed_cell(
    settings: SweepSettings, cell: PlannedCell, runtime: str, *, remote: RayCells | None = None
) -> CellResult:
    """Run one cell here or as a Ray task; record its whole wall time and what it ran on."""
    began = time.monotonic()
    if remote is None:
        result = run_cell(settings, cell.task, cell.arm, cell.key)
    else:
        result = remote.run(settings, cell.task, cell.arm, cell.key)
    row = result.row.replace(
        cell_wall_s=round(time.monotonic() - began, 3), runtime_digest=runtime, reused=False
    )
    return CellResult(row=row, artifacts=result.artifacts)


class SweepDriver:
    """The running sweep: the rows kept so far, and the scheduler's callbacks that add to them."""

    def __init__(
        self,
        plan: SweepPlan,
        *,
        settings: SweepSettings,
        output: OutputDir,
        console: Console,
        templates: TemplateCache,
        remote: RayCells | None,
        started: float,
    ) -> None:
        self.plan = plan
        self.settings = settings
        self.output = output
        self.console = console
        self.templates = templates
        self.remote = remote
        self.rows: list[Row] = list(plan.config.done_rows)
        self.write_failures: list[OutputWriteError] = []
        self.guard = BudgetGuard(plan.config.budget, started=started)
        for row in self.rows:
            self.guard.finished(row.arm, row)
        self.cells: tuple[PlannedCell, ...] = ()
        self._task_ids: list[str] = []
        self._bindings = {b.spec.task_id: b for b in plan.config.tasks}

    def run(self) -> SweepOutcome:
        """Copy the reused rows, then run every cell left on the scheduler; the outcome of the pool."""
        config, console = self.plan.config, self.console
        shape = f"{len(config.tasks)} tasks × {config.runs} runs × {len(config.arms)} arms"
        console(f"{self.plan.total} cells: {shape}")
        if self.plan.done:
            console(f"resuming: {len(self.plan.done)} cell(s) already done")
        reused: set[CellKey] = set()
        if config.reuse_from is not None:
            reused = materialize(
                self.plan.reuse, source=config.reuse_from, persist=self.keep_reused, log=console
            )
            console(f"reused {len(reused)} row(s) from {config.reuse_from}")
        self.cells = self.plan.to_run(reused)
        self._task_ids = list(dict.fromkeys(c.key.task_id for c in self.cells))
        if self.cells:
            self.templates.prefetch(self.cells[0].binding)
        return run_cells(
            self.cells,
            execute=self.execute,
            priority=self.plan.priorities(self.cells),
            persist=self.persist,
            row_of=lambda r: r.row,
            policy=config.policy,
            cancel=self.settings.cancel,
            group_of=lambda c: c.key.task_id,
            may_start=lambda c: self.guard.check(c.arm.name),
            on_start=self.on_start,
        )

    def keep_reused(self, key: CellKey, row: Row, artifacts: dict[str, bytes]) -> None:
        self.rows.append(self.output.persist(key.slug, row, artifacts))

    def execute(self, cell: PlannedCell) -> CellResult:
        return timed_cell(self.settings, cell, self.plan.runtime, remote=self.remote)

    def on_start(self, cell: PlannedCell, index: int) -> None:
        console = self.console
        console(f"{cell.key.label} starting ({index + 1}/{len(self.cells)}, {console.elapsed()} elapsed)")
        position = self._task_ids.index(cell.key.task_id)
        if position + 1 < len(self._task_ids):  # build the next task's template while this one's cells run
            self.templates.prefetch(self._bindings[self._task_ids[position + 1]])

    def persist(self, cell: PlannedCell, result: CellResult) -> None:
        console = self.console
        if self.write_failures:
            console(f"{cell.key.label} finished, but --out failed earlier: its row is not written")
            return
        try:
            stored = self.output.persist(cell.key.slug, result.row, result.artifacts)
        except OutputWriteError as exc:
            # Disk full or unwritable --out: stop paying for cells whose rows cannot be kept.
            self.write_failures.append(exc)
            console(f"[output] {exc}; stopping the sweep (rows already written are kept)")
            self.settings.cancel.set()
            return
        self.rows.append(stored)
        self.guard.finished(cell.arm.name, stored)
        console(
            cell_summary(cell.key, stored)
            + f" ({len(self.rows)}/{self.plan.total} done, {console.elapsed()})"
        )
        if stored.error_kind and stored.error_detail:
            console(f"{cell.key.label} detail: {str(stored.error_detail)[:1200]}")


def _settings(config: SweepConfig, *, access: ModelAccess, work_root: Path, cancel: threading.Event,
              console: Console) -> SweepSettings:  # fmt: skip
    return SweepSettings(
        cell=config.cell,
        harness=config.harness,
        evaluated=config.evaluated,
        access=access,
        work_root=work_root,
        runtime_dir=write_runtime_dir(work_root / "runtime"),
        cancel=cancel,
        progress=console,
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
    settings = _settings(config, access=access, work_root=work_root, cancel=cancel, console=console)
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
    templates = TemplateCache(
        toolkit=config.evaluated.toolkit,
        root=work_root / "templates",
        bwrap_bin=config.harness.bwrap_bin,
        progress=console,
    )
    driver: SweepDriver | None = None
    try:
        plan = SweepPlan.build(config, templates, log=console)
        driver = SweepDriver(
            plan, settings=settings, output=output, console=console, templates=templates, remote=remote,
            started=started,
        )  # fmt: skip
        outcome = driver.run()
    finally:
        templates.close()  # joins a build still running before its directory goes
        if remote is not None:
            remote.close()  # a local Ray instance stops here, its workers with it
        with contextlib.suppress(OSError):
            remove_tree(work_root)  # deep-safe: a cell's leftovers may be any depth
    rows, cells = driver.rows, driver.cells
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
    if driver.write_failures:
        console.error(
            f"the output directory failed: {driver.write_failures[0]}. {len(rows)} rows were written "
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
    if config.evaluated.overlay is not None:
        overlay = overlay_record(
            digest=config.evaluated.overlay.digest,
            files=config.evaluated.overlay.files,
            roles=sorted(config.evaluated.overlay.roles),
            toolkit_root=Path(config.evaluated.toolkit.root),
            origin=config.evaluated.overlay.origin,
        )
        for relative, data in config.evaluated.overlay.files:
            target = output.root / CANDIDATE_OVERLAY_DIR / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    record = SweepRecord(
        model=config.cell.model,
        effort=config.cell.effort,
        provider=access.provider,
        claude_code_version=config.harness.claude_version,
        runs=config.runs,
        arms=tuple(a.name for a in config.arms),
        tasks=tuple(t.to_json() for t in config.tasks),
        skipped_expensive=tuple(config.skipped_expensive),
        started_at=started_at.isoformat(),
        policy=None if policy is None else policy.to_json(),
        overlay=overlay,
        schedule=schedule_record(config.policy, order=config.order),
        agent_script=(
            None
            if config.agent_script is None
            else AgentScriptRecord(path=config.agent_script[0], sha256=config.agent_script[1])
        ),
    )
    output.write_text(SWEEP_RECORD_FILE, record.to_text())
    return record


def _write_reports(
    record: SweepRecord, status: str, rows: list[Row], output: OutputDir, console: Callable[[str], None]
) -> int:
    """Every report from the stored rows, then one health line per arm, then the exit code."""
    output.write_text(SWEEP_RECORD_FILE, record.to_text())
    results_path = output.root / "results.jsonl"
    results_text = results_path.read_text(encoding="utf-8") if results_path.exists() else ""
    not_run_path = output.root / NOT_RUN_FILE
    not_run_text = not_run_path.read_text(encoding="utf-8") if not_run_path.exists() else ""
    promotion = sweep_promotion(record, results_text)  # decided before anything is rendered
    rendered = render_reports(
        record, results_text, not_run_text, promotion=promotion, files=DirectoryFiles(output.root)
    )
    written = write_rendered(output, rendered)
    console(f"wrote {len(rows)} rows to {results_path} and {', '.join(p.name for p in written)}")
    if rendered.promotion is not None:
        verdicts = ", ".join(f"{d.candidate_arm}={d.decision}" for d in rendered.promotion.decisions)
        console(f"[promotion] {verdicts}")
    # After every report is on disk (reference: enforce_measurement_health runs last).
    for health in rendered.health.values():
        console(health_line(health))
    durations = duration_line(record, results_text)
    if durations is not None:
        console(durations)
    unusable = unusable_arms(rendered.health)
    if unusable:
        console(f"no usable measurement for arm(s): {', '.join(unusable)}")
    return sweep_exit_code(status, rendered.health)
