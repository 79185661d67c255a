"""Cell volumes a killed runner left mounted: found in this process's mount table, unmounted.

Owns ``mounts_under`` (mount points at or below a path, deepest first) and ``release_stale_mounts``
(unmount every cell volume and devpts instance under a dead runner's work root).
Callers: ``cells.paths`` (through ``sandbox``), tests.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from workflow_bench.process import ProcessError, run_checked


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
        try:
            run_checked(["umount", str(point)], what="unmount a stale cell volume", timeout_s=60)
        except ProcessError as exc:
            problems.append(f"{point}: {exc}")
    return "; ".join(problems) or None
