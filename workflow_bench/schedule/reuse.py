"""Comparator reuse (``--reuse-results DIR``): which prior rows stand in for paid cells.

A prior row replaces a paid cell only if every condition of the reference
(reference-harness.md §7) holds; any doubt means the cell is paid:
- arm: an incumbent or comparator arm (``REUSABLE_ARMS``), never a candidate;
  the row has ``ok`` true, no ``error_kind``, no ``transcript_missing``, no
  ``candidate_overlay_digest``;
- age: the original ``reused_from_recorded_at`` / ``recorded_at`` parses, is
  at most 90 days old and not in the future;
- model, effort and sandbox backend equal this sweep's; ``runtime_digest`` is
  present on both sides and equal (a missing digest fails closed);
- task identity: base SHA, prompt, binding, and the three oracle digests;
- skills: ``ce_*`` rows match the comparator's version and manifest digest,
  the others the evaluated skills' fingerprint;
- review arms: valid review evidence, a score, a weighted F1, the artifact;
- transcripts: a non-empty, well-formed list, re-hashed (size and sha256)
  when the row is copied; any failure there falls back to a paid cell.
Two differing rows for one (task, arm, run) drop the key. For every
incumbent arm whose every planned cell would be reused, the lexicographically
first key is paid anyway (the canary cell): today's environment is measured
at least once per arm.

Known bias, kept from the reference: only rows without an error kind are
reused, so an incumbent's failed cells are run again while its successes
are kept; that can only flatter the incumbent (a stricter promotion gate).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from workflow_bench.arms import ArmSpec
from workflow_bench.cells.context import TaskContext
from workflow_bench.output.directory import RESULTS_FILE
from workflow_bench.providers.access import CellKey
from workflow_bench.rows.migrate import readable_rows, stored_line
from workflow_bench.rows.model import Row, TranscriptArtifact
from workflow_bench.schedule.resume import harness_version
from workflow_bench.toolkit.comparator import ComparatorPlugin

REUSABLE_ARMS = frozenset(
    {"review", "ce_review", "workflow", "workflow_direct", "ce_workflow", "ce_workflow_direct", "baseline",
     "baseline_nomcp"}
)  # fmt: skip
MAX_AGE = timedelta(days=90)


class ReuseError(ValueError):
    """``--reuse-results`` names something that cannot be read (exit 2, nothing run)."""


@dataclass(frozen=True, slots=True)
class Expected:
    """What a prior row must match to stand in for one planned cell."""

    key: CellKey
    candidate: bool
    comparator: bool
    review: bool
    values: Mapping[str, Any]
    """Row field → the value this sweep would record: model, effort, sandbox_backend, runtime_digest,
    the task and oracle digests, and the skills' fingerprint (or the comparator's version and
    manifest). Each name is a ``Row`` field (checked where ``Expected`` is built)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.values) - set(Row.model_fields))
        if unknown:
            raise ValueError(f"reuse compares fields the row does not have: {unknown}")


def expected_cell(
    key: CellKey,
    task: TaskContext,
    arm: ArmSpec,
    *,
    comparator: ComparatorPlugin | None,
    sweep_values: Mapping[str, Any],
) -> Expected:
    """What a prior row must match to stand in for the cell ``key`` of ``task`` × ``arm``."""
    binding, is_comparator = task.binding, arm.family == "comparator"
    values = {
        **sweep_values,
        "task_base_sha": binding.resolved_sha,
        "task_prompt_digest": binding.spec.prompt_digest,
        "task_binding_digest": binding.binding_digest,
        "oracle_digest": binding.oracle.digest,
        "oracle_command_digest": binding.oracle.command_digest,
        "oracle_manifest_digest": binding.oracle.manifest_digest,
    }
    if is_comparator and comparator is not None:
        values.update(
            ce_plugin_version=comparator.version, ce_plugin_manifest_digest=comparator.manifest_digest
        )
    else:
        values["skill_digest"] = task.seeded_skill_digest
    review = any(s.phase == "review" for s in arm.sessions)
    return Expected(
        key=key, candidate=bool(arm.candidate_of), comparator=is_comparator, review=review, values=values
    )


def load_prior_rows(source: Path, *, out_dir: Path) -> tuple[Row, ...]:
    """Every complete, valid row of ``source``/results.jsonl (a torn or foreign line is skipped)."""
    if source.resolve() == out_dir.resolve():
        raise ReuseError(f"--reuse-results {source} must not be the output directory")
    results = source / RESULTS_FILE
    if results.is_symlink() or not results.is_file():
        raise ReuseError(f"--reuse-results {source}: no regular {RESULTS_FILE}")
    # A torn, foreign or invalid line is never reusable: skipped, so its cell is paid.
    return tuple(readable_rows(results.read_bytes().split(b"\n"), source=str(results)))


def why_not(row: Row, expected: Expected, *, now: datetime) -> str | None:
    """None when ``row`` may stand in for ``expected``'s cell; else the first failed condition."""
    if expected.candidate or row.arm not in REUSABLE_ARMS:
        return "not a reusable arm"
    if row.ok is not True or row.error_kind is not None or row.transcript_missing is True:
        return "not a clean measurement"
    if row.candidate_overlay_digest is not None:
        return "measured with a candidate overlay"
    recorded = row.reused_from_recorded_at or row.recorded_at
    try:
        when = datetime.fromisoformat(str(recorded))
    except ValueError:
        return "recorded_at does not parse"
    if when.tzinfo is None or when > now or now - when > MAX_AGE:
        return "older than 90 days, in the future or without a timezone"
    if expected.values.get("runtime_digest") is None or row.runtime_digest is None:
        return "runtime_digest missing"
    model = row.model or row.benchmark_model
    if model != expected.values["model"]:
        return "model differs"
    for name, value in expected.values.items():
        if name != "model" and getattr(row, name) != value:
            return f"{name} differs"
    if expected.review and not (
        row.review_evidence_valid is True
        and row.review_score is not None
        and row.review_metric("weighted_f1") is not None
        and row.review_artifact
    ):
        return "review evidence incomplete"
    artifacts = row.transcript_artifacts
    if not artifacts or not all(_well_formed(a) for a in artifacts):
        return "transcript list missing or malformed"
    return None


def _well_formed(entry: TranscriptArtifact) -> bool:
    return entry.path.startswith("transcripts/") and ".." not in Path(entry.path).parts


def select_reuse(
    planned: Sequence[Expected],
    prior: Sequence[Row],
    *,
    now: datetime | None = None,
    log: Callable[[str], None] = print,
) -> dict[CellKey, Row]:
    """Map planned keys to the prior row that stands in for them, canary cells already removed."""
    now = now or datetime.now(UTC)
    by_key: dict[CellKey, list[Row]] = {}
    for row in prior:
        by_key.setdefault(row.key, []).append(row)
    chosen: dict[CellKey, Row] = {}
    for expected in planned:
        rows = by_key.get(expected.key, [])
        if len({stored_line(r) for r in rows}) != 1:
            continue  # none, or conflicting duplicates: pay
        if why_not(rows[0], expected, now=now) is None:
            chosen[expected.key] = rows[0]
    for arm in sorted({e.key.arm for e in planned}):
        keys = [e.key for e in planned if e.key.arm == arm]
        if keys and all(k in chosen for k in keys):
            canary = min(keys, key=lambda k: (k.task_id, k.arm, k.run))
            del chosen[canary]
            log(f"[reuse] every planned {arm} cell is reusable: keeping one paid {arm} cell ({canary.label})")
    return chosen


def reused_copy(row: Row, source: Path) -> tuple[Row, dict[str, bytes]]:
    """The row and artifacts to persist for a reused cell; raises ``ValueError`` if any does not verify."""
    artifacts: dict[str, bytes] = {}
    for entry in row.transcript_artifacts or ():
        path = source / entry.path
        if path.is_symlink() or not path.is_file():
            raise ValueError(f"{entry.path} missing")
        data = path.read_bytes()
        if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
            raise ValueError(f"{entry.path} does not match its recorded sha256")
        artifacts[entry.path] = data
    for name in row.wire_artifacts or ():  # the relay's record travels with the row it backs
        path = source / name
        if not name.startswith("wire/") or path.is_symlink() or not path.is_file():
            raise ValueError(f"{name} missing")
        if path.parent.resolve() != (source / "wire").resolve():
            raise ValueError(f"{name} is outside {source / 'wire'}")
        artifacts[name] = path.read_bytes()
    for stored, name in ((row.patch_artifact, "patch.diff"), (row.review_artifact, "review.json")):
        if stored:
            path = source / stored
            if path.is_symlink() or not path.is_file() or path.parent.resolve() != source.resolve():
                raise ValueError(f"{stored} missing")
            artifacts[name] = path.read_bytes()
    # The artifact fields are written anew by the output directory, from the copies above.
    copied = row.replace(
        transcript_artifacts=None,
        wire_artifacts=None,
        patch_artifact=None,
        review_artifact=None,
        reused=True,
        reused_from_dir=str(source.resolve()),
        reused_from_recorded_at=row.reused_from_recorded_at or row.recorded_at,
    )
    return copied, artifacts


def runtime_digest(
    *, claude_code_version: str, sandbox_backend: str, provider: str, script_digest: str | None
) -> str:
    """What the cells ran on: CLI, harness sources, sandbox backend, provider (and scripted model)."""
    parts = [claude_code_version, harness_version(), sandbox_backend, provider, script_digest]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def materialize(
    chosen: Mapping[CellKey, Row],
    *,
    source: Path,
    persist: Callable[[CellKey, Row, dict[str, bytes]], None],
    log: Callable[[str], None] = print,
) -> set[CellKey]:
    """Copy each chosen row (artifacts re-verified) through ``persist``; the keys that were reused."""
    reused = set()
    for key, row in chosen.items():
        try:
            copied, artifacts = reused_copy(row, source)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log(f"[reuse] {key.label} is paid instead: {exc}")
            continue
        persist(key, copied, artifacts)
        reused.add(key)
    return reused
