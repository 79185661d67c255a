"""`promotion apply DIR --target TOOLKIT_DIR`: write a verified `promote` overlay, all or nothing.

Refuses (exit 1, nothing written) unless: `verify_promotion` passes; the sweep was `complete`;
the policy is the default policy (a loosened gate cannot ship skills); every required candidate
arm's decision is `promote`; the overlay bytes kept in DIR/candidate-overlay/ match the recorded
per-file sha256 and overlay digest; and every destination file in TOOLKIT_DIR still has the
sha256 recorded at sweep start (compare-and-swap: evidence about an incumbent that has since
changed is about a different incumbent).

Writes each file through a temp file + rename in its own directory, remembering the original
bytes; any failure restores every file already written (or removes it if it was new), so the
toolkit is left exactly as it was. Nothing is committed or pushed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath

from workflow_bench.digests import canonical_digest
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.promotion.verify import VerifyError, verify_promotion
from workflow_bench.reports.promotion_model import PromotionDocument

CANDIDATE_OVERLAY_DIR = "candidate-overlay"  # where the sweep keeps the overlay bytes it benchmarked


class ApplyError(ValueError):
    """The promotion cannot be applied; nothing was written (or everything was rolled back)."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _safe_relative(path: str) -> PurePosixPath:
    relative = PurePosixPath(path)
    if (
        relative.is_absolute()
        or ".." in relative.parts
        or not relative.parts
        or relative.parts[0] != "skills"
    ):
        raise ApplyError(f"overlay path {path!r} is not a relative path under skills/")
    return relative


def _overlay_bytes(out_dir: Path, doc: PromotionDocument) -> list[tuple[PurePosixPath, bytes]]:
    overlay = doc.candidate_overlay
    if not overlay:
        raise ApplyError("promotion.json records no candidate overlay")
    files = []
    for entry in overlay.files:
        relative = _safe_relative(entry.path)
        source = out_dir / CANDIDATE_OVERLAY_DIR / relative
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise ApplyError(f"{source}: {exc}") from exc
        if _sha256(data) != entry.sha256 or len(data) != entry.bytes:
            raise ApplyError(f"{source}: bytes differ from promotion.json (overlay tampered)")
        files.append((relative, data))
    digest = canonical_digest([[p.as_posix(), _sha256(d), len(d)] for p, d in files])
    if digest != overlay.digest:
        raise ApplyError("candidate overlay digest differs from promotion.json")
    return files


def _current(path: Path) -> bytes | None:
    if path.is_symlink():
        raise ApplyError(f"{path} is a symlink; refusing to write through it")
    if not path.exists():
        return None
    if not path.is_file():
        raise ApplyError(f"{path} is not a regular file")
    return path.read_bytes()


def check_applicable(out_dir: Path, *, now: datetime) -> PromotionDocument:
    try:
        doc = verify_promotion(out_dir, now=now)
    except VerifyError as exc:
        raise ApplyError(f"promotion does not verify: {exc}") from exc
    if doc.run_status != "complete":
        raise ApplyError(f"run_status {doc.run_status!r}: only a complete sweep can be applied")
    if doc.policy != PromotionPolicy().to_json():
        raise ApplyError(
            "policy differs from the default promotion policy; refusing to apply a loosened gate"
        )
    verdicts = {d.candidate_arm: d.decision for d in doc.decisions}
    if sorted(verdicts) != sorted(doc.required_candidate_arms) or set(verdicts.values()) != {"promote"}:
        raise ApplyError(f"every required candidate arm must be 'promote'; got {verdicts}")
    return doc


def apply_promotion(
    out_dir: Path,
    *,
    target: Path,
    now: datetime,
    write: Callable[[Path, bytes], None] | None = None,
) -> list[Path]:
    """Apply the overlay to `target`; returns the files written. Raises `ApplyError`, rolled back."""
    doc = check_applicable(out_dir, now=now)
    files = _overlay_bytes(out_dir, doc)
    bases: Mapping[str, str | None] = doc.target_base_digests or {}
    plan: list[tuple[Path, bytes, bytes | None]] = []
    for relative, data in files:
        destination = target / relative
        original = _current(destination)
        recorded = bases.get(relative.as_posix(), "missing")
        actual = None if original is None else _sha256(original)
        if actual != recorded:
            raise ApplyError(
                f"{destination}: changed since the sweep (sha256 {actual}, recorded {recorded}); "
                "the evidence is about a different incumbent; re-run the benchmark"
            )
        plan.append((destination, data, original))
    return _write_all(plan, write or _atomic_write)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.wfbench-apply")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _write_all(
    plan: Sequence[tuple[Path, bytes, bytes | None]], write: Callable[[Path, bytes], None]
) -> list[Path]:
    done: list[tuple[Path, bytes | None]] = []
    try:
        for destination, data, original in plan:
            done.append((destination, original))
            write(destination, data)
    except OSError as exc:
        problems = _rollback(done)
        detail = f"; rollback problems: {'; '.join(problems)}" if problems else "; every file restored"
        raise ApplyError(f"writing {done[-1][0]} failed: {exc}{detail}") from exc
    return [destination for destination, _, _ in plan]


def _rollback(done: Sequence[tuple[Path, bytes | None]]) -> list[str]:
    problems = []
    for destination, original in reversed(done):
        try:
            # exists() first: on a read-only file system unlink fails with EROFS even when the
            # file is absent, which would report a rollback problem where there is none.
            tmp = destination.with_name(f".{destination.name}.wfbench-apply")
            if tmp.exists():
                tmp.unlink()
            if original is None:
                if destination.exists():
                    destination.unlink()
            elif not destination.is_file() or destination.read_bytes() != original:
                _atomic_write(destination, original)
        except OSError as exc:
            problems.append(f"{destination}: {exc}")
    return problems
