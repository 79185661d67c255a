"""sandbox_copy and sandbox_dependencies reach every cell: copied inputs committed, dependencies read-only."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from workflow_bench import runner

pytestmark = pytest.mark.e2e


def test_copied_inputs_and_read_only_dependencies(tmp_path, bwrap_bin, claude_bin):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.txt").write_text("tracked\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    (repo / "data.txt").write_text("untracked input\n")  # only on disk, like a fixture or a built asset
    (repo / "deps" / "pkg").mkdir(parents=True)
    (repo / "deps" / "pkg" / "lib.txt").write_text("dependency\n")
    check = (
        "grep -q 'untracked input' data.txt && test -f deps/pkg/lib.txt && ! touch deps/pkg/new 2>/dev/null"
    )
    # A shell oracle speaks the outcome-report protocol itself: one line per test on fd 9.
    report = """printf '{"test": "assets", "outcome": "passed"}\\n{"done": true}\\n' >&9"""
    (tmp_path / "oracle.sh").write_text(f"{check} && {report}\n")
    task = {
        "id": "assets",
        "class": "trivial",
        "repo": str(repo),
        "prompt": "Nothing to do.",
        "verify": check,
        "sandbox_copy": ["data.txt"],
        "sandbox_dependencies": [{"source": "deps", "target": "deps"}],
        "oracle": {"command": 'sh "$WORKFLOW_BENCH_ORACLE_ROOT/oracle.sh"',
                   "files": [{"source": "oracle.sh", "target": "oracle.sh"}]},
    }  # fmt: skip
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}))
    out = tmp_path / "out"
    runner.main(["--tasks", str(tmp_path / "tasks.yaml"), "--provider", "scripted", "--arms", "baseline",
                 "--out", str(out)])  # fmt: skip
    row = json.loads((out / "results.jsonl").read_text())
    assert row["authored_tests_passed"] is True, row["authored_test_output"]
    assert row["oracle_passed"] is True
    assert row["diff_files"] == 0  # the copied input is part of the starting commit, not the agent's work
    assert not (repo / "deps" / "pkg" / "new").exists()
