"""Per-cell kernel bounds, exercised for real with small limits (each bounded; the host stays responsive).

Memory and processes are cgroup v1 limits, disk is the cell's own loop volume: all need root,
which CI has. Every check has a benign negative control that must NOT count as a breach.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.builders import missing_tool
from tests.conftest import SESSION_TMPDIR, needs_root
from workflow_bench.sandbox import CellLimits, CellResources, RunPolicy, SandboxKind, create_sandbox
from workflow_bench.sandbox._cgroups import own_cgroup as _own_cgroup
from workflow_bench.sandbox._stale import mounts_under

pytestmark = pytest.mark.component

SMALL = CellLimits(memory_mib=128, pids=48, disk_mib=16)


@pytest.fixture
def enforceable() -> None:
    """Root, writable cgroup v1 memory/pids controllers and loop devices: the bounds this module tests."""
    needs_root("cgroup v1 memory/pids and loop mounts")
    cgroups = all((d := _own_cgroup(c)) is not None and os.access(d, os.W_OK) for c in ("memory", "pids"))
    if not cgroups or not Path("/dev/loop-control").exists():
        missing_tool("writable cgroup v1 memory/pids controllers and /dev/loop-control")


@pytest.fixture
def cell(tmp_path, bwrap_bin, enforceable):
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


def _sh(sandbox, script: str):
    return sandbox.run(["/bin/sh", "-c", script], policy=RunPolicy(workspace_writable=True), timeout_s=60)


def test_every_bound_is_enforced_and_a_benign_run_is_no_breach(cell):
    resources, sandbox = cell
    enforced = resources.enforced()
    kernel = {k: enforced[k] for k in ("memory_mib", "pids", "disk_mib", "cpus", "ptys", "sampled")}
    assert kernel == {
        "memory_mib": 128,
        "pids": 48,
        "disk_mib": 16,
        "cpus": None,
        "ptys": 128,
        "sampled": ["files"],  # no kernel counter for a group's descriptors: the watchdog's
    }
    assert enforced["cell_uid"] >= 0x40000000 and enforced["seccomp_denied"] and enforced["namespace_limits"]
    result = _sh(sandbox, "head -c 4M /dev/zero > small; python3 -c 'bytearray(16 * 2**20)'; echo ok")
    assert result.ok and result.stdout == b"ok\n", result.describe()
    assert resources.breaches() == []


def test_memory_over_the_limit_is_oom_killed_inside_the_cell(cell):
    resources, sandbox = cell
    result = _sh(sandbox, "python3 -c 'b = [bytearray(16 * 2**20) for _ in range(32)]; print(\"survived\")'")
    assert b"survived" not in result.stdout
    assert any(b.startswith("memory limit 128 MiB") for b in resources.breaches()), resources.breaches()


def test_processes_over_the_limit_are_refused(cell):
    resources, sandbox = cell
    script = (
        "import subprocess\nps = []\ntry:\n"
        "    for _ in range(200): ps.append(subprocess.Popen(['sleep', '20']))\n"
        "except OSError as e: print('refused', len(ps))\nfor p in ps: p.kill()\n"
    )
    result = sandbox.run(["python3", "-c", script], policy=RunPolicy(workspace_writable=True), timeout_s=60)
    assert result.stdout.startswith(b"refused"), result.describe()
    assert int(result.stdout.split()[1]) < 48
    assert any(b.startswith("process limit 48") for b in resources.breaches())


def test_disk_is_the_cells_own_volume(cell, tmp_path):
    resources, sandbox = cell
    # three files, each far under the 1 GiB per-file cap, together over the cell's room
    result = _sh(sandbox, "for i in 1 2 3; do head -c 12M /dev/zero > big$i; done 2>&1; du -sk .")
    assert b"No space left on device" in result.stdout
    # room = at least the 16 MiB asked for, plus the filesystem's slack (5% + 8 MiB), never 36 MiB
    assert 16 * 1024 <= int(result.stdout.split()[-2]) < 28 * 1024
    assert any(b.startswith("disk limit 16 MiB") for b in resources.breaches())


def test_close_leaves_no_cgroup_mount_or_image(tmp_path, bwrap_bin, enforceable):
    template = tmp_path / "template"
    template.mkdir()
    resources = CellResources(SMALL, tmp_path / "cell")
    resources.open(clone_source=template)
    groups = [g.directory for g in (resources._memory, resources._pids)]  # SMALL sets no CPU quota
    assert all(g.is_dir() for g in groups) and os.path.ismount(tmp_path / "cell")
    assert resources.close() is None
    assert not any(g.exists() for g in groups)
    assert not os.path.ismount(tmp_path / "cell") and not resources.image.exists()


def test_mounts_are_found_below_a_root_reached_through_a_symlink(tmp_path):
    """A TMPDIR through a symlink: the kernel records mount points resolved (real /proc/self/mountinfo)."""
    (tmp_path / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to("/proc")  # /proc is always a mount point
    assert Path("/proc") in mounts_under(link)
    assert mounts_under(tmp_path / "real") == []  # negative control: no mount there


# Two busy processes for WALL_S: CPU seconds they got, as the sandbox's own clock counts them.
WALL_S = 2.0
QUOTA = 0.2
_QUOTA_MAX_S = QUOTA * WALL_S * 1.25 + 0.1  # a period's slack at the edges
_SPIN = (
    'python3 -c "import os, time\nfor _ in range(2):\n    if os.fork() == 0:\n'
    f"        end = time.monotonic() + {WALL_S}\n        while time.monotonic() < end: pass\n"
    '        os._exit(0)\nos.wait(); os.wait()\nprint(sum(os.times()[2:4]))"'
)


def test_the_cpu_quota_bounds_all_the_cells_processes_together(tmp_path, bwrap_bin, enforceable):
    """``--cell-cpus``: the quota is the cell's whole share, however many processes it starts.

    Two spinners want two cores; the cell gets at most its 0.2 (an upper bound: host load only
    lowers it, so the test does not depend on the machine being quiet), and the kernel's own
    counter shows it throttled them. Removing the quota fails both: the spinners get what the
    host spares (2 s of 4 on an idle 2-core machine) and nothing is throttled.
    """
    template = tmp_path / "template"
    template.mkdir()
    resources = CellResources(CellLimits(memory_mib=512, pids=64, disk_mib=16, cpus=QUOTA), tmp_path / "cell")
    resources.open(clone_source=template)
    try:
        (tmp_path / "cell" / "workspace").mkdir()
        sandbox = create_sandbox(
            SandboxKind.BWRAP, workspace=tmp_path / "cell" / "workspace", claude_bin=None,
            bwrap_bin=bwrap_bin, resources=resources,
        )  # fmt: skip
        assert resources.enforced()["cpus"] == QUOTA
        result = _sh(sandbox, _SPIN)
        assert result.ok, result.describe()
        assert float(result.stdout) <= _QUOTA_MAX_S, result.stdout
        assert resources._cpu is not None and resources._cpu.counter("cpu.stat", "nr_throttled") > 0
    finally:
        assert resources.close() is None


def test_writable_filesystems_in_the_sandbox_are_sized_or_read_only(tmp_path, bwrap_bin):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = create_sandbox(SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin)
    script = (
        "for d in / /dev /usr; do touch $d/x 2>/dev/null && echo writable $d; done; "
        "df -k --output=target,size /run /dev/shm /tmp /home | tail -n +2"
    )
    result = _sh(sandbox, script)
    assert b"writable" not in result.stdout, result.stdout
    sizes = dict(line.split() for line in result.stdout.decode().splitlines())
    assert sizes == {"/run": "4096", "/dev/shm": "65536", "/tmp": "524288", "/home": "262144"}


def _no_userns(_self) -> None:
    from workflow_bench.sandbox._userns import UserNamespaceError

    raise UserNamespaceError("no user namespace here (the test says so)")


def test_a_bound_that_cannot_be_enforced_is_never_claimed(tmp_path, monkeypatch):
    from workflow_bench.sandbox import _cgroups, _limits

    monkeypatch.setattr(_limits, "_is_root", lambda: True)  # root: no RLIMIT_NPROC fallback either
    monkeypatch.setattr(_cgroups, "own_cgroup", lambda _controller: None)
    monkeypatch.setattr(_limits, "_can_mount", lambda: False)
    monkeypatch.setattr(_limits._watchdog, "available", lambda: False)  # no way to find the cell's processes
    monkeypatch.setattr(_limits, "filter_program", lambda **_: None)
    monkeypatch.setattr(_limits.CellUserNamespace, "open", _no_userns)
    resources = CellResources(SMALL, tmp_path / "cell")
    resources.open(clone_source=tmp_path)
    enforced = resources.enforced()
    rlimits = {"nofile_per_process": _limits.NOFILE_PER_PROCESS, "msgqueue_bytes": _limits.MSGQUEUE_BYTES}
    assert {k: v for k, v in enforced.items() if v} == rlimits  # rlimits need no privilege
    assert resources.wrap(["/bin/true"]) == ["/bin/true"]
    assert resources.breaches() == [] and resources.close() is None
    assert not os.path.ismount(tmp_path / "cell")


def test_without_root_the_process_count_falls_back_to_rlimit_nproc(tmp_path, bwrap_bin, monkeypatch):
    """Measured for real: the sandbox as uid nobody, bounded by RLIMIT_NPROC inside its user namespace."""
    from workflow_bench.process import run_process
    from workflow_bench.sandbox import _cgroups, _limits

    needs_root("drops to nobody with setpriv")

    monkeypatch.setattr(_cgroups, "own_cgroup", lambda _controller: None)
    monkeypatch.setattr(_limits, "_can_mount", lambda: False)
    monkeypatch.setattr(_limits, "_is_root", lambda: False)
    monkeypatch.setattr(_limits._watchdog, "available", lambda: False)  # the kernel backstop alone
    # argv is run by hand below, without the cell wrapper that opens the namespace and filter fds
    monkeypatch.setattr(_limits, "filter_program", lambda **_: None)
    monkeypatch.setattr(_limits.CellUserNamespace, "open", _no_userns)
    resources = CellResources(SMALL, tmp_path / "cell")
    resources.open(clone_source=tmp_path)
    assert resources.prlimit_args()[0] == "--nproc=48"  # no watchdog: the kernel bound is the limit
    assert resources.enforced()["pids"] == 48
    # uid nobody must reach the workspace: under TMPDIR when every directory above it lets others
    # through (a private TMPDIR is often 0700), else under /tmp; a private mkdtemp directory either way.
    base = Path(SESSION_TMPDIR).resolve()
    if not all(os.stat(p).st_mode & 0o001 for p in (base, *base.parents)):
        base = Path("/tmp")
    workspace = Path(tempfile.mkdtemp(prefix="wfbench-nproc-", dir=base))
    try:
        workspace.chmod(0o755)
        sandbox = create_sandbox(
            SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin, resources=resources
        )
        script = (
            "import subprocess\nps = []\ntry:\n"
            "    for _ in range(200): ps.append(subprocess.Popen(['sleep', '20']))\n"
            "except OSError as e: print('refused', len(ps))\nelse: print('started', len(ps))\n"
            "for p in ps: p.kill()\n"
        )
        argv = sandbox.argv(["python3", "-c", script], policy=RunPolicy(workspace_writable=False))
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        result = run_process(as_nobody, timeout_s=60, env={"PATH": "/usr/bin:/bin"})
        assert result.stdout.startswith(b"refused"), result.describe()
        assert int(result.stdout.split()[1]) < 48
        # negative control: the same run without the fallback starts all 200
        monkeypatch.setattr(_limits, "_is_root", lambda: True)
        argv = sandbox.argv(["python3", "-c", script], policy=RunPolicy(workspace_writable=False))
        result = run_process([*as_nobody[:4], *argv], timeout_s=60, env={"PATH": "/usr/bin:/bin"})
        assert result.stdout == b"started 200\n", result.describe()
    finally:
        shutil.rmtree(workspace)
        resources.close()
