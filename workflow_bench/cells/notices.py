"""What a sweep's cells share and the runner says once: which clone they get, a missing CPU bound.

Owns ``announce_once``: called by every cell right after ``CellResources.open`` (``cells.run``);
the first cell of a sweep (keyed by its work root) prints each notice, the others stay quiet, so a
copy fallback's reason or a missing CPU quota is said once per sweep, never once per cell. Every
row still records both (``clone_kind``/``clone_reason``, ``resource_limits.cpus``).
"""

from __future__ import annotations

import threading

from workflow_bench.sandbox import UNBOUNDED_CPU_NOTE, CellResources

from .context import SweepSettings

_announced: set[tuple[str, str]] = set()
_announced_lock = threading.Lock()


def announce_once(settings: SweepSettings, resources: CellResources) -> None:
    """Say once per sweep (its work root) which clone the cells get, and a CPU bound that is missing."""
    said = []
    if resources.clone is not None:
        clone = resources.clone
        text = f"cell clones: {clone.kind} ({clone.reason})"
        if clone.kind == "copy":
            text += "; every cell copies and walks its whole template"
        said.append(("clone", text))
    if resources.cpu_refusal is not None:
        said.append(("cpu", f"cell CPU: no bound ({resources.cpu_refusal}); {UNBOUNDED_CPU_NOTE}"))
    for topic, text in said:
        with _announced_lock:
            if (str(settings.work_root), topic) in _announced:
                continue
            _announced.add((str(settings.work_root), topic))
        settings.progress(f"workflow-bench: {text}")
