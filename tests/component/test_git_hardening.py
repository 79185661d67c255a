"""Hardened git against real git: a repository's config, the caller's environment and a global
config planted with a hook never change what the harness's git commands do.

Each planted setting is first shown to take effect under plain git (the negative control), then
shown to be overridden or ignored through ``workspace.git``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from workflow_bench.taskspec.repos import resolve_ref
from workflow_bench.workspace.clone import build_template
from workflow_bench.workspace.git import HARDENED_CONFIG, query_git

pytestmark = pytest.mark.component


def _plain_git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True, timeout=60
    )
    return result.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    _plain_git("init", "-q", "-b", "main", cwd=repo, env=env)
    (repo / "a.txt").write_text("a\n")
    _plain_git("add", "a.txt", cwd=repo, env=env)
    _plain_git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=repo, env=env)
    return repo


def test_a_repositorys_own_config_never_wins_over_a_hardened_option(repo: Path):
    for key, _ in HARDENED_CONFIG:
        _plain_git("config", key, "/planted/by/the/repository", cwd=repo)
        assert _plain_git("config", "--get", key, cwd=repo) == "/planted/by/the/repository"
    for key, value in HARDENED_CONFIG:
        assert query_git(["config", "--get", key], cwd=repo) == (True, value)


def test_the_callers_environment_and_global_config_are_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    other = tmp_path / "other"
    other.mkdir()
    _plain_git("init", "-q", cwd=other)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = leaked-from-home\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.email")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "leaked@env")
    # Plain git obeys all three: the query is redirected and both values leak in.
    assert _plain_git("rev-parse", "--git-dir", cwd=repo) == str(other / ".git")
    assert _plain_git("config", "--get", "user.email", cwd=repo) == "leaked@env"
    monkeypatch.delenv("GIT_DIR")
    assert _plain_git("config", "--get", "user.name", cwd=repo) == "leaked-from-home"
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    head = _plain_git("rev-parse", "HEAD", cwd=repo, env={**os.environ, "GIT_DIR": str(repo / ".git")})

    assert query_git(["rev-parse", "--show-toplevel"], cwd=repo) == (True, str(repo))
    assert query_git(["config", "--get", "user.name"], cwd=repo)[0] is False
    assert query_git(["config", "--get", "user.email"], cwd=repo)[0] is False
    assert resolve_ref(repo, "main") == head


def test_a_hook_in_a_global_config_never_runs_while_a_template_is_built(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "hook-ran"
    (hooks / "post-commit").write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    (hooks / "post-commit").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {hooks}\n")
    monkeypatch.setenv("HOME", str(home))
    # Plain git runs the planted hook on a commit (even with --no-verify: post-commit is not skipped).
    probe = tmp_path / "probe"
    _plain_git("init", "-q", str(probe), cwd=tmp_path)
    _plain_git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "--no-verify",
               "-m", "x", cwd=probe)  # fmt: skip
    assert marker.read_text() == "ran\n"
    marker.unlink()

    sha = resolve_ref(repo, "HEAD")
    assert sha is not None
    build_template(source_repo=repo, sha=sha, dest=tmp_path / "template")
    assert (tmp_path / "template" / "a.txt").read_text() == "a\n"
    assert not marker.exists()
