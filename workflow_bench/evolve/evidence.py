"""Evidence selection: which prior rows a proposer sees, compacted, with their verified artifacts.

Input is a sweep directory (the seed, or the previous generation's ``bench/``): its
``results.jsonl``, the artifacts its rows name, its ``promotion.json`` and the ``proposal.md``
beside it. Rows whose cell died of something the agent could not cause (the excluded error
kinds, cancellations) say nothing about the skill and are dropped. Then unresolved rows, sorted
by (task, arm, run), then resolved rows by descending cost (unknown cost last), up to
``MAX_ROWS`` (reference §11). Each row is compacted to the fields a diagnosis needs and gets a
``row_id`` (``task/arm/runN``) the proposal cites.

Transcripts are re-hashed against the sha256 and size their row records; a mismatch drops the
transcript and says so (``dropped``), never passes it on. Patches carry no digest in a row, so
they are marked ``verified: false``. Everything is redacted again with the credentials this
process knows before it leaves here. Pure apart from reading the directory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from workflow_bench.input_files import InputFileError, problem_line, read_bounded
from workflow_bench.judging.outcomes import EXCLUDED_ERROR_KINDS, ErrorKind
from workflow_bench.redaction import redact_text, redact_value
from workflow_bench.reports.promotion_model import PROMOTION_FILE, PromotionDocument
from workflow_bench.rows.migrate import RowReadError
from workflow_bench.rows.migrate import read_rows as stored_rows
from workflow_bench.rows.model import Row

MAX_ROWS = 12
MAX_TRANSCRIPTS_PER_ROW = 2
MAX_TRANSCRIPTS = 24
MAX_RESULTS_BYTES = 64 * 1024 * 1024  # a 3-run sweep of 100 tasks × 6 arms is ~20 MB of rows
MAX_ARTIFACT_READ_BYTES = 16 * 1024 * 1024  # the runner caps patches at 300 kB, streams at 8 MiB
VERIFY_TAIL_CHARS = 600
DEAD_KINDS = EXCLUDED_ERROR_KINDS | {ErrorKind.CANCELLED}
_KEEP = (
    "task", "class", "arm", "run", "resolved", "error_kind", "cost_usd", "num_turns", "output_tokens",
    "diff_files", "diff_insertions", "diff_deletions", "session_ids", "skill_invoked", "plan_doc",
    "authored_tests_passed", "oracle_passed", "review_score", "review_verdict_correct",
    "review_true_positives", "review_false_positives", "review_false_negatives",
)  # fmt: skip


class EvidenceError(ValueError):
    """The evidence source cannot be read (bad input before generation 0, a failed one after)."""


@dataclass(frozen=True, slots=True)
class Artifact:
    name: str
    data: bytes
    row_id: str
    verified: bool


@dataclass(frozen=True, slots=True)
class CompactRow:
    """One selected row as the proposer sees it."""

    row_id: str
    """``task/arm/runN`` (redacted as ``data`` is): what the row's artifacts and the proposal cite."""
    data: Mapping[str, Any]
    """``compact_row``'s JSON object (``row_id`` included), redacted: one entry of selected-rows.json."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one sweep directory offers a proposer, before the bundle's byte budget is applied."""

    source: str
    rows: tuple[CompactRow, ...]
    """Compacted rows in priority order (highest first)."""
    artifacts: tuple[Artifact, ...]
    gate_summary: tuple[str, ...]
    prior_proposal: str | None
    dropped: tuple[str, ...] = field(default=())


def row_id(row: Row) -> str:
    return f"{row.task}/{row.arm}/run{row.run}"


def read_rows(source: Path) -> list[Row]:
    path = source / "results.jsonl"
    try:
        text = read_bounded(path, max_bytes=MAX_RESULTS_BYTES).decode("utf-8")
    except (InputFileError, OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path}: {exc}") from None
    try:
        return stored_rows(text, source=str(path))
    except RowReadError as exc:
        raise EvidenceError(str(exc)) from None


def select_rows(rows: Sequence[Row]) -> list[Row]:
    """Unresolved by (task, arm, run), then resolved by descending cost; at most ``MAX_ROWS``."""
    alive = [r for r in rows if r.error_kind not in DEAD_KINDS]
    unresolved = sorted(
        (r for r in alive if r.resolved is not True),
        key=lambda r: (str(r.task), str(r.arm), _run(r)),
    )
    resolved = sorted(
        (r for r in alive if r.resolved is True),
        key=lambda r: (-_cost(r), str(r.task), str(r.arm), _run(r)),
    )
    return [*unresolved, *resolved][:MAX_ROWS]


def _run(row: Row) -> int:
    return row.run


def _cost(row: Row) -> float:
    return float(row.cost_usd) if row.cost_usd is not None else -1.0


def compact_row(row: Row) -> dict[str, Any]:
    stored = row.to_json_obj()
    out: dict[str, Any] = {"row_id": row_id(row)}
    out.update({key: stored[key] for key in _KEEP})  # by stored name (``class``), JSON-ready
    verify = row.verify_output
    out["verify_output_tail"] = verify[-VERIFY_TAIL_CHARS:] if isinstance(verify, str) else None
    out["patch_artifact"] = row.patch_artifact
    return out


def _inside(source: Path, name: object) -> Path | None:
    if not isinstance(name, str) or not name:
        return None
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts:
        return None
    path = source / relative
    return path if path.is_file() and not path.is_symlink() else None


def _read(path: Path) -> bytes | None:
    try:
        return read_bounded(path, max_bytes=MAX_ARTIFACT_READ_BYTES)
    except (InputFileError, OSError):
        return None


def row_artifacts(source: Path, row: Row, *, index: int, budget: int) -> tuple[list[Artifact], list[str]]:
    """A row's transcripts (digest-verified, at most ``budget``) and its patch, plus what was dropped."""
    rid = row_id(row)
    found: list[Artifact] = []
    dropped: list[str] = []
    for j, entry in enumerate(row.transcript_artifacts or []):
        if j >= min(MAX_TRANSCRIPTS_PER_ROW, budget):
            dropped.append(f"{rid}: transcript {j} over the per-row/total transcript cap")
            continue
        path = _inside(source, entry.path)
        data = _read(path) if path is not None else None
        if data is None:
            dropped.append(f"{rid}: transcript {j} missing or unreadable")
            continue
        if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
            dropped.append(f"{rid}: transcript {j} does not match its recorded sha256; not passed on")
            continue
        found.append(Artifact(name=f"transcript-{index}-{j}.jsonl", data=data, row_id=rid, verified=True))
    patch = _inside(source, row.patch_artifact)
    data = _read(patch) if patch is not None else None
    if data:
        found.append(Artifact(name=f"patch-{index}.diff", data=data, row_id=rid, verified=False))
    return found, dropped


def gate_summary(source: Path) -> list[str]:
    """One line per prior decision with its first three reasons (empty without promotion.json).

    The document is parsed as ``PromotionDocument`` (any schema version of that shape; not
    re-verified: a hint for the proposer, never a gate); one that does not parse is named so.
    """
    path = source / PROMOTION_FILE
    if not path.is_file():
        return []
    try:
        doc = PromotionDocument.model_validate(json.loads(read_bounded(path, max_bytes=MAX_RESULTS_BYTES)))
    except ValidationError as exc:
        return [f"{path.name}: unreadable ({problem_line(exc, PromotionDocument)})"]
    except (InputFileError, OSError, ValueError):
        return [f"{path.name}: unreadable"]
    lines = []
    for decision in doc.decisions:
        reasons = "; ".join(decision.reasons[:3])
        lines.append(f"{decision.candidate_arm}: {decision.decision} ({reasons or 'no reasons'})")
    return lines


def prior_proposal(source: Path) -> str | None:
    """The proposal that produced this sweep's candidate: ``proposal.md`` beside the sweep dir."""
    path = source.parent / "proposal.md"
    if not path.is_file() or path.is_symlink():
        return None
    data = _read(path)
    return data.decode("utf-8", "replace") if data is not None else None


def collect_evidence(source: Path, *, secrets: Sequence[str]) -> Evidence:
    """Select, compact, verify and redact what ``source`` offers a proposer."""
    selected = select_rows(read_rows(source))
    artifacts: list[Artifact] = []
    dropped: list[str] = []
    for index, row in enumerate(selected):
        transcripts = sum(1 for a in artifacts if a.name.startswith("transcript-"))
        found, lost = row_artifacts(source, row, index=index, budget=MAX_TRANSCRIPTS - transcripts)
        artifacts += [
            Artifact(
                a.name, redact_text(a.data.decode("utf-8", "replace"), secrets).encode(), a.row_id, a.verified
            )
            for a in found
        ]
        dropped += lost
    proposal = prior_proposal(source)
    return Evidence(
        source=str(source),
        rows=tuple(
            CompactRow(row_id=redact_text(row_id(r), secrets), data=redact_value(compact_row(r), secrets))
            for r in selected
        ),
        artifacts=tuple(artifacts),
        gate_summary=tuple(redact_text(line, secrets) for line in gate_summary(source)),
        prior_proposal=redact_text(proposal, secrets) if proposal is not None else None,
        dropped=tuple(dropped),
    )
