"""Candidate skill overlays: the untrusted prose a candidate arm is benchmarked with.

An overlay is a directory laid out like the toolkit (``skills/<skill>/...``)
holding **Markdown files under the evaluated skill trees only**; every other
path, symlink, oversize input, over-deep or over-full tree and refused name (control characters,
lone surrogates, non-UTF-8 bytes, reserved names: ``input_files.name_problem``) is rejected before
anything runs, with the reason and the path escaped (``printable``), never a traceback. It is read
once into an immutable in-memory snapshot with a digest bound into every
candidate row. The skills it touches decide, exactly, which arms the sweep
must run (``arms.candidate_overlay`` checks them against ``--arms``), so a
candidate is always paired with its incumbent on the same tasks and runs.
"""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from workflow_bench.digests import canonical_digest
from workflow_bench.input_files import (
    InputFileError,
    TreeLimitError,
    bounded_walk,
    name_problem,
    read_bounded,
)
from workflow_bench.redaction import printable

from .spec import SkillRole, Toolkit

MAX_FILES = 64
MAX_ENTRIES = 256
MAX_TOTAL_BYTES = 4 * 1024 * 1024
MAX_PATH_BYTES = 512
MAX_DEPTH = 8  # skills/<skill>/<a few levels of reference docs>; a deeper chain is no skill prose


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
    """Read and validate ``root``; raises OverlayError naming the offending path (escaped)."""
    if not root.is_dir() or root.is_symlink():
        raise OverlayError(f"--candidate-overlay {printable(str(root), 200)}: not a directory")
    files: list[tuple[str, bytes]] = []
    roles: set[SkillRole] = set()
    total = 0
    try:
        for rel, full, st in bounded_walk(root, max_entries=MAX_ENTRIES, max_depth=MAX_DEPTH):
            relative = PurePosixPath(rel)
            shown = printable(rel, 200)
            problem = name_problem(relative.name)
            if problem is not None:
                raise OverlayError(f"--candidate-overlay: {shown}: {problem}")
            if stat.S_ISLNK(st.st_mode):
                raise OverlayError(f"--candidate-overlay: {shown} is a symlink")
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise OverlayError(f"--candidate-overlay: {shown} is not a regular file")
            role = _role(relative, toolkit)
            try:
                data = read_bounded(Path(full), max_bytes=max(MAX_TOTAL_BYTES - total, 0))
            except InputFileError as exc:
                raise OverlayError(
                    f"--candidate-overlay: {shown}: {exc} (limit {MAX_TOTAL_BYTES} bytes in all)"
                ) from None
            total += len(data)
            files.append((relative.as_posix(), data))
            roles.add(role)
            if len(files) > MAX_FILES or total > MAX_TOTAL_BYTES:
                raise OverlayError(f"--candidate-overlay: over {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
    except TreeLimitError as exc:
        raise OverlayError(
            f"--candidate-overlay: {exc} (limits: {MAX_ENTRIES} entries, {MAX_DEPTH} levels)"
        ) from None
    except OSError as exc:
        raise OverlayError(f"--candidate-overlay: unreadable: {printable(str(exc), 200)}") from None
    if not files:
        raise OverlayError(
            f"--candidate-overlay {printable(str(root), 200)}: no Markdown files under skills/<skill>/"
        )
    overlay = Overlay(files=tuple(files), roles=frozenset(roles))
    _require_change(overlay, toolkit)
    return overlay


def _role(relative: PurePosixPath, toolkit: Toolkit) -> SkillRole:
    parts = relative.parts
    if len(relative.as_posix().encode()) > MAX_PATH_BYTES:
        raise OverlayError(f"--candidate-overlay: path too long: {printable(str(relative), 80)}…")
    if len(parts) < 3 or parts[0] != "skills" or relative.suffix != ".md":
        raise OverlayError(
            f"--candidate-overlay: {printable(str(relative), 200)} is not Markdown under skills/<skill>/ "
            "(only evaluated skill prose may change)"
        )
    role = toolkit.role_of(parts[1])
    if role is None:
        raise OverlayError(
            f"--candidate-overlay: {printable(str(relative), 200)} touches skill "
            f"{printable(parts[1], 80)!r}, which is not evaluated; "
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
