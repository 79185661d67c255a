"""A non-root runner's own mount namespace: where it mounts its cells' overlay clones (issue 33).

Owns ``enter_private_mounts`` and ``private_mounts_refusal``. A root runner mounts a cell's
overlay clone in the host's mount namespace (``_overlay``). A non-root one cannot, but the kernel
lets any user mount an overlay in a mount namespace its own user namespace owns (Linux 5.11+). So
a front door that runs cells (``workflow-bench run``, ``python -m workflow_bench.runner``, the
canary) calls ``enter_private_mounts`` first, while the process has one thread (``unshare`` of a
user namespace needs that): the process moves into a new user namespace that maps its own uid and
gid to themselves (``setgroups`` denied, as the kernel requires of an unprivileged map) and a new
mount namespace owned by it. Then:

- every later step of the harness — its threads, host git, the boundary scans, every bwrap it
  starts — sees the cells' overlays, with no ``nsenter`` and no path translation: they are all
  this process or its children;
- ``os.geteuid()`` is unchanged (the invoker's uid, not 0), so every non-root rule of the
  harness still holds; the process has capabilities only in its own namespace, over mounts of
  its own namespace, and loses them at every ``exec`` (a non-zero uid), so nothing it starts —
  git, bwrap, the CLI, the agent's tools — has any;
- the mounts never reach the host (a namespace made by a less privileged user receives host
  mounts as slaves and propagates nothing back) and they go with the runner: a killed runner
  leaves no stale mount behind;
- a file owned by a uid the map lacks (root's ``/usr``) reads as the overflow uid 65534; only
  ownership as displayed changes, never access.

The sequence is rehearsed in a forked child first, so a host that refuses halfway (no
unprivileged user namespaces, a seccomp profile, a sysctl) never leaves the runner in a namespace
without a map; the refusal is kept as the reason cells copy their template instead.

Callers: the front doors (``runner``, ``cli``, ``canary._main``), ``_overlay.clone_support``.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

_CLONE_NEWUSER, _CLONE_NEWNS = 0x10000000, 0x00020000
_NOT_ENTERED = "the runner did not enter a private mount namespace (cells were run in-process)"
_state: dict[str, str | None] = {}


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _threads() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _unshare_and_map() -> str | None:
    """Move this process into its own user and mount namespaces; the failure, or None."""
    uid, gid = os.geteuid(), os.getegid()
    if _libc().unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        return f"unshare(CLONE_NEWUSER|CLONE_NEWNS): {os.strerror(ctypes.get_errno())}"
    try:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1\n")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1\n")
    except OSError as exc:
        return f"the user namespace's id maps: {exc}"
    return None


def _rehearse() -> str | None:
    """The whole sequence in a forked child (which then exits): its failure, or None."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's outcome is read through the pipe
        try:
            os.close(read)
            problem = _unshare_and_map()
            os.write(write, (problem or "").encode()[:4000])
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        said = handle.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if said:
        return said
    return None if os.waitstatus_to_exitcode(status) == 0 else "the rehearsal child failed"


def enter_private_mounts() -> None:
    """Enter the runner's own user and mount namespaces (non-root only; once; before any thread).

    Never raises: where the host refuses, the reason is kept (``private_mounts_refusal``) and the
    cells copy their template. Root stays where it is (it mounts in the host's namespace).
    """
    if "refusal" in _state or os.geteuid() == 0:
        return
    if os.environ.get("WORKFLOW_BENCH_NO_PRIVATE_MOUNTS") == "1":
        _state["refusal"] = "WORKFLOW_BENCH_NO_PRIVATE_MOUNTS=1 (the negative control: copies)"
        return
    threads = _threads()
    if threads != 1:
        _state["refusal"] = f"the runner had {threads} threads when it tried (a user namespace needs one)"
        return
    _state["refusal"] = _rehearse() or _unshare_and_map()


def private_mounts_refusal() -> str | None:
    """None when this (non-root) process mounts in its own namespace; else why it does not."""
    if "refusal" not in _state:
        return _NOT_ENTERED
    return _state["refusal"]
