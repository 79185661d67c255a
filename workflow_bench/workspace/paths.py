"""Where a sweep's cells live on the host: short, fixed-length paths, owned by a live runner.

Owns the sweep's work root (``$TMPDIR/wfb-<runner pid>-<8 random>``), each cell's directory
under it (8 random hex characters, whatever the task id or arm), the relay socket path inside
a cell, ``check_paths_fit`` (the preflight; its rule, ``check_sockets_fit``, also bounds a local Ray
instance's sockets: ``schedule.ray_local``), ``collect_stale_work_roots``, and the rule both follow
for any directory a process owns by name (``make_owned_dir``, ``stale_owned_dirs``: also the
staging directories ``tasks new`` and ``tasks import`` make beside a task file).

Why fixed length: the relay's Unix socket lives in the cell directory, and AF_UNIX paths are
limited to 107 bytes (``sun_path`` is 108 including the NUL). Cell directories used to be named
``<task>-<arm>-run<N>-<hex>``; a 50-character task id under ``candidate_workflow_direct`` pushed
the socket past the limit and every such cell became an ``infra-error``. Now only ``$TMPDIR``
varies, so one check before any clone proves every cell fits.

Why the pid in the name: a runner killed by SIGKILL cannot remove its work root; the next run
(or ``./dev clean``) removes roots whose owner pid no longer exists: first unmounting the cell
volumes still mounted under them (and so their loop devices), and removing the cell cgroups
that carry the dead pid in their name, then the tree. A live pid is never
touched, so parallel runners on one machine are safe. Pid reuse can only make us keep a stale
root longer, never remove a live one.

Must never: remove a root whose owner is alive, or a path that does not match the pattern.
Callers: ``sweep`` (work root), ``cell`` (cell dirs), ``runner`` (preflight), ``schedule.ray_local``,
``tasks.draft`` (staging directories), ``./dev clean``.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from workflow_bench.argtypes import prog
from workflow_bench.sandbox import collect_stale_cgroups, release_stale_mounts

from .remove import remove_tree

WORK_ROOT_PREFIX = "wfb-"


def owned_dir_pattern(prefix: str) -> re.Pattern[str]:
    """``<prefix><owner pid>-<mkdtemp suffix>``: pid ≤ 7 digits (pid_max ≤ 4194304 on Linux),
    mkdtemp's suffix is 8 characters."""
    return re.compile(re.escape(prefix) + r"([1-9][0-9]{0,6})-[A-Za-z0-9_]{8}")


WORK_ROOT_PATTERN = owned_dir_pattern(WORK_ROOT_PREFIX)
WORK_ROOT_NAME_MAX = len("wfb-") + 7 + 1 + 8
CELL_DIR_HEX_BYTES = 4  # 8 hex characters: random per cell, collisions retried by mkdir
RELAY_DIR = "r"
VIEW_SUFFIX = ".view"  # a cell's patch view: beside its directory, outside its volume and quota
# Keep in sync with the basename of sandbox MODEL_SOCKET (the relay dir is mounted there;
# tests/unit/test_no_drift.py checks).
SOCKET_NAME = "api.sock"
# sun_path is 108 bytes on Linux, one of them the terminating NUL.
AF_UNIX_PATH_MAX = 107


class CellPathError(ValueError):
    """The temporary directory is too long for even the short cell paths: exit 2, nothing cloned."""


def longest_socket_path(tmpdir: str | Path) -> str:
    """The longest relay socket path any cell of a sweep rooted in ``tmpdir`` can have."""
    root = Path(os.path.abspath(tmpdir)) / ("w" * WORK_ROOT_NAME_MAX)
    return str(root / ("c" * 2 * CELL_DIR_HEX_BYTES) / RELAY_DIR / SOCKET_NAME)


def check_sockets_fit(
    tmpdir: str | Path | None,
    longest: Callable[[str], str],
    error: type[ValueError],
    *,
    what: str,
    otherwise: str = "",
) -> None:
    """Raise ``error``, naming how long TMPDIR may be, unless the socket path ``longest(tmpdir)`` fits.

    One rule for every socket a sweep binds below TMPDIR: the cells' (below) and a local Ray
    instance's (``schedule.ray_local``).
    """
    base = tempfile.gettempdir() if tmpdir is None else str(tmpdir)
    size = len(os.fsencode(longest(base)))
    if size > AF_UNIX_PATH_MAX:
        room = AF_UNIX_PATH_MAX - (size - len(os.fsencode(os.path.abspath(base))))
        raise error(
            f"temporary directory {base!r} is too long for {what}: the longest socket path would be "
            f"{size} bytes, the AF_UNIX limit is {AF_UNIX_PATH_MAX}; set TMPDIR to a directory of at "
            f"most {room} bytes (e.g. /tmp){otherwise}"
        )


def check_paths_fit(tmpdir: str | Path | None = None) -> None:
    """Raise ``CellPathError`` unless every cell's socket path fits under ``tmpdir``."""
    check_sockets_fit(tmpdir, longest_socket_path, CellPathError, what="the cells' model sockets")


def make_owned_dir(prefix: str, parent: str | Path | None = None) -> Path:
    """A fresh private directory (mode 0700) in ``parent`` named for this process
    (``owned_dir_pattern(prefix)``), so a later run can tell when its owner is gone."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


def make_work_root(tmpdir: str | Path | None = None) -> Path:
    """Create this runner's private work root (mode 0700), named with its pid."""
    return make_owned_dir(WORK_ROOT_PREFIX, tmpdir)


def make_cell_dir(work_root: Path) -> Path:
    """Create a fresh, fixed-length cell directory under ``work_root``."""
    while True:
        path = work_root / secrets.token_hex(CELL_DIR_HEX_BYTES)
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


def new_cell_dir_path(work_root: Path) -> Path:
    """A fresh, fixed-length cell directory path under ``work_root``, not yet created.

    For callers that create the directory themselves (the cell's resource volume mounts on it).
    Only this runner writes its work root, and 32 random bits make a collision negligible; the
    creator's ``mkdir`` still fails loudly if one ever happens.
    """
    while True:
        path = work_root / secrets.token_hex(CELL_DIR_HEX_BYTES)
        if not any(p.exists() for p in (path, path.with_name(path.name + ".volume"), view_dir(path))):
            return path


def view_dir(cell_dir: Path) -> Path:
    """Where a cell's patch view lives: beside the cell directory, so never on the cell's volume
    (harness work is not charged to ``--cell-disk-mib``), and removed with the work root if the
    runner dies."""
    return cell_dir.with_name(cell_dir.name + VIEW_SUFFIX)


def relay_socket(cell_dir: Path) -> tuple[Path, Path]:
    """(the relay directory mounted into the sandbox, the socket path inside it) for one cell."""
    relay_dir = cell_dir / RELAY_DIR
    return relay_dir, relay_dir / SOCKET_NAME


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def stale_owned_dirs(parent: str | Path, prefix: str) -> list[Path]:
    """Directories in ``parent`` made by ``make_owned_dir(prefix)`` whose owner pid is gone (never
    our own, never a live one's; a symlink or a name off the pattern is never listed)."""
    pattern = owned_dir_pattern(prefix)
    base = Path(parent)
    stale = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not _pid_alive(pid):
            stale.append(base / entry.name)
    return sorted(stale)


def stale_work_roots(tmpdir: str | Path | None = None) -> list[Path]:
    """Work roots in ``tmpdir`` whose owner pid is gone (never our own, never a live one)."""
    return stale_owned_dirs(tempfile.gettempdir() if tmpdir is None else tmpdir, WORK_ROOT_PREFIX)


def collect_stale_work_roots(tmpdir: str | Path | None = None) -> tuple[list[Path], list[str]]:
    """Remove every stale work root; (removed paths, one message per root that could not be removed).

    Also removes the cell cgroups of dead runners. A root whose volumes will not unmount is
    left whole (deleting through a mount would not free it) and reported.
    """
    failed = list(collect_stale_cgroups(_pid_alive))
    base = tempfile.gettempdir() if tmpdir is None else tmpdir
    removed, unremoved = collect_stale_owned_dirs(base, WORK_ROOT_PREFIX, release=release_stale_mounts)
    return removed, failed + unremoved


def collect_stale_owned_dirs(
    parent: str | Path, prefix: str, *, release: Callable[[Path], str | None] | None = None
) -> tuple[list[Path], list[str]]:
    """Remove ``stale_owned_dirs(parent, prefix)``; (removed paths, one message per directory that
    could not be removed). ``release`` first frees what a directory holds (its mounts), returning
    why it could not (the directory is then left whole)."""
    removed, failed = [], []
    for path in stale_owned_dirs(parent, prefix):
        problem = release(path) if release is not None else None
        if problem is not None:
            failed.append(f"{path}: {problem}")
            continue
        try:
            remove_tree(path)
        except OSError as exc:
            failed.append(f"{path}: {type(exc).__name__}: {exc}")
        else:
            removed.append(path)
    return removed, failed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m workflow_bench.workspace.paths``: what ``./dev clean`` runs."""
    argparse.ArgumentParser(
        prog=prog("workspace.paths"),
        description="Remove the cell directories (their mounts and cgroups first) that runners killed "
        "by SIGKILL left in $TMPDIR; live runners' directories are kept.",
    ).parse_args(argv)
    removed, failed = collect_stale_work_roots()
    for path in removed:
        print(f"removed stale cell directory {path}")
    for message in failed:
        print(f"could not remove {message}")
    if not removed and not failed:
        print(f"no stale cell directories in {tempfile.gettempdir()}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
