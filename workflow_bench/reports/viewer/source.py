"""Reading a sweep directory's files for the viewer: relative paths only, never through a link.

The paths come from rows (``transcript_artifacts``, ``wire_artifacts``, ``patch_artifact``), and a
results.jsonl can be edited by anyone who can write the directory, so a path is only followed
when it is a plain relative path (``[A-Za-z0-9._+-]`` components, none starting with a dot, no
``..``) and every component is opened with ``O_NOFOLLOW`` relative to its parent: a symlink
anywhere, a FIFO, a device or a directory is refused without reading. A read stops at its
limit; ``FileRead.size`` tells how big the file really is. Used by the viewer renderer and by
the read-only server (``workflow_bench.view``).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

_COMPONENT = re.compile(r"[A-Za-z0-9_+\-][A-Za-z0-9._+\-]{0,254}")


@dataclass(frozen=True, slots=True)
class FileRead:
    """The first bytes of a file (at most the limit asked for) and its full size."""

    data: bytes
    size: int

    @property
    def truncated(self) -> bool:
        return self.size > len(self.data)


def safe_relative(path: str) -> tuple[str, ...] | None:
    """The components of a plain relative path, or None when it is not one (see the module doc)."""
    parts = tuple(path.split("/"))
    if not path or len(path) > 1024 or not all(_COMPONENT.fullmatch(p) for p in parts):
        return None
    return parts


class SweepFiles(Protocol):
    def read(self, relative: str, *, limit: int) -> FileRead | None:
        """The file's first ``limit`` bytes, or None when it is absent or refused."""
        ...


class DirectoryFiles:
    """A sweep directory on this machine's file system (local or a mounted share), read only."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def open(self, relative: str) -> tuple[BinaryIO, int] | None:
        """The regular file at ``relative`` opened for reading, and its size; None when refused."""
        parts = safe_relative(relative)
        if parts is None:
            return None
        fds: list[int] = []
        try:
            fds.append(os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            for part in parts[:-1]:
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                fds.append(os.open(part, flags, dir_fd=fds[-1]))
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            fds.append(os.open(parts[-1], flags, dir_fd=fds[-1]))
            info = os.fstat(fds[-1])
            if not stat.S_ISREG(info.st_mode):
                return None
            handle = os.fdopen(fds.pop(), "rb")
            return handle, info.st_size
        except OSError:
            return None  # absent, a link (ELOOP), not a directory, unreadable: nothing to show
        finally:
            for fd in reversed(fds):
                os.close(fd)

    def read(self, relative: str, *, limit: int) -> FileRead | None:
        opened = self.open(relative)
        if opened is None:
            return None
        handle, size = opened
        with handle:
            try:
                data = handle.read(limit)
            except OSError:
                return None
        return FileRead(data, max(size, len(data)))
