"""Issue 26: per-cell fixed costs cut without losing correctness.

Waiting for a subprocess ends at its exit, its timeout or a cancel (no polling sleep between
exit polls); removing a tree the agent could have made is done in-process (no ``rm -rf`` /
``chmod -R`` subprocesses).
"""

from __future__ import annotations

import threading

import pytest

from workflow_bench.process import run_process
from workflow_bench.workspace.remove import remove_tree

pytestmark = pytest.mark.component


def test_a_process_wait_ends_at_exit_timeout_or_cancel() -> None:
    assert run_process(["true"], timeout_s=10).ok
    slow = run_process(["sleep", "30"], timeout_s=0.3)
    assert slow.state == "timeout"
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    assert run_process(["sleep", "30"], timeout_s=30, cancel=cancel).state == "cancelled"


def test_remove_tree_takes_what_an_agent_could_leave(tmp_path) -> None:
    root = tmp_path / "victim"
    deep = root
    for _ in range(400):  # deeper than any recursion limit would like
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    locked = root / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "g").write_text("y")
    (locked / "inner").chmod(0)
    locked.chmod(0o500)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (root / "link").symlink_to(outside)
    remove_tree(root)
    assert not root.exists() and (outside / "keep").read_text() == "keep"
    remove_tree(root)  # absent: nothing to do
