"""Removing a tree the harness owns, whatever was done to it: in-process, iterative, bounded descriptors.

Owns ``remove_tree``: clones, cell directories, judge scratch and work roots. The tree may hold
anything an agent (or the code under test) could make: dropped write or search bits, a
3,000-deep directory chain (canary ``exclude-deep-tree``; ``shutil.rmtree`` recursed and raised
RecursionError on it), paths longer than ``PATH_MAX``, symlinks anywhere.

How: the top directory is opened once; each directory directly under it is emptied through a
descriptor, its files and links unlinked and its subdirectories *renamed up* to a fresh name
directly under the top, which queues them. So no path is ever longer than two components below
the top, no recursion is needed, and at most two directories are open at once. A directory the
owner cannot write or search gets its owner bits back first (a non-root runner: the agent's
files are its own). Replaced the ``rm -rf`` / ``chmod -R`` subprocesses (issue 26: eight per
cell, 50 ms each with the old exit poll).

Must never: follow a symlink, or descend into another filesystem (a mount point below the top
is left alone and reported, as ``rm --one-file-system`` did).
"""

from __future__ import annotations

import collections
import os
import secrets
import stat
from pathlib import Path

_OWNER_BITS = stat.S_IRWXU


def remove_tree(path: Path) -> None:
    """Delete ``path`` (a directory tree, a file or a symlink); nothing happens if it is absent.

    Raises:
        OSError: something could not be removed (e.g. a mount point inside it); what could be
            removed is gone.
    """
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(top.st_mode):
        os.unlink(path)
        return
    _restore_owner_bits(path, top.st_mode)
    root_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _empty(root_fd, os.fstat(root_fd).st_dev, path)
    finally:
        os.close(root_fd)
    os.rmdir(path)


def _empty(root_fd: int, device: int, path: Path) -> None:
    """Empty the directory open on ``root_fd``: every entry, at any depth, in bounded descriptors."""
    queue: collections.deque[str | None] = collections.deque([None])  # None: the top itself
    emptied: list[str] = []
    problems: list[str] = []
    while queue:
        name = queue.popleft()
        fd = root_fd if name is None else _open_dir(root_fd, name)
        try:
            with os.scandir(fd) as entries:
                children = [(entry.name, entry.stat(follow_symlinks=False)) for entry in entries]
            for child, st in children:
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(child, dir_fd=fd)
                elif st.st_dev != device:
                    problems.append(f"{child!r} in {path} is a mount point; not removed")
                elif name is None:
                    queue.append(child)
                else:
                    queue.append(_move_up(fd, child, root_fd, st.st_mode))
        finally:
            if fd != root_fd:
                os.close(fd)
        if name is not None:
            emptied.append(name)
    for name in emptied:
        try:
            os.rmdir(name, dir_fd=root_fd)
        except OSError as exc:  # a mount point left inside it keeps it from being removed
            problems.append(f"{name!r} in {path}: {exc.strerror}")
    if problems:
        raise OSError(f"could not remove {path}: {'; '.join(problems[:5])}")


def _open_dir(parent_fd: int, name: str) -> int:
    """``name`` under ``parent_fd`` opened as a directory (never through a link), owner bits restored."""
    st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{name!r} stopped being a directory while it was removed")
    if st.st_mode & _OWNER_BITS != _OWNER_BITS and st.st_uid == os.geteuid() and os.geteuid() != 0:
        os.chmod(name, stat.S_IMODE(st.st_mode) | _OWNER_BITS, dir_fd=parent_fd)
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)


def _move_up(parent_fd: int, name: str, root_fd: int, mode: int) -> str:
    """Rename directory ``name`` (under ``parent_fd``) to a fresh name directly under the top."""
    fresh = f".wfb-rm-{secrets.token_hex(8)}"
    try:
        os.rename(name, fresh, src_dir_fd=parent_fd, dst_dir_fd=root_fd)
    except PermissionError:
        # Moving a directory rewrites its "..": a non-root owner needs write permission on it.
        os.chmod(name, stat.S_IMODE(mode) | _OWNER_BITS, dir_fd=parent_fd)
        os.rename(name, fresh, src_dir_fd=parent_fd, dst_dir_fd=root_fd)
    return fresh


def _restore_owner_bits(path: Path, mode: int) -> None:
    if mode & _OWNER_BITS != _OWNER_BITS and os.geteuid() != 0 and os.lstat(path).st_uid == os.geteuid():
        os.chmod(path, stat.S_IMODE(mode) | _OWNER_BITS)
