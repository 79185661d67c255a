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
    values: Mapping[str, Any]  # model, effort, sandbox_backend, runtime_digest, task fields, skill fields


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


def load_prior_rows(source: Path, *, out_dir: Path) -> tuple[dict[str, Any], ...]:
    """Every complete, parseable row of ``source``/results.jsonl (a torn last line is skipped)."""
    if source.resolve() == out_dir.resolve():
        raise ReuseError(f"--reuse-results {source} must not be the output directory")
    results = source / RESULTS_FILE
    if results.is_symlink() or not results.is_file():
        raise ReuseError(f"--reuse-results {source}: no regular {RESULTS_FILE}")
    rows = []
    for line in results.read_bytes().split(b"\n"):
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn or foreign line is never reusable
        if isinstance(row, dict):
            rows.append(row)
    return tuple(rows)


def why_not(row: Mapping[str, Any], expected: Expected, *, now: datetime) -> str | None:
    """None when ``row`` may stand in for ``expected``'s cell; else the first failed condition."""
    if expected.candidate or row.get("arm") not in REUSABLE_ARMS:
        return "not a reusable arm"
    if (
        row.get("ok") is not True
        or row.get("error_kind") is not None
        or row.get("transcript_missing") is True
    ):
        return "not a clean measurement"
    if row.get("candidate_overlay_digest") is not None:
        return "measured with a candidate overlay"
    recorded = row.get("reused_from_recorded_at") or row.get("recorded_at")
    try:
        when = datetime.fromisoformat(str(recorded))
    except ValueError:
        return "recorded_at does not parse"
    if when.tzinfo is None or when > now or now - when > MAX_AGE:
        return "older than 90 days, in the future or without a timezone"
    if expected.values.get("runtime_digest") is None or row.get("runtime_digest") is None:
        return "runtime_digest missing"
    model = row.get("model") or row.get("benchmark_model")
    if model != expected.values["model"]:
        return "model differs"
    for name, value in expected.values.items():
        if name != "model" and row.get(name) != value:
            return f"{name} differs"
    if expected.review and not (
        row.get("review_evidence_valid") is True
        and isinstance(row.get("review_score"), dict)
        and row.get("review_weighted_f1") is not None
        and row.get("review_artifact")
    ):
        return "review evidence incomplete"
    artifacts = row.get("transcript_artifacts")
    if not isinstance(artifacts, list) or not artifacts or not all(_well_formed(a) for a in artifacts):
        return "transcript list missing or malformed"
    return None


def _well_formed(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("path"), str)
        and entry["path"].startswith("transcripts/")
        and ".." not in Path(entry["path"]).parts
        and isinstance(entry.get("sha256"), str)
        and type(entry.get("bytes")) is int
    )


def select_reuse(
    planned: Sequence[Expected],
    prior: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None = None,
    log: Callable[[str], None] = print,
) -> dict[CellKey, Mapping[str, Any]]:
    """Map planned keys to the prior row that stands in for them, canary cells already removed."""
    now = now or datetime.now(UTC)
    by_key: dict[CellKey, list[Mapping[str, Any]]] = {}
    for row in prior:
        task, arm, run = row.get("task"), row.get("arm"), row.get("run")
        if isinstance(task, str) and isinstance(arm, str) and type(run) is int:
            by_key.setdefault(CellKey(task_id=task, run=run, arm=arm), []).append(row)
    chosen: dict[CellKey, Mapping[str, Any]] = {}
    for expected in planned:
        rows = by_key.get(expected.key, [])
        if len({json.dumps(r, sort_keys=True) for r in rows}) != 1:
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


def reused_copy(row: Mapping[str, Any], source: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The row and artifacts to persist for a reused cell; raises ``ValueError`` if any does not verify."""
    artifacts: dict[str, bytes] = {}
    for entry in row["transcript_artifacts"]:
        path = source / entry["path"]
        if path.is_symlink() or not path.is_file():
            raise ValueError(f"{entry['path']} missing")
        data = path.read_bytes()
        if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ValueError(f"{entry['path']} does not match its recorded sha256")
        artifacts[entry["path"]] = data
    for name in row.get("wire_artifacts") or ():  # the relay's record travels with the row it backs
        path = source / str(name)
        if not str(name).startswith("wire/") or path.is_symlink() or not path.is_file():
            raise ValueError(f"{name} missing")
        if path.parent.resolve() != (source / "wire").resolve():
            raise ValueError(f"{name} is outside {source / 'wire'}")
        artifacts[str(name)] = path.read_bytes()
    for field, name in (("patch_artifact", "patch.diff"), ("review_artifact", "review.json")):
        if row.get(field):
            path = source / str(row[field])
            if path.is_symlink() or not path.is_file() or path.parent.resolve() != source.resolve():
                raise ValueError(f"{row[field]} missing")
            artifacts[name] = path.read_bytes()
    artifact_fields = ("transcript_artifacts", "wire_artifacts", "patch_artifact", "review_artifact")
    copied = {k: v for k, v in row.items() if k not in artifact_fields}
    copied.update(
        reused=True,
        reused_from_dir=str(source.resolve()),
        reused_from_recorded_at=row.get("reused_from_recorded_at") or row.get("recorded_at"),
    )
    return copied, artifacts


def runtime_digest(
    *, claude_code_version: str, sandbox_backend: str, provider: str, script_digest: str | None
) -> str:
    """What the cells ran on: CLI, harness sources, sandbox backend, provider (and scripted model)."""
    parts = [claude_code_version, harness_version(), sandbox_backend, provider, script_digest]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def materialize(
    chosen: Mapping[CellKey, Mapping[str, Any]],
    *,
    source: Path,
    persist: Callable[[CellKey, dict[str, Any], dict[str, bytes]], None],
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
