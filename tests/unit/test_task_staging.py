"""The staging directory ``tasks new`` and ``tasks import`` make beside a task file: a run killed
while it self-checks leaves it behind, and the next run beside it removes it once (and only once)
its owner is gone.

Real processes: one stages and is killed with SIGKILL (its directory is left), one stages and stays
alive. The next ``stage`` removes the dead one's directory and says so; it keeps the live one's
(negative control), a name off the pattern, a file and a symlink that match it (never followed).
Once the live one is killed too, the next ``stage`` removes its directory as well.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_bench.tasks.draft import STAGING_PREFIX, TaskDraft, stage

pytestmark = pytest.mark.unit
REPO_ROOT = Path(__file__).resolve().parents[2]
# Stages one draft beside argv[1], prints the staging directory, then waits to be killed.
STAGER = """
import sys, time
from pathlib import Path
from workflow_bench.tasks.draft import TaskDraft, stage

draft = TaskDraft("t1", Path(sys.argv[2]), {"id": "t1", "class": "c"}, (("reference/t1.patch", b"x\\n"),))
with stage([draft], Path(sys.argv[1]), progress=lambda _: None) as staged:
    print(staged.parent, flush=True)
    time.sleep(600)
"""


def _stager(beside: Path, repo: Path) -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", STAGER, str(beside), str(repo)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    assert line, f"the stager exited {child.wait()}"
    return child, Path(line)


def _kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait()
    if child.stdout is not None:
        child.stdout.close()


def test_a_killed_runs_staging_directory_is_removed_by_the_next_and_a_live_ones_kept(tmp_path):
    beside = tmp_path / "corpus"
    beside.mkdir()
    draft = TaskDraft("t2", tmp_path, {"id": "t2", "class": "c"}, (("reference/t2.patch", b"y\n"),))
    live, live_dir = _stager(beside, tmp_path)
    try:
        killed, dead_dir = _stager(beside, tmp_path)
        _kill(killed)
        # SIGKILL left it, with what was staged in it.
        assert (dead_dir / "reference" / "t1.patch").is_file() and live_dir.is_dir()
        assert dead_dir.name.startswith(f"{STAGING_PREFIX}{killed.pid}-")
        decoys = [beside / f"{STAGING_PREFIX}{killed.pid}-short", beside / f"{STAGING_PREFIX}notapid"]
        for decoy in decoys:
            decoy.mkdir()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "keep").write_text("k")
        link = beside / f"{STAGING_PREFIX}{killed.pid}-linkabcd"
        link.symlink_to(elsewhere)
        plain = beside / f"{STAGING_PREFIX}{killed.pid}-fileabcd"
        plain.write_text("f")
        said: list[str] = []
        with stage([draft], beside, progress=said.append) as staged:
            assert staged.parent.name.startswith(f"{STAGING_PREFIX}{os.getpid()}-")
            assert not dead_dir.exists()
            assert live_dir.is_dir() and (live_dir / "reference" / "t1.patch").is_file()
            assert all(d.is_dir() for d in decoys) and plain.is_file()
            assert link.is_symlink() and (elsewhere / "keep").read_text() == "k"
        assert said == [f"removed {dead_dir.name}, a staging directory left by a run that is gone"]
        assert not staged.parent.exists()  # its own, removed on the way out
    finally:
        _kill(live)
    # Its owner is gone now: the next run removes it too.
    said.clear()
    with stage([draft], beside, progress=said.append):
        assert not live_dir.exists()
    assert said == [f"removed {live_dir.name}, a staging directory left by a run that is gone"]
    assert sorted(p.name for p in beside.iterdir()) == sorted(
        [*(d.name for d in decoys), link.name, plain.name]
    )
