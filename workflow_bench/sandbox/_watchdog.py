"""Host-side enforcement of the cell bounds the kernel cannot enforce for this invoker (no root).

Without root there is no cgroup to join and no loop volume to mount (``_limits.py``), so one
thread per cell samples what the cell uses, from the host, where the agent cannot reach:

- **processes of the cell**: every descendant of a child of this runner whose argv names the
  cell directory (each bwrap of the cell: setup, the CLI and its tools, verify, the oracle, git
  helpers). Found through ``/proc/<pid>/task/<tid>/children``, never a scan of all of ``/proc``.
- **memory**: the sum of their ``RssAnon + RssShmem`` (private and shared-memory pages; file
  pages of binaries are shared and reclaimable, tmpfs files are bounded by their own ``--size``).
- **tasks**: the sum of their threads (what the pids cgroup counts).
- **disk**: the bytes allocated under the cell directory, each inode once, walked iteratively
  (no recursion limit; a directory the agent made unreadable is made owner-readable: we own it),
  on its own filesystem only (an overlay clone's writes are counted in its upper layer).
- **descriptors**: the sum of their open descriptors, for root and non-root alike: no kernel
  counter exists for a group of processes (RLIMIT_NOFILE is per process), and the file table is
  host-wide — one cell held 1.2 M open files unrefused. The per-process RLIMIT_NOFILE (set by
  ``_limits.py``) caps what one process adds between two samples.

The first sample over a bound records a breach and SIGKILLs every process of the cell (the
outer bwrap of each tree and all below it); so does every later sample still over it. The cell
then ends as ``resource-limit``, like a kernel bound. What sampling cannot do, stated plainly:
it acts after the fact, so usage can overshoot by what the cell adds in one interval (memory
and tasks every ``INTERVAL_S``; disk every ``DISK_INTERVAL_S`` or ten times the last walk's
duration, whichever is longer). The kernel backstops: RLIMIT_NPROC inside bwrap (set by
``_limits.py``) caps tasks, RLIMIT_FSIZE caps each file, and the tmpfs mounts are sized.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

INTERVAL_S = 0.05
DISK_INTERVAL_S = 0.5
DISK_INTERVAL_MAX_S = 5.0
_KIB = 1024


@dataclass(frozen=True, slots=True)
class Budget:
    """What the watchdog enforces; ``None``: enforced elsewhere (the kernel) or not at all."""

    memory_bytes: int | None = None
    tasks: int | None = None
    disk_bytes: int | None = None
    """Total allocated bytes under the cell directory (clone included)."""
    files: int | None = None
    """Open descriptors of all the cell's processes together (root and non-root alike)."""


@dataclass(frozen=True, slots=True)
class Usage:
    memory_bytes: int
    tasks: int
    pids: tuple[int, ...]
    files: int = 0


def available() -> bool:
    """Whether this kernel lists a task's children in ``/proc`` (CONFIG_PROC_CHILDREN)."""
    return os.path.exists(f"/proc/self/task/{threading.get_native_id()}/children")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with (
                contextlib.suppress(OSError, ValueError),
                open(f"/proc/{pid}/task/{tid}/children", "rb") as handle,
            ):
                found.extend(int(p) for p in handle.read().split())
    return found


def _status(pid: int) -> tuple[int, int] | None:
    """(RssAnon + RssShmem in bytes, threads) of ``pid``; None once it is gone."""
    memory = threads = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                key, _, value = line.partition(b":")
                if key in (b"RssAnon", b"RssShmem"):
                    memory += int(value.split()[0]) * _KIB
                elif key == b"Threads":
                    threads = int(value)
    except (OSError, ValueError):
        return None
    return memory, threads


def _open_files(pid: int) -> int:
    """Descriptors ``pid`` holds: ``stat(/proc/<pid>/fd).st_size`` counts them (Linux >= 6.2), in
    O(1); an older kernel reports 0 there, and the directory is listed instead."""
    try:
        size = os.stat(f"/proc/{pid}/fd").st_size
        return size if size else len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def allocated_bytes(root: Path) -> int:
    """Bytes allocated under ``root`` (each inode once; symlinks not followed), walked without
    recursion and without leaving ``root``'s filesystem: a non-root cell's overlay clone is a mount
    in the cell directory whose own writes are all in its upper layer, which is walked."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [os.fspath(root)]
    try:
        device = os.lstat(root).st_dev
    except OSError:
        return 0
    while stack:
        directory = stack.pop()
        entries: list[os.DirEntry[str]] = []
        try:
            entries = list(os.scandir(directory))
        except PermissionError:
            # The agent's uid is ours on the host: give the owner back its read/search bits.
            with contextlib.suppress(OSError):
                os.chmod(directory, stat.S_IMODE(os.lstat(directory).st_mode) | 0o700)
                entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
            if stat.S_ISDIR(st.st_mode) and st.st_dev == device:
                stack.append(entry.path)
    return total


class CellWatchdog:
    """Samples one cell against its ``Budget`` until ``stop``; ``breaches`` says what it hit."""

    def __init__(self, budget: Budget, cell_dir: Path, *, describe: dict[str, str]) -> None:
        self.budget = budget
        self.cell_dir = cell_dir
        self._marker = os.fsencode(f"{cell_dir}/")
        self._describe = describe  # bound name -> readable limit, e.g. "memory limit 768 MiB"
        self._roots: set[int] = set()  # runner child pids running this cell's sandboxes
        self._breaches: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"watchdog-{cell_dir.name}", daemon=True)
        self.peak_memory_bytes = 0
        self.peak_tasks = 0
        self.peak_disk_bytes = 0
        self.peak_files = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling; then one last disk walk (nothing writes any more, so it is exact)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        if self.budget.disk_bytes is not None:
            used = allocated_bytes(self.cell_dir)
            self.peak_disk_bytes = max(self.peak_disk_bytes, used)
            if used > self.budget.disk_bytes:
                observed = f"{self._describe['disk']}: {used // 2**20} MiB allocated"
                with self._lock:
                    self._breaches.setdefault("disk", observed)

    def breaches(self) -> list[str]:
        with self._lock:
            return list(self._breaches.values())

    def _cell_roots(self) -> list[int]:
        """This runner's children whose argv names the cell directory.

        Only a match is remembered: a child seen between fork and exec still shows the runner's
        own argv, so a miss is read again on the next sample (a cached miss once hid a whole cell).
        """
        children = set(_children(os.getpid()))
        self._roots &= children
        self._roots |= {pid for pid in children - self._roots if self._marker in _cmdline(pid)}
        return sorted(self._roots)

    def sample(self) -> tuple[list[int], Usage]:
        """The cell's roots and what their trees use right now."""
        roots = self._cell_roots()
        pids, memory, tasks, files = [], 0, 0, 0
        count_files = self.budget.files is not None
        stack = list(roots)
        seen: set[int] = set()
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            status = _status(pid)
            if status is None:
                continue
            pids.append(pid)
            memory += status[0]
            tasks += status[1]
            files += _open_files(pid) if count_files else 0
            stack.extend(_children(pid))
        return roots, Usage(memory_bytes=memory, tasks=tasks, pids=tuple(pids), files=files)

    def _hit(self, bound: str, observed: str, roots: list[int], pids: tuple[int, ...]) -> None:
        with self._lock:
            self._breaches.setdefault(bound, f"{self._describe[bound]}: {observed} (watchdog)")
        # Outer bwrap first (--die-with-parent takes its namespace down), then anything still there.
        for pid in (*roots, *pids):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def _loop(self) -> None:
        budget = self.budget
        next_disk = time.monotonic() + DISK_INTERVAL_S  # the clone alone is within its budget
        while not self._stop.wait(INTERVAL_S):
            roots, usage = self.sample()
            self.peak_memory_bytes = max(self.peak_memory_bytes, usage.memory_bytes)
            self.peak_tasks = max(self.peak_tasks, usage.tasks)
            self.peak_files = max(self.peak_files, usage.files)
            if budget.memory_bytes is not None and usage.memory_bytes > budget.memory_bytes:
                self._hit("memory", f"{usage.memory_bytes // 2**20} MiB resident", roots, usage.pids)
            if budget.tasks is not None and usage.tasks > budget.tasks:
                self._hit("pids", f"{usage.tasks} tasks", roots, usage.pids)
            if budget.files is not None and usage.files > budget.files:
                self._hit("files", f"{usage.files} open", roots, usage.pids)
            if budget.disk_bytes is not None and time.monotonic() >= next_disk:
                started = time.monotonic()
                used = allocated_bytes(self.cell_dir)
                took = time.monotonic() - started
                next_disk = time.monotonic() + min(DISK_INTERVAL_MAX_S, max(DISK_INTERVAL_S, 10 * took))
                self.peak_disk_bytes = max(self.peak_disk_bytes, used)
                if used > budget.disk_bytes:
                    _, usage = self.sample()
                    self._hit("disk", f"{used // 2**20} MiB allocated", roots, usage.pids)
