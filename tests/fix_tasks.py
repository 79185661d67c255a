"""A task made with ``tasks new`` from a two-commit fixture repository, and its two sanity sweeps.

For the end-to-end tests of one framework or toolchain each (Java, Go, Rust, tape, TAP): the
repository holds ``base``, then ``fix`` (a commit "fix: the upper bound"); ``tasks new`` turns that
commit into a task with ``--repeats 1``; ``sanity_rows`` sweeps it with the oracle agent, which
must resolve it, and with the no-op agent, whose hidden oracle must fail. The checks that say
what is particular to each framework stay in its module.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.builders import agent_sweep, git_in
from tests.conftest import short_dir
from workflow_bench.tasks.__main__ import main as tasks_main


def fix_repo(
    repo: Path, base: Mapping[str, str], fix: Mapping[str, str], *, message: str = "fix: the upper bound"
) -> Path:
    """``repo`` created with two commits: ``base``, then ``fix`` (files by path → text), the
    second with ``message``."""
    repo.mkdir(parents=True)
    git_in(repo, "init", "-q", "-b", "main")
    for files, subject in ((base, "base"), (fix, message)):
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git_in(repo, "add", "-A")
        git_in(repo, "commit", "-q", "-m", subject)
    return repo


def task_from_fix(
    root: Path,
    repo_name: str,
    task_id: str,
    base: Mapping[str, str],
    fix: Mapping[str, str],
    *,
    prompt: str,
    prepare: Callable[[Path], None] | None = None,
) -> Path:
    """``root/tasks/tasks.yaml``, written by ``tasks new`` from the fix commit of ``root/repo_name``
    (``prepare(repo)`` first, e.g. to link a dependency tree into the working tree)."""
    repo = fix_repo(root / repo_name, base, fix)
    if prepare is not None:
        prepare(repo)
    tasks = root / "tasks" / "tasks.yaml"
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    with short_dir() as tmpdir, pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmpdir))
        assert tasks_main([*argv, "--prompt", prompt, "--id", task_id, "--repeats", "1"]) == 0
    return tasks


def sanity_rows(
    tasks: Path, work: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one-task file's row under the oracle agent (resolved, exit 0) and under the no-op agent
    (not resolved: ``oracle-failed``), each swept on the baseline arm with the scripted provider."""
    code, solved = agent_sweep(tasks, "oracle", work, "--arms", "baseline")
    capsys.readouterr()
    (oracle,) = solved
    assert code == 0 and oracle["resolved"] is True, (
        oracle["error_kind"],
        oracle["error_detail"],
        oracle["oracle_output"],
    )
    _, untouched = agent_sweep(tasks, "noop", work, "--arms", "baseline")
    capsys.readouterr()
    (noop,) = untouched
    assert noop["resolved"] is False and noop["error_kind"] == "oracle-failed", noop["error_detail"]
    return oracle, noop
