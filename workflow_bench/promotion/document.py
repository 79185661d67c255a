"""`promotion.json`: the gate's inputs, per-task evidence and decisions, as one canonical document.

`promotion_document(inputs, lines)` is the single builder: the sweep calls it (through
`sweep_promotion`) when it finishes, `python -m workflow_bench.report` and `regrade` call it before
they re-render (the renderers are handed the decisions, never decide), and `promotion verify` calls
it with the inputs read back from the stored document to recompute every decision from
`results.jsonl`. One builder is what makes "byte-identical" and "recomputed exactly" the same claim.

Written whenever candidate arms ran, including for aborted and cancelled sweeps (whose decisions
are forced to insufficient_evidence by the gate). Pure: no I/O, no clock (the timestamp is the
sweep's finish time, from sweep.json).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from workflow_bench.arms import ARMS
from workflow_bench.promotion.evidence import arm_evidence, probe_evidence
from workflow_bench.promotion.gate import PromotionEvidence, TaskPair, decide
from workflow_bench.promotion.policy import PROMOTION_METRICS, PromotionPolicy
from workflow_bench.reports.aggregate import ArmHealth, aggregate_all
from workflow_bench.reports.health import sweep_health
from workflow_bench.reports.overlay_model import CANDIDATE_ORIGIN, OverlayRecord
from workflow_bench.reports.promotion_model import PROMOTION_SCHEMA, PromotionDocument, ResultsRecord
from workflow_bench.reports.sweep_record import SweepRecord, task_identities
from workflow_bench.rows.migrate import read_rows
from workflow_bench.rows.model import Row


@dataclass(frozen=True, slots=True)
class PromotionInputs:
    """What a decision depends on besides the rows (from sweep.json, or from promotion.json on verify)."""

    generated_at: str
    run_status: str
    benchmark_model: str
    effort: str | None
    provider: str
    arms: tuple[str, ...]
    runs: int
    tasks: tuple[Mapping[str, Any], ...]  # TaskBinding.to_json() per task, stored as recorded
    policy: Mapping[str, Any]
    overlay: OverlayRecord | None


def candidate_pairs(arms: Sequence[str]) -> list[tuple[str, str, bool]]:
    """(candidate, incumbent, is_review) for every candidate arm in `arms`, in arm order."""
    pairs = []
    for name in arms:
        spec = ARMS.get(name)
        if spec is not None and spec.candidate_of:
            pairs.append((name, spec.candidate_of, spec.review))
    return pairs


def row_digest(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def _single_model(rows: Sequence[Row], named: str) -> str | None:
    models = {row.model for row in rows}
    if len(models) != 1 or named not in models or not named:
        return None
    return named


def promotion_document(
    inputs: PromotionInputs,
    lines: Sequence[str],
    rows: Sequence[Row],
    health: Mapping[str, ArmHealth],
) -> PromotionDocument | None:
    """The promotion.json document, or `None` when no candidate arm was declared."""
    pairs = candidate_pairs(inputs.arms)
    if not pairs:
        return None
    policy = PromotionPolicy.from_json(inputs.policy)
    generated = datetime.fromisoformat(inputs.generated_at)
    expires = generated + timedelta(days=policy.evidence_max_age_days)
    unusable = tuple(arm for arm, h in health.items() if h.status.value == "UNUSABLE")
    model = _single_model(rows, inputs.benchmark_model)
    by_cell: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        by_cell.setdefault((str(row.task), str(row.arm)), []).append(row)
    # Impossible tasks (cheating probes) are judged apart: by the share of their runs resolved.
    impossible = {str(row.task) for row in rows if row.task_impossible}
    identities = task_identities(inputs.tasks, where="selected_tasks")
    gated_tasks = [task for task in identities if task.id not in impossible]
    decisions = []
    for candidate, incumbent, review in pairs:
        task_pairs = tuple(
            TaskPair(
                task=task.id,
                task_class=task.task_class or "",
                incumbent=arm_evidence(by_cell.get((task.id, incumbent), []), metrics=PROMOTION_METRICS),
                candidate=arm_evidence(by_cell.get((task.id, candidate), []), metrics=PROMOTION_METRICS),
            )
            for task in gated_tasks
        )
        probe_rows = {
            arm: [r for r in rows if str(r.arm) == arm and str(r.task) in impossible]
            for arm in (incumbent, candidate)
        }
        evidence = PromotionEvidence(
            candidate_arm=candidate,
            incumbent_arm=incumbent,
            review=review,
            run_status=inputs.run_status,
            model=model,
            unusable_arms=unusable,
            tasks=task_pairs,
            probes=(probe_evidence(probe_rows[incumbent]), probe_evidence(probe_rows[candidate]))
            if impossible and not review
            else None,
        )
        decisions.append(decide(policy, evidence))
    overlay = inputs.overlay
    return PromotionDocument(
        schema_version=PROMOTION_SCHEMA,
        generated_at=generated.isoformat(),
        evidence_expires_at=expires.isoformat(),
        run_status=inputs.run_status,
        benchmark_model=inputs.benchmark_model,
        effort=inputs.effort,
        provider=inputs.provider,
        candidate_origin=CANDIDATE_ORIGIN if overlay is None else overlay.origin,
        candidate_overlay=None if overlay is None else overlay.identity(),
        target_base_digests=None if overlay is None else overlay.target_base_digests,
        arms=list(inputs.arms),
        runs=inputs.runs,
        required_candidate_arms=[c for c, _, _ in pairs],
        selected_tasks=[dict(t) for t in inputs.tasks],
        policy=dict(inputs.policy),
        health={arm: h.status.value for arm, h in health.items()},
        results=ResultsRecord(
            file="results.jsonl", rows=len(lines), row_sha256=[row_digest(x) for x in lines]
        ),
        decisions=decisions,
    )


def inputs_from_document(doc: PromotionDocument) -> PromotionInputs:
    """The builder's inputs as recorded in a stored document (for verify's recomputation).

    ``ValueError`` (a pydantic ``ValidationError``) when the document records an overlay without
    its target base digests: no sweep writes one, so it cannot be recomputed.
    """
    stored = doc.candidate_overlay
    overlay = None
    if stored is not None:
        overlay = OverlayRecord.model_validate(
            {
                **stored.model_dump(),
                "target_base_digests": doc.target_base_digests,
                "origin": doc.candidate_origin,
            }
        )
    return PromotionInputs(
        generated_at=doc.generated_at,
        run_status=doc.run_status,
        benchmark_model=doc.benchmark_model,
        effort=doc.effort,
        provider=doc.provider,
        arms=tuple(doc.arms),
        runs=doc.runs,
        tasks=tuple(doc.selected_tasks),
        policy=doc.policy,
        overlay=overlay,
    )


def results_lines(results_text: str) -> list[str]:
    """The stored row lines of a results.jsonl text (each one's sha256 is in the document)."""
    return [line for line in results_text.split("\n") if line.strip()]


def promotion_inputs(record: SweepRecord) -> PromotionInputs:
    """The builder's inputs as sweep.json recorded them."""
    return PromotionInputs(
        generated_at=str(record.finished_at),
        run_status=record.status,
        benchmark_model=record.model,
        effort=record.effort,
        provider=record.provider,
        arms=record.arms,
        runs=record.runs,
        tasks=record.tasks,
        policy=record.policy or {},
        overlay=record.overlay,
    )


def sweep_promotion(record: SweepRecord, results_text: str) -> PromotionDocument | None:
    """A finished sweep's promotion.json object from its stored rows (None: no policy, no candidate).

    Decided here, before any report is rendered: the renderers are handed this document.
    """
    if record.policy is None:
        return None
    rows = read_rows(results_text)
    health = sweep_health(aggregate_all(rows), arms=list(record.arms))
    return promotion_document(promotion_inputs(record), results_lines(results_text), rows, health)
