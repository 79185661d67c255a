"""What the proposer may hand back, and the frozen copy the benchmark and ``--apply`` use.

The proposer's only writable directory holds exactly ``overlay/`` and ``proposal.md``;
anything else (another file, a symlink, a FIFO) fails the generation. The overlay must pass the
runner's own overlay rules (``toolkit.overlay.load_overlay``: Markdown only, under
``skills/<skill>/`` of an evaluated skill, no symlinks, bounded, not byte-identical to the
incumbent) and, on top, touch only skills this evolve run exercises: its required arms must be
exactly the configured incumbent/candidate pairs, so a change to a skill no benchmarked arm
runs can never be "proven".

Freezing copies the validated bytes (from memory, never re-reading the proposer's directory)
into a 0444/0555 tree and records its digest; ``recheck`` re-reads the frozen tree and compares
the digest before the benchmark and again before ``--apply``. A mismatch is tampering: the
generation fails, nothing is applied.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.arms import required_candidate_arms
from workflow_bench.input_files import InputFileError, TreeLimitError, bounded_walk, read_bounded
from workflow_bench.redaction import printable
from workflow_bench.toolkit.overlay import MAX_DEPTH, MAX_ENTRIES, Overlay, OverlayError, load_overlay
from workflow_bench.toolkit.spec import Toolkit

from .args import candidate_pairs, changeable_roles

OVERLAY_DIR = "overlay"
PROPOSAL = "proposal.md"
MAX_PROPOSAL_BYTES = 64 * 1024  # a proposal is a page of prose, not a dump
MAX_OUTPUT_NAMES = 1000  # listing more is pointless: two are allowed
# The frozen tree holds what validate_overlay accepted (toolkit.overlay's bounds) and nothing else.
_FROZEN_ENTRIES, _FROZEN_DEPTH = MAX_ENTRIES, MAX_DEPTH


class OverlayRejected(ValueError):
    """The proposer's output or the frozen overlay is not acceptable: the generation fails closed."""


@dataclass(frozen=True, slots=True)
class FrozenOverlay:
    path: Path
    digest: str
    roles: frozenset[str]


def check_output(out_dir: Path) -> tuple[Path, bytes]:
    """(overlay directory, proposal bytes) if ``out_dir`` holds exactly those two; else rejected."""
    try:
        names = sorted(os.listdir(out_dir))
    except OSError as exc:
        raise OverlayRejected(f"the proposer's output is unreadable: {printable(str(exc), 200)}") from None
    if len(names) > MAX_OUTPUT_NAMES:
        raise OverlayRejected(f"the proposer wrote {len(names)} entries; expected overlay/ and proposal.md")
    extra = [n for n in names if n not in (OVERLAY_DIR, PROPOSAL)]
    if extra:
        shown = ", ".join(printable(n, 80) for n in extra[:5])
        raise OverlayRejected(f"the proposer wrote outside overlay/ and proposal.md: {shown}")
    overlay = out_dir / OVERLAY_DIR
    if OVERLAY_DIR not in names or not stat.S_ISDIR(os.lstat(overlay).st_mode):
        raise OverlayRejected("the proposer wrote no overlay/ directory")
    proposal = out_dir / PROPOSAL
    if PROPOSAL not in names or not stat.S_ISREG(os.lstat(proposal).st_mode):
        raise OverlayRejected("the proposer wrote no regular proposal.md")
    try:
        data = read_bounded(proposal, max_bytes=MAX_PROPOSAL_BYTES)
        data.decode("utf-8")
    except (InputFileError, OSError, UnicodeDecodeError) as exc:
        raise OverlayRejected(f"proposal.md: {exc} (at most {MAX_PROPOSAL_BYTES} bytes of UTF-8)") from None
    if not data.strip():
        raise OverlayRejected("proposal.md is empty")
    return overlay, data


def validate_overlay(root: Path, *, toolkit: Toolkit, incumbents: tuple[str, ...]) -> Overlay:
    """The overlay at ``root`` under the runner's rules and this run's exercised skills."""
    try:
        overlay = load_overlay(root, toolkit=toolkit)
    except OverlayError as exc:
        raise OverlayRejected(str(exc).replace("--candidate-overlay", "overlay")) from None
    pairs = candidate_pairs(incumbents)
    if required_candidate_arms(overlay.roles) != pairs:
        allowed = sorted(toolkit.skill_for(r) for r in changeable_roles(incumbents))
        touched = sorted(toolkit.skill_for(r) for r in overlay.roles)
        raise OverlayRejected(
            f"overlay touches skill(s) {', '.join(touched)}, which this run does not benchmark on exactly "
            f"{' '.join(pairs)}; it may change only {', '.join(allowed)}"
        )
    return overlay


def freeze(overlay: Overlay, dest: Path, *, toolkit: Toolkit, incumbents: tuple[str, ...]) -> FrozenOverlay:
    """Write ``overlay``'s bytes read-only under ``dest`` (new) and re-check them."""
    dest.mkdir(parents=True)
    for relative, data in overlay.files:
        path = dest / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o444)
    directories = [full for _, full, st in _frozen_entries(dest) if stat.S_ISDIR(st.st_mode)]
    for directory in reversed(directories):  # deepest first: a parent stays writable until then
        os.chmod(directory, 0o555)
    os.chmod(dest, 0o555)
    frozen = FrozenOverlay(path=dest, digest=overlay.digest, roles=frozenset(overlay.roles))
    recheck(frozen, toolkit=toolkit, incumbents=incumbents)
    return frozen


def _frozen_entries(root: Path) -> list[tuple[str, str, os.stat_result]]:
    """Every entry of a frozen overlay tree (``bounded_walk``); OverlayRejected when it is not one."""
    try:
        return list(bounded_walk(root, max_entries=_FROZEN_ENTRIES, max_depth=_FROZEN_DEPTH))
    except (TreeLimitError, OSError) as exc:
        raise OverlayRejected(f"frozen overlay {root}: {printable(str(exc), 200)}") from None


def recheck(frozen: FrozenOverlay, *, toolkit: Toolkit, incumbents: tuple[str, ...]) -> None:
    """Raise unless the frozen tree still holds exactly the recorded bytes, read-only."""
    for rel, _full, st in _frozen_entries(frozen.path):
        if st.st_mode & 0o222:
            raise OverlayRejected(f"frozen overlay {frozen.path}: {printable(rel, 200)} became writable")
    try:
        overlay = validate_overlay(frozen.path, toolkit=toolkit, incumbents=incumbents)
    except OverlayRejected as exc:
        raise OverlayRejected(f"frozen overlay {frozen.path} no longer validates: {exc}") from None
    if overlay.digest != frozen.digest:
        raise OverlayRejected(
            f"frozen overlay {frozen.path} changed: digest {overlay.digest}, frozen {frozen.digest}"
        )
