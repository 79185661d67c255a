"""Tasks on real frameworks, written with stock options only: self-check, lock, oracle and no-op agents.

A pytest task, a vitest + tsc task whose oracle command is shaped exactly like the reference
corpus's (plus the junit flags), and a ``node --test`` task (``tests/framework_projects.py``):
no adapter file and no plugin in any repository, no ``min_tests`` anywhere. Each authored suite
has a test that is always skipped. ``tasks check`` must find that all three discriminate and
record their expected tests (the always-skipped test as may-skip) in the lock beside the task
file; the oracle agent (the real CLI applying each reference patch) must then resolve all three
and the no-op agent none, judged against that lock; editing a task afterwards makes the lock
stale: exit 2, naming it, nothing run.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile

import pytest
import yaml

from tests.builders import agent_sweep
from tests.conftest import link_tree
from tests.framework_projects import PROJECTS, make_repo, write_files
from workflow_bench import runner
from workflow_bench.tasks.__main__ import main as tasks_main

pytestmark = pytest.mark.e2e
IDS = [p.task_id for p in PROJECTS]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, bwrap_bin, js_frameworks, sandbox_pytest_deps):
    """The three tasks in one task file, each repository with its dependency trees in place."""
    root = tmp_path_factory.mktemp("frameworks")
    trees = {".wfbench-deps": sandbox_pytest_deps.parent, "node_modules": js_frameworks}
    tasks = []
    for project in PROJECTS:
        repo, patch = make_repo(root / "repos", project)
        for directory in project.dependencies:
            link_tree(trees[directory], repo / directory)
        write_files(root, {f"reference/{project.task_id}.patch": patch})
        write_files(
            root, {f"oracles/{project.task_id}/{name}": text for name, text in project.oracle.items()}
        )
        tasks.append(
            {
                "id": project.task_id,
                "class": "investigation-bug",
                "repo": f"repos/{project.task_id}",
                "prompt": project.prompt,
                "verify": project.verify,
                "oracle": {
                    "command": project.oracle_command,
                    "files": [
                        {"source": f"oracles/{project.task_id}/{name}", "target": name}
                        for name in project.oracle
                    ],
                },
                "sandbox_dependencies": [{"source": d, "target": d} for d in project.dependencies],
                "reference_patch": f"reference/{project.task_id}.patch",
                # The authored tests do not cover the defect yet; the oracle does.
                "base_expected": {"verify": "pass"},
            }
        )
    path = root / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def checked(corpus, tmp_path_factory):
    """``tasks check`` once: (exit code, stdout, the lock it wrote)."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("tmp")))  # never the shared /tmp
        code = tasks_main(["check", "--tasks", str(corpus), "--repeats", "1"])
    lock = corpus.with_name("tasks.lock.json")
    return code, out.getvalue(), json.loads(lock.read_text()) if lock.exists() else None


def test_the_self_check_finds_every_task_discriminates_and_records_its_expected_tests(checked) -> None:
    code, out, lock = checked
    assert code == 0, out
    for project in PROJECTS:
        (line,) = [ln for ln in out.splitlines() if ln.startswith(project.task_id + " ")]
        assert "  discriminates (reference sha256 " in line and "lock recorded" in line, line
        entry = lock["tasks"][project.task_id]
        assert entry["verify"]["skipped"] == list(project.verify_skipped), entry["verify"]
        assert (
            len(entry["oracle"]["passed"]) == project.passing_oracle_tests and not entry["oracle"]["skipped"]
        )
        # The base run of the oracle ran its tests and failed some: the probe says which.
        assert f"[check] {project.task_id} base oracle: fail (3 run, 1 passed, 0 skipped, 2 failed): " in out


def test_the_oracle_agent_resolves_every_task_and_the_noop_agent_none(
    checked, corpus, tmp_path, claude_bin, private_tmpdir, capsys
) -> None:
    assert checked[0] == 0, checked[1]
    code, solved = agent_sweep(corpus, "oracle", tmp_path, "--arms", "baseline")
    capsys.readouterr()
    assert code == 0 and sorted(r["task"] for r in solved) == sorted(IDS)
    for row in solved:
        assert row["resolved"] is True, (
            row["task"],
            row["error_kind"],
            row["error_detail"],
            row["oracle_output"],
        )
        assert row["expected_tests_digest"] is not None  # judged by the lock
        assert (
            row["verify_tests_skipped"] == 1
            and "1 skipped as with the reference patch" in row["verify_detail"]
        )
        assert row["oracle_tests_run"] == 3 and row["oracle_tests_passed"] == 3
        assert all(t["message"] is None for t in row["oracle_tests"]["tests"])
    code, untouched = agent_sweep(corpus, "noop", tmp_path, "--arms", "baseline")
    capsys.readouterr()
    assert sorted(r["task"] for r in untouched) == sorted(IDS)
    for row in untouched:
        assert row["resolved"] is False and row["oracle_passed"] is False, row["task"]
        assert row["error_kind"] == "oracle-failed", (row["task"], row["error_detail"])
        # The most informative reason: which hidden tests failed. The exit status is none: the
        # harness's must-fail sentinel tests, reported failed as planned, make it non-zero anyway.
        assert row["oracle_output"].startswith(
            "hidden oracle failed: no proof of success: 2 of 3 tests failed: "
        )
        assert row["oracle_sealed"] == "sealed" and "the command exited" not in row["oracle_output"]
        failing = [t for t in row["oracle_tests"]["tests"] if t["outcome"] == "failed"]
        assert len(failing) == 2 and all(t["message"] is None for t in failing)  # ids only, never text
    assert not any(private_tmpdir.iterdir())


def test_a_task_edited_after_the_check_has_a_stale_lock_exit_2_named(
    checked, corpus, tmp_path, capsys
) -> None:
    assert checked[0] == 0, checked[1]
    original = corpus.read_text()
    data = yaml.safe_load(original)
    data["tasks"][1]["verify"] += " --silent"
    try:
        corpus.write_text(yaml.safe_dump(data, sort_keys=False))
        code = runner.main(
            [
                "--tasks",
                str(corpus),
                "--provider",
                "scripted",
                "--arms",
                "baseline",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        err = capsys.readouterr().err
    finally:
        corpus.write_text(original)
    assert code == 2, err
    lock = corpus.with_name("tasks.lock.json")
    assert f"{lock}: task '{IDS[1]}': subject: stale: " in err and "(verify_digest changed)" in err
    assert f"python -m workflow_bench.tasks check --tasks {corpus}" in err
    assert not (tmp_path / "o").exists()  # nothing run, nothing written
