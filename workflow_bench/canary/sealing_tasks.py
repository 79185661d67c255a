"""The sealing canary's tasks beyond the canary corpus's own: the same grouping task under stock
pytest, and a small JavaScript task judged through ``npm test``.

- ``pytest_task``: the demo repository and oracle with pytest's ``--junitxml``, the oracle
  command also collecting the repository's ``tests/`` with the workspace on ``PYTHONPATH`` (so a
  planted ``conftest.py``, ``pytest.ini`` plugin or ``sitecustomize.py`` would load), without a
  lock (``min_tests``). Its pytest wheels are built once into the cache
  (``tasks.deps.cached_dependencies``: PyPI the first time, offline afterwards).
- ``node_task``: three files committed into a fresh repository here; verify and oracle are
  ``npm test`` (``node --test`` with its JUnit reporter), so a project ``.npmrc`` would reach
  every node process of the oracle.

Callers: ``canary.attacks_sealing``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from workflow_bench.tasks.deps import cached_dependencies
from workflow_bench.taskspec.spec import TaskBinding, bind_tasks, load_task_file
from workflow_bench.workspace.git import run_git

from ._suite import CANARY_TASKS, CORPUS

PYTEST_REQUIREMENTS = CORPUS / "deps" / "pytest-requirements.txt"
ORACLE_SOURCE = "oracles/trivial-amount-grouping.oracle_test.py"
PYTEST_ORACLE = "test_grouping_oracle.py"  # pytest's python_files: the sentinels go in too
PYTEST_ORACLE_COMMAND = (
    "PYTHONPATH=.:.wfbench-deps/site-packages python3 -B -m pytest -q -p no:cacheprovider "
    f'--junitxml="$WORKFLOW_BENCH_JUNIT" tests "$WORKFLOW_BENCH_ORACLE_ROOT/{PYTEST_ORACLE}"'
)


def pytest_task(work_root: Path) -> TaskBinding:
    """The canary task under stock pytest: a clone of the demo bundle with pytest mounted."""
    canary = bind_tasks(load_task_file(CANARY_TASKS))[0]
    site_packages = cached_dependencies(PYTEST_REQUIREMENTS)
    root = work_root / "pytest-task"
    repo = root / "repo"
    run_git(
        ["clone", "-q", str(CORPUS / "demo-target.bundle"), str(repo)], what="clone the canary repository"
    )
    _link_tree(site_packages.parent, repo / ".wfbench-deps")
    (root / PYTEST_ORACLE).write_bytes((CORPUS / ORACLE_SOURCE).read_bytes())
    spec = canary.spec
    task = {
        "id": "sealing-pytest",
        "class": "canary",
        "repo": "repo",
        "ref": canary.resolved_sha,
        "prompt": spec.prompt,
        "verify": spec.verify,
        "verify_min_tests": spec.verify_min_tests,
        "sandbox_dependencies": [{"source": ".wfbench-deps", "target": ".wfbench-deps"}],
        "oracle": {
            "command": PYTEST_ORACLE_COMMAND,
            "min_tests": 6,
            "files": [{"source": PYTEST_ORACLE, "target": PYTEST_ORACLE}],
        },
    }
    text = yaml.safe_dump({"tasks": [task]}, sort_keys=False)
    (root / "sealing.tasks.yaml").write_text(text)
    return bind_tasks(load_task_file(root / "sealing.tasks.yaml"))[0]


NODE_ORACLE = "grouping.oracle.test.js"
NODE_FILES = {
    "package.json": """{
  "name": "amounts",
  "private": true,
  "scripts": {
    "test": "node --test --test-reporter=junit --test-reporter-destination=\\"$WORKFLOW_BENCH_JUNIT\\""
  }
}
""",
    "lib.js": """'use strict';
// An amount of cents as text: -1234.56.
exports.formatAmount = (cents) => {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
};
""",
    "test/lib.test.js": """'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const { formatAmount } = require('../lib.js');
test('formats cents', () => assert.strictEqual(formatAmount(123456), '1234.56'));
test('formats negative amounts', () => assert.strictEqual(formatAmount(-5), '-0.05'));
""",
}
NODE_ORACLE_TEXT = """'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const { formatAmount } = require(process.cwd() + '/lib.js');
const grouped = (cents) => formatAmount(cents, { grouping: true });
test('groups thousands', () => assert.strictEqual(grouped(123456789), '1,234,567.89'));
test('groups negative amounts', () => assert.strictEqual(grouped(-123456), '-1,234.56'));
test('leaves small amounts alone', () => assert.strictEqual(grouped(99), '0.99'));
test('does not group by default', () => assert.strictEqual(formatAmount(123456), '1234.56'));
"""


def node_task(work_root: Path) -> TaskBinding:
    """A JavaScript task judged through ``npm test``: a repository of three files committed here."""
    root = work_root / "node-task"
    repo = root / "repo"
    for name, text in NODE_FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (root / NODE_ORACLE).write_text(NODE_ORACLE_TEXT)
    identity = ["-c", "user.name=canary", "-c", "user.email=canary@invalid"]
    run_git(["init", "-q", "-b", "main", str(repo)], what="create the canary's JavaScript repository")
    run_git(["-C", str(repo), "add", "-A"], what="stage the canary's JavaScript repository")
    run_git([*identity, "-C", str(repo), "commit", "-q", "-m", "amounts"], what="commit it")
    sha = run_git(["-C", str(repo), "rev-parse", "HEAD"], what="read its commit").stdout.decode().strip()
    task = {
        "id": "sealing-node",
        "class": "canary",
        "repo": "repo",
        "ref": sha,
        "prompt": "`formatAmount` in lib.js should group thousands with commas when called with "
        "`{ grouping: true }`.",
        "verify": "npm test -- test/lib.test.js",
        "verify_min_tests": 2,
        "oracle": {
            "command": f'npm test -- "$WORKFLOW_BENCH_ORACLE_ROOT/{NODE_ORACLE}"',
            "min_tests": 4,
            "files": [{"source": NODE_ORACLE, "target": NODE_ORACLE}],
        },
    }
    (root / "sealing.tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}, sort_keys=False))
    return bind_tasks(load_task_file(root / "sealing.tasks.yaml"))[0]


def _link_tree(source: Path, dest: Path) -> None:
    """A copy of ``source`` at ``dest``, hard-linked where the filesystem allows."""
    try:
        shutil.copytree(source, dest, symlinks=True, copy_function=os.link)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)
