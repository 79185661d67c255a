"""What one canary cell cost the host: disk allocated under the work root and the canary's peak RSS.

Owns ``HostCost``, a context manager around one ``run_cell``: a thread samples every 100 ms the
bytes allocated under the work root (each inode once, never crossing into a mount: the cell's
volume counts once, as its sparse image's blocks; the patch views and templates beside it count
too; the part outside the cell's own directory and image is the harness's), and the process's
peak RSS is reset before (``/proc/self/clear_refs``, 5) and read after
(``VmHWM``). Either is None when it could not be measured (no such proc file): unknown, never 0.

Used by ``attacks_limits.run_limit_cells`` for every limit cell; only ``attacks_host_cost``
judges the figures.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from types import TracebackType

from workflow_bench.workspace.paths import CELL_DIR_HEX_BYTES

_PERIOD_S = 0.1
# A cell's own directory and its volume image (``workspace.paths.make_cell_dir``, ``CellVolume``):
# what the agent wrote. Everything else new under the work root is the harness's.
_CELL_OWN = re.compile(f"[0-9a-f]{{{2 * CELL_DIR_HEX_BYTES}}}(\\.volume)?")


def allocated_bytes(root: Path) -> tuple[int, int]:
    """(bytes allocated under ``root``, those outside any cell's own directory and volume image),
    each inode once, not crossing into another filesystem."""
    try:
        top = os.lstat(root).st_dev
    except OSError:
        return 0, 0
    seen: set[int] = set()
    total = cells = 0
    stack = [(str(root), False)]
    while stack:
        path, in_cell = stack.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if st.st_dev != top or st.st_ino in seen:
                        continue
                    seen.add(st.st_ino)
                    own = in_cell or (path == str(root) and _CELL_OWN.fullmatch(entry.name) is not None)
                    total += st.st_blocks * 512
                    cells += st.st_blocks * 512 if own else 0
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, own))
        except OSError:
            continue
    return total, total - cells


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


class HostCost:
    """Sample the host cost of the block it wraps (see the module docstring)."""

    def __init__(self, work_root: Path) -> None:
        self.work_root = work_root
        self.disk_grown: int | None = None
        """Peak bytes allocated under the work root during the block, minus those before it."""
        self.harness_grown: int | None = None
        """The same, outside the cell's own directory and volume image: the harness's copies."""
        self.rss_grown: int | None = None
        """Peak RSS of this process during the block minus its RSS at the start."""
        self._done = threading.Event()
        self._peak = self._harness_peak = 0
        self._thread = threading.Thread(target=self._sample, name="canary-host-cost", daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(_PERIOD_S):
            self._take()

    def _take(self) -> None:
        total, harness = allocated_bytes(self.work_root)
        self._peak, self._harness_peak = max(self._peak, total), max(self._harness_peak, harness)

    def __enter__(self) -> HostCost:
        self._before, self._harness_before = allocated_bytes(self.work_root)
        self._peak, self._harness_peak = self._before, self._harness_before
        self._rss_before = _status_kib("VmRSS") if _reset_peak_rss() else None
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join()
        self._take()
        self.disk_grown = self._peak - self._before
        self.harness_grown = self._harness_peak - self._harness_before
        peak = _status_kib("VmHWM")
        if self._rss_before is not None and peak is not None:
            self.rss_grown = (peak - self._rss_before) * 1024
