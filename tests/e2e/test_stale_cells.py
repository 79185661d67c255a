"""A runner killed by SIGKILL mid-cell: the next runner unmounts its cell volume, frees the loop
device and removes its cgroups and work root.

The real runner as a child process (own private TMPDIR), killed with SIGKILL while a cell is in
its session; then a second real runner starts a sweep in the same TMPDIR. Needs root (the cell
volume is a loop mount); the negative control is the state right after the kill.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.builders import missing_tool
from tests.conftest import needs_root
from workflow_bench.sandbox._cgroups import own_cgroup as _own_cgroup
from workflow_bench.sandbox._stale import mounts_under

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "slow.yaml"


def _runner(tasks: Path, out: Path, tmpdir: Path, runs: int) -> subprocess.Popen:
    argv = [sys.executable, "-m", "workflow_bench.runner", "--tasks", str(tasks), "--provider", "scripted"]
    argv += ["--script", str(SCRIPT), "--arms", "baseline", "--runs", str(runs), "--out", str(out)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmpdir)}
    return subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


def _loop_device(mount_point: Path) -> str | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" ")
        if fields[4] == str(mount_point):
            source = fields[fields.index("-") + 2]
            return source if source.startswith("/dev/loop") else None
    return None


def _cgroups_of(pid: int) -> list[Path]:
    found = []
    for controller in ("memory", "pids"):
        parent = _own_cgroup(controller)
        if parent is not None:
            found += sorted(parent.glob(f"wfbench-{pid}-*"))
    return found


def test_a_killed_runners_volume_loop_device_and_cgroups_are_released(
    task_file_for, tmp_path, short_tmpdir, bwrap_bin
):
    needs_root("cell volumes are loop mounts")
    if not Path("/dev/loop-control").exists():
        missing_tool("loop devices (cell volumes are loop mounts)")
    tasks = task_file_for("trivial-amount-grouping")
    tmpdir = short_tmpdir  # short: the relay socket path must fit
    try:
        victim = _runner(tasks, tmp_path / "out1", tmpdir, runs=4)
        deadline = time.monotonic() + 90
        volumes: list[Path] = []
        while time.monotonic() < deadline and not volumes:
            volumes = [m for m in mounts_under(tmpdir) if (m / "workspace").is_dir()]
            time.sleep(0.1)
        assert volumes, "no cell volume was mounted before the deadline"
        time.sleep(1.0)  # the cell is in its session now
        device = _loop_device(volumes[0])
        assert device is not None
        victim.kill()
        victim.communicate(timeout=30)
        # Negative control: SIGKILL leaves the volume mounted, its loop device bound, its cgroups.
        assert mounts_under(tmpdir) and Path(f"/sys/block/{Path(device).name}/loop/backing_file").exists()
        left_groups = _cgroups_of(victim.pid)
        assert left_groups, "the killed runner's cell cgroups should still be there"

        second = _runner(tasks, tmp_path / "out2", tmpdir, runs=1)
        output, _ = second.communicate(timeout=300)
        text = output.decode(errors="replace")
        assert second.returncode == 0, text[-2000:]
        assert "removed a stale cell directory left by a killed runner" in text, text[-2000:]
        assert mounts_under(tmpdir) == []
        backing = Path(f"/sys/block/{Path(device).name}/loop/backing_file")
        assert not backing.exists() or not backing.read_text().startswith(str(tmpdir.resolve())), backing
        assert not any(g.exists() for g in left_groups)
        assert not any(p.name.startswith(f"wfb-{victim.pid}-") for p in tmpdir.iterdir())
    finally:  # never leave a mount behind, whatever failed
        for point in mounts_under(tmpdir):
            subprocess.run(["umount", str(point)], check=False)
