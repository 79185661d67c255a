"""Where a private local Ray instance (``--executor ray`` without ``--ray-address``) lives on the host.

Its temp directory is ``$TMPDIR/wfbray-<8 random>`` (``ray_cells`` makes it), and Ray binds its
raylet and object-store sockets below it. AF_UNIX paths are limited to 107 bytes, and Ray refuses
a longer one only while starting, after the task file is bound, naming neither TMPDIR nor how
long it may be; ``check_local_paths_fit`` says both before anything (a tighter bound than the
cells' own, ``cells.paths.check_paths_fit``). Callers: ``schedule.flags``, ``schedule.ray_cells``.
"""

from __future__ import annotations

import os
from pathlib import Path

from workflow_bench.workspace.paths import check_sockets_fit

LOCAL_TEMP_PREFIX = "wfbray-"  # + mkdtemp's 8 characters, directly under $TMPDIR
# The longest socket path below the temp dir (Ray 2.x, measured): the session directory is
# session_<%Y-%m-%d_%H-%M-%S_%f>_<Ray's pid, at most 7 digits>, the longest socket plasma_store.
LOCAL_SOCKET_TAIL = f"session_{'0' * len('2026-12-01_11-01-36_948066')}_{'9' * 7}/sockets/plasma_store"


class RayPathError(ValueError):
    """TMPDIR is too long for a local Ray instance's sockets: exit 2, nothing run."""


def longest_local_socket_path(tmpdir: str | Path) -> str:
    """The longest Unix socket path a local Ray instance started under ``tmpdir`` can bind."""
    temp = Path(os.path.abspath(tmpdir)) / (LOCAL_TEMP_PREFIX + "t" * 8)
    return str(temp / LOCAL_SOCKET_TAIL)


def check_local_paths_fit(tmpdir: str | Path | None = None) -> None:
    """Raise ``RayPathError`` unless a local Ray instance's sockets fit under ``tmpdir``."""
    check_sockets_fit(
        tmpdir,
        longest_local_socket_path,
        RayPathError,
        what="a local Ray instance's sockets",
        otherwise=", or join a cluster with --ray-address",
    )
