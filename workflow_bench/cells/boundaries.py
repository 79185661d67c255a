"""One cell's workspace across its phase boundaries: one scan each, what changed, and the patch.

Owns ``WorkspaceTrack``. A cell starts from its template's baseline (``workspace.baseline``): its
copy of the template is adopted once (``copied_from``: the harness's own copy, made and handed
to the cell's uid before any sandbox ran; one ``lstat`` walk, no file read). Every later
boundary (after setup, after the candidate overlay step, after each session) is one
``scan_workspace`` against the state before it, so "after session N" is "before session N+1"
and the judges reuse the last one. What changed is tracked as the union of
the scans' changed paths, so "changed since the base" costs what changed, not the repository.

The patch: the base commit is the template's (nothing before the sessions changed the tree) or
the template's plus the setup's changes, imported before the first session; the "after" commit
adds what the sessions changed. Both live in the cell's own view (beside the cell directory,
never on its volume), which borrows the template view's objects and imports at most
``workspace.patch.MAX_VIEW_IMPORT_BYTES`` of content per import.

Must never: reuse a state after a scan of it failed (the next read scans again and fails the
same way), or import a file's bytes at any other moment than the boundary its state describes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from workflow_bench.workspace import patch as patch_caps
from workflow_bench.workspace.baseline import TemplateBaseline
from workflow_bench.workspace.patch import PatchView
from workflow_bench.workspace.snapshot import (
    Scan,
    WorkspaceState,
    scan_overlay,
    scan_workspace,
    skill_fingerprint,
)


class WorkspaceTrack:
    """The cell's current workspace state, its base, and the paths touched since each."""

    def __init__(
        self,
        workspace: Path,
        baseline: TemplateBaseline,
        *,
        view_dir: Path,
        excluded: Iterable[str],
        upper: Path | None = None,
    ) -> None:
        """``workspace``: the harness's fresh copy of the template (nothing sandboxed has run on it),
        or, with ``upper``, an overlay of the template whose upper layer that is (``sandbox._overlay``):
        it starts as the template's state, no walk at all, and each scan looks only at the upper
        layer (``scan_overlay``: what changed, whatever the repository's size)."""
        self.workspace = workspace
        self.template = baseline
        self._upper = upper
        self._seen: frozenset[str] = frozenset()
        if upper is None:
            self._state = scan_workspace(workspace, previous=baseline.state, copied_from=True).state
        else:
            self._state = baseline.state
        self._stale = False
        self._since_template: set[str] = set()
        self._since_base: set[str] = set()
        self.base: WorkspaceState | None = None
        self.base_commit: str | None = None
        # The view is on the host's disk, not the cell's volume: its content is capped per cell.
        self.view = PatchView(
            view_dir,
            excluded=excluded,
            alternate=baseline.view,
            create=False,
            budget_bytes=patch_caps.MAX_VIEW_IMPORT_BYTES,  # read now: a negative control lifts it
        )

    def scan(self) -> Scan:
        """One phase boundary. Raises ``WorkspaceLimitError`` (then the next ``state`` scans again)."""
        self._stale = True
        if self._upper is None:
            scan = scan_workspace(self.workspace, previous=self._state)
        else:
            scan, self._seen = scan_overlay(
                self.workspace, upper=self._upper, previous=self._state, seen=self._seen
            )
        self._state, self._stale = scan.state, False
        self._since_template |= scan.changed
        if self.base is not None:
            self._since_base |= scan.changed
        return scan

    @property
    def state(self) -> WorkspaceState:
        """The state at the last boundary (scanned again if the last scan failed)."""
        return self.scan().state if self._stale else self._state

    def changed_since_template(self) -> tuple[str, ...]:
        return self.state.changed_since(self.template.state, self._since_template)

    def mark_base(self) -> tuple[str, ...]:
        """The state now is the base of the patch and of the no-work rule (before the first session);
        imported into the view now when setup or the overlay step changed the template's tree.
        Returns what they changed."""
        changed = self.changed_since_template()
        self.base = self.state
        if changed:
            self.base_commit = self.view.record_changes(
                self.workspace,
                "base",
                parent=self.template.base_commit,
                before=self.template.state,
                after=self.base,
                paths=changed,
            )
        else:
            self.base_commit = self.template.base_commit
        return changed

    @property
    def base_skill_digest(self) -> str | None:
        """The seeded skills' fingerprint at the base (the template's when nothing changed it)."""
        base = self._base()
        return self.template.skill_digest if base is self.template.state else skill_fingerprint(base.entries)

    def changed_since_base(self) -> tuple[str, ...]:
        return self.state.changed_since(self._base(), self._since_base)

    def patch(self) -> tuple[bytes, dict[str, int]]:
        """The patch and churn from the base to the last boundary."""
        base, after = self._base(), self.state
        assert self.base_commit is not None  # set with the base
        commit = self.view.record_changes(
            self.workspace,
            "after",
            parent=self.base_commit,
            before=base,
            after=after,
            paths=self.changed_since_base(),
        )
        return self.view.diff(self.base_commit, commit)

    def _base(self) -> WorkspaceState:
        if self.base is None:
            raise RuntimeError("the workspace's base was never marked")
        return self.base
