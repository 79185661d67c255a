"""The host-side watchdog (``sandbox/_watchdog.py``): the bounds of a cell whose invoker has no root.

Real bwrap, real processes, small limits. The kernel bounds are switched off (no cgroup, no
loop volume), so the watchdog is the only thing between the sandbox and the host: each test
proves it enforces one bound, with a benign negative control that must not count as a breach.
The same code runs for a non-root runner (the canary is run that way too, see README).
"""

from __future__ import annotations

import os

import pytest

from tests.builders import missing_tool
from workflow_bench.sandbox import (
    CellLimits,
    CellResources,
    RunPolicy,
    SandboxKind,
    _cgroups,
    _limits,
    _watchdog,
    create_sandbox,
)

pytestmark = pytest.mark.component

SMALL = CellLimits(memory_mib=256, pids=64, disk_mib=16)


@pytest.fixture
def cell(tmp_path, bwrap_bin, monkeypatch):
    if not _watchdog.available():
        missing_tool("/proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)")
    monkeypatch.setattr(_cgroups, "own_cgroup", lambda _controller: None)
    monkeypatch.setattr(_limits, "_can_mount", lambda: False)
    template = tmp_path / "template"
    template.mkdir()
    (template / "file.txt").write_text("hello\n")
    resources = CellResources(SMALL, tmp_path / "cell")
    resources.open(clone_source=template)
    (tmp_path / "cell" / "workspace").mkdir()
    resources.own(tmp_path / "cell" / "workspace")  # as cells/run.py does: the cell uid's clone
    sandbox = create_sandbox(
        SandboxKind.BWRAP,
        workspace=tmp_path / "cell" / "workspace",
        claude_bin=None,
        bwrap_bin=bwrap_bin,
        resources=resources,
    )
    yield resources, sandbox
    assert resources.close() is None


def _sh(sandbox, script: str, timeout_s: float = 60):
    policy = RunPolicy(workspace_writable=True)
    return sandbox.run(["/bin/sh", "-c", script], policy=policy, timeout_s=timeout_s)


def test_every_bound_is_sampled_and_a_benign_run_is_no_breach(cell, monkeypatch):
    resources, sandbox = cell
    real_is_root = _limits._is_root
    monkeypatch.setattr(_limits, "_is_root", lambda: False)
    assert resources.prlimit_args()[0] == "--nproc=128"  # the kernel backstop, above the sampled 64
    monkeypatch.setattr(_limits, "_is_root", real_is_root)
    enforced = resources.enforced()
    assert {k: enforced[k] for k in ("memory_mib", "pids", "disk_mib", "files", "sampled")} == {
        "memory_mib": 256,
        "pids": 64,
        "disk_mib": 16,
        "files": 65536,
        "sampled": ["memory", "pids", "disk", "files"],
    }
    script = "head -c 4M /dev/zero > small; python3 -c 'import time; b = bytearray(64 << 20); time.sleep(.5)'"
    result = _sh(sandbox, script + "; for i in $(seq 8); do sleep 0.3 & done; wait; echo ok")
    assert result.ok and result.stdout == b"ok\n", result.describe()
    assert resources.breaches() == []
    assert resources._watchdog.peak_memory_bytes >= 64 * 2**20  # it did see the benign 64 MiB


def test_memory_over_the_limit_ends_the_cells_processes(cell):
    resources, sandbox = cell
    script = "import time\nb = [bytearray(32 * 2**20) for _ in range(40)]\ntime.sleep(5)\nprint('survived')"
    result = sandbox.run(["python3", "-c", script], policy=RunPolicy(workspace_writable=True), timeout_s=60)
    assert b"survived" not in result.stdout and not result.ok
    breaches = resources.breaches()
    assert len(breaches) == 1 and breaches[0].startswith("memory limit 256 MiB: "), breaches
    # killed within a few sampling intervals: far below the 1,280 MiB it asked for
    assert resources._watchdog.peak_memory_bytes < 768 * 2**20


def test_processes_over_the_limit_end_the_cells_processes(cell):
    resources, sandbox = cell
    script = (
        "import subprocess\nps = []\ntry:\n"
        "    for _ in range(400): ps.append(subprocess.Popen(['sleep', '20']))\n"
        "except OSError as e: print('refused', len(ps))\nelse: print('started', len(ps))\n"
        "for p in ps: p.kill()\n"
    )
    result = sandbox.run(["python3", "-c", script], policy=RunPolicy(workspace_writable=True), timeout_s=60)
    assert b"started 400" not in result.stdout, result.describe()
    assert any(b.startswith("process limit 64: ") for b in resources.breaches()), resources.breaches()


def test_disk_over_the_room_ends_the_cells_processes(cell):
    resources, sandbox = cell
    # three files, each far under the 1 GiB per-file cap, together over the cell's room; then wait
    result = _sh(sandbox, "for i in 1 2 3 4; do head -c 12M /dev/zero > big$i; done; sleep 20; echo survived")
    assert b"survived" not in result.stdout
    assert any(b.startswith("disk limit 16 MiB over the clone: ") for b in resources.breaches())


def test_disk_written_just_before_the_end_is_still_counted(cell, monkeypatch):
    """The last walk, after the cell's last process, catches what one sampling interval missed."""
    resources, sandbox = cell
    monkeypatch.setattr(_watchdog, "DISK_INTERVAL_S", 3600.0)
    result = _sh(sandbox, "head -c 40M /dev/zero > big; echo wrote")
    assert result.stdout == b"wrote\n"
    assert any(b.startswith("disk limit 16 MiB") for b in resources.breaches())


def test_an_unreadable_directory_does_not_hide_its_bytes(tmp_path):
    hidden = tmp_path / "a" / "b"
    hidden.mkdir(parents=True)
    (hidden / "blob").write_bytes(os.urandom(2 * 2**20))
    (hidden / "link").hardlink_to(hidden / "blob")  # counted once
    (tmp_path / "a").chmod(0)
    try:
        assert 2 * 2**20 <= _watchdog.allocated_bytes(tmp_path) < 3 * 2**20
    finally:
        (tmp_path / "a").chmod(0o700)


def test_only_this_cells_processes_are_counted(cell, tmp_path, bwrap_bin):
    """Another cell's hog (a sibling sandbox under the same runner) is not this cell's breach."""
    resources, _sandbox = cell
    other = tmp_path / "other"
    other.mkdir()
    neighbour = create_sandbox(SandboxKind.BWRAP, workspace=other, claude_bin=None, bwrap_bin=bwrap_bin)
    script = "import time\nb = bytearray(384 * 2**20)\ntime.sleep(1)\nprint('fine')"
    result = neighbour.run(["python3", "-c", script], policy=RunPolicy(workspace_writable=True), timeout_s=60)
    assert result.stdout == b"fine\n", result.describe()
    assert resources.breaches() == []
