"""The suite's one location bound: a TMPDIR too long for the sockets the tests bind is refused at
session start, naming the bound (tests/conftest.py), and tests/unit alone still runs under it.

Real pytest sessions in child processes; the bound itself is the product's preflights composed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import SHORT_DIR_PREFIX, TESTS, suite_tmpdir_room
from workflow_bench.schedule.ray_local import RayPathError, check_local_paths_fit
from workflow_bench.workspace.paths import CellPathError, check_paths_fit

pytestmark = pytest.mark.component


def test_the_bound_is_the_tighter_of_the_cells_and_the_local_ray_instance():
    room = suite_tmpdir_room()
    at, over = "/" + "x" * (room - 1), "/" + "x" * room
    check_local_paths_fit(at)
    check_paths_fit(os.path.join(at, SHORT_DIR_PREFIX + "x" * 8))
    with pytest.raises(RayPathError):
        check_local_paths_fit(over)  # the local Ray instance is the tighter one, by far
    check_paths_fit(os.path.join(over, SHORT_DIR_PREFIX + "x" * 8))
    with pytest.raises(CellPathError):
        check_paths_fit(os.path.join("/" + "x" * 60, SHORT_DIR_PREFIX + "x" * 8))


def _pytest(tmpdir, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", *args],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_tmpdir_over_the_bound_is_refused_at_session_start_but_unit_tests_run(short_tmpdir):
    room = suite_tmpdir_room()
    long = short_tmpdir / ("q" * room)  # whatever this session's TMPDIR, longer than the bound
    long.mkdir()  # it must exist: tempfile falls back to /tmp otherwise
    size = len(os.fsencode(str(long)))
    refused = _pytest(long, "--collect-only", "tests/e2e/test_long_paths.py")
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout + refused.stderr
    assert f"is {size} bytes" in refused.stderr and f"need at most {room}" in refused.stderr, refused.stderr
    assert "collected" not in refused.stdout, "refused before collecting anything"
    unit = _pytest(long, "tests/unit/test_cells_paths.py")
    assert unit.returncode == 0, unit.stdout + unit.stderr
