"""Unit-layer fixtures: ``corpus``, a task corpus folder with a tiny real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import ORACLE_BYTES, ORACLE_SOURCE, git_in


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A corpus folder: ``repo/`` (a git repository with one commit) and one oracle file."""
    root = tmp_path / "corpus"
    repo = root / "repo"
    repo.mkdir(parents=True)
    git_in(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("demo\n")
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "-m", "init")
    (root / "oracles").mkdir()
    (root / ORACLE_SOURCE).write_bytes(ORACLE_BYTES)
    return root
