"""Snapshots of a workspace: every path's kind, mode and bytes (bounded), their diff, the skill fingerprint.

Owns the walk every harness read of a workspace goes through (iterative, sorted, never following
a symlink, bounded by entry, depth and byte caps: past them the workspace is the agent's doing,
``WorkspaceLimitError``), ``WorkspaceState`` and ``scan_workspace`` (phase boundaries),
``changed_paths``, ``skill_fingerprint`` and the paths that are bookkeeping rather than work
(plan documents, the seeded skills).

Work proportional to what changed (issue 26): a state records, besides each entry's digest, the
stat it was read under (``StatKey``: mode, inode, size, mtime and ctime, in ns). The next scan
walks the tree with ``lstat`` only and re-reads a file or link only when its key differs; every
other digest is carried over. Why that cannot hide a change: any write, truncate, chmod, chown,
rename onto the path, link, unlink-and-recreate or ``utime`` updates the inode's ctime to the
current time, no unprivileged process can set ctime, and no writer of the workspace is alive
while the harness walks it (sessions, setup and the overlay step have exited; the judges see it
read-only). So a key recorded by one walk can only be seen again by a later walk if nothing
touched the inode in between: an agent that rewrites a file with the same size, restores its
mtime and even gets the same inode number back still leaves a new ctime. The one way ctime can
repeat is the host's wall clock stepping backwards: a scan that sees the wall clock run slower
than the monotonic clock since the previous walk reuses nothing and reads every file again; and
a file changed within ``_RACY_NS`` of a walk's end is never trusted by its key (a later write
could fall in the same coarse timestamp tick), so the next walk reads it again.
The template's state is recorded once per template. A cell on an overlay of the template
(``sandbox._overlay``) starts from that state and each of its scans looks only at what the upper
layer holds and held (``scan_overlay``: O(what changed)); a cell on a copy adopts the template's
digests once (``copied_from``: the harness's own copy, before any sandbox ran) under the copy's
own keys, and each of its scans walks the whole tree with ``lstat``.

Must never: follow a symlink, read past the caps, or run git (the snapshot reads the files).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.input_files import TreeLimitError, bounded_walk

PLAN_DIR = "docs/plans"
SKILLS_DIR = ".claude/skills"
# Paths whose changes are bookkeeping, not implementation work, in churn and
# the no-work rule (plan documents and the seeded skills).
NON_WORK_PATHS = (PLAN_DIR, SKILLS_DIR)
# Snapshot caps: a workspace past these is an agent filling the disk, and the boundary check
# fails closed rather than walking forever. A scan reads only what changed, so the caps bound the
# walk's time and memory (~300 B of state per entry, estimated): 400k entries is ~120 MB
# per walk. A cell volume (8 KiB of disk per inode) of the default 4 GiB quota has room for
# ~540k inodes, so an agent can cross the entry cap, and is charged for it (workspace-invalid).
MAX_SNAPSHOT_ENTRIES = 400_000
MAX_SNAPSHOT_BYTES = 16 << 30
MAX_SNAPSHOT_DEPTH = 256  # real trees are a few dozen deep; a deeper chain is an agent's doing
# The largest task tree a sweep accepts, checked when the task is bound (exit 2 naming the task and
# the cap, nothing cloned): half the snapshot caps, so every accepted task leaves its agent as much
# room again before its workspace is over them. Before issue 26 a repository over the old caps
# (100k entries, 1 GiB) failed every cell as infra-error instead.
MAX_TASK_ENTRIES = MAX_SNAPSHOT_ENTRIES // 2
MAX_TASK_BYTES = MAX_SNAPSHOT_BYTES // 2
# How far the wall clock may fall behind the monotonic clock between two walks before a scan
# treats it as a step backwards (NTP slews by at most 0.05 %; a step is what can repeat a ctime).
_CLOCK_SLACK_NS = 50_000_000
_CLOCK_SLEW = 0.002
# A file whose ctime is this close to (or after) the end of the walk is "racy" (as git calls it):
# a write right after the walk could land in the same timestamp tick (a coarse clock advances
# per jiffy, ≤ 10 ms at HZ=100) and leave the key unchanged. Its key is recorded so that it never
# matches: the next scan reads it again. Measured from the walk's end (nothing writes during a
# walk), so only files changed in the walk's last 50 ms are read again, not everything the
# harness touched just before it (the per-cell chown of the copy).
_RACY_NS = 50_000_000
_NEVER = -1  # a ctime no inode has: the key of a racy entry

StatKey = tuple[int, int, int, int, int]
"""(st_mode, st_ino, st_size, st_mtime_ns, st_ctime_ns): what a digest was read under."""


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


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True, eq=False)
class WorkspaceState:
    """One walk of a workspace: the snapshot and the stat each file's or link's digest was read under."""

    entries: Mapping[str, str]
    """Every path (except the top ``.git``) → a digest of its kind, mode and bytes (``file:644:<sha256>``,
    ``dir:755``, ``link:<target>``, ``special:<type>``); what the phase-boundary checks compare."""
    keys: Mapping[str, StatKey]
    """Regular files and symlinks → the stat their entry was read under (``scan_workspace`` reuses it)."""
    total_bytes: int
    """Bytes of every regular file."""
    allocated_bytes: int
    """Bytes allocated on disk (``st_blocks``), each inode once: what a copy of it occupies."""
    clock: tuple[int, int]
    """(wall, monotonic) ns just before the walk began."""
    read: int
    """Files and links this walk had to read (0: every digest carried over)."""

    def changed_since(self, before: WorkspaceState, touched: Iterable[str]) -> tuple[str, ...]:
        """The paths whose entry differs between ``before`` and this state, sorted, given ``touched``:
        every path any scan between them reported as changed (``Scan.changed``). O(touched)."""
        return tuple(sorted(p for p in set(touched) if before.entries.get(p) != self.entries.get(p)))


@dataclass(frozen=True, slots=True, eq=False)
class Scan:
    """A new state and what differs from the state it was scanned against."""

    state: WorkspaceState
    changed: frozenset[str]
    """Paths added, removed or whose entry differs from ``previous`` (every path without one)."""


def _clock_steady(previous: tuple[int, int], now: tuple[int, int]) -> bool:
    """False when the wall clock went backwards (relative to the monotonic clock) since ``previous``."""
    wall, mono = now[0] - previous[0], now[1] - previous[1]
    return wall >= mono - _CLOCK_SLACK_NS - int(_CLOCK_SLEW * mono)


def scan_workspace(root: Path, *, previous: WorkspaceState | None = None, copied_from: bool = False) -> Scan:
    """Walk ``root`` once (lstat only) and read just the files and links whose stat key changed.

    Without ``previous`` every file is read. With it, a file or link whose ``StatKey`` equals the
    one ``previous`` recorded keeps its digest (see the module docstring for why that is sound),
    unless the wall clock stepped backwards since ``previous`` was taken. ``copied_from``: ``root``
    is the harness's own fresh copy of the tree ``previous`` describes (made before any sandboxed
    process existed), so a file with the same path, mode and size keeps its digest under the
    copy's new key; never use it on a tree anything else could have written.

    Raises:
        WorkspaceLimitError: past the entry, depth or byte caps.
    """
    clock = (time.time_ns(), time.monotonic_ns())
    reuse = previous is not None and _clock_steady(previous.clock, clock)
    old_entries: Mapping[str, str] = previous.entries if previous is not None else {}
    old_keys: Mapping[str, StatKey] = previous.keys if previous is not None and reuse else {}
    entries: dict[str, str] = {}
    keys: dict[str, StatKey] = {}
    changed: set[str] = set()
    total = allocated = read = 0
    inodes: set[tuple[int, int]] = set()
    recent: list[str] = []  # ctime near the walk: racy unless the walk outlasted the window
    for rel, full, st in walk_tree(root):
        if (st.st_dev, st.st_ino) not in inodes:
            inodes.add((st.st_dev, st.st_ino))
            allocated += st.st_blocks * 512
        mode = st.st_mode
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            key = stat_key(st)
            if st.st_ctime_ns >= clock[0] - _RACY_NS:
                recent.append(rel)
            if stat.S_ISREG(mode):
                total += st.st_size
                if total > MAX_SNAPSHOT_BYTES:
                    raise WorkspaceLimitError(
                        f"workspace exceeds {MAX_SNAPSHOT_BYTES} bytes; refusing to snapshot"
                    )
            old_key = old_keys.get(rel)
            copy_of = copied_from and old_key is not None and (old_key[0], old_key[2]) == (mode, st.st_size)
            same = old_key == key or copy_of
            if same:
                entry = old_entries[rel]
            else:
                read += 1
                entry = f"link:{os.readlink(full)}" if stat.S_ISLNK(mode) else _file_entry(full, mode)
            keys[rel] = key
        elif stat.S_ISDIR(mode):
            entry = f"dir:{stat.S_IMODE(mode):o}"
        else:
            entry = f"special:{stat.S_IFMT(mode)}"
        entries[rel] = entry
        if old_entries.get(rel) != entry:
            changed.add(rel)
    changed.update(p for p in old_entries if p not in entries)
    racy_from = time.time_ns() - _RACY_NS
    for rel in recent:
        if keys[rel][4] >= racy_from:
            keys[rel] = (*keys[rel][:4], _NEVER)
    state = WorkspaceState(entries, keys, total, allocated, clock, read)
    return Scan(state, frozenset(changed))


# Root's overlays keep them as trusted.*, a user namespace's (userxattr) as user.*; both are read
# (an attribute the agent could set on a copied-up directory only makes the scan walk it whole).
_DIR_XATTRS = tuple(f"{ns}.overlay.{name}" for ns in ("trusted", "user") for name in ("opaque", "redirect"))


def _hides_lower(path: str) -> bool:
    """Whether an upper directory replaces (opaque) or moves (redirect) what the lower layer had there."""
    for name in _DIR_XATTRS:
        try:
            os.getxattr(path, name, follow_symlinks=False)
            return True
        except OSError:
            continue
    return False


def scan_overlay(
    root: Path, *, upper: Path, previous: WorkspaceState, seen: frozenset[str]
) -> tuple[Scan, frozenset[str]]:
    """``scan_workspace`` for a clone that is an overlay of the tree ``previous`` describes (or a
    later state of it): O(what changed), whatever the repository's size.

    Every change made through an overlay is in its upper layer (``upper``: never visible to any
    sandbox; the lower layer is the read-only template): a written, created, chmod-ed or renamed
    path is copied up, a deleted lower path leaves a whiteout, a directory that hides or moves the
    lower one carries an opaque or redirect attribute (walked whole, in ``root``). So the paths to
    look at are those in ``upper`` now plus ``seen`` (those in it at earlier scans: a path created
    and then deleted leaves no trace in ``upper``); every other path keeps ``previous``'s entry.
    Each path looked at goes through the same stat-key rule as ``scan_workspace``. Returns the
    scan and the new ``seen``. A wall clock that stepped backwards falls back to a full walk.
    ``allocated_bytes`` is carried over (only a template's is ever read).

    Raises:
        WorkspaceLimitError: past the entry, depth or byte caps.
    """
    clock = (time.time_ns(), time.monotonic_ns())
    if not _clock_steady(previous.clock, clock):
        scan = scan_workspace(root, previous=previous)
        return scan, seen | scan.changed
    look: set[str] = set(seen)
    whole: list[str] = []
    try:
        for rel, full, st in bounded_walk(
            upper,
            max_entries=MAX_SNAPSHOT_ENTRIES,
            max_depth=MAX_SNAPSHOT_DEPTH,
            skip_top=frozenset({".git"}),
        ):
            look.add(rel)
            if stat.S_ISDIR(st.st_mode) and _hides_lower(full):
                whole.append(rel)
    except TreeLimitError as exc:
        raise WorkspaceLimitError(f"workspace has {exc}") from None
    for rel in whole:  # everything below a replaced or moved directory: as the merged tree shows it
        prefix = rel + "/"
        look.update(p for p in previous.entries if p.startswith(prefix))
        for sub, _full, _st in walk_tree_below(root, rel):
            look.add(sub)
    entries = dict(previous.entries)
    keys = dict(previous.keys)
    total = previous.total_bytes  # kept up to date below: never a sum over the whole tree

    def set_key(rel: str, key: StatKey | None) -> None:
        nonlocal total
        old = keys.pop(rel, None)
        if old is not None and stat.S_ISREG(old[0]):
            total -= old[2]
        if key is not None:
            keys[rel] = key
            if stat.S_ISREG(key[0]):
                total += key[2]

    changed: set[str] = set()
    read = 0
    recent: list[str] = []
    for rel in sorted(look):  # a parent sorts before its children: its new entry is known first
        full = os.path.join(root, rel)
        now = _lstat_below_dirs(full, rel, entries)
        old_entry = previous.entries.get(rel)
        if now is None:
            entries.pop(rel, None)
            set_key(rel, None)
            if old_entry is not None:
                changed.add(rel)
            continue
        mode = now.st_mode
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            key = stat_key(now)
            if now.st_ctime_ns >= clock[0] - _RACY_NS:
                recent.append(rel)
            if previous.keys.get(rel) == key and old_entry is not None:
                entry = old_entry
            else:
                read += 1
                entry = f"link:{os.readlink(full)}" if stat.S_ISLNK(mode) else _file_entry(full, mode)
            set_key(rel, key)
        else:
            set_key(rel, None)
            entry = f"dir:{stat.S_IMODE(mode):o}" if stat.S_ISDIR(mode) else f"special:{stat.S_IFMT(mode)}"
        entries[rel] = entry
        if old_entry != entry:
            changed.add(rel)
    # A directory that is gone, or no longer a directory, takes its whole previous subtree along.
    for rel in sorted(changed):
        was_dir = (previous.entries.get(rel) or "").startswith("dir:")
        if was_dir and not entries.get(rel, "").startswith("dir:"):
            prefix = rel + "/"
            for path in [p for p in entries if p.startswith(prefix)]:
                del entries[path]
                set_key(path, None)
                changed.add(path)
    if len(entries) > MAX_SNAPSHOT_ENTRIES:
        raise WorkspaceLimitError(f"workspace has over {MAX_SNAPSHOT_ENTRIES} entries")
    # The full walk's rule (``bounded_walk``): a directory whose entries sit past the depth cap.
    if any(rel.count("/") >= MAX_SNAPSHOT_DEPTH and entries.get(rel, "").startswith("dir:") for rel in look):
        raise WorkspaceLimitError(f"workspace has nested deeper than {MAX_SNAPSHOT_DEPTH} levels")
    if total > MAX_SNAPSHOT_BYTES:
        raise WorkspaceLimitError(f"workspace exceeds {MAX_SNAPSHOT_BYTES} bytes; refusing to snapshot")
    racy_from = time.time_ns() - _RACY_NS
    for rel in recent:
        if keys[rel][4] >= racy_from:
            keys[rel] = (*keys[rel][:4], _NEVER)
    state = WorkspaceState(entries, keys, total, previous.allocated_bytes, clock, read)
    return Scan(state, frozenset(changed)), frozenset(look)


def _lstat_below_dirs(full: str, rel: str, entries: Mapping[str, str]) -> os.stat_result | None:
    """``lstat`` of ``full`` when every parent of ``rel`` is a directory in ``entries`` (the state
    being built), else None: ``lstat`` follows the parents, so a parent the agent turned into a
    symlink must never be walked through."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        if not entries.get("/".join(parts[:depth]), "").startswith("dir:"):
            return None
    try:
        return os.lstat(full)
    except FileNotFoundError:
        return None


def walk_tree_below(root: Path, rel: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """``walk_tree`` of the subtree at ``rel`` under ``root``, paths relative to ``root``."""
    try:
        for sub, full, st in bounded_walk(
            Path(root, rel), max_entries=MAX_SNAPSHOT_ENTRIES, max_depth=MAX_SNAPSHOT_DEPTH
        ):
            yield f"{rel}/{sub}", full, st
    except TreeLimitError as exc:
        raise WorkspaceLimitError(f"workspace has {exc}") from None


def workspace_snapshot(root: Path) -> dict[str, str]:
    """Map every path under ``root`` (except ``.git``) to a digest of its kind, mode and bytes (every
    file read). Symlinks are recorded by target and never followed, so a planted link to a host
    file cannot make the harness read it."""
    return dict(scan_workspace(root).state.entries)


def _file_entry(path: str, mode: int) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return f"file:{stat.S_IMODE(mode):o}:{digest.hexdigest()}"


def changed_paths(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    keys = set(before) | set(after)
    return tuple(sorted(k for k in keys if before.get(k) != after.get(k)))


def touches_skills(paths: Iterable[str]) -> bool:
    """Whether any of ``paths`` is the seeded skill tree or inside it (its fingerprint moved iff so)."""
    return any(p == SKILLS_DIR or p.startswith(SKILLS_DIR + "/") for p in paths)


def skill_fingerprint(snapshot: Mapping[str, str]) -> str | None:
    """Digest of the evaluated skill tree within a snapshot; None when no skills are seeded."""
    items = sorted((k, v) for k, v in snapshot.items() if k == SKILLS_DIR or k.startswith(SKILLS_DIR + "/"))
    if not items:
        return None
    digest = hashlib.sha256()
    for key, value in items:
        digest.update(f"{len(key)}:{key}{len(value)}:{value}".encode())
    return digest.hexdigest()
