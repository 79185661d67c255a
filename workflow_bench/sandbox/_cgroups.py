"""The harness's cgroup v1 directories: one per cell and controller, under the harness's own cgroup.

Owns ``own_cgroup`` (this process's directory in one v1 hierarchy), ``Cgroup`` (create with
settings, read counters, kill what is left and remove) and ``collect_stale_cgroups`` (the cell
cgroups of runners that are gone). Names are ``wfbench-<runner pid>-<8 hex>`` (``CellResources``).
Callers: ``_limits`` (cells), ``cells.paths`` (stale cleanup, through ``sandbox``).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_CGROUP_NAME = re.compile(r"wfbench-([1-9][0-9]{0,6})-[0-9a-f]{8}")  # see CellResources.open
CONTROLLERS = ("memory", "pids", "cpu")


def own_cgroup(controller: str) -> Path | None:
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


def cpu_refusal() -> str:
    """Why no per-cell CPU cgroup can be made here (``Cgroup.create`` returned None for ``cpu``).

    A cell's CPU quota needs a v1 ``cpu`` directory this runner may write under: root's, or one
    the host delegated to the invoker with the runner inside it (a directory it owns, e.g. made by
    ``cgcreate -a``/``-t`` and entered with ``cgexec``). cgroup v2 delegation (a systemd user
    slice, ``systemd-run --user -p Delegate=yes``) is not used: on the machines we run on the
    controllers are all bound to v1.
    """
    parent = own_cgroup("cpu")
    if parent is None:
        return "no cgroup v1 cpu hierarchy holds this runner (cgroup v2 delegation is not used)"
    if not os.access(parent, os.W_OK):
        return (
            f"this runner's cpu cgroup {parent} is not writable by uid {os.geteuid()}: not root, and "
            "the host delegated no cpu cgroup with the runner inside"
        )
    return f"a cell cgroup under {parent} could not be made or set (its quota, cpu.cfs_quota_us)"


class Cgroup:
    """One cell's directory in one v1 hierarchy."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def create(cls, controller: str, name: str, settings: dict[str, str]) -> Cgroup | None:
        parent = own_cgroup(controller)
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


def collect_stale_cgroups(owner_alive) -> list[str]:
    """Remove the cell cgroups (``wfbench-<pid>-<hex>``) of runners that are gone; one message per failure."""
    failed = []
    for controller in CONTROLLERS:
        parent = own_cgroup(controller)
        if parent is None or not os.access(parent, os.W_OK):
            continue  # not ours to clean (a non-root runner never made any)
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                match = _CGROUP_NAME.fullmatch(entry.name)
                if match is None or owner_alive(int(match.group(1))) or not entry.is_dir():
                    continue
                group = Cgroup(Path(entry.path))
                group.close()
                if group.directory.exists():
                    failed.append(f"{group.directory}: still holds tasks")
    return failed
