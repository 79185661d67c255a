"""Clones and the evidence taken from them.

Owns: the per-SHA sanitized template (a parentless one-commit repository that
holds the task tree and nothing else: no history, no remotes, no refs the
agent could walk back to the original commits), the per-cell copy of it,
skill seeding, workspace snapshots for phase boundaries, and churn parsing
(the patch itself comes from ``judging.patch``'s harness-owned view).

Trust: host-side git runs only on repositories the harness itself just
created, before any sandboxed process touched them. Once setup or the agent
has run, the clone's ``.git`` is untrusted (a planted ``core.fsmonitor`` would
execute on the host), so every later git command runs inside the sandbox.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from workflow_bench.input_files import TreeLimitError, bounded_walk
from workflow_bench.process import ProcessError, run_checked, run_process
from workflow_bench.sandbox import RunPolicy, Sandbox

# A fixed identity and date make the sanitized commit a pure function of the
# task tree, so two sweeps over the same SHA get the same sanitized SHA.
_SNAPSHOT_ENV = {
    "GIT_AUTHOR_NAME": "workflow-bench",
    "GIT_AUTHOR_EMAIL": "snapshot@workflow-bench.invalid",
    "GIT_COMMITTER_NAME": "workflow-bench",
    "GIT_COMMITTER_EMAIL": "snapshot@workflow-bench.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "PATH": "/usr/bin:/bin",
    "LC_ALL": "C",
}
# Options for every git command that reads an untrusted clone: a planted
# config must not run programs or rewrite what diff reports.
_SAFE_GIT = (
    "git",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "core.pager=cat",
)
PLAN_DIR = "docs/plans"
SKILLS_DIR = ".claude/skills"
# Paths whose changes are bookkeeping, not implementation work, in churn and
# the no-work rule (plan documents and the seeded skills).
NON_WORK_PATHS = (PLAN_DIR, SKILLS_DIR)
MAX_PATCH_BYTES = 300_000  # reference harness cap; a larger diff is truncated with a marker
GIT_TIMEOUT_S = 120
# Snapshot caps: a workspace past these is an agent filling the disk, and
# the boundary check fails closed rather than hashing forever.
MAX_SNAPSHOT_ENTRIES = 100_000
MAX_SNAPSHOT_BYTES = 1 << 30
MAX_SNAPSHOT_DEPTH = 256  # real trees are a few dozen deep; a deeper chain is an agent's doing
REMOVE_TIMEOUT_S = 600


class WorkspaceLimitError(RuntimeError):
    """The workspace is past the snapshot caps: judged as the agent's failure once it has run."""


def _git(args: Iterable[str], *, cwd: Path, what: str, env: Mapping[str, str] | None = None) -> str:
    result = run_checked(
        ["git", *args], what=what, cwd=cwd, env=dict(env or _SNAPSHOT_ENV), timeout_s=GIT_TIMEOUT_S
    )
    return result.stdout.decode().strip()


def build_template(*, source_repo: Path, sha: str, dest: Path) -> str:
    """Write ``sha``'s tree into a fresh parentless repository at ``dest``; return its HEAD.

    The tree is checked out through a temporary index straight from the
    source object store, so no object of the source history is ever copied.
    """
    dest.mkdir(parents=True)
    _git(["init", "-q", "-b", "main", str(dest)], cwd=dest, what="git init")
    with tempfile.TemporaryDirectory(prefix="wfbench-index-") as tmp:
        env = {**_SNAPSHOT_ENV, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        src = ["--git-dir", str(_git_dir(source_repo)), "--work-tree", str(dest)]
        _git([*src, "read-tree", sha], cwd=dest, what="read task tree", env=env)
        _git([*src, "checkout-index", "-a", "-f"], cwd=dest, what="check out task tree", env=env)
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


def remove_tree(path: Path) -> None:
    """Delete a clone whatever the agent did to it: dropped write bits, any depth.

    ``rm``/``chmod`` walk iteratively (fts), where ``shutil.rmtree`` recurses and raised
    RecursionError on a 3,000-deep directory chain an agent made (canary ``exclude-deep-tree``).

    Raises:
        OSError: the tree is still there afterwards.
    """
    if not (path.exists() or path.is_symlink()):
        return
    target = str(path)
    first = run_process(["rm", "-rf", "--one-file-system", "--", target], timeout_s=REMOVE_TIMEOUT_S)
    if first.ok and not os.path.lexists(target):
        return
    if not path.is_symlink():
        # A non-root owner may have to restore its own write and search bits first.
        run_process(["chmod", "-R", "u+rwx", "--", target], timeout_s=REMOVE_TIMEOUT_S)
    second = run_process(["rm", "-rf", "--one-file-system", "--", target], timeout_s=REMOVE_TIMEOUT_S)
    if os.path.lexists(target):
        raise OSError(f"could not remove {target}: {second.describe()}")


def walk_tree(root: Path) -> Iterator[tuple[str, str, os.stat_result]]:
    """(relative path, absolute path, lstat) of every entry under ``root`` except the top ``.git``.

    ``input_files.bounded_walk`` (iterative, sorted, never following a symlink) with the snapshot bounds:
    past ``MAX_SNAPSHOT_ENTRIES`` entries or ``MAX_SNAPSHOT_DEPTH`` levels it raises
    ``WorkspaceLimitError`` (the agent's doing once it has run).
    """
    try:
        yield from bounded_walk(
            root, max_entries=MAX_SNAPSHOT_ENTRIES, max_depth=MAX_SNAPSHOT_DEPTH, skip_top=frozenset({".git"})
        )
    except TreeLimitError as exc:
        raise WorkspaceLimitError(f"workspace has {exc}") from None


# ── snapshots ──────────────────────────────────────────────────────────────


def workspace_snapshot(root: Path) -> dict[str, str]:
    """Map every path under ``root`` (except ``.git``) to a digest of its kind, mode and bytes.

    Symlinks are recorded by target and never followed, so a planted link to
    a host file cannot make the harness read it.
    """
    entries: dict[str, str] = {}
    total = 0
    for rel, full, st in walk_tree(root):
        if stat.S_ISLNK(st.st_mode):
            entries[rel] = f"link:{os.readlink(full)}"
        elif stat.S_ISDIR(st.st_mode):
            entries[rel] = f"dir:{stat.S_IMODE(st.st_mode):o}"
        elif stat.S_ISREG(st.st_mode):
            total += st.st_size
            if total > MAX_SNAPSHOT_BYTES:
                raise WorkspaceLimitError(
                    f"workspace exceeds {MAX_SNAPSHOT_BYTES} bytes; refusing to snapshot"
                )
            entries[rel] = f"file:{stat.S_IMODE(st.st_mode):o}:{_file_digest(full)}"
        else:
            entries[rel] = f"special:{stat.S_IFMT(st.st_mode)}"
    return entries


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def changed_paths(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    keys = set(before) | set(after)
    return tuple(sorted(k for k in keys if before.get(k) != after.get(k)))


def skill_fingerprint(snapshot: Mapping[str, str]) -> str | None:
    """Digest of the evaluated skill tree within a snapshot; None when no skills are seeded."""
    items = sorted((k, v) for k, v in snapshot.items() if k == SKILLS_DIR or k.startswith(SKILLS_DIR + "/"))
    if not items:
        return None
    digest = hashlib.sha256()
    for key, value in items:
        digest.update(f"{len(key)}:{key}{len(value)}:{value}".encode())
    return digest.hexdigest()


# ── capture (inside the sandbox: the clone is untrusted now) ───────────────


def sandbox_git(sandbox: Sandbox, args: Iterable[str], *, what: str, writable: bool = False) -> bytes:
    result = sandbox.run(
        [*_SAFE_GIT, *args],
        policy=RunPolicy(workspace_writable=writable),
        timeout_s=GIT_TIMEOUT_S,
    )
    if not result.ok:
        raise ProcessError(what, result)
    if result.stdout_overflow:
        raise RuntimeError(f"{what}: output exceeded the capture limit")
    return result.stdout


def head_sha(sandbox: Sandbox) -> str:
    return sandbox_git(sandbox, ["rev-parse", "HEAD"], what="rev-parse HEAD").decode().strip()


def parse_numstat(text: str) -> dict[str, int]:
    """Churn from ``git diff --numstat``; binary files count as a file with 0/0 lines."""
    files = insertions = deletions = 0
    for line in text.splitlines():
        parts = line.split("\t", 2)
        if len(parts) != 3:
            continue
        files += 1
        insertions += int(parts[0]) if parts[0].isdigit() else 0
        deletions += int(parts[1]) if parts[1].isdigit() else 0
    return {"diff_files": files, "diff_insertions": insertions, "diff_deletions": deletions}
