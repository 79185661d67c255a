"""Staging a captured oracle after the model exited, and proving afterwards that nobody touched it.

Owns ``stage_oracle`` (the snapshot's bytes written 0400 into an empty directory, every path
opened beneath it without following symlinks) and ``verify_staged`` (every staged byte, mode and
path re-checked after the oracle ran; ``OracleTamperError`` names the first difference).
Must never: put oracle bytes into an error message. Callers: ``judging.judge``, tests.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

# Package-internal helpers of the capture side: staging opens paths exactly the way capture does.
from .oracles import (
    _STAGED_DIR_MODE,
    _STAGED_FILE_MODE,
    MAX_ORACLE_FILE_BYTES,
    OracleSnapshot,
    OracleStageError,
    OracleTamperError,
    _descend,
    read_beneath,
)


def stage_oracle(snapshot: OracleSnapshot, dest_dir: Path) -> None:
    """Write the snapshot under ``dest_dir`` (files 0400, directories created as needed).

    ``dest_dir`` may exist only as an empty directory: staging into a populated or symlinked
    destination could mix candidate-controlled files into the oracle. Raises ``OracleStageError``.
    """
    if dest_dir.is_symlink() or (dest_dir.exists() and not dest_dir.is_dir()):
        raise OracleStageError(f"oracle staging destination {dest_dir} is not a directory")
    if dest_dir.exists() and any(dest_dir.iterdir()):
        raise OracleStageError(f"oracle staging destination {dest_dir} is not empty")
    dest_dir.mkdir(mode=_STAGED_DIR_MODE, parents=True, exist_ok=True)
    for oracle_file in snapshot.files:
        *dirs, name = oracle_file.target.split("/")
        fd = os.open(dest_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for part in dirs:
                # FileExistsError: a parent shared with an earlier target, opened with O_NOFOLLOW below.
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode=_STAGED_DIR_MODE, dir_fd=fd)
                fd = _descend(fd, part, part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            out = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd
            )
            try:
                view = memoryview(oracle_file.data)
                while view:
                    view = view[os.write(out, view) :]
                # fchmod, not the open() mode: the process umask must not decide the final mode.
                os.fchmod(out, _STAGED_FILE_MODE)
            finally:
                os.close(out)
        finally:
            os.close(fd)


def _walk_staged(root: Path) -> Iterator[tuple[str, os.DirEntry[str]]]:
    stack = [("", root)]
    while stack:
        prefix, directory = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = f"{prefix}{entry.name}"
                yield rel, entry
                if entry.is_dir(follow_symlinks=False):
                    stack.append((f"{rel}/", Path(entry.path)))


def verify_staged(snapshot: OracleSnapshot, dest_dir: Path) -> None:
    """Prove the staged oracle under ``dest_dir`` is still byte-for-byte the snapshot.

    Raises ``OracleTamperError`` naming the first path that was changed, added, removed,
    re-typed or re-moded; never includes file contents.
    """
    if dest_dir.is_symlink() or not dest_dir.is_dir():
        raise OracleTamperError(f"staged oracle directory {dest_dir} is gone or no longer a directory")
    expected = {f.target: f for f in snapshot.files}
    expected_dirs = {str(p) for f in snapshot.files for p in PurePosixPath(f.target).parents if str(p) != "."}
    seen_files: set[str] = set()
    for rel, entry in _walk_staged(dest_dir):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode) and rel in expected_dirs:
            continue
        if not stat.S_ISREG(mode) or rel not in expected:
            raise OracleTamperError(f"staged oracle has an unexpected entry {rel!r}")
        if stat.S_IMODE(mode) != _STAGED_FILE_MODE:
            raise OracleTamperError(f"staged oracle file {rel!r} changed mode to {stat.S_IMODE(mode):o}")
        try:
            data = read_beneath(dest_dir, rel, max_bytes=MAX_ORACLE_FILE_BYTES)
        except ValueError as err:
            raise OracleTamperError(f"staged oracle file {rel!r} cannot be re-read: {err}") from None
        if data != expected[rel].data:
            raise OracleTamperError(f"staged oracle file {rel!r} was modified")
        seen_files.add(rel)
    missing = sorted(set(expected) - seen_files)
    if missing:
        raise OracleTamperError(f"staged oracle file {missing[0]!r} was removed")
