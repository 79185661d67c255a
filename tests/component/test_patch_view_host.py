"""The patch view is independent of the host it runs on, and names the step that failed.

The view's git never reads the operator's configuration (a broken or hostile ~/.gitconfig must
not change or stop the patch), excluded paths are matched however they are written, and a
failure of the harness's own git says which step failed (an infra error must be diagnosable).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workflow_bench.judging.patch import PatchView
from workflow_bench.process import ProcessError

pytestmark = pytest.mark.component


@pytest.fixture
def workspace(tmp_path, git_bin) -> Path:
    ws = tmp_path / "ws"
    (ws / "deps").mkdir(parents=True)
    (ws / "app.py").write_text("x = 1\n")
    (ws / "deps" / "lib.py").write_text("vendored = True\n")
    return ws


def test_a_broken_host_git_config_changes_nothing(tmp_path, workspace, monkeypatch) -> None:
    broken = tmp_path / "gitconfig"
    broken.write_text("[core\n  this is not git config\n")  # any git that reads it exits 128
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(broken))
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(broken))
    monkeypatch.setenv("HOME", str(tmp_path))
    view = PatchView(tmp_path / "view.git")
    view.record(workspace, "base")
    (workspace / "app.py").write_text("x = 2\n")
    view.record(workspace, "after")
    patch, churn = view.diff("base", "after")
    assert b"-x = 1\n+x = 2\n" in patch and churn["diff_files"] == 1


def test_excluded_paths_match_with_or_without_slashes(tmp_path, workspace) -> None:
    view = PatchView(tmp_path / "view.git", excluded=("/deps/",))
    view.record(workspace, "base")
    (workspace / "deps" / "lib.py").write_text("vendored = False\n")
    view.record(workspace, "after")
    patch, _ = view.diff("base", "after")
    assert patch == b""  # the dependency mount is never the agent's work


def test_a_failing_step_is_named(tmp_path, workspace) -> None:
    occupied = tmp_path / "file"
    occupied.write_text("not a directory")
    with pytest.raises(ProcessError, match=r"^init harness patch view: "):
        PatchView(occupied / "view.git")
    view = PatchView(tmp_path / "view.git")
    shutil.rmtree(view.git_dir)
    view.git_dir.mkdir()  # no longer a repository
    with pytest.raises(ProcessError, match=r"^record the workspace in the harness patch view: "):
        view.record(workspace, "base")
    assert list(view.git_dir.iterdir()) == []  # the spooled import stream is removed either way
