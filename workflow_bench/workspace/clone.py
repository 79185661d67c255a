"""Clones: the per-SHA sanitized template, the per-cell copy of it, seeded skills, task assets.

Owns the sanitized template (a parentless one-commit repository that holds the task tree and
nothing else: no history, no remotes, no refs the agent could walk back to the original
commits), the per-cell copy of it, skill seeding and task assets. Snapshots of a workspace are
``workspace.snapshot``'s; the patch is ``workspace.patch``'s; removal is ``workspace.remove``'s.

Trust: host-side git (through ``workspace.git``) runs only on repositories the harness itself
just created, before any sandboxed process touched them. Once setup or the agent has run, the
clone's ``.git`` is untrusted (a planted ``core.fsmonitor`` would execute on the host), so every
later git command runs inside the sandbox (``workspace.git.sandbox_git``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from workflow_bench.process import ProcessError, run_checked

from .git import SNAPSHOT_IDENTITY, git_output
from .snapshot import SKILLS_DIR


def _git(args: Iterable[str], *, cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    """A host git step on a repository the harness just created, with the fixed snapshot identity."""
    return git_output(args, what=what, cwd=cwd, env={**SNAPSHOT_IDENTITY, **(env or {})})


def build_template(*, source_repo: Path, sha: str, dest: Path) -> str:
    """Write ``sha``'s tree into a fresh parentless repository at ``dest``; return its HEAD.

    The tree is checked out through a temporary index straight from the
    source object store, so no object of the source history is ever copied.
    """
    dest.mkdir(parents=True)
    _git(["init", "-q", "-b", "main", str(dest)], cwd=dest, what="git init")
    with tempfile.TemporaryDirectory(prefix="wfbench-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        src = ["--git-dir", str(_git_dir(source_repo)), "--work-tree", str(dest)]
        _git([*src, "read-tree", sha], cwd=dest, what="read task tree", env=index)
        _git([*src, "checkout-index", "-a", "-f"], cwd=dest, what="check out task tree", env=index)
    shutil.rmtree(dest / ".git" / "hooks", ignore_errors=True)
    _git(["add", "-A"], cwd=dest, what="stage task tree")
    _git(["commit", "-q", "--no-verify", "--allow-empty", "-m", "task snapshot"], cwd=dest, what="commit")
    _git(["config", "user.name", "agent"], cwd=dest, what="git config")
    _git(["config", "user.email", "agent@workflow-bench.invalid"], cwd=dest, what="git config")
    head = _git(["rev-parse", "HEAD"], cwd=dest, what="rev-parse")
    commits = _git(["rev-list", "--all", "--count"], cwd=dest, what="rev-list")
    if commits != "1":
        raise RuntimeError(f"sanitized template has {commits} commits, expected exactly 1")
    return head


def _git_dir(repo: Path) -> Path:
    return repo / ".git" if (repo / ".git").is_dir() else repo


def copy_clone(template: Path, dest: Path) -> None:
    """A self-contained copy (no alternates, no hardlinks to the template) of a template for one cell.

    ``cp -a --reflink=auto`` shares blocks copy-on-write where the filesystem can (btrfs, xfs)
    and copies otherwise; without a usable ``cp`` the copy is made in Python.
    """
    cp = shutil.which("cp")
    if cp is not None:
        try:
            run_checked(
                [cp, "-a", "--reflink=auto", "--", str(template), str(dest)], what="copy the template"
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
