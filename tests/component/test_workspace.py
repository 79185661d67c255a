"""Sanitized templates, clones, snapshots and patch capture with real git and bwrap."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from workflow_bench.sandbox import SandboxKind, create_sandbox
from workflow_bench.workspace.clone import build_template, copy_clone, seed_skills
from workflow_bench.workspace.git import head_sha
from workflow_bench.workspace.patch import PatchView
from workflow_bench.workspace.remove import remove_tree
from workflow_bench.workspace.snapshot import (
    WorkspaceLimitError,
    changed_paths,
    skill_fingerprint,
    workspace_snapshot,
)

pytestmark = pytest.mark.component
CANARY = "WFBENCH-HISTORY-CANARY-7f3a"


def _git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    out = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True).stdout
    return out.decode("utf-8", "replace")


@pytest.fixture
def source_repo(tmp_path, git_bin) -> tuple[Path, str]:
    repo = tmp_path / "src"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "secret.txt").write_text(f"{CANARY}\n")
    (repo / "app.py").write_text("print('v1')\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"first {CANARY}")
    (repo / "secret.txt").unlink()
    (repo / "app.py").write_text("print('v2')\n")
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "run.sh").chmod(0o755)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "second")
    _git(repo, "tag", "v2")
    return repo, _git(repo, "rev-parse", "HEAD").strip()


def test_template_has_one_parentless_commit_and_no_recoverable_history(tmp_path, source_repo):
    repo, sha = source_repo
    dest = tmp_path / "template"
    head = build_template(source_repo=repo, sha=sha, dest=dest)
    assert head != sha
    assert _git(dest, "rev-list", "--all", "--count").strip() == "1"
    assert _git(dest, "tag").strip() == "" and _git(dest, "remote").strip() == ""
    objects = _git(dest, "cat-file", "--batch-all-objects", "--batch")
    assert CANARY not in objects  # negative control below proves this check can see history
    assert CANARY not in _git(dest, "log", "--all", "-p")
    assert (dest / "app.py").read_text() == "print('v2')\n"
    assert (dest / "run.sh").stat().st_mode & 0o111
    assert not (dest / "secret.txt").exists()
    # Negative control: a plain clone does carry the canary, so the check above is meaningful.
    plain = tmp_path / "plain"
    subprocess.run(["git", "clone", "-q", "--no-local", str(repo), str(plain)], check=True)
    assert CANARY in _git(plain, "log", "--all", "-p")


def test_template_is_deterministic(tmp_path, source_repo):
    repo, sha = source_repo
    assert build_template(source_repo=repo, sha=sha, dest=tmp_path / "a") == build_template(
        source_repo=repo, sha=sha, dest=tmp_path / "b"
    )


def test_clone_is_self_contained(tmp_path, source_repo):
    repo, sha = source_repo
    build_template(source_repo=repo, sha=sha, dest=tmp_path / "template")
    copy_clone(tmp_path / "template", tmp_path / "cell")
    assert not (tmp_path / "cell" / ".git" / "objects" / "info" / "alternates").exists()
    pack_or_loose = [p for p in (tmp_path / "cell" / ".git" / "objects").rglob("*") if p.is_file()]
    assert pack_or_loose and all(p.stat().st_nlink == 1 for p in pack_or_loose)


def test_skills_seed_fingerprint_and_patch_capture(tmp_path, source_repo, bwrap_bin):
    repo, sha = source_repo
    template = tmp_path / "template"
    build_template(source_repo=repo, sha=sha, dest=template)
    skills = tmp_path / "toolkit" / "skills"
    (skills / "plan").mkdir(parents=True)
    (skills / "plan" / "SKILL.md").write_text("---\nname: plan\ndescription: d\n---\nbody\n")
    seed_skills(template, skills_root=skills, names=["plan"])
    before = workspace_snapshot(template)
    assert skill_fingerprint(before) is not None
    sandbox = create_sandbox(SandboxKind.BWRAP, workspace=template, claude_bin=None, bwrap_bin=bwrap_bin)
    assert len(head_sha(sandbox)) == 40
    view = PatchView(tmp_path / "view.git")
    view.record(template, "base")
    (template / "app.py").write_text("print('v3')\nprint('more')\n")
    (template / "docs" / "plans").mkdir(parents=True)
    (template / "docs" / "plans" / "p.md").write_text("plan\n")
    (template / "new.py").write_text("x = 1\n")
    after = workspace_snapshot(template)
    assert set(changed_paths(before, after)) == {"app.py", "docs", "docs/plans", "docs/plans/p.md", "new.py"}
    assert skill_fingerprint(after) == skill_fingerprint(before)
    view.record(template, "after")
    patch, churn = view.diff("base", "after")
    assert b"print('more')" in patch and b"new.py" in patch
    assert churn == {"diff_files": 2, "diff_insertions": 3, "diff_deletions": 1}  # plans excluded
    (template / ".claude" / "skills" / "plan" / "SKILL.md").write_text("tampered\n")
    assert skill_fingerprint(workspace_snapshot(template)) != skill_fingerprint(before)


def test_snapshot_does_not_follow_symlinks(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link").symlink_to("/etc/passwd")
    snap = workspace_snapshot(root)
    assert snap["link"] == "link:/etc/passwd"


def _deep_chain(root: Path, depth: int) -> None:
    cwd = os.getcwd()
    try:
        os.chdir(root)
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(cwd)


def test_a_deep_chain_is_a_workspace_limit_and_still_removable(tmp_path):
    # An agent's 3,000-deep chain once raised RecursionError in snapshot and cleanup alike.
    root = tmp_path / "ws"
    root.mkdir()
    _deep_chain(root, 3000)
    try:
        with pytest.raises(WorkspaceLimitError, match="deeper than"):
            workspace_snapshot(root)
        (root / "d").chmod(0o500)  # and a dropped write bit on the way
        remove_tree(root)
        assert not root.exists()
    finally:
        # pytest's own cleanup of tmp_path recurses: a chain left by a failed assertion above
        # would make every later session's cleanup raise RecursionError (seen under mutation).
        _remove_chain(root)


def _remove_chain(root: Path) -> None:
    """Remove whatever is left of a ``_deep_chain`` without recursing and without long paths (the
    chain is deeper than PATH_MAX allows to name): down with ``chdir``, then up, one level each."""
    if not root.exists():
        return
    cwd = os.getcwd()
    try:
        os.chdir(root)
        depth = 0
        while os.path.isdir("d") and not os.path.islink("d"):
            os.chmod("d", 0o700)
            os.chdir("d")
            depth += 1
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(cwd)
    root.rmdir()


def test_a_shallow_tree_snapshots_normally(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    _deep_chain(root, 50)
    assert len(workspace_snapshot(root)) == 50  # negative control for the depth limit
