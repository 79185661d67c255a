"""TAP from JavaScript, end to end: a project whose tests tape runs (``test/*.js`` that require
tape, package.json's test script ``tape``) becomes a task with ``tasks new`` alone; the harness's
TAP adapter (``frameworks/kit/tap.py``, prove's reader) runs each file with node and reads its
stream strictly, one test per tape test. Self-check passes (base fails, reference passes, the
tape sentinels as planned: the file is sealed); the oracle agent resolves it, the no-op agent
does not. A helper beside the tests (it loads no tape) is not run as one. Negative controls: a
forged tape stream (a doubled number, a plan the stream does not keep, an exit with no failure
reported) is refused by the reader (tests/unit/test_tap_reader.py); an adapter that reported
failures as passes was caught here by the sentinels (tampered, the task refused), by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import link_tree
from tests.fix_tasks import sanity_rows, task_from_fix

pytestmark = pytest.mark.e2e
PROMPT = "clamp returns the lower bound for values above the range; it should return the upper bound.\n"
CLAMP = (
    "module.exports = function clamp(v, lo, hi) {\n  if (v < lo) return lo;\n"
    "  if (v > hi) return lo;\n  return v;\n};\n"
)
PACKAGE = {"name": "clamp", "private": True, "scripts": {"test": "tape test/*.js"}}
BASE = {
    "package.json": json.dumps({**PACKAGE, "devDependencies": {"tape": "5.10.2"}}, indent=2),
    ".gitignore": "node_modules\n",
    "lib/clamp.js": CLAMP,
    "test/clamp.js": (
        "const test = require('tape');\nconst clamp = require('../lib/clamp');\n\n"
        "test('low', (t) => {\n  t.equal(clamp(-5, 0, 10), 0);\n  t.end();\n});\n"
    ),
    "test/helpers.js": "module.exports = { bounds: [0, 10] };\n",  # loads no tape: not a test file
}
FIX = {
    "lib/clamp.js": CLAMP.replace("if (v > hi) return lo", "if (v > hi) return hi"),
    "test/high.js": (
        "const test = require('tape');\nconst clamp = require('../lib/clamp');\n"
        "const { bounds } = require('./helpers');\n\n"
        "test('high', function (t) {\n  t.equal(clamp(50, ...bounds), 10);\n  t.end();\n});\n"
        "test('at the bound', (t) => {\n  t.equal(clamp(10, ...bounds), 10);\n"
        "  t.equal(clamp(9, 0, 10), 9);\n  t.end();\n});\n"
    ),
}


@pytest.fixture(scope="module")
def tape_task(tmp_path_factory, bwrap_bin, js_frameworks) -> Path:
    return task_from_fix(
        tmp_path_factory.mktemp("tape"),
        "clamp",
        "tape-clamp",
        BASE,
        FIX,
        prompt=PROMPT,
        prepare=lambda repo: link_tree(js_frameworks, repo / "node_modules"),
    )


def test_tasks_new_writes_a_tape_task_read_as_tap_with_a_sealed_lock(tape_task) -> None:
    (task,) = yaml.safe_load(tape_task.read_text())["tasks"]
    assert task["verify"] == 'python3 -I -B "$WORKFLOW_BENCH_TAP" tape test/clamp.js'
    assert [f["target"] for f in task["oracle"]["files"]] == ["test/high.js"]
    assert task["sandbox_dependencies"] == [{"source": "node_modules", "target": "node_modules"}]
    entry = json.loads(tape_task.with_name("tasks.lock.json").read_text())["tasks"]["tape-clamp"]
    assert entry["oracle"]["passed"] == ["test/high.js::at the bound", "test/high.js::high"]
    assert entry["verify"]["passed"] == ["test/clamp.js::low"]
    assert entry["oracle_sealed"] == ["test/high.js"]


def test_the_oracle_agent_resolves_the_tape_task_and_the_noop_agent_does_not(
    tape_task, tmp_path, claude_bin, private_tmpdir, capsys
) -> None:
    solved, untouched = sanity_rows(tape_task, tmp_path, capsys)
    assert solved["oracle_sealed"] == "sealed" and solved["oracle_tests_passed"] == 2
    report = (tmp_path / "out-oracle" / "report.md").read_text()
    assert f"- Agent: the agent script `{tmp_path / 'oracle.yaml'}` (sha256 `" in report
    assert "high" in untouched["oracle_output"]
