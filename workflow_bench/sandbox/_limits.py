"""Per-cell resource bounds: memory, process count, total disk, CPU and the host's per-user budgets.

One ``CellResources`` per cell, opened before the clone exists and closed
after its last process:

- **disk**: the cell directory (clone, relay dir, review output, oracle
  staging) is a loop-mounted ext4 volume (``_volume.py``) of ``disk_mib`` plus the clone's
  size when the clone is a copy; an overlay clone (``mount_clone``, ``_overlay.py``) keeps only
  its upper layer there. A full volume is ENOSPC for the agent and nothing else: the host disk
  and the other cells are untouched. Unmounting also replaces walking the clone to delete it.
- **memory and processes**: one cgroup per cell in the cgroup v1
  ``memory`` and ``pids`` hierarchies, under the harness's own cgroup.
  Every sandboxed process of the cell joins it before bwrap starts
  (``wrap``), so the CLI, its tools, setup, verify and the oracle share one
  budget; tmpfs pages they write are charged to it too. Over the memory
  limit the kernel OOM-kills inside the cell only; a fork over ``pids`` fails
  with EAGAIN.
- **CPU**: one cgroup per cell in the v1 ``cpu`` hierarchy with a CFS quota of ``cpus`` cores
  (``cpu.cfs_quota_us`` per 100 ms period) and the default, equal weight (``cpu.shares`` 1024).
  ``duration_s`` is a promotion metric, and with ``--workers 2`` one cell's busy processes made
  its neighbour's ``duration_s`` 3.3× its solo value. A quota equal to the cell's fair share
  (the runner's default: host cores / workers) makes a cell's speed the same alone or beside a
  hog: it never gets more than its share, and a neighbour can never take it away.

All need root (mount, cgroup directories owned by root), or a cgroup the host delegated to the
invoker with the runner inside (a v1 directory it may write: ``_cgroups.cpu_refusal``). Without
either there is no CPU bound at all (``resource_limits.cpus`` is null; the runner says so once per
sweep and the report's health section flags the durations of parallel cells as not comparable):
sampling cannot throttle, and CPU affinity is no bound (a process may widen its own). A bound
the kernel cannot enforce here is enforced from the host instead by the cell's watchdog
(``_watchdog.py``: sampled memory, tasks and allocated disk; over a bound it kills the cell's
processes), and the row's ``resource_limits["sampled"]`` names every bound enforced that way:
never a silent claim.
Without the pids cgroup and not root, RLIMIT_NPROC inside bwrap (``prlimit_args``) is the
kernel backstop for tasks, at twice the limit so the watchdog sees a tree cross the limit
before the kernel refuses a fork it could not count.
cgroup v2 is not used: on the machines we run on its hierarchy carries no
controllers (they are all bound to v1).

Kernel budgets the host keeps per user or host-wide (``_open_kernel_budgets``, README
"Per-cell kernel budgets"): the cell's own user namespace and uid (``_userns.py``), the seccomp
filter (``_seccomp.py``), a devpts instance with ``max=CELL_PTYS`` on the cell's volume (root;
otherwise no pty at all), RLIMIT_MSGQUEUE / RLIMIT_NOFILE / RLIMIT_CORE per process
(``prlimit_args``), and the cell's descriptor budget (``files``, always sampled by the watchdog:
no kernel counter exists for a group of processes).

A cell that hit a bound (an OOM kill, a refused fork, a full volume, its descriptor budget) is
reported by ``breaches()``; the cell turns that into ``resource-limit``,
charged to the arm (the agent's processes are the only ones in the cell).
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.input_files import bounded_walk
from workflow_bench.process import run_checked

from . import _watchdog
from ._cgroups import Cgroup as _Cgroup
from ._cgroups import cpu_refusal
from ._overlay import CloneSupport, clone_support
from ._seccomp import BLOCKED_SYSCALLS, PROCESS_ACCESS, filter_program
from ._userns import NAMESPACE_LIMITS, CellUserNamespace, UserNamespaceError
from ._volume import CellVolume
from ._watchdog import Budget, CellWatchdog

MIB = 1024 * 1024
DEFAULT_MEMORY_MIB = 4096
DEFAULT_PIDS = 1024
DEFAULT_DISK_MIB = 4096
# Floors: below these the CLI itself cannot run (it alone is ~210 MB and ~20 threads).
MIN_MEMORY_MIB, MIN_PIDS, MIN_DISK_MIB = 512, 64, 16
CPU_PERIOD_US = 100_000  # the kernel's default CFS period; the quota is cores × this
# Join the cell's cgroups, open the cell's user namespace on fd 3 and its seccomp filter on fd 4
# (bwrap --userns 3 --seccomp 4), then exec; "-" for either: none. Exit 125 when any step fails.
_WRAP = (
    'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; '
    'u=$1; f=$2; shift 2; if [ "$u" != - ]; then exec 3<"$u" || exit 125; fi; '
    'if [ "$f" != - ]; then exec 4<"$f" || exit 125; fi; exec "$@"'
)
USERNS_FD, SECCOMP_FD = 3, 4
DEFAULT_FILES = 65_536  # open descriptors, all the cell's processes together (the watchdog)
# Per process: the descriptor rlimit (soft = hard) and the POSIX message-queue bytes. The file
# table is host-wide (fs.file-max 2,466,170 here): one cell opened 1.2 M files unrefused, bounded
# only by pids × RLIMIT_NOFILE (1,024 × 20,000). 16,384 per process leaves every real tool room;
# the cell's total is the watchdog's DEFAULT_FILES. Message queues: RLIMIT_MSGQUEUE is charged to
# the uid (819,200 bytes by default); a cell that used all of it refused the host's mq_open.
NOFILE_PER_PROCESS = 16_384
MSGQUEUE_BYTES = 256 * 1024  # three queues of the default size (10 × 8 KiB); a third of the uid's
# A devpts instance per cell (root: the host mounts it): every non-initial instance draws on one
# pool of kernel.pty.max − kernel.pty.reserve = 3,072 ptys, which one cell emptied.
CELL_PTYS = 128
UNBOUNDED_CPU_NOTE = (
    "resource_limits.cpus is null, and the durations of cells that ran beside others are NOT "
    "COMPARABLE (the report's health section flags them)"
)


@dataclass(frozen=True, slots=True)
class CellLimits:
    """The bounds every cell of a sweep gets (``--cell-memory-mib``, ``--cell-pids``, ``--cell-disk-mib``)."""

    memory_mib: int = DEFAULT_MEMORY_MIB
    pids: int = DEFAULT_PIDS
    disk_mib: int = DEFAULT_DISK_MIB
    """Writable room on top of the clone's own size."""
    cpus: float | None = None
    """CPU quota in cores for all the cell's processes together (``--cell-cpus``); None: unbounded."""
    files: int = DEFAULT_FILES
    """Open descriptors for all the cell's processes together (sampled by the watchdog)."""


@functools.lru_cache(maxsize=64)
def _tree_bytes(root: Path) -> int:
    """Allocated bytes under ``root`` (a task template: built once per sweep, never changed)."""
    # input_files.bounded_walk: iterative; the bounds are far past what a workspace snapshot accepts anyway.
    return sum(st.st_blocks * 512 for _, _, st in bounded_walk(root, max_entries=10_000_000, max_depth=4096))


def _is_root() -> bool:
    return os.geteuid() == 0


def _can_mount() -> bool:
    return _is_root() and Path("/dev/loop-control").exists()


class CellResources:
    """The kernel-enforced bounds of one cell. ``open`` before the clone; ``close`` always."""

    def __init__(self, limits: CellLimits, cell_dir: Path, *, process_access_denied: bool = True) -> None:
        self.limits = limits
        self.process_access_denied = process_access_denied  # False: the canary's negative control
        self.cell_dir = cell_dir
        self._volume = CellVolume(cell_dir)
        self._memory: _Cgroup | None = None
        self._pids: _Cgroup | None = None
        self._cpu: _Cgroup | None = None
        self._watchdog: CellWatchdog | None = None
        self._userns: CellUserNamespace | None = None
        self.userns_error: str | None = None
        self._seccomp: Path | None = None
        self._overlay_planned = False
        self.cpu_refusal: str | None = None
        """Why the CPU quota asked for (``cpus``) is not enforced (no cgroup to set it in); else None."""
        self.clone: CloneSupport | None = None
        """The clone the cell got (``open``: an overlay, or a copy and why); None for a copy asked for."""
        self.notes: list[str] = []
        """Harness notes of the teardown (a busy mount detached lazily): logged, never a failure."""

    def open(
        self, *, clone_source: Path | None = None, clone_bytes: int | None = None, overlay: bool = False
    ) -> None:
        """Create the cell directory's volume (mounted on ``cell_dir``) and the cgroups.

        The clone's size is ``clone_bytes`` (allocated bytes, from the template's recorded state)
        or walked from ``clone_source``: the volume holds the clone plus ``disk_mib``. With
        ``overlay`` (the caller will ask ``mount_clone`` for the clone) and an overlay possible
        here (root, a volume, idmapped overlay layers: ``_overlay``), the volume holds only the
        overlay's upper layer: ``disk_mib``, whatever the repository's size.
        """
        self.cell_dir.mkdir(parents=True)
        size = clone_bytes if clone_bytes is not None else _tree_bytes(clone_source) if clone_source else 0
        if overlay:
            self.clone = clone_support(self.cell_dir, can_mount_volume=_can_mount())
            self._overlay_planned = self.clone.kind == "overlay"
        else:
            self.clone = CloneSupport("copy", "the caller copies (the host-unsafe backend: no overlay)")
        if _can_mount():
            self._volume.mount((0 if self._overlay_planned else size) + self.limits.disk_mib * MIB)
        name = f"wfbench-{os.getpid()}-{secrets.token_hex(4)}"
        memory = str(self.limits.memory_mib * MIB)
        self._memory = _Cgroup.create("memory", name, {"memory.limit_in_bytes": memory})
        self._pids = _Cgroup.create("pids", name, {"pids.max": str(self.limits.pids)})
        if self.limits.cpus is not None:
            quota = str(max(1000, round(self.limits.cpus * CPU_PERIOD_US)))  # the kernel's floor: 1 ms
            settings = {
                "cpu.shares": "1024",
                "cpu.cfs_period_us": str(CPU_PERIOD_US),
                "cpu.cfs_quota_us": quota,
            }
            self._cpu = _Cgroup.create("cpu", name, settings)
            self.cpu_refusal = cpu_refusal() if self._cpu is None else None
        self._open_kernel_budgets()
        self._start_watchdog(0 if self._overlay_planned else size)  # an overlay's upper layer only

    def _open_kernel_budgets(self) -> None:
        """The cell's user namespace, seccomp filter and (root, own volume) devpts instance."""
        userns = CellUserNamespace()
        try:
            userns.open()
            self._userns = userns
        except UserNamespaceError as exc:
            self.userns_error = str(exc)  # the row says: no per-cell uid, no namespace limits
        program = filter_program(process_access=self.process_access_denied)
        if program is not None:
            path = self.cell_dir / "seccomp.bpf"
            path.write_bytes(program)
            path.chmod(0o444)
            self._seccomp = path
        if self._volume.mounted:
            self._volume.mount_ptys(CELL_PTYS)

    def _seccomp_denied(self) -> list[str] | None:
        if self._seccomp is None:
            return None
        return [s for s in BLOCKED_SYSCALLS if self.process_access_denied or s not in PROCESS_ACCESS]

    @property
    def userns(self) -> CellUserNamespace | None:
        """The cell's user namespace (None: it could not be built; sandboxes make their own)."""
        return self._userns

    def bwrap_args(self) -> tuple[str, ...]:
        """bwrap options for every sandbox of the cell: its seccomp filter and devpts instance."""
        args: list[str] = []
        if self._seccomp is not None:
            args += ["--seccomp", str(SECCOMP_FD)]
        if self._volume.ptys is not None:
            args += ["--dev-bind", str(self._volume.ptys), "/dev/pts"]
        else:
            # No instance of its own (no root, no volume): no pty at all, rather than bwrap's
            # instance, which draws on the host's shared pool without a bound.
            args += ["--ro-bind", "/dev/null", "/dev/pts/ptmx"]
        return tuple(args)

    def mount_clone(self, template: Path, dest: Path) -> bool:
        """Mount ``dest`` as the cell's overlay clone of ``template`` when ``open`` planned one.

        False: no overlay was planned (``clone`` says why): the caller copies
        the template and ``own``s the copy. Raises ``OverlayError`` when a planned overlay cannot be
        mounted (a harness fault; the volume has no room for a copy).
        """
        if not self._overlay_planned:
            return False
        # The host uid the cell's processes run as: its own (a root runner's cell namespace), else
        # the invoker's (no namespace could be built: the sandboxes map the caller's uid).
        host_uid = self._userns.host_uid if self._userns is not None else os.geteuid()
        self._volume.mount_clone(template, dest, host_uid=host_uid)
        return True

    @property
    def clone_upper(self) -> Path | None:
        """The overlay clone's upper layer (every change made through it), or None for a copy."""
        return self._volume.clone_upper

    @property
    def image(self) -> Path:
        """The cell volume's image file (beside the cell directory)."""
        return self._volume.image

    def own(self, path: Path) -> None:
        """Hand ``path`` (the clone, before any sandbox ran) to the cell's host uid."""
        cell_uid = self._cell_uid()
        if cell_uid is not None:
            uid = str(cell_uid)
            run_checked(["chown", "-R", "--no-dereference", f"{uid}:{uid}", "--", str(path)], what="chown")

    def own_mounts(self, sources: Sequence[Path]) -> None:
        """Hand what the harness wrote into the cell directory for one run (the staged oracle 0400,
        the judge kit, the review and report directories) to the cell uid, so it can read it."""
        for source in sources:
            if source.is_relative_to(self.cell_dir) and not source.is_symlink():
                self.own(source)

    def _start_watchdog(self, clone_bytes: int) -> None:
        """Sample from the host every bound the kernel does not enforce for this invoker."""
        limits = self.limits
        budget = Budget(
            memory_bytes=None if self._memory is not None else limits.memory_mib * MIB,
            tasks=None if self._pids is not None else limits.pids,
            disk_bytes=None if self._volume.mounted else clone_bytes + limits.disk_mib * MIB,
            files=limits.files,  # no kernel counter exists for a group of processes: always sampled
        )
        if budget == Budget() or not _watchdog.available():
            return  # nothing to sample, or no way to find the cell's processes: recorded as None
        describe = {
            "memory": f"memory limit {limits.memory_mib} MiB",
            "pids": f"process limit {limits.pids}",
            "disk": f"disk limit {limits.disk_mib} MiB over the clone",
            "files": f"descriptor limit {limits.files}",
        }
        self._watchdog = CellWatchdog(budget, self.cell_dir, describe=describe)
        self._watchdog.start()

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the cell's cgroups (joined before exec; exit 125 if joining fails)."""
        groups = (self._memory, self._pids, self._cpu)
        procs = [str(g.directory / "cgroup.procs") for g in groups if g is not None]
        userns = self._userns.path if self._userns is not None else "-"
        seccomp = str(self._seccomp) if self._seccomp is not None else "-"
        if not procs and userns == "-" and seccomp == "-":
            return argv
        return ["/bin/sh", "-c", _WRAP, "wfbench-cell", *procs, "--", userns, seccomp, *argv]

    def prlimit_args(self) -> tuple[str, ...]:
        """Extra ``prlimit`` options for a process inside bwrap (the fallback when cgroups are out of reach).

        RLIMIT_NPROC inside bwrap's user namespace counts only that sandbox's processes, and
        holds for a non-root invoker (measured: ``refused after 28`` of 30, two sandboxes at
        once each got their own 28). For root it is ignored (the sandbox uid maps to uid 0,
        which the kernel exempts), so it is never the bound there: the pids cgroup is. With the
        watchdog counting tasks it is set at twice the limit: the watchdog ends a tree that
        crosses the limit (and counts it), the kernel only stops one that outruns a sampling
        interval. Without the watchdog it is the limit itself (a refusal is then not counted).
        """
        budgets = (f"--nofile={NOFILE_PER_PROCESS}", f"--msgqueue={MSGQUEUE_BYTES}", "--core=0")
        if self._pids is None and not _is_root():
            factor = 2 if self._watchdog is not None and self._watchdog.budget.tasks else 1
            return (f"--nproc={factor * self.limits.pids}", *budgets)
        return budgets

    def enforced(self) -> dict[str, object]:
        """What is enforced for this cell (``None``: not at all; ``sampled``: by the watchdog)."""
        sampled = self._watchdog.budget if self._watchdog is not None else Budget()
        return {
            "memory_mib": self.limits.memory_mib if self._memory or sampled.memory_bytes else None,
            "pids": self.limits.pids if self._pids or sampled.tasks or self._nproc_fallback() else None,
            "disk_mib": self.limits.disk_mib if self._volume.mounted or sampled.disk_bytes else None,
            "cpus": self.limits.cpus if self._cpu is not None else None,
            "files": self.limits.files if sampled.files else None,
            "nofile_per_process": NOFILE_PER_PROCESS,
            "msgqueue_bytes": MSGQUEUE_BYTES,
            "ptys": CELL_PTYS if self._volume.ptys is not None else None,
            "cell_uid": self._cell_uid(),
            "namespace_limits": dict(NAMESPACE_LIMITS) if self._userns is not None else None,
            "seccomp_denied": self._seccomp_denied(),
            "sampled": [
                name
                for name, value in (
                    ("memory", sampled.memory_bytes),
                    ("pids", sampled.tasks),
                    ("disk", sampled.disk_bytes),
                    ("files", sampled.files),
                )
                if value is not None
            ],
        }

    def _nproc_fallback(self) -> bool:
        return any(arg.startswith("--nproc=") for arg in self.prlimit_args())

    def _cell_uid(self) -> int | None:
        """The unprivileged host uid the cell's processes run as (a root runner's), else None."""
        return self._userns.host_uid if self._userns is not None and self._userns.switches_uid else None

    def breaches(self) -> list[str]:
        """The bounds this cell hit, as readable reasons (empty: none). Call after its last process."""
        found = []
        if self._watchdog is not None:
            self._watchdog.stop()  # idempotent; its last disk walk is exact once nothing writes
            found += self._watchdog.breaches()
        if self._memory is not None:
            kills = self._memory.counter("memory.oom_control", "oom_kill")
            if kills:
                found.append(f"memory limit {self.limits.memory_mib} MiB: {kills} process(es) OOM-killed")
        if self._pids is not None:
            refused = self._pids.counter("pids.events", "max")
            if refused:
                found.append(f"process limit {self.limits.pids}: {refused} fork(s) refused")
        if self._volume.mounted and self._volume.full():
            found.append(f"disk limit {self.limits.disk_mib} MiB over the clone: volume full")
        return found

    def close(self) -> str | None:
        """Remove the cgroups and unmount the volume (its files go with it); a failure, or None.

        A busy volume is retried, then detached lazily (``sandbox._mounts.unmount``): only a
        volume that cannot even be detached is a failure, and it is the harness's (the cell's
        processes are gone by then), never the arm's.
        """
        if self._watchdog is not None:
            self._watchdog.stop()
        for group in (self._memory, self._pids, self._cpu):
            if group is not None:
                group.close()
        self._memory = self._pids = self._cpu = None
        if self._userns is not None:
            self._userns.close()
            self._userns = None
        return self._volume.close(self.notes)
