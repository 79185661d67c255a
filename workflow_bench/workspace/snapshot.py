"""Snapshots of a workspace: every path's kind, mode and bytes (bounded), their diff, the skill fingerprint.

Owns the walk every harness read of a workspace goes through (iterative, sorted, never following
a symlink, bounded by entry, depth and byte caps: past them the workspace is the agent's doing,
``WorkspaceLimitError``), ``workspace_snapshot`` (phase boundaries), ``changed_paths``,
``skill_fingerprint`` and the paths that are bookkeeping rather than work (plan documents, the
seeded skills).

Must never: follow a symlink, read past the caps, or run git (the snapshot reads the files).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from workflow_bench.input_files import TreeLimitError, bounded_walk

PLAN_DIR = "docs/plans"
SKILLS_DIR = ".claude/skills"
# Paths whose changes are bookkeeping, not implementation work, in churn and
# the no-work rule (plan documents and the seeded skills).
NON_WORK_PATHS = (PLAN_DIR, SKILLS_DIR)
# Snapshot caps: a workspace past these is an agent filling the disk, and
# the boundary check fails closed rather than hashing forever.
MAX_SNAPSHOT_ENTRIES = 100_000
MAX_SNAPSHOT_BYTES = 1 << 30
MAX_SNAPSHOT_DEPTH = 256  # real trees are a few dozen deep; a deeper chain is an agent's doing


class WorkspaceLimitError(RuntimeError):
    """The workspace is past the snapshot caps: judged as the agent's failure once it has run."""


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
