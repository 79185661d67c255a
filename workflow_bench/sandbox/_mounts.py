"""Unmounting a cell's mounts so that a busy target never fails a resolved cell.

Owns ``unmount`` (every cell unmount: the volume, a stale one left by a killed runner): retried
while the kernel still holds the target, then detached lazily; only a mount that cannot even be
detached is a failure.

Why (issue 26): right after a cell's last process exits the kernel may still hold a reference to
the mount (a sandbox's mount namespace is released asynchronously, a loop device is still being
flushed), and a single ``umount`` turned a resolved cell into ``cleanup-failure``, charged to its
arm. Nothing of the cell runs by then (its cgroups were emptied), so a busy target is the
kernel's, never the agent's: ``unmount`` retries with backoff for ``BUSY_RETRY_S``, then detaches
(``MNT_DETACH``: gone from the namespace at once, freed when the last reference goes) and says
so. Direct ``umount2`` calls: no ``umount`` subprocess per cell.

Needs CAP_SYS_ADMIN (the volumes exist only for a root runner).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path

MNT_DETACH = 0x2
BUSY_RETRY_S = 5.0
_FIRST_BACKOFF_S = 0.01


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True, slots=True)
class Unmounted:
    """How an unmount ended: ``problem`` None means the target is no longer mounted."""

    problem: str | None = None
    note: str | None = None
    """Set when the target stayed busy and was detached lazily (a harness note, never a failure)."""


def unmount(target: Path, *, what: str, retry_s: float = BUSY_RETRY_S) -> Unmounted:
    """Unmount ``target``: retried with backoff while busy for ``retry_s``, then detached lazily.

    Never raises; a target that is not mounted is already unmounted.
    """
    path = os.fsencode(target)
    deadline = time.monotonic() + retry_s
    backoff = _FIRST_BACKOFF_S
    while True:
        if _libc().umount2(path, 0) == 0:
            return Unmounted()
        code = ctypes.get_errno()
        if code == errno.EINVAL and not os.path.ismount(target):
            return Unmounted()  # not (or no longer) mounted: nothing to do
        if code != errno.EBUSY:
            return Unmounted(problem=f"unmount {what} ({target}): {os.strerror(code)}")
        if time.monotonic() >= deadline:
            break
        time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
        backoff = min(backoff * 2, 0.5)
    if _libc().umount2(path, MNT_DETACH) == 0:
        return Unmounted(note=f"{what} ({target}) was still busy after {retry_s:g} s: detached lazily")
    code = ctypes.get_errno()
    return Unmounted(problem=f"unmount {what} ({target}): busy for {retry_s:g} s, then: {os.strerror(code)}")
