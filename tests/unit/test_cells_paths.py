"""Fixed-length cell paths, the AF_UNIX preflight and stale work-root collection."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workflow_bench.arms import ARMS
from workflow_bench.sandbox._environment import MODEL_SOCKET
from workflow_bench.workspace import paths as cell_paths
from workflow_bench.workspace.paths import (
    AF_UNIX_PATH_MAX,
    CellPathError,
    check_paths_fit,
    collect_stale_work_roots,
    longest_socket_path,
    make_cell_dir,
    make_work_root,
    relay_socket,
)

pytestmark = pytest.mark.unit


def test_socket_name_matches_the_sandbox_mount():
    assert MODEL_SOCKET.rsplit("/", 1)[1] == cell_paths.SOCKET_NAME


def test_real_cell_socket_is_never_longer_than_the_preflight_bound(tmp_path):
    root = make_work_root(tmp_path)
    assert root.name.startswith(f"wfb-{os.getpid()}-")
    _, socket = relay_socket(make_cell_dir(root))
    assert len(str(socket)) <= len(longest_socket_path(tmp_path))
    assert len(str(root.name)) <= cell_paths.WORK_ROOT_NAME_MAX


def test_60_char_tmpdir_fits_whatever_the_task_or_arm(tmp_path):
    tmpdir = "/" + "d" * 59
    check_paths_fit(tmpdir)  # cell dirs no longer carry the task id or the arm
    assert max(len(a) for a in ARMS) == len("candidate_workflow_direct")
    assert len(longest_socket_path(tmpdir)) <= AF_UNIX_PATH_MAX


def test_too_long_tmpdir_is_refused_with_the_room_left():
    with pytest.raises(CellPathError, match=r"at most \d+ bytes"):
        check_paths_fit("/" + "d" * 80)


def test_only_dead_owners_roots_are_collected(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f"wfb-{dead_pid}-abcdefgh"
    (stale / "1234abcd" / "workspace").mkdir(parents=True)
    (stale / "1234abcd" / "workspace" / "f").write_text("x")
    (stale / "1234abcd" / "workspace").chmod(0o500)
    live = tmp_path / f"wfb-{os.getppid()}-abcdefgh"
    live.mkdir()
    mine = make_work_root(tmp_path)
    other = tmp_path / f"wfb-{dead_pid}-short"  # not our pattern: never touched
    other.mkdir()
    removed, failed = collect_stale_work_roots(tmp_path)
    assert removed == [stale] and failed == []
    assert live.exists() and mine.exists() and other.exists() and not stale.exists()
