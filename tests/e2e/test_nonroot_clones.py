"""A non-root runner's cells get overlay clones and record them (issue 33); refused, they copy.

The real runner as a child program (``python -m workflow_bench.runner``: a front door, so it
enters its own user and mount namespaces before any thread), the real CLI in real bubblewrap, the
scripted model, two cells of one task. Needs a non-root invoker (root mounts its overlays on the
host: ``test_overlay_clone``); ``.ci/locations`` runs it as uid nobody. Pinned:

- every row says ``clone_kind`` overlay with the non-root reason, the cells resolve as on a copy,
  and the runner says which clone the cells get exactly once for the sweep;
- without a CPU cgroup the runner says so exactly once and ``resource_limits.cpus`` is null;
- negative control: the namespace refused (``WORKFLOW_BENCH_NO_PRIVATE_MOUNTS=1``): every row
  says copy with that reason, printed once, and the cells resolve the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import missing_tool
from tests.conftest import needs_non_root

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
TASK = "trivial-amount-grouping"


def _sweep(task_file_for, out: Path, tmpdir: Path, **env: str) -> tuple[list[dict], str]:
    argv = [sys.executable, "-m", "workflow_bench.runner", "--tasks", str(task_file_for(TASK))]
    argv += ["--provider", "scripted", "--arms", "baseline", "--runs", "2", "--out", str(out)]
    done = subprocess.run(
        argv,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmpdir), **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (
        f"runner exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    assert len(rows) == 2
    return rows, done.stdout + done.stderr


@pytest.fixture
def non_root() -> None:
    needs_non_root("root's overlays are test_overlay_clone's")


def test_non_root_cells_get_overlays_and_the_row_says_so(
    non_root, task_file_for, tmp_path, short_tmpdir, claude_bin
):
    rows, said = _sweep(task_file_for, tmp_path / "out", short_tmpdir)
    if rows[0]["clone_kind"] != "overlay" and "unshare" in (rows[0]["clone_reason"] or ""):
        missing_tool(f"unprivileged user namespaces with overlay mounts ({rows[0]['clone_reason']})")
    for row in rows:
        assert row["clone_kind"] == "overlay", row["clone_reason"]
        assert row["clone_reason"].startswith("non-root: an overlay in the runner's user namespace")
        assert row["resolved"] is True, row["error_detail"]
        assert row["resource_limits"]["cpus"] is None  # no delegated cpu cgroup here
    assert said.count("cell clones: overlay (non-root") == 1
    assert said.count("workflow-bench: cell CPU: no bound") == 1


def test_a_refused_namespace_copies_and_says_why_once(
    non_root, task_file_for, tmp_path, short_tmpdir, claude_bin
):
    rows, said = _sweep(task_file_for, tmp_path / "out", short_tmpdir, WORKFLOW_BENCH_NO_PRIVATE_MOUNTS="1")
    for row in rows:
        assert row["clone_kind"] == "copy"
        assert "WORKFLOW_BENCH_NO_PRIVATE_MOUNTS=1" in row["clone_reason"]
        assert row["resolved"] is True, row["error_detail"]
    assert said.count("cell clones: copy (non-root, no private mount namespace") == 1
