"""Staging a captured oracle after the model exited, and proving afterwards that nobody touched it.

Owns ``stage_oracle`` (the snapshot's bytes written 0444 into an empty directory, every path
opened beneath it without following symlinks; directories sticky and world-writable, so the one
run that mounts this copy may write beside the oracle files, as vite and pytest do; as root every
staged entry then belongs to ``STAGED_OWNER_UID``, which the sandbox does not map, so the run
cannot modify, replace or remove them) and ``verify_staged`` (every oracle file's bytes and mode
and every oracle directory re-checked after the run; files the run added are by-products and
allowed; ``OracleTamperError`` names the first difference). As non-root the staged entries
belong to the sandbox's own mapped uid: a change is still caught afterwards, a change undone
before the run ends is not (README, known limits).
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
    STAGED_OWNER_UID,
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
    dest_dir.mkdir(parents=True, exist_ok=True)
    for oracle_file in snapshot.files:
        *dirs, name = oracle_file.target.split("/")
        fd = os.open(dest_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for part in dirs:
                # FileExistsError: a parent shared with an earlier target, opened with O_NOFOLLOW below.
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode=0o700, dir_fd=fd)
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
    _hand_over(dest_dir)


def _hand_over(dest_dir: Path) -> None:
    """Directories sticky and world-writable; as root, every entry to ``STAGED_OWNER_UID``.

    Runs after every byte is written (only then may the run's uid create anything in them).
    The sticky bit lets a non-owner remove only the files it created itself.
    """
    as_root = os.geteuid() == 0
    entries = [
        (rel, entry.path, entry.is_dir(follow_symlinks=False)) for rel, entry in _walk_staged(dest_dir)
    ]
    for _, path, is_dir in [("", str(dest_dir), True), *entries]:
        if as_root:
            os.chown(path, STAGED_OWNER_UID, STAGED_OWNER_UID, follow_symlinks=False)
        if is_dir:
            os.chmod(path, _STAGED_DIR_MODE, follow_symlinks=False)


def _walk_staged(root: Path, *, descend: set[str] | None = None) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``root`` (only into the directories in ``descend``, if given)."""
    stack = [("", root)]
    while stack:
        prefix, directory = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = f"{prefix}{entry.name}"
                yield rel, entry
                if entry.is_dir(follow_symlinks=False) and (descend is None or rel in descend):
                    stack.append((f"{rel}/", Path(entry.path)))


def verify_staged(snapshot: OracleSnapshot, dest_dir: Path) -> None:
    """Prove every oracle file under ``dest_dir`` is still byte-for-byte the snapshot.

    Raises ``OracleTamperError`` naming the first oracle path that was changed, removed,
    re-typed or re-moded, or an oracle directory that is gone; never includes file contents.
    Entries the run added (framework by-products) are allowed and never followed.
    """
    if dest_dir.is_symlink() or not dest_dir.is_dir():
        raise OracleTamperError(f"staged oracle directory {dest_dir} is gone or no longer a directory")
    expected = {f.target: f for f in snapshot.files}
    expected_dirs = {str(p) for f in snapshot.files for p in PurePosixPath(f.target).parents if str(p) != "."}
    seen_files: set[str] = set()
    for rel, entry in _walk_staged(dest_dir, descend=expected_dirs):
        mode = entry.stat(follow_symlinks=False).st_mode
        if rel in expected_dirs:
            if not stat.S_ISDIR(mode):
                raise OracleTamperError(f"staged oracle directory {rel!r} was replaced")
            continue
        if rel not in expected:
            continue  # a by-product of the run (vite's bundled config, a cache): never followed
        if not stat.S_ISREG(mode):
            raise OracleTamperError(f"staged oracle file {rel!r} was replaced by a non-file")
        if stat.S_IMODE(mode) != _STAGED_FILE_MODE:
            raise OracleTamperError(f"staged oracle file {rel!r} changed mode to {stat.S_IMODE(mode):o}")
        try:
            # The staged copy may carry the harness's sentinel tests beyond the captured cap.
            data = read_beneath(dest_dir, rel, max_bytes=max(MAX_ORACLE_FILE_BYTES, expected[rel].size))
        except ValueError as err:
            raise OracleTamperError(f"staged oracle file {rel!r} cannot be re-read: {err}") from None
        if data != expected[rel].data:
            raise OracleTamperError(f"staged oracle file {rel!r} was modified")
        seen_files.add(rel)
    missing = sorted(set(expected) - seen_files)
    if missing:
        raise OracleTamperError(f"staged oracle file {missing[0]!r} was removed")
