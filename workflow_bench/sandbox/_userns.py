"""One user namespace per cell: its own host uid (root runner) and its own per-user kernel budgets.

Every sandbox of a cell (setup, the CLI and its tools, verify, the oracle, git helpers) enters the
cell's user namespace (``bwrap --userns``) instead of a fresh one (``--unshare-user``). The
harness builds it once per cell, through a holder process that lives as long as the cell:

- **a uid that is not host root.** For a root runner the namespace maps the sandbox uid 1000 to
  a fresh unprivileged host uid (``CELL_UID_BASE`` + 30 random bits, per cell), and uid 0 of the
  namespace to host root, which bwrap's own setup needs (it reads the CLI binary and caches under
  root-only directories: bwrap 0.8's ``--ro-bind-fd`` resolves its fd back to the path, and a
  namespace without root could not read it; measured). bwrap runs the command as uid 0 with only
  CAP_SETUID/CAP_SETGID, and ``setpriv`` turns it into uid/gid 1000 — the cell's host ids — with
  no supplementary groups, which clears every capability (all uids leave 0; bwrap set
  no_new_privs, so nothing is regained on exec) before anything of the task or the agent runs. (bwrap's
  own ``--uid`` cannot do it: it calls setuid before setgid, and setgid then fails; measured.)
  Before this, every cell's processes were host root and drew on root's per-user budgets: one
  cell took 126 of root's 128 inotify instances while a host root process was refused.
  A non-root runner cannot map another uid: the namespace maps 1000 to the invoker, as before.
- **ucount budgets per cell.** A new user namespace starts with every ``/proc/sys/user/*`` limit
  at INT_MAX; the holder, which has every capability in the namespace it made, sets
  ``NAMESPACE_LIMITS``: inotify instances and watches for the whole cell (counted again, at the
  host level, against the cell's uid), no fanotify groups, and no user namespaces at all (what
  bwrap's ``--disable-userns`` did, which cannot be combined with ``--userns``). The sandboxed
  processes have no capability in the namespace, so they cannot raise them.

The holder blocks on its stdin; closing it (``close``) ends it, and so does the runner dying,
by SIGKILL too (``PR_SET_PDEATHSIG``; found by the kill -9 resume test: a holder still waiting
for its maps outlived a killed runner), and the namespace goes with the last sandbox still in it.
The death signal follows the thread that started the holder: the cell's own thread, which
outlives the cell's holder (``CellResources.close``) by construction. Fails closed: a namespace
that cannot be built is an error the cell records (``CellResources`` then runs the cell without
these bounds and the row's ``resource_limits`` says so), never a silent claim.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from workflow_bench.process import ManagedProcess, spawn_group

SANDBOX_UID = 1000  # keep in sync with _environment.SANDBOX_UID
# Cell uids: far above any account or subordinate-id range a distribution hands out (useradd
# stops at 60000, /etc/subuid ranges start at 100000 in 65536 steps), below the 32-bit (uid_t)
# invalid value; 30 random bits make two live cells sharing one negligible.
CELL_UID_BASE = 0x40000000
NAMESPACE_LIMITS: Mapping[str, int] = MappingProxyType(
    {
        "max_user_namespaces": 0,
        # A host user has 128 instances and 192,536 watches (this machine's defaults): a cell gets
        # a quarter of the instances and a third of the watches, so a host process and another
        # cell keep room even when cells share a host uid (a non-root runner).
        "max_inotify_instances": 32,
        "max_inotify_watches": 65_536,
        "max_fanotify_groups": 0,
        "max_fanotify_marks": 0,
    }
)
_READY = "wfb-userns-ok"
_READY_TIMEOUT_S = 10
# Runs as ``python3 -I -S -c``: unshare, wait for the maps, set the limits, say so, hold.
_HOLDER = f"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the harness (even by SIGKILL)
if os.getppid() != int(sys.argv[1]):
    sys.exit(5)  # the harness died before the line above
if libc.unshare(0x10000000) != 0:
    sys.exit(3)
deadline = time.monotonic() + {_READY_TIMEOUT_S}
while not open("/proc/self/uid_map").read().strip():
    if time.monotonic() > deadline:
        sys.exit(4)
    time.sleep(0.001)
for name, value in {dict(NAMESPACE_LIMITS)!r}.items():
    with open("/proc/sys/user/" + name, "w") as handle:
        handle.write(str(value))
libc.prctl(15, b"{_READY}", 0, 0, 0)
sys.stdin.buffer.read()
"""


class UserNamespaceError(RuntimeError):
    """The cell's user namespace could not be built."""


def _is_root() -> bool:
    return os.geteuid() == 0


class CellUserNamespace:
    """The holder of one cell's user namespace; ``open`` it, point bwrap at ``path``, ``close`` it."""

    def __init__(self) -> None:
        self.host_uid = CELL_UID_BASE + secrets.randbits(30) if _is_root() else os.geteuid()
        """The host uid of the cell's processes (uid 1000 inside)."""
        self.switches_uid = _is_root()
        """True: bwrap runs the command as uid 0 of the namespace and ``setpriv`` drops it to 1000."""
        self._holder: ManagedProcess | None = None

    @property
    def path(self) -> str:
        if self._holder is None:
            raise UserNamespaceError("the cell user namespace is not open")
        return f"/proc/{self._holder.pid}/ns/user"

    def open(self) -> None:
        """Start the holder, write its uid/gid maps, wait until it has set ``NAMESPACE_LIMITS``."""
        own = os.readlink("/proc/self/ns/user")
        try:
            argv = ["/usr/bin/python3", "-I", "-S", "-c", _HOLDER, str(os.getpid())]
            holder = spawn_group(argv, env={}, stdin_pipe=True)
        except OSError as exc:
            raise UserNamespaceError(f"cannot start the user namespace holder: {exc}") from None
        self._holder = holder
        try:
            self._wait(lambda: os.readlink(f"/proc/{holder.pid}/ns/user") != own, "to unshare")
            proc = Path(f"/proc/{holder.pid}")
            (proc / "uid_map").write_text(self._map(os.geteuid()))
            # Root keeps setgroups (setpriv clears root's supplementary groups); a non-root
            # writer may map its gid only once setgroups is denied.
            (proc / "setgroups").write_text("allow" if self.switches_uid else "deny")
            (proc / "gid_map").write_text(self._map(os.getegid()))
            self._wait(lambda: (proc / "comm").read_text().strip() == _READY, "to set its limits")
        except (OSError, UserNamespaceError) as exc:
            self.close()
            raise UserNamespaceError(f"cannot build the cell user namespace: {exc}") from None

    def _map(self, own: int) -> str:
        """Root: 0 → root (bwrap's setup) and 1000 → the cell's id; otherwise 1000 → ``own``."""
        if self.switches_uid:
            return f"0 0 1\n{SANDBOX_UID} {self.host_uid} 1\n"
        return f"{SANDBOX_UID} {own} 1\n"

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while True:
            holder = self._holder
            if holder is None or holder.poll() is not None:
                code = None if holder is None else holder.poll()
                raise UserNamespaceError(f"the holder exited ({code}) before it was ready {what}")
            try:
                if ready():
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise UserNamespaceError(f"the holder took over {_READY_TIMEOUT_S} s {what}")
            time.sleep(0.002)

    def close(self) -> None:
        if self._holder is not None:
            self._holder.stop()
            self._holder = None


class IdmapNamespace(CellUserNamespace):
    """A user namespace mapping only uid/gid 0 to ``host_uid``: the idmap of an overlay clone's lower
    layer (``_overlay``), which shows the root-built template as owned by the cell's uid."""

    def __init__(self, host_uid: int) -> None:
        super().__init__()
        self.host_uid = host_uid
        self.switches_uid = False

    def _map(self, own: int) -> str:
        return f"0 {self.host_uid} 1\n"
