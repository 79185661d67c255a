"""The validated input of one sweep (``SweepConfig``), its plan keys and what ``sweep.lock.json`` pins.

``SweepConfig`` is built once by the runner from argv and the prepared input; its three cell-facing
parts (``cell``, ``harness``, ``evaluated``) are the very objects every cell receives in its
``SweepSettings``, so a flag such as ``--timeout`` is copied once (argv → ``CellPolicy``) and never
again. Everything that could reject the input has already happened: no clone, no session and no
output exist on bad input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workflow_bench.arms import ArmSpec
from workflow_bench.cells.context import CellPolicy, Evaluated, Harness
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.providers.access import CellKey
from workflow_bench.rows.model import Row
from workflow_bench.schedule.budget import Budget
from workflow_bench.schedule.order import Order
from workflow_bench.schedule.pool import SchedulePolicy
from workflow_bench.schedule.ray_cells import ExecutorSpec
from workflow_bench.schedule.resume import harness_version, tree_digest
from workflow_bench.taskspec.spec import TaskBinding

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


@dataclass(frozen=True, slots=True)
class SweepConfig:
    tasks: tuple[TaskBinding, ...]
    skipped_expensive: tuple[str, ...]
    arms: tuple[ArmSpec, ...]
    runs: int
    policy: SchedulePolicy
    out_dir: Path
    cell: CellPolicy
    harness: Harness
    evaluated: Evaluated
    promotion_policy: PromotionPolicy | None = None
    """The gate's policy; the default policy when candidate arms run and none was given."""
    budget: Budget = field(default_factory=Budget)
    order: Order = "plan"
    prior_rows: tuple[Row, ...] = ()  # rows from --reuse-results: what longest-first learns from
    done_rows: tuple[Row, ...] = ()  # --resume: rows already kept in out_dir; not run again
    reuse_from: Path | None = None  # --reuse-results: prior_rows came from here
    provider: str = "anthropic"
    agent_script: tuple[str, str] | None = None  # --provider scripted: (the script file, its sha256)
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)  # threads, or cells as Ray tasks
    resuming: bool = False  # --resume: out_dir already holds its sweep.lock.json (checked by the runner)

    @property
    def script_digest(self) -> str | None:
        return self.agent_script[1] if self.agent_script is not None else None


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
    evaluated = config.evaluated
    comparator = evaluated.comparator
    return {
        "model": config.cell.model,
        "effort": config.cell.effort,
        "provider": config.provider,
        "script_digest": config.script_digest,
        "arms": [a.name for a in config.arms],
        "runs": config.runs,
        "task_binding_digests": {t.spec.task_id: t.binding_digest for t in config.tasks},
        "oracle_digests": {t.spec.task_id: t.oracle.digest for t in config.tasks},
        "skill_digest": tree_digest(Path(evaluated.toolkit.root) / "skills"),
        "overlay_digest": evaluated.overlay.digest if evaluated.overlay else None,
        "comparator": [comparator.version, comparator.manifest_digest] if comparator else None,
        "claude_code_version": config.harness.claude_version,
        "harness_version": harness_version(),
        "sandbox_backend": config.harness.sandbox_kind.value,
        "scheduler": config.policy.scheduler,
    }
