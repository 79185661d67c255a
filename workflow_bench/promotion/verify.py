"""`promotion verify DIR`: recompute promotion.json from results.jsonl and compare exactly.

Checks, in order, stopping at the first difference (reported as one line):
schema and keys, then the typed parse (``PromotionDocument``: strict, no extra keys, a field of
the wrong type or shape is named, never coerced); policy (round-trips exactly, equals
sweep.json's when present); timestamps (timezone-aware, generated no later than 5 minutes from
now, expiry exactly generated + the policy's evidence age ≤ 90 days, not yet passed); the row
ledger (count and each row's sha256: any edited, deleted or duplicated row is named by line);
run-count consistency and finite metrics in the stored evidence; then the whole document rebuilt
by `document.promotion_document` from the rows and the recorded inputs must equal the stored
one, key for key. That last comparison is against the JSON object as read, not the parsed model,
so nothing a parse might normalise (an alias, a default) can hide.

Pure except for reading the directory; `verify_promotion` returns the first difference or None.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workflow_bench.input_files import problem_line
from workflow_bench.promotion.document import inputs_from_document, promotion_document, row_digest
from workflow_bench.promotion.policy import PolicyError, PromotionPolicy
from workflow_bench.reports.aggregate import aggregate_all
from workflow_bench.reports.health import sweep_health
from workflow_bench.reports.overlay_model import OverlayRecord
from workflow_bench.reports.promotion_model import (
    PROMOTION_FILE,
    PROMOTION_SCHEMA,
    PromotionDocument,
    ResultsRecord,
    document_json,
)
from workflow_bench.reports.sweep_record import (
    SWEEP_RECORD_FILE,
    SweepRecordError,
    read_sweep_record,
    task_identities,
)
from workflow_bench.rows.migrate import row_from_stored
from workflow_bench.rows.model import Row

# A clock a few minutes ahead of the verifier's is skew, not forgery (the reference's tolerance).
FUTURE_SKEW = timedelta(minutes=5)
# promotion.json's keys are PromotionDocument's fields (declared once, in reports.promotion_model).
_KEYS = frozenset(PromotionDocument.model_fields)


class VerifyError(ValueError):
    """The first difference between promotion.json and what its rows prove."""


def load_promotion(out_dir: Path) -> dict[str, Any]:
    path = out_dir / PROMOTION_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except (OSError, ValueError) as exc:
        raise VerifyError(f"{path}: unreadable: {exc}") from exc
    if not isinstance(doc, dict):
        raise VerifyError(f"{path}: want a JSON object")
    return doc


def parse_promotion(raw: Mapping[str, Any]) -> PromotionDocument:
    """The stored object as a typed document; `VerifyError` naming the first field that is wrong."""
    version = raw.get("schema_version")  # key read: before the shape (another version, another shape)
    if version != PROMOTION_SCHEMA:
        raise VerifyError(f"schema_version {version!r}, want {PROMOTION_SCHEMA}")
    if set(raw) != _KEYS:
        raise VerifyError(f"keys: unknown {sorted(set(raw) - _KEYS)}, missing {sorted(_KEYS - set(raw))}")
    try:
        doc = PromotionDocument.model_validate(raw)
        task_identities(doc.selected_tasks, where="selected_tasks")
    except ValidationError as exc:
        raise VerifyError(f"promotion.json: {problem_line(exc, PromotionDocument)}") from None
    except ValueError as exc:
        raise VerifyError(f"promotion.json: {exc}") from None
    if (doc.candidate_overlay is None) != (doc.target_base_digests is None):
        raise VerifyError("candidate_overlay and target_base_digests: want both recorded or neither")
    return doc


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} (metrics must be finite)")


def first_difference(expected: Any, actual: Any, path: str = "") -> str | None:
    """The path and both values of the first place two JSON values differ, or None."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                return f"{path}.{key}: missing (recomputed {expected[key]!r})"
            if key not in expected:
                return f"{path}.{key}: unexpected key (stored {actual[key]!r})"
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (a, b) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{path}: length {len(actual)} stored, {len(expected)} recomputed"
        return None
    if type(expected) is not type(actual) or expected != actual:
        return f"{path}: stored {actual!r}, recomputed {expected!r}"
    return None


def _timestamps(doc: PromotionDocument, policy: PromotionPolicy, now: datetime) -> None:
    try:
        generated = datetime.fromisoformat(doc.generated_at)
        expires = datetime.fromisoformat(doc.evidence_expires_at)
    except ValueError as exc:
        raise VerifyError(f"timestamps: {exc}") from exc
    if generated.tzinfo is None or expires.tzinfo is None:
        raise VerifyError("timestamps: generated_at and evidence_expires_at must be timezone-aware")
    if generated > now + FUTURE_SKEW:
        raise VerifyError(f"generated_at {generated.isoformat()} is in the future (now {now.isoformat()})")
    if expires - generated != timedelta(days=policy.evidence_max_age_days):
        raise VerifyError(
            f"evidence_expires_at {expires.isoformat()} is not generated_at +"
            f" {policy.evidence_max_age_days} days"
        )
    if expires <= now:
        raise VerifyError(f"evidence expired at {expires.isoformat()}")


def _consistency(doc: PromotionDocument) -> None:
    """Run counts add up and every metric is finite, per stored task evidence."""
    for decision in doc.decisions:
        for task in decision.tasks:
            for side, ev in (("incumbent", task.incumbent), ("candidate", task.candidate)):
                where = f"{decision.candidate_arm}/{task.task}/{side}"
                if ev.runs != ev.valid_runs + ev.excluded_runs:
                    raise VerifyError(
                        f"{where}: runs {ev.runs} != valid {ev.valid_runs} + excluded {ev.excluded_runs}"
                    )
                if not ev.resolved <= ev.scored_runs <= ev.valid_runs:
                    raise VerifyError(
                        f"{where}: want resolved <= scored <= valid, got {ev.resolved},"
                        f" {ev.scored_runs}, {ev.valid_runs}"
                    )
                numbers = [*ev.metrics.values(), ev.review_weighted_f1, ev.review_blocker_recall]
                if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):
                    raise VerifyError(f"{where}: non-finite metric")
                if any(n < 0 for n in ev.error_kinds.values()):  # integers: the strict parse
                    raise VerifyError(f"{where}: error-kind counts must be non-negative integers")


def _rows(out_dir: Path, ledger: ResultsRecord) -> tuple[list[str], list[Row]]:
    path = out_dir / "results.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VerifyError(f"{path}: {exc}") from exc
    lines = [line for line in text.split("\n") if line.strip()]
    digests = ledger.row_sha256
    for index, line in enumerate(lines):
        if index >= len(digests):
            raise VerifyError(
                f"results.jsonl line {index + 1}: not in promotion.json (row added or duplicated)"
            )
        if row_digest(line) != digests[index]:
            raise VerifyError(
                f"results.jsonl line {index + 1}: sha256 differs from promotion.json (row edited, moved"
                " or deleted)"
            )
    if len(lines) != len(digests) or ledger.rows != len(digests):
        raise VerifyError(
            f"results.jsonl has {len(lines)} rows, promotion.json records {ledger.rows} (row deleted?)"
        )
    try:
        rows = [
            row_from_stored(
                json.loads(line, parse_constant=_refuse_constant), where=f"results.jsonl line {n}"
            )
            for n, line in enumerate(lines, 1)
        ]
    except ValueError as exc:  # RowReadError too: a row the model does not accept is no evidence
        raise VerifyError(f"results.jsonl: {exc}") from exc
    return lines, rows


def _matches_overlay_record(doc: PromotionDocument, overlay: OverlayRecord | None) -> None:
    """The overlay's identity and origin are the ones sweep.json recorded at sweep start."""
    stored = doc.candidate_overlay
    if (None if overlay is None else overlay.digest) != (None if stored is None else stored.digest):
        raise VerifyError("candidate_overlay differs from the overlay sweep.json recorded at sweep start")
    if overlay is not None and doc.candidate_origin != overlay.origin:
        raise VerifyError("candidate_origin differs from the overlay origin sweep.json recorded")


def verify_promotion(out_dir: Path, *, now: datetime) -> PromotionDocument:
    """The verified document (recomputed from the rows, equal to the stored one); raises `VerifyError`
    with the first difference."""
    stored = load_promotion(out_dir)
    doc = parse_promotion(stored)
    try:
        policy = PromotionPolicy.from_json(doc.policy)
    except PolicyError as exc:
        raise VerifyError(str(exc)) from exc
    if (out_dir / SWEEP_RECORD_FILE).exists():
        try:
            record = read_sweep_record(out_dir)
        except SweepRecordError as exc:
            raise VerifyError(str(exc)) from exc
        if record.policy != doc.policy:
            raise VerifyError("policy differs from the policy sweep.json recorded at sweep start")
        _matches_overlay_record(doc, record.overlay)
    _timestamps(doc, policy, now)
    lines, rows = _rows(out_dir, doc.results)
    _consistency(doc)
    arms = doc.arms
    task_ids = {t.id for t in task_identities(doc.selected_tasks, where="selected_tasks")}
    for index, row in enumerate(rows):
        if row.arm not in arms or row.task not in task_ids:
            raise VerifyError(f"results.jsonl line {index + 1}: task/arm outside the recorded selection")
    try:
        health = sweep_health(aggregate_all(rows), arms=arms)
        recomputed = promotion_document(inputs_from_document(doc), lines, rows, health)
        expected = None if recomputed is None else document_json(recomputed)
    except (KeyError, TypeError, ValueError) as exc:
        raise VerifyError(f"cannot recompute: {exc!r}") from exc
    difference = first_difference(expected, stored)  # the object as read: nothing parsed away
    if difference:
        raise VerifyError(f"promotion.json{difference}")
    assert recomputed is not None  # its JSON equals the stored object
    return recomputed
