"""Per-cell resource bounds enforced by the kernel: memory, process count, total disk.

One ``CellResources`` per cell, opened before the clone exists and closed
after its last process:

- **disk**: the cell directory (clone, relay dir, review output, oracle
  staging) is a loop-mounted ext4 volume of ``clone size + disk_bytes``
  (sparse image next to it; removed on close). A full volume is ENOSPC for
  the agent and nothing else: the host disk and the other cells are
  untouched. Unmounting also replaces walking the clone to delete it.
- **memory and processes**: one cgroup per cell in the cgroup v1
  ``memory`` and ``pids`` hierarchies, under the harness's own cgroup.
  Every sandboxed process of the cell joins it before bwrap starts
  (``wrap``), so the CLI, its tools, setup, verify and the oracle share one
  budget; tmpfs pages they write are charged to it too. Over the memory
  limit the kernel OOM-kills inside the cell only; a fork over ``pids`` fails
  with EAGAIN.

Both need root (mount, cgroup directories owned by root). A bound the kernel cannot enforce
here is enforced from the host instead by the cell's watchdog (``_watchdog.py``: sampled
memory, tasks and allocated disk; over a bound it kills the cell's processes), and the row's
``resource_limits["sampled"]`` names every bound enforced that way: never a silent claim.
Without the pids cgroup and not root, RLIMIT_NPROC inside bwrap (``prlimit_args``) is the
kernel backstop for tasks, at twice the limit so the watchdog sees a tree cross the limit
before the kernel refuses a fork it could not count.
cgroup v2 is not used: on the machines we run on its hierarchy carries no
controllers (they are all bound to v1).

A cell that hit a bound (an OOM kill, a refused fork, a full volume) is
reported by ``breaches()``; the cell turns that into ``resource-limit``,
charged to the arm (the agent's processes are the only ones in the cell).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.process import ProcessError, run_checked

from . import _watchdog
from ._mounts import unmount
from ._watchdog import Budget, CellWatchdog

MIB = 1024 * 1024
DEFAULT_MEMORY_MIB = 4096
DEFAULT_PIDS = 1024
DEFAULT_DISK_MIB = 4096
# Floors: below these the CLI itself cannot run (it alone is ~210 MB and ~20 threads).
MIN_MEMORY_MIB, MIN_PIDS, MIN_DISK_MIB = 512, 64, 16
# A volume with less room than this left counts as filled (ext4 keeps a few blocks back).
_FULL_MARGIN_BYTES = MIB
_EXT4_OVERHEAD = 0.05  # metadata of a journal-less ext4, with slack
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_CGROUP_NAME = re.compile(r"wfbench-([1-9][0-9]{0,6})-[0-9a-f]{8}")  # see CellResources.open
# No journal (the volume dies with the cell), lazy init (20 ms for any size), an inode per 8 KiB.
_MKFS = (
    "mkfs.ext4",
    "-q",
    "-F",
    "-m",
    "0",
    "-O",
    "^has_journal",
    "-E",
    "lazy_itable_init=1,nodiscard",
    "-i",
    "8192",
)
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass(frozen=True, slots=True)
class CellLimits:
    """The bounds every cell of a sweep gets (``--cell-memory-mib``, ``--cell-pids``, ``--cell-disk-mib``)."""

    memory_mib: int = DEFAULT_MEMORY_MIB
    pids: int = DEFAULT_PIDS
    disk_mib: int = DEFAULT_DISK_MIB
    """Writable room on top of the clone's own size."""


def _own_cgroup(controller: str) -> Path | None:
    """The v1 hierarchy directory of this process for ``controller``, if mounted."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            directory = _CGROUP_ROOT / controller / path.lstrip("/")
            return directory if (directory / "cgroup.procs").is_file() else None
    return None


class _Cgroup:
    """One cell's directory in one v1 hierarchy."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def create(cls, controller: str, name: str, settings: dict[str, str]) -> _Cgroup | None:
        parent = _own_cgroup(controller)
        if parent is None or not os.access(parent, os.W_OK):
            return None
        directory = parent / name
        try:
            directory.mkdir()
        except OSError:
            return None
        group = cls(directory)
        try:
            for file, value in settings.items():
                (directory / file).write_text(value)
        except OSError:
            group.close()
            return None
        return group

    def read(self, file: str) -> str:
        try:
            return (self.directory / file).read_text()
        except OSError:
            return ""

    def counter(self, file: str, key: str) -> int:
        for line in self.read(file).splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
        return 0

    def close(self) -> None:
        """Kill whatever is left in the group, then remove it (a few retries while tasks exit)."""
        for _ in range(50):
            for pid in self.read("cgroup.procs").split():
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), 9)
            try:
                self.directory.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


@functools.lru_cache(maxsize=64)
def _tree_bytes(root: Path) -> int:
    """Allocated bytes under ``root`` (a task template: built once per sweep, never changed)."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in (*dirnames, *filenames):
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def _is_root() -> bool:
    return os.geteuid() == 0


def _can_mount() -> bool:
    return _is_root() and Path("/dev/loop-control").exists()


class CellResources:
    """The kernel-enforced bounds of one cell. ``open`` before the clone; ``close`` always."""

    def __init__(self, limits: CellLimits, cell_dir: Path) -> None:
        self.limits = limits
        self.cell_dir = cell_dir
        self.image = cell_dir.with_name(cell_dir.name + ".volume")
        self.volume_bytes: int | None = None
        self._mounted = False
        self._memory: _Cgroup | None = None
        self._pids: _Cgroup | None = None
        self._watchdog: CellWatchdog | None = None
        self.notes: list[str] = []
        """Harness notes of the teardown (a busy volume detached lazily): logged, never a failure."""

    def open(self, *, clone_source: Path | None = None, clone_bytes: int | None = None) -> None:
        """Create the cell directory's volume (mounted on ``cell_dir``) and the cgroups.

        The clone's size is ``clone_bytes`` (allocated bytes, from the template's recorded state)
        or walked from ``clone_source``: the volume holds the clone plus ``disk_mib``.
        """
        self.cell_dir.mkdir(parents=True)
        size = clone_bytes if clone_bytes is not None else _tree_bytes(clone_source) if clone_source else 0
        if _can_mount():
            self._mount(size)
        name = f"wfbench-{os.getpid()}-{secrets.token_hex(4)}"
        memory = str(self.limits.memory_mib * MIB)
        self._memory = _Cgroup.create("memory", name, {"memory.limit_in_bytes": memory})
        self._pids = _Cgroup.create("pids", name, {"pids.max": str(self.limits.pids)})
        self._start_watchdog(size)

    def _start_watchdog(self, clone_bytes: int) -> None:
        """Sample from the host every bound the kernel does not enforce for this invoker."""
        limits = self.limits
        budget = Budget(
            memory_bytes=None if self._memory is not None else limits.memory_mib * MIB,
            tasks=None if self._pids is not None else limits.pids,
            disk_bytes=None if self._mounted else clone_bytes + limits.disk_mib * MIB,
        )
        if budget == Budget() or not _watchdog.available():
            return  # nothing to sample, or no way to find the cell's processes: recorded as None
        describe = {
            "memory": f"memory limit {limits.memory_mib} MiB",
            "pids": f"process limit {limits.pids}",
            "disk": f"disk limit {limits.disk_mib} MiB over the clone",
        }
        self._watchdog = CellWatchdog(budget, self.cell_dir, describe=describe)
        self._watchdog.start()

    def _mount(self, clone_bytes: int) -> None:
        wanted = clone_bytes + self.limits.disk_mib * MIB
        size = int(wanted * (1 + _EXT4_OVERHEAD)) + 8 * MIB
        with open(self.image, "wb") as handle:
            handle.truncate(size)  # sparse: costs only what the cell writes
        try:
            run_checked([*_MKFS, str(self.image)], what="make the cell volume", timeout_s=60)
            mount = ["mount", "-o", "loop,nosuid,nodev", str(self.image), str(self.cell_dir)]
            run_checked(mount, what="mount the cell volume", timeout_s=60)
        except ProcessError:
            # No loop devices here (some containers): the row records disk_mib=None, never a claim.
            self.image.unlink(missing_ok=True)
            return
        self._mounted = True
        self.volume_bytes = wanted
        (self.cell_dir / "lost+found").rmdir()

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the cell's cgroups (joined before exec; exit 125 if joining fails)."""
        procs = [str(g.directory / "cgroup.procs") for g in (self._memory, self._pids) if g is not None]
        if not procs:
            return argv
        return ["/bin/sh", "-c", _JOIN, "wfbench-cgroup", *procs, "--", *argv]

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
        if self._pids is None and not _is_root():
            factor = 2 if self._watchdog is not None and self._watchdog.budget.tasks else 1
            return (f"--nproc={factor * self.limits.pids}",)
        return ()

    def enforced(self) -> dict[str, int | list[str] | None]:
        """What is enforced for this cell (``None``: not at all; ``sampled``: by the watchdog)."""
        sampled = self._watchdog.budget if self._watchdog is not None else Budget()
        return {
            "memory_mib": self.limits.memory_mib if self._memory or sampled.memory_bytes else None,
            "pids": self.limits.pids if self._pids or sampled.tasks or self.prlimit_args() else None,
            "disk_mib": self.limits.disk_mib if self._mounted or sampled.disk_bytes else None,
            "sampled": [
                name
                for name, value in (
                    ("memory", sampled.memory_bytes),
                    ("pids", sampled.tasks),
                    ("disk", sampled.disk_bytes),
                )
                if value is not None
            ],
        }

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
        if self._mounted:
            with contextlib.suppress(OSError):
                st = os.statvfs(self.cell_dir)
                if st.f_bavail * st.f_frsize < _FULL_MARGIN_BYTES or st.f_favail == 0:
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
        for group in (self._memory, self._pids):
            if group is not None:
                group.close()
        self._memory = self._pids = None
        problem = None
        if self._mounted:
            done = unmount(self.cell_dir, what="the cell volume")
            problem = done.problem
            if done.note is not None:
                self.notes.append(done.note)
            self._mounted = problem is not None
        if not self._mounted:
            # A lazily detached volume keeps its loop device until the kernel lets go; the image's
            # blocks are freed then (autoclear), its name can go now.
            with contextlib.suppress(FileNotFoundError):
                self.image.unlink()
        return problem


def _unescape_mountinfo(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo octal
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below ``root`` (this process's mount namespace), deepest first.

    ``root`` is resolved first: the kernel records a mount point with its symlinks resolved, so a
    TMPDIR reached through a symlink would otherwise never match its own cells' volumes.
    """
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    prefix = os.path.realpath(root)
    found = set()
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            point = _unescape_mountinfo(fields[4])
            if point == prefix or point.startswith(prefix + "/"):
                found.add(point)
    return [Path(p) for p in sorted(found, key=lambda p: (-p.count("/"), p))]


def release_stale_mounts(root: Path) -> str | None:
    """Unmount every cell volume left under ``root`` by a runner that was killed; a failure, or None.

    Only for a root whose owner is dead (the caller proves it): nothing of the cell runs any
    more (bwrap dies with its parent), so a plain unmount succeeds. The volumes were mounted
    with ``-o loop``, which sets autoclear: unmounting detaches the loop device too.
    """
    problems = []
    for point in mounts_under(root):
        done = unmount(point, what="a stale cell mount")
        if done.problem is not None:
            problems.append(f"{point}: {done.problem}")
    return "; ".join(problems) or None


def collect_stale_cgroups(owner_alive) -> list[str]:
    """Remove the cell cgroups (``wfbench-<pid>-<hex>``) of runners that are gone; one message per failure."""
    failed = []
    for controller in ("memory", "pids"):
        parent = _own_cgroup(controller)
        if parent is None or not os.access(parent, os.W_OK):
            continue  # not ours to clean (a non-root runner never made any)
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                match = _CGROUP_NAME.fullmatch(entry.name)
                if match is None or owner_alive(int(match.group(1))) or not entry.is_dir():
                    continue
                group = _Cgroup(Path(entry.path))
                group.close()
                if group.directory.exists():
                    failed.append(f"{group.directory}: still holds tasks")
    return failed
