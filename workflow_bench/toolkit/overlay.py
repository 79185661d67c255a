"""Candidate skill overlays: the untrusted prose a candidate arm is benchmarked with.

An overlay is a directory laid out like the toolkit (``skills/<skill>/...``)
holding **Markdown files under the evaluated skill trees only**; every other
path, symlink or oversize input is rejected before anything runs. It is read
once into an immutable in-memory snapshot with a digest bound into every
candidate row. The skills it touches decide, exactly, which arms the sweep
must run (``arms.candidate_overlay`` checks them against ``--arms``), so a
candidate is always paired with its incumbent on the same tasks and runs.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from workflow_bench.digests import canonical_digest
from workflow_bench.input_files import InputFileError, read_bounded

from .spec import SkillRole, Toolkit

MAX_FILES = 64
MAX_ENTRIES = 256
MAX_TOTAL_BYTES = 4 * 1024 * 1024
MAX_PATH_BYTES = 512


class OverlayError(ValueError):
    """The overlay was rejected; nothing ran."""


@dataclass(frozen=True, slots=True)
class Overlay:
    files: tuple[
        tuple[str, bytes], ...
    ]  # (path relative to the toolkit root, e.g. skills/plan/SKILL.md, bytes)
    roles: frozenset[SkillRole]
    # Who wrote it (--candidate-origin): recorded in sweep.json and promotion.json, not in the digest.
    origin: str = "manual-initial-overlay"

    @property
    def digest(self) -> str:
        return canonical_digest(
            [[path, hashlib.sha256(data).hexdigest(), len(data)] for path, data in self.files]
        )


def load_overlay(root: Path, *, toolkit: Toolkit) -> Overlay:
    """Read and validate ``root``; raises OverlayError naming the offending path."""
    if not root.is_dir() or root.is_symlink():
        raise OverlayError(f"--candidate-overlay {root}: not a directory")
    files: list[tuple[str, bytes]] = []
    roles: set[SkillRole] = set()
    entries = total = 0
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(dirs + names):
            path = Path(current) / name
            relative = PurePosixPath(path.relative_to(root).as_posix())
            entries += 1
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise OverlayError(f"--candidate-overlay: {relative} is a symlink")
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise OverlayError(f"--candidate-overlay: {relative} is not a regular file")
            role = _role(relative, toolkit)
            try:
                data = read_bounded(path, max_bytes=max(MAX_TOTAL_BYTES - total, 0))
            except InputFileError as exc:
                raise OverlayError(
                    f"--candidate-overlay: {relative}: {exc} (limit {MAX_TOTAL_BYTES} bytes in all)"
                ) from None
            total += len(data)
            files.append((relative.as_posix(), data))
            roles.add(role)
            if entries > MAX_ENTRIES or len(files) > MAX_FILES or total > MAX_TOTAL_BYTES:
                limits = f"{MAX_FILES} files, {MAX_ENTRIES} entries or {MAX_TOTAL_BYTES} bytes"
                raise OverlayError(f"--candidate-overlay: over {limits}")
    if not files:
        raise OverlayError(f"--candidate-overlay {root}: no Markdown files under skills/<skill>/")
    overlay = Overlay(files=tuple(files), roles=frozenset(roles))
    _require_change(overlay, toolkit)
    return overlay


def _role(relative: PurePosixPath, toolkit: Toolkit) -> SkillRole:
    parts = relative.parts
    if len(relative.as_posix().encode()) > MAX_PATH_BYTES:
        raise OverlayError(f"--candidate-overlay: path too long: {str(relative)[:80]}…")
    if len(parts) < 3 or parts[0] != "skills" or relative.suffix != ".md":
        raise OverlayError(
            f"--candidate-overlay: {relative} is not Markdown under skills/<skill>/ "
            "(only evaluated skill prose may change)"
        )
    role = toolkit.role_of(parts[1])
    if role is None:
        raise OverlayError(
            f"--candidate-overlay: {relative} touches skill {parts[1]!r}, which is not evaluated; "
            f"evaluated skills: {', '.join(toolkit.skill_names)}"
        )
    return role


def _require_change(overlay: Overlay, toolkit: Toolkit) -> None:
    root = toolkit.skills_path  # overlay paths are skills/<skill>/...
    incumbent = [(root / Path(p).relative_to("skills"), data) for p, data in overlay.files]
    unchanged = [p for p, data in incumbent if p.is_file() and p.read_bytes() == data]
    if len(unchanged) == len(overlay.files):
        raise OverlayError(
            "--candidate-overlay is byte-identical to the incumbent skills; nothing to evaluate"
        )
