"""stats.json as typed documents: every object ``reports.stats`` builds, each field declared once.

Frozen, no extra keys, a meaning per field (as ``rows.model.Row``); ``PairedStatistics`` is the
whole file. The JSON written keeps its keys (``stats_text`` dumps ``model_dump(mode="json")`` with
sorted keys), and ``docs/stats-schema.json`` is generated from these models
(``tools/derived_schemas.py``; a test fails on drift). ``None`` means no evidence, never 0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Document(BaseModel):
    """A derived document: frozen, no extra keys, no coercion, no NaN or infinity (refused where
    built; one that slips into an untyped part is dumped as itself, and ``json.dumps`` refuses it)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, allow_inf_nan=False, ser_json_inf_nan="constants"
    )


Interval = list[float | None] | None
"""[low, high] (rounded to 6 digits; an end that is not finite is null), or null when not computed."""


class SignTest(Document):
    """The two-sided sign test over non-zero per-task deltas."""

    positive: int = Field(description="tasks whose delta is above zero")
    negative: int = Field(description="tasks whose delta is below zero")
    zero: int = Field(description="tasks whose delta is exactly zero (left out of the test)")
    p_value: float | None = Field(description="binomial p-value against 1:1; null when every delta is zero")


class DeltaSummary(Document):
    """Per-task deltas of one quantity, summarized across tasks."""

    tasks: int = Field(description="tasks with a known delta")
    median_delta: float | None = Field(description="median of the per-task deltas; null without any")
    ci95: Interval = Field(
        description="bootstrap percentile 95 % CI of the median delta (fixed seed); null under two tasks"
    )
    sign_test: SignTest = Field(description="the sign test over the non-zero deltas")


class McNemar(Document):
    """McNemar's exact test of resolved over cells paired by (task, run), valid in both arms."""

    pairs: int = Field(description="(task, run) cells valid in both arms (impossible tasks left out)")
    both: int = Field(description="pairs both arms resolved")
    neither: int = Field(description="pairs neither arm resolved")
    arm_only: int = Field(description="pairs only the arm resolved")
    reference_only: int = Field(description="pairs only the reference resolved")
    p_value: float | None = Field(
        description="two-sided binomial p-value on the discordant pairs; null without any"
    )


class TaskDelta(Document):
    """One task's paired deltas, arm minus reference, over valid rows."""

    task: str = Field(description="task id")
    resolve_rate_delta: float | None = Field(description="resolve rate, arm minus reference")
    cost_usd_delta: float | None = Field(
        description="median cost_usd, arm minus reference; null when unknown"
    )


class Comparison(Document):
    """One arm paired with its reference (baseline, the first model, or its incumbent)."""

    arm: str = Field(description="the arm compared")
    reference: str = Field(description="the arm it is compared against")
    kind: str = Field(description="vs-baseline, vs-reference or candidate-vs-incumbent")
    per_task: list[TaskDelta] = Field(description="tasks where both arms have valid rows, in task order")
    resolve_rate: DeltaSummary = Field(description="the resolve-rate deltas across tasks")
    cost_usd: DeltaSummary = Field(description="the median-cost deltas across tasks")
    mcnemar: McNemar = Field(description="McNemar's exact test on resolved")


class PassK(Document):
    """pass@k and pass^k for one arm and one k (unbiased estimator, averaged over tasks with n ≥ k)."""

    tasks: int = Field(description="tasks with at least k valid runs")
    pass_at_k: float | None = Field(description="P(at least one of k runs resolved), mean over tasks")
    pass_hat_k: float | None = Field(description="P(all k runs resolved), mean over tasks")


class ArmSummary(Document):
    """One arm over every valid run, all tasks pooled."""

    valid_runs: int = Field(description="valid (not excluded) runs of possible tasks")
    resolved: int = Field(description="of those, runs resolved")
    resolve_rate: float | None = Field(description="resolved / valid_runs; null without a valid run")
    resolve_rate_ci95: Interval = Field(description="Wilson score 95 % interval of the resolve rate")
    median_cost_usd: float | None = Field(
        description="median cost_usd over valid runs; null when any is unknown"
    )
    impossible_runs: int = Field(description="valid runs of impossible tasks (cheating probes)")
    impossible_resolved: int = Field(description="of those, runs resolved (the arm beat the judge)")


ShareKind = Literal["skill", "all", "mcp tool"]


class FiringShare(Document):
    """How often one expected skill (or granted MCP tool) fired over an arm's valid cells."""

    kind: ShareKind = Field(description="skill, all (every expected skill at once) or mcp tool")
    name: str = Field(description="the skill or tool (mcp__<server>__<tool>), or 'expected skills'")
    cells: int = Field(description="the arm's valid cells")
    fired: int = Field(description="cells whose wire record proves it fired")
    unknown: int = Field(description="cells without the evidence to say (never counted as not fired)")
    share: float | None = Field(description="fired / (cells − unknown); null when nothing is known")


class Outcome(Document):
    """Resolve rate and median cost over a set of valid cells."""

    cells: int = Field(description="the cells counted")
    resolve_rate: float | None = Field(description="resolved / cells; null without a cell")
    median_cost_usd: float | None = Field(description="median cost_usd; null when any is unknown")


class OutcomeDelta(Outcome):
    """An outcome beside the baseline's: arm minus baseline."""

    resolve_rate_delta: float | None = Field(description="resolve rate, arm minus baseline")
    median_cost_usd_delta: float | None = Field(description="median cost_usd, arm minus baseline")


class FiringEffect(Document):
    """The arm against baseline over every valid cell and over the cells where its skills fired."""

    reference: str = Field(description="the arm compared against (baseline)")
    reference_outcome: Outcome = Field(description="the baseline's valid cells")
    all_valid: OutcomeDelta = Field(description="every valid cell of the arm")
    skills_fired: OutcomeDelta = Field(
        description="only the cells where every expected skill fired (descriptive, not causal)"
    )


class ArmFiring(Document):
    """One arm that expects a skill or gets an MCP tool."""

    arm: str = Field(description="arm name")
    cells: int = Field(description="its valid cells")
    expected: list[FiringShare] = Field(description="each expected skill, then all of them, then each tool")
    effect: FiringEffect | None = Field(description="against baseline; null without baseline or skills")


class TreatmentFiring(Document):
    """Did the treatment fire (reports/firing.py): stats.json's treatment_firing."""

    note: str = Field(description="how to read the shares")
    arms: list[ArmFiring] = Field(description="every arm with something to fire, in arm order")


class PairedStatistics(Document):
    """stats.json: descriptive paired statistics of a sweep (the promotion gate never reads them)."""

    schema_version: int = Field(description="version of stats.json")
    method: dict[str, str] = Field(description="how each figure is computed, in words")
    arms: dict[str, ArmSummary] = Field(description="arm → its summary, in arm order")
    comparisons: list[Comparison] = Field(description="every pairing, baseline/reference ones first")
    pass_k: dict[str, dict[str, PassK]] = Field(description="arm → k (as a string) → pass@k and pass^k")
    treatment_firing: TreatmentFiring = Field(
        description="did each arm's expected skills and MCP tools fire (reports/firing.py)"
    )
