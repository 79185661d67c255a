"""The harness-owned patch view shows exactly what is on disk, whatever the agent did to git.

Each attack is something an agent can do in its workspace with ordinary git and file writes;
the view must still show the real change (negative controls: the same attacks fool
``git diff`` run in the workspace itself, so the tests measure the defence, not the setup).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from workflow_bench.workspace.patch import MAX_PATCH_BYTES, PatchView

pytestmark = pytest.mark.component


def _git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    result = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)
    return result.stdout.decode("utf-8", "replace")


@pytest.fixture
def workspace(tmp_path, git_bin) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def answer():\n    return 41\n")
    (ws / "keep.txt").write_text("unchanged\n")
    (ws / "deps").mkdir()
    (ws / "deps" / "lib.py").write_text("vendored = True\n")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "base")
    return ws


def _view(tmp_path: Path, ws: Path, **kwargs) -> PatchView:
    view = PatchView(tmp_path / "view.git", **kwargs)
    view.record(ws, "base")
    return view


def _patch(view: PatchView, ws: Path) -> tuple[str, dict[str, int]]:
    view.record(ws, "after")
    patch, churn = view.diff("base", "after")
    return patch.decode("utf-8", "replace"), churn


def test_skip_worktree_and_assume_unchanged_do_not_hide_a_change(tmp_path, workspace):
    view = _view(tmp_path, workspace)
    (workspace / "app.py").write_text("def answer():\n    return 42\n")
    (workspace / "keep.txt").write_text("changed too\n")
    _git(workspace, "update-index", "--skip-worktree", "app.py")
    _git(workspace, "update-index", "--assume-unchanged", "keep.txt")
    assert _git(workspace, "diff") == ""  # negative control: the workspace's own git is fooled
    patch, churn = _patch(view, workspace)
    assert "+    return 42" in patch and "+changed too" in patch
    assert churn == {"diff_files": 2, "diff_insertions": 2, "diff_deletions": 2}


def test_ignored_new_files_are_changes_on_disk(tmp_path, workspace):
    view = _view(tmp_path, workspace)
    (workspace / ".git" / "info").mkdir(exist_ok=True)
    (workspace / ".git" / "info" / "exclude").write_text("hidden_by_exclude.py\n")
    (workspace / ".gitignore").write_text("hidden_by_ignore.py\n")
    (workspace / "hidden_by_exclude.py").write_text("EXCLUDED_BUT_ON_DISK = 1\n")
    (workspace / "hidden_by_ignore.py").write_text("IGNORED_BUT_ON_DISK = 1\n")
    assert "hidden_by" not in _git(workspace, "status", "--porcelain")  # negative control
    patch, _ = _patch(view, workspace)
    assert "EXCLUDED_BUT_ON_DISK" in patch and "IGNORED_BUT_ON_DISK" in patch


def test_a_clean_filter_and_diff_attributes_cannot_rewrite_the_patch(tmp_path, workspace):
    view = _view(tmp_path, workspace)
    _git(workspace, "config", "filter.lie.clean", "sed s/42/41/")
    (workspace / ".gitattributes").write_text("*.py filter=lie\nkeep.txt -diff\n")
    (workspace / "app.py").write_text("def answer():\n    return 42\n")
    (workspace / "keep.txt").write_text("secretly changed\n")
    assert "42" not in _git(workspace, "diff", "app.py")  # negative control: the filter lies
    patch, _ = _patch(view, workspace)
    assert "+    return 42" in patch and "+secretly changed" in patch
    assert "+    return 41" not in patch  # no added line that is not on disk


def test_a_fake_head_or_a_deleted_git_dir_changes_nothing(tmp_path, workspace):
    view = _view(tmp_path, workspace)
    (workspace / "app.py").write_text("def answer():\n    return 42\n")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-q", "-m", "fake base")  # HEAD now contains the change
    assert _git(workspace, "diff", "HEAD") == ""  # negative control
    patch, _ = _patch(view, workspace)
    assert "+    return 42" in patch
    subprocess.run(["rm", "-rf", str(workspace / ".git")], check=True)
    patch_again, _ = _patch(view, workspace)
    assert patch_again == patch


def test_links_modes_odd_names_excluded_mounts_and_nested_git(tmp_path, workspace):
    view = _view(tmp_path, workspace, excluded=["deps"])
    (workspace / "link").symlink_to("/etc/passwd")
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "run.sh").chmod(0o755)
    odd = workspace / 'we"ird\nname\xe9.txt'
    odd.write_text("odd\n")
    (workspace / "deps" / "lib.py").write_text("not the agent's\n")
    (workspace / "sub" / ".git").mkdir(parents=True)
    (workspace / "sub" / ".git" / "x").write_text("x\n")
    patch, churn = _patch(view, workspace)
    assert "+/etc/passwd" in patch and "new file mode 120000" in patch  # the link, never its target
    assert "root:" not in patch
    assert "new file mode 100755" in patch
    assert "\\nname" in patch and "not the agent" not in patch and "sub/.git" not in patch
    assert churn["diff_files"] == 3


def test_a_huge_diff_is_truncated_not_an_error(tmp_path, workspace):
    view = _view(tmp_path, workspace)
    (workspace / "big.txt").write_text(("y" * 99 + "\n") * (1024 * 1024 // 100))
    patch, churn = _patch(view, workspace)
    assert len(patch.encode()) <= MAX_PATCH_BYTES + 100 and patch.endswith(
        f"[truncated at {MAX_PATCH_BYTES} bytes]\n"
    )
    assert churn["diff_files"] == 1 and churn["diff_insertions"] == 1024 * 1024 // 100
