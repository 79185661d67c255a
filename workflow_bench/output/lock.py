"""One sweep per output directory: ``claim_output_dir`` creates ``--out`` and holds an exclusive lock.

Two runners started on the same empty ``--out`` used to both pass the "must be new or empty"
check and interleave rows from two sweeps (with different models) in one ``results.jsonl``.
Now the directory is claimed with ``flock(LOCK_EX | LOCK_NB)`` on ``--out/.wfbench.lock``
before the emptiness check, and the lock is held for the sweep's whole life; the kernel
releases it on any exit, SIGKILL included. The holder writes its pid, host and start time
into the lock file, so a second runner exits 2 naming it.

A lock file alone (a runner killed before writing anything) does not make the directory
"non-empty": the next runner takes it over. ``release(remove_if_unused=True)`` removes the
directory again when nothing but the lock file was written (cancelled before the sweep began).

Must never: create anything when the claim fails, or follow a symlink for the lock file.
Callers: ``runner``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .directory import OutputDirError

LOCK_FILE = ".wfbench.lock"
MAX_HOLDER_BYTES = 4096  # the holder record is one short JSON line


@dataclass(slots=True)
class OutputClaim:
    """A claimed output directory; ``release`` (or process exit) frees it."""

    root: Path
    created_dir: bool
    created_lock: bool
    _fd: int | None
    resumed: bool = False
    """Claimed to continue an existing sweep (``--resume``): its lock file, if new, goes on release."""

    def release(self, *, remove_if_unused: bool = False) -> None:
        """Unlock; ``remove_if_unused``: also remove what the claim created, if nothing else was written."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self.resumed and self.created_lock:
                os.unlink(self.root / LOCK_FILE)  # a refused resume leaves the directory as it was
            elif remove_if_unused and self.created_lock and _only_lock_file(self.root):
                os.unlink(self.root / LOCK_FILE)
                if self.created_dir:
                    os.rmdir(self.root)
        finally:
            os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> OutputClaim:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def _only_lock_file(root: Path) -> bool:
    try:
        return [entry.name for entry in os.scandir(root)] == [LOCK_FILE]
    except OSError:
        return False


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, MAX_HOLDER_BYTES, 0).decode("utf-8", errors="replace").strip()
        record = json.loads(text) if text else {}
    except (OSError, ValueError):
        record = {}
    if not isinstance(record, dict) or "pid" not in record:
        return "another runner (it has not recorded itself yet)"
    return (
        f"runner pid {record.get('pid')} on {record.get('host', '?')}, "
        f"started {record.get('started_at', '?')}"
    )


def _others(path: Path) -> list[str]:
    return sorted(entry.name for entry in os.scandir(path) if entry.name != LOCK_FILE)


def _not_empty(path: Path, others: list[str]) -> OutputDirError:
    shown = ", ".join(others[:3]) + ("…" if len(others) > 3 else "")
    return OutputDirError(
        f"--out {path} already exists and is not an empty directory (holds {shown}); choose a new one"
    )


def _refuse_if_held(path: Path) -> None:
    """``OutputDirError`` naming the holder if a live sweep holds ``path``'s lock; creates nothing."""
    try:
        fd = os.open(path / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # no lock file: not a sweep's directory, or not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise OutputDirError(f"--out {path} is in use by {_holder(fd)}; choose another --out") from None
    except OSError:
        return
    finally:
        os.close(fd)


def _open_lock(path: Path) -> tuple[int, bool]:
    """(descriptor of the lock file, whether this call created it)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path / LOCK_FILE, flags | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        return os.open(path / LOCK_FILE, flags), False


def claim_output_dir(path: Path, *, resume: bool = False) -> OutputClaim:
    """Create (if needed) and lock ``path``; ``OutputDirError`` if it is in use, not empty or unusable.

    ``resume``: ``path`` must be an existing sweep directory and may hold rows (``--resume``); it is
    locked the same way, so a resumed sweep and a second runner never share it.
    On refusal nothing is left behind: a directory or lock file this call created is removed.
    """
    created = False
    try:
        if resume and (path.is_symlink() or not path.is_dir()):
            raise OutputDirError(f"--resume {path} is not an existing sweep directory")
        if resume:
            _refuse_if_held(path)
        elif not path.exists():
            path.mkdir(parents=True)
            created = True
        elif path.is_symlink() or not path.is_dir():
            raise OutputDirError(f"--out {path} already exists and is not a directory; choose a new one")
        elif others := _others(path):
            _refuse_if_held(path)  # name the running sweep, if any, rather than just "not empty"
            raise _not_empty(path, others)
        fd, lock_created = _open_lock(path)
    except OSError as err:
        if created:
            _remove_quietly(path)
        raise OutputDirError(
            f"--out {path}: cannot create the output directory: {err.strerror or err}"
        ) from None
    claim = OutputClaim(root=path, created_dir=created, created_lock=lock_created, _fd=fd, resumed=resume)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        claim.release()  # not ours to remove: the holder created it
        raise OutputDirError(f"--out {path} is in use by {holder}; choose another --out") from None
    except OSError as err:
        claim.release(remove_if_unused=True)
        raise OutputDirError(f"--out {path}: cannot lock {LOCK_FILE}: {err.strerror or err}") from None
    if not resume and (others := _others(path)):  # written between our check and our lock: another sweep's
        claim.release(remove_if_unused=True)
        raise _not_empty(path, others)
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
    except OSError as err:
        claim.release(remove_if_unused=True)
        raise OutputDirError(f"--out {path}: cannot write {LOCK_FILE}: {err.strerror or err}") from None
    return claim


def _remove_quietly(path: Path) -> None:
    # Best effort: the directory was ours and empty, unless someone else uses it by now.
    with contextlib.suppress(OSError):
        os.rmdir(path)
