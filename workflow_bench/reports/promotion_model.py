"""promotion.json as typed documents, for whoever builds, reads or shows it; each field declared once.

The deciding lives in ``promotion.gate`` (one decision) and ``promotion.document`` (every decision
of a sweep); a renderer that shows the decisions imports this module only, never those two, so
rendering cannot decide (tests/unit/test_layering.py checks). Frozen, no extra keys, a meaning per
field (as ``rows.model.Row``); the JSON written keeps its keys (``document_text``: by alias, sorted,
two-space indent), and ``docs/promotion-schema.json`` is generated from ``PromotionDocument``
(``tools/derived_schemas.py``; a test fails on drift). Numbers are stored as computed (an int stays
an int), so a stored document re-serializes to its bytes and ``promotion verify`` compares exactly.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from .overlay_model import CandidateOverlay
from .stats_model import Document

PROMOTION_FILE = "promotion.json"
PROMOTION_SCHEMA = 2  # 2: decisions carry the cheating probe ("impossible"; issue 23)

Number = Annotated[int | float, Field(union_mode="left_to_right")]
PromotionVerdict = Literal["promote", "keep_incumbent", "insufficient_evidence"]


class ArmEvidence(Document):
    """One arm on one task (``promotion.evidence.arm_evidence``); metrics over scored rows only."""

    runs: int = Field(description="every row of the task×arm")
    valid_runs: int = Field(description="rows not excluded (harness faults aside)")
    excluded_runs: int = Field(description="rows excluded from medians and denominators")
    scored_runs: int = Field(description="valid rows with trustworthy evidence and the skill proven invoked")
    resolved: int = Field(description="scored rows resolved")
    skill_not_invoked: int = Field(description="rows whose expected skill never fired (skill-not-invoked)")
    error_kinds: dict[str, int] = Field(description="error kind → rows, sorted by kind")
    metrics: dict[str, Number | None] = Field(
        description="implementation metric → median over scored rows; null when any is unmeasured"
    )
    review_weighted_f1: Number | None = Field(description="median weighted F1 over scored rows")
    review_false_positives: Number | None = Field(description="median false positives over scored rows")
    review_blocker_recall: Number | None = Field(
        description="minimum blocker recall over scored rows (one missed blocker matters)"
    )
    review_verdict_correct: bool | None = Field(description="every scored repeat had the correct verdict")
    review_clean_pass: bool | None = Field(description="every scored repeat passed the clean control")
    review_clean_control: bool | None = Field(description="the case is a clean control (no defect)")


class ProbeEvidence(Document):
    """One arm's valid runs of impossible tasks (cheating probes) and how many it "resolved"."""

    resolved: int = Field(description="valid runs of impossible tasks resolved (the judge was beaten)")
    runs: int = Field(description="valid (not excluded) runs of impossible tasks")

    @property
    def share(self) -> float | None:
        return self.resolved / self.runs if self.runs else None


class ProbePair(Document):
    """Both arms over the impossible tasks."""

    incumbent: ProbeEvidence = Field(description="the incumbent's probe runs")
    candidate: ProbeEvidence = Field(description="the candidate's probe runs")


class _Task(Document):
    model_config = ConfigDict(populate_by_name=True)

    task: str = Field(description="task id")
    task_class: str = Field(alias="class", description="task class from the task file")
    gated: bool = Field(description="the task takes part in the decision")
    insufficient: list[str] = Field(description="why the evidence cannot decide this task ([] when it can)")
    incumbent: ArmEvidence = Field(description="the incumbent's evidence")
    candidate: ArmEvidence = Field(description="the candidate's evidence")


class ImplementationTask(_Task):
    """One task of an implementation gate: resolve counts, the policy metric and the regressions."""

    incumbent_resolved: str = Field(description="resolved/scored runs of the incumbent")
    candidate_resolved: str = Field(description="resolved/scored runs of the candidate")
    incumbent_metric: Number | None = Field(description="the incumbent's median of the policy metric")
    candidate_metric: Number | None = Field(description="the candidate's median of the policy metric")
    improvement_pct: Number | None = Field(description="percent of the metric saved by the candidate")
    quality_regression: bool = Field(description="the candidate resolved a smaller share of its runs")
    quality_floor_enforced: bool = Field(description="the candidate must resolve every scored run")
    candidate_quality_floor_met: bool | None = Field(description="it did; null when not enforced")
    efficiency_regression: bool = Field(description="the candidate spent more than the policy allows")
    skill_attributable_failure: bool = Field(description="a run failed because a skill never fired")


class ReviewTask(_Task):
    """One case of a review gate: weighted F1, or false positives on a clean control."""

    clean_control: bool = Field(description="the case has no defect (judged on false positives)")
    regressions: list[str] = Field(description="why the candidate is worse on this case")
    improved: bool = Field(description="weighted F1 up by at least the policy's minimum")
    weighted_f1_delta: Number | None = Field(description="candidate minus incumbent weighted F1")


class Decision(Document):
    """One candidate arm against its incumbent (``promotion.gate.decide``)."""

    candidate_arm: str = Field(description="the candidate arm")
    incumbent_arm: str = Field(description="the arm it would replace")
    decision: PromotionVerdict = Field(description="promote, keep_incumbent or insufficient_evidence")
    metric: str = Field(description="the policy metric the gate compared")
    metric_warning: str | None = Field(description="what the metric does not see, when it is a main-loop one")
    median_improvement: Number | None = Field(
        description="median improvement over gated tasks: percent for implementation metrics, "
        "F1 points for review"
    )
    resolved_margin: int | None = Field(
        description="candidate minus incumbent resolved runs (implementation)"
    )
    gated_tasks: list[str] = Field(description="tasks that took part in the decision")
    ungated_tasks: list[str] = Field(description="tasks neither arm solved, held only to the spend cap")
    reasons: list[str] = Field(description="every rule's reason, in rule order")
    tasks: list[ImplementationTask | ReviewTask] = Field(description="per-task evidence and findings")
    impossible: ProbePair | None = Field(default=None, description="the cheating probes; null when none ran")

    @property
    def review(self) -> bool:
        """A review gate's decision (its tasks are ``ReviewTask``)."""
        return self.metric == "review_weighted_f1"


class ResultsRecord(Document):
    """The rows the decisions were computed from."""

    file: str = Field(description="results.jsonl")
    rows: int = Field(description="row lines")
    row_sha256: list[str] = Field(description="sha256 of each stored row line, in order")


class PromotionDocument(Document):
    """promotion.json: the gate's inputs, per-task evidence and decisions of one sweep."""

    schema_version: int = Field(description=f"version of promotion.json ({PROMOTION_SCHEMA})")
    generated_at: str = Field(description="the sweep's finish time (UTC ISO)")
    evidence_expires_at: str = Field(description="generated_at plus the policy's evidence_max_age_days")
    run_status: str = Field(description="complete, aborted or cancelled")
    benchmark_model: str = Field(description="the model the sweep ran on")
    effort: str | None = Field(description="Claude Code --effort level, or null")
    provider: str = Field(description="anthropic, openai or scripted")
    candidate_origin: str = Field(description="who wrote the candidate overlay")
    candidate_overlay: CandidateOverlay | None = Field(
        description="{digest, roles, files} of the overlay, or null"
    )
    target_base_digests: dict[str, str | None] | None = Field(
        description="the overlay's target base digests (destination → sha256 at sweep start), or null"
    )
    arms: list[str] = Field(description="every arm of the sweep")
    runs: int = Field(description="runs per cell")
    required_candidate_arms: list[str] = Field(description="the candidate arms decided")
    selected_tasks: list[dict[str, Any]] = Field(description="the task bindings the sweep ran")
    policy: dict[str, Any] = Field(description="the promotion policy the sweep recorded at its start")
    health: dict[str, str] = Field(description="arm → measurement health")
    results: ResultsRecord = Field(description="the rows decided from")
    decisions: list[Decision] = Field(description="one decision per candidate arm")


def document_json(doc: PromotionDocument) -> dict[str, Any]:
    """The JSON object promotion.json holds (stored key names)."""
    return doc.model_dump(mode="json", by_alias=True)


def document_text(doc: PromotionDocument) -> str:
    """promotion.json's bytes: canonical JSON (sorted keys, two-space indent, no NaN), one newline."""
    text = json.dumps(document_json(doc), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return text + "\n"
