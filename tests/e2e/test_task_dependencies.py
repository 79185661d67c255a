"""Test dependencies for task authors: a pytest ``verify`` through a built ``sandbox_dependencies`` tree.

A variant of the demo's trivial task whose authored tests run under pytest (the sandbox's python
has none). ``python -m workflow_bench.tasks deps`` builds the pinned tree from
``corpus/deps/pytest-requirements.txt`` (PyPI wheels) into the task repository's working tree;
the task mounts it and the self-check proves it discriminates. Negative control: the same task
without the mount cannot even run its verify.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from workflow_bench.tasks.__main__ import main as tasks_main

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
CORPUS = REPO_ROOT / "workflow_bench" / "corpus"
SHA = "e9dd5685da8e5b7c10a679c3a225b678c18e49d4"
DEPS = ".wfbench-deps"


def _task(repo, *, with_deps: bool) -> dict:
    task = {
        "id": "trivial-amount-grouping-pytest",
        "class": "trivial",
        "repo": str(repo),
        "ref": SHA,
        "prompt": "Add thousands grouping to format_amount (see the demo's trivial task).",
        "verify": f"PYTHONPATH={DEPS}/site-packages python3 -B -m pytest -q -p no:cacheprovider "
        "tests/test_money.py",
        "oracle": {
            "command": 'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" '
            '"$WORKFLOW_BENCH_ORACLE_ROOT/oracle_test.py"',
            "files": [{"source": "oracle.py", "target": "oracle_test.py"}],
        },
        "reference_patch": "fix.patch",
        "base_expected": {"verify": "pass"},
    }
    if with_deps:
        task["sandbox_dependencies"] = [{"source": DEPS, "target": DEPS}]
    return task


def test_pytest_verify_runs_with_built_dependencies(tmp_path, capsys, bwrap_bin, private_tmpdir):
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(CORPUS / "demo-target.bundle"), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", SHA], check=True)
    requirements = CORPUS / "deps" / "pytest-requirements.txt"
    assert tasks_main(["deps", "python", "--requirements", str(requirements), "--out", str(repo / DEPS)]) == 0
    record = json.loads((repo / DEPS / "wfbench-deps.json").read_text())
    assert record["python"] == "/usr/bin/python3" and len(record["site_packages_manifest_sha256"]) == 64
    shutil.copy(CORPUS / "oracles" / "trivial-amount-grouping.oracle_test.py", tmp_path / "oracle.py")
    shutil.copy(CORPUS / "reference" / "trivial-amount-grouping.patch", tmp_path / "fix.patch")
    tasks = tmp_path / "tasks.yaml"

    tasks.write_text(yaml.safe_dump({"tasks": [_task(repo, with_deps=True)]}, sort_keys=False))
    code = tasks_main(["check", "--tasks", str(tasks), "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "trivial-amount-grouping-pytest" in out and "discriminates" in out

    tasks.write_text(yaml.safe_dump({"tasks": [_task(repo, with_deps=False)]}, sort_keys=False))
    code = tasks_main(["check", "--tasks", str(tasks), "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "verify fails on the untouched base" in out, out


def test_unpinned_requirements_are_refused(tmp_path, capsys):
    requirements = tmp_path / "req.txt"
    requirements.write_text("pytest>=8\n")
    code = tasks_main(["deps", "python", "--requirements", str(requirements), "--out", str(tmp_path / "out")])
    assert code == 2 and "not pinned" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
