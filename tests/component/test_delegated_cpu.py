"""A non-root runner's CPU quota in a cgroup the host delegated to it (issue 33), for real.

Root makes a cgroup v1 ``cpu`` directory and hands it to uid 65534 (what ``cgcreate -a/-t``
does); a child running as that uid moves itself in (``cgexec``), opens a real ``CellResources``
with ``cpus=0.5`` and runs a busy loop for 1.5 s of wall time inside the cell's cgroups
(``wrap``). Pinned: the bound is enforced (``enforced()["cpus"]``, no refusal) and the loop got
at most about half a core (load only lowers it). Negative control: the same child outside the
delegated directory gets no bound (``cpus`` None) and the refusal says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.builders import missing_tool
from tests.conftest import SESSION_TMPDIR, needs_root
from workflow_bench.sandbox._cgroups import own_cgroup

pytestmark = pytest.mark.component
REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534

CHILD = r"""
import json, subprocess, sys
from pathlib import Path
from workflow_bench.sandbox import CellLimits, CellResources

delegated, scratch = sys.argv[1], Path(sys.argv[2])
if delegated != "-":
    (Path(delegated) / "cgroup.procs").write_text("0\n")  # this process moves itself in (cgexec)
resources = CellResources(CellLimits(cpus=0.5), scratch / "cell")
resources.open()
busy = "import os, time\nend = time.monotonic() + 1.5\nwhile time.monotonic() < end: pass\n"
busy += "t = os.times(); print(t.user + t.system)"
done = subprocess.run(resources.wrap([sys.executable, "-c", busy]), capture_output=True, text=True)
out = {"cpus": resources.enforced()["cpus"], "refusal": resources.cpu_refusal, "rc": done.returncode,
       "cpu_s": float(done.stdout.strip() or "nan"), "err": done.stderr[-500:]}
out["close"] = resources.close()
print(json.dumps(out))
"""


def _child(delegated: Path | None) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="wfbcpu-", dir=SESSION_TMPDIR))
    scratch.chmod(0o755)
    os.chown(scratch, NOBODY, NOBODY)
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": os.pathsep.join([str(REPO), *site])}
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-c", CHILD]
    argv += [str(delegated) if delegated else "-", str(scratch)]
    try:
        done = subprocess.run(
            argv, env=env, cwd="/", capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"child exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def delegated():
    needs_root("delegates a cgroup v1 cpu directory to uid 65534")
    parent = own_cgroup("cpu")
    if parent is None:
        missing_tool("a cgroup v1 cpu hierarchy")
    directory = parent / f"wfbt-delegated-{os.getpid()}"
    directory.mkdir()
    for path in (directory, *directory.iterdir()):
        os.chown(path, NOBODY, NOBODY)
    yield directory
    for line in (directory / "cgroup.procs").read_text().split():
        with open(parent / "cgroup.procs", "w") as handle:  # anything left goes back up
            handle.write(line)
    directory.rmdir()


def test_a_delegated_cpu_cgroup_bounds_a_non_root_cell(delegated):
    out = _child(delegated)
    assert out["rc"] == 0, out["err"]
    assert out["cpus"] == 0.5 and out["refusal"] is None, out
    assert out["cpu_s"] < 1.05, out  # 1.5 s of wall at half a core: ~0.75 s, never the whole 1.5 s
    assert out["close"] is None


def test_without_a_delegated_cgroup_there_is_no_bound_and_it_says_why(delegated):
    out = _child(None)
    assert out["rc"] == 0, out["err"]
    assert out["cpus"] is None
    assert "not writable by uid 65534" in out["refusal"], out
