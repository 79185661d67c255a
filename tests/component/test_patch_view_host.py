"""The patch view is independent of the host it runs on, and names the step that failed.

The view's git never reads the operator's configuration (a broken or hostile ~/.gitconfig must
not change or stop the patch), excluded paths are matched however they are written, and a
failure of the harness's own git says which step failed (an infra error must be diagnosable).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workflow_bench.process import ProcessError
from workflow_bench.workspace.patch import PatchView

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


def _recorded(tmp_path: Path, workspace: Path, change) -> tuple[bytes, dict[str, int]]:
    view = PatchView(tmp_path / "view.git")
    view.record(workspace, "base")
    change(workspace)
    view.record(workspace, "after")
    return view.diff("base", "after")


def test_a_binary_change_is_in_the_patch_as_binary(tmp_path, workspace) -> None:
    patch, churn = _recorded(tmp_path, workspace, lambda ws: (ws / "blob.bin").write_bytes(bytes(range(256))))
    assert b"GIT binary patch" in patch and churn["diff_files"] == 1


def test_a_truncated_patch_keeps_its_head(tmp_path, workspace) -> None:
    big = ("y" * 99 + "\n") * 5000  # 500 kB: past the cap
    patch, _ = _recorded(tmp_path, workspace, lambda ws: (ws / "big.txt").write_text(big))
    assert patch.startswith(b"diff --git a/big.txt b/big.txt\n") and patch.endswith(b" bytes]\n")


def test_plan_and_skill_paths_are_in_the_patch_but_not_in_the_churn(tmp_path, workspace) -> None:
    from workflow_bench.workspace.snapshot import PLAN_DIR

    def change(ws: Path) -> None:
        (ws / PLAN_DIR).mkdir(parents=True)
        (ws / PLAN_DIR / "plan.md").write_text("a plan\n")

    patch, churn = _recorded(tmp_path, workspace, change)
    assert b"plan.md" in patch and churn["diff_files"] == 0


def test_a_diff_that_cannot_run_is_named(tmp_path, workspace) -> None:
    view = PatchView(tmp_path / "view.git")
    view.record(workspace, "base")
    with pytest.raises(ProcessError, match=r"^diff the harness patch view: "):
        view.diff("base", "never-recorded")
