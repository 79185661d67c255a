"""The evidence bundle: what the proposer may read, bounded in count and bytes, then made read-only.

Files (all redacted before they get here, see ``evidence``): ``manifest.json`` (source, files
with sha256 and size, the trim steps taken, what was dropped and why), ``selected-rows.json``,
``learnings.json``, ``gate-summary.json``, ``prior-proposal.md``, ``patch-<i>.diff`` and
``transcript-<i>-<j>.jsonl`` (``i`` is the row's index in ``selected-rows.json``).

Limits (reference §11): each artifact at most ``MAX_ARTIFACT_BYTES`` (head and tail kept, a
marker in between), the bundle at most ``MAX_BUNDLE_BYTES``. Over budget, it trims in this
order, stopping as soon as it fits: (1) halve the per-artifact cap, down to
``MIN_ARTIFACT_BYTES``; (2) drop the prior proposal; (3) drop the lowest-priority rows (the
last in ``selected-rows.json``) with their artifacts, one at a time. The bundle is mounted
read-only at ``/evidence`` in the proposer's sandbox; on the host it is left 0444/0555.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .evidence import Evidence
from .learnings import LearningNote

MAX_ARTIFACT_BYTES = 256 * 1024
MIN_ARTIFACT_BYTES = 16 * 1024  # below this a transcript loses the turns a diagnosis cites
MAX_BUNDLE_BYTES = 2 * 1024 * 1024
MANIFEST = "manifest.json"


def compact(data: bytes, cap: int) -> bytes:
    """``data`` if it fits ``cap``, else its head and tail around a marker naming the cut."""
    if len(data) <= cap:
        return data
    marker = "\n[... {} bytes cut by the evidence bundle ...]\n"
    keep = max(cap - len(marker) - 12, 0)
    head, tail = data[: keep // 2], data[len(data) - (keep - keep // 2) :]
    return head + marker.format(len(data) - len(head) - len(tail)).encode() + tail


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _files(
    evidence: Evidence | None, learnings: Sequence[LearningNote], *, cap: int, rows: int, proposal: bool
) -> dict[str, bytes]:
    files = {"learnings.json": _json([note.model_dump() for note in learnings])}
    if evidence is None:
        files["selected-rows.json"] = _json([])
        files["gate-summary.json"] = _json([])
        return files
    kept = evidence.rows[:rows]
    ids = {r.row_id for r in kept}
    files["selected-rows.json"] = _json([r.data for r in kept])
    files["gate-summary.json"] = _json(list(evidence.gate_summary))
    if proposal and evidence.prior_proposal is not None:
        files["prior-proposal.md"] = compact(evidence.prior_proposal.encode(), cap)
    for artifact in evidence.artifacts:
        if artifact.row_id in ids:
            files[artifact.name] = compact(artifact.data, cap)
    return files


def plan_bundle(
    evidence: Evidence | None, learnings: Sequence[LearningNote]
) -> tuple[dict[str, bytes], list[str]]:
    """The bundle's files within budget and the trim steps taken (pure)."""
    cap, rows, proposal = MAX_ARTIFACT_BYTES, len(evidence.rows) if evidence else 0, True
    steps: list[str] = []
    while True:
        files = _files(evidence, learnings, cap=cap, rows=rows, proposal=proposal)
        if sum(len(d) for d in files.values()) <= MAX_BUNDLE_BYTES - 64 * 1024:  # room for the manifest
            return files, steps
        if cap // 2 >= MIN_ARTIFACT_BYTES:
            cap //= 2
            steps.append(f"per-artifact cap halved to {cap} bytes")
        elif proposal and evidence is not None and evidence.prior_proposal is not None:
            proposal = False
            steps.append("prior proposal dropped")
        elif rows > 0:
            rows -= 1
            steps.append(f"row {evidence.rows[rows].row_id if evidence else '?'} dropped (lowest priority)")
        else:
            return files, steps  # learnings alone over budget cannot happen: 40 notes × 5 × 2000 chars


def write_bundle(dest: Path, evidence: Evidence | None, learnings: Sequence[LearningNote]) -> Path:
    """Write the bundle to ``dest`` (new), make it read-only, return ``dest``."""
    files, steps = plan_bundle(evidence, learnings)
    dest.mkdir(parents=True)
    manifest = {
        "source": evidence.source if evidence else None,
        "files": {
            name: {"sha256": hashlib.sha256(d).hexdigest(), "bytes": len(d)}
            for name, d in sorted(files.items())
        },
        "trim_steps": steps,
        "dropped": list(evidence.dropped) if evidence else [],
        "patches_verified": False,
        "note": (
            "Rows and transcripts from the sweep named in 'source' (transcripts re-hashed against their "
            "rows; patches carry no recorded digest). Learnings are hints from skill runs, not evidence."
        ),
    }
    files[MANIFEST] = _json(manifest)
    for name, data in files.items():
        path = dest / name
        path.write_bytes(data)
        os.chmod(path, 0o444)
    os.chmod(dest, 0o555)
    return dest
