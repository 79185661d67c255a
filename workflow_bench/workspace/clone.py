"""Clones: the per-SHA sanitized template, the per-cell copy of it, seeded skills, task assets.

Owns the sanitized template (a parentless one-commit repository that holds the task tree and
nothing else: no history, no remotes, no refs the agent could walk back to the original
commits), the per-cell copy of it, skill seeding and task assets.
Snapshots of a workspace are ``workspace.snapshot``'s; the patch is ``workspace.patch``'s;
removal is ``workspace.remove``'s.

The template is built with plumbing (issue 26): the objects of the task's tree, and only those,
go from the source's object store into one packfile (``pack-objects --revs`` on the tree), the
index comes from ``read-tree`` and the working tree from ``checkout-index`` (nothing hashed
again, no loose object per file), and the commit is ``commit-tree`` with the fixed snapshot
identity. Its tree is the task's tree exactly (``git add -A`` used to drop tracked files the
tree's own ``.gitignore`` matches). No git command of the harness runs automatic gc or
maintenance (``workspace.git``): a detached ``gc --auto`` once deleted object directories of a
template while cells copied them.

A cell's clone is a self-contained copy (``cp -a``; no alternates, no hardlinks to the
template), so nothing a cell does can reach the template or another cell.

Trust: host-side git (through ``workspace.git``) runs only on repositories the harness itself
just created, before any sandboxed process touched them. Once setup or the agent has run, the
clone's ``.git`` is untrusted (a planted ``core.fsmonitor`` would execute on the host), so every
later git command runs inside the sandbox (``workspace.git.sandbox_git``). Only the template
build writes the template: cells copy it while others run, and its recorded baseline
(``workspace.baseline``) describes it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from workflow_bench.process import ProcessError, run_checked

from .git import SNAPSHOT_IDENTITY, git_output, run_git, scaled_timeout
from .snapshot import SKILLS_DIR


def _git(
    args: Iterable[str],
    *,
    cwd: Path,
    what: str,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
) -> str:
    """A host git step on a repository the harness just created, with the fixed snapshot identity."""
    return git_output(
        args,
        what=what,
        cwd=cwd,
        env={**SNAPSHOT_IDENTITY, **(env or {})},
        timeout_s=timeout_s if timeout_s is not None else scaled_timeout(),
    )


def build_template(*, source_repo: Path, sha: str, dest: Path, total_bytes: int = 0, entries: int = 0) -> str:
    """Write ``sha``'s tree into a fresh parentless repository at ``dest``; return its HEAD.

    Only the tree's objects are copied from the source's object store (one pack); no object of
    the source history ever is. ``total_bytes``/``entries`` (the tree's size, from binding) scale
    the time bounds of the steps that grow with it.
    """
    dest.mkdir(parents=True)
    timeout = scaled_timeout(total_bytes=total_bytes, entries=entries)
    _git(["init", "-q", "-b", "main", "--template=", str(dest)], cwd=dest, what="git init")
    (dest / ".git" / "info").mkdir(exist_ok=True)  # --template= makes no info/ (exclude lives there)
    src = ["--git-dir", str(_git_dir(source_repo))]
    tree = _git(
        [*src, "rev-parse", "--verify", "--end-of-options", f"{sha}^{{tree}}"], cwd=dest, what="task tree"
    )
    pack = dest / ".git" / "objects" / "pack" / "pack"
    # Every object reachable from the tree (read from stdin), existing deltas reused, no new
    # delta search: written as <pack>-<hash>.pack/.idx straight into the template's store.
    run_git(
        [*src, "pack-objects", "--revs", "--window=0", "-q", str(pack)],
        what="pack the task tree",
        stdin=f"{tree}\n".encode(),
        timeout_s=timeout,
    )
    _git(["read-tree", tree], cwd=dest, what="read task tree", timeout_s=timeout)
    # A checkout worker per core: writing the files is most of a large template's build.
    checkout = ["-c", "checkout.workers=0", "checkout-index", "-a", "-f", "-u"]
    _git(checkout, cwd=dest, what="check out task tree", timeout_s=timeout)
    commit = _git(["commit-tree", "-m", "task snapshot", tree], cwd=dest, what="commit")
    _git(["update-ref", "refs/heads/main", commit], cwd=dest, what="update-ref")
    _git(["config", "user.name", "agent"], cwd=dest, what="git config")
    _git(["config", "user.email", "agent@workflow-bench.invalid"], cwd=dest, what="git config")
    head = _git(["rev-parse", "HEAD"], cwd=dest, what="rev-parse")
    commits = _git(["rev-list", "--all", "--count"], cwd=dest, what="rev-list")
    if commits != "1":
        raise RuntimeError(f"sanitized template has {commits} commits, expected exactly 1")
    return head


def _git_dir(repo: Path) -> Path:
    return repo / ".git" if (repo / ".git").is_dir() else repo


def copy_clone(template: Path, dest: Path, *, total_bytes: int = 0, entries: int = 0) -> None:
    """A self-contained copy (no alternates, no hardlinks to the template) of a template for one cell.

    ``cp -a --reflink=auto`` shares blocks copy-on-write where the filesystem can (btrfs, xfs)
    and copies otherwise; without a usable ``cp`` the copy is made in Python. ``total_bytes`` and
    ``entries`` (the template's, when known) scale the copy's time bound.
    """
    cp = shutil.which("cp")
    if cp is not None:
        try:
            run_checked(
                [cp, "-a", "--reflink=auto", "--", str(template), str(dest)],
                what="copy the template",
                timeout_s=scaled_timeout(total_bytes=total_bytes, entries=entries),
            )
            return
        except ProcessError:
            shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(template, dest, symlinks=True)


def seed_skills(workspace: Path, *, skills_root: Path, names: Iterable[str]) -> None:
    """Install the toolkit's skills into the clone and commit them (trusted, pre-setup)."""
    for name in names:
        source = skills_root / name
        if not (source / "SKILL.md").is_file():
            raise RuntimeError(f"toolkit skill {name!r} has no SKILL.md under {skills_root}")
        shutil.copytree(source, workspace / SKILLS_DIR / name, symlinks=False)
    _git(["add", "-A", SKILLS_DIR], cwd=workspace, what="stage skills")
    _git(["commit", "-q", "--no-verify", "-m", "seed evaluated skills"], cwd=workspace, what="commit skills")


def add_task_assets(
    template: Path, *, copies: Iterable[tuple[Path, str]], mount_points: Iterable[str]
) -> None:
    """Materialize ``sandbox_copy`` inputs into the template (committed) and create dependency mount points.

    Committed, so a copied input is part of every cell's starting state and
    never counts as the agent's work. Mount points are empty directories that
    bubblewrap binds the read-only dependency trees onto.
    """
    copies = list(copies)
    for source, relative in copies:
        destination = template / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(source, destination, follow_symlinks=False)
    mount_points = list(mount_points)
    for relative in mount_points:
        (template / relative).mkdir(parents=True, exist_ok=True)
    if mount_points:
        # Dependency trees are mounted, never the agent's work: keep them out of
        # `git add -A`, the patch and churn.
        with open(template / ".git" / "info" / "exclude", "a", encoding="utf-8") as excludes:
            excludes.writelines(f"/{relative}/\n" for relative in mount_points)
    if copies:
        _git(["add", "-A", "-f", *(r for _, r in copies)], cwd=template, what="stage task assets")
        _git(["commit", "-q", "--no-verify", "-m", "task assets"], cwd=template, what="commit task assets")
