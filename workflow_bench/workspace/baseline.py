"""What every cell of a template starts from, recorded once per template (issue 26).

Owns ``TemplateBaseline`` and ``record_baseline``: once a template is complete (tree, seeded
skills, task assets, the toolkit's index), its full snapshot state (every file read once), its
tree as the base commit of a harness-owned patch view beside it, its HEAD and the seeded skills'
fingerprint. A cell then starts from these: its copy adopts the state under its own stat keys
(no file read), and a cell whose setup and overlay step left the tree alone uses the base commit
and the state as they are. Per cell, only what changed is read, hashed and imported.

Must never: be recorded before the template stops changing (the index build writes into it), or
outlive the template (the view's directory sits beside it and goes with the sweep's work root).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .git import git_output
from .patch import PatchView
from .snapshot import WorkspaceState, scan_workspace, skill_fingerprint


@dataclass(frozen=True, slots=True, eq=False)
class TemplateBaseline:
    """A sealed template's starting point for every cell of it."""

    state: WorkspaceState
    view: PatchView
    """The template's patch view: ``base_commit`` is its tree as on disk."""
    base_commit: str
    head_sha: str
    """The template repository's HEAD (the snapshot, skills and assets commits)."""
    skill_digest: str | None
    """``skill_fingerprint`` of the seeded skills (None: none seeded)."""
    clone_bytes: int
    """Bytes a copy of the whole template (its ``.git`` too) occupies: what a cell's volume holds
    before the agent's quota."""


def record_baseline(template: Path, *, excluded: Iterable[str], view_dir: Path) -> TemplateBaseline:
    """Read the finished template once: its state, its base commit, its HEAD (harness-made: host git)."""
    state = scan_workspace(template).state
    view = PatchView(view_dir, excluded=excluded)
    base = view.record_state(template, "base", state)
    head = git_output(["rev-parse", "HEAD"], what="rev-parse the template", cwd=template)
    return TemplateBaseline(
        state,
        view,
        base,
        head,
        skill_fingerprint(state.entries),
        state.allocated_bytes + _allocated(template / ".git"),
    )


def _allocated(root: Path) -> int:
    """Allocated bytes under ``root`` (the harness's own template, never a cell's tree)."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total
