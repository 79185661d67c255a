"""Sentinels written as the oracle's own tests (issue 31): nothing fixed marks them, real
frameworks report them as planned, reported ids are told apart on the host alone, and the kit's
framework guard sees a patched framework.

The staged files are run by the real unittest and pytest (subprocesses); the fixed-shape block
(``fixed_shape=True``) is the negative control: every feature the sentinel-aware attacks used is
in it.
"""

from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_bench.judging import outcome_report
from workflow_bench.judging.sentinels import (
    BANNER,
    Sentinel,
    SentinelPlan,
    add_sentinels,
    check,
    matches,
    split,
)
from workflow_bench.judging.verdict import Expectation, RunEvidence, TestResult, verdict
from workflow_bench.taskspec.oracles import OracleFile, OracleSnapshot

ORACLE = """import unittest

from amounts import double


class DoubleTest(unittest.TestCase):
    def test_doubles_small_numbers(self):
        self.assertEqual(double(2), 4)

    def test_doubles_negative_numbers(self):
        self.assertEqual(double(-3), -6)


class DoubleWithSetupTest(unittest.TestCase):
    def setUp(self):
        self.value = double(5)

    def test_setup_value_is_doubled(self):
        self.assertEqual(self.value, 10)


def test_plain_function_doubles_zero():
    assert double(0) == 0


if __name__ == "__main__":
    unittest.main()
"""
FIXED = "def double(x):\n    return 2 * x\n"
BROKEN = "def double(x):\n    return x\n"
HEX = re.compile(r"[0-9a-f]{16}")


def _stage(seed: int, *, fixed_shape: bool = False, text: str = ORACLE, target: str = "test_double.py"):
    snapshot = OracleSnapshot("true", (OracleFile.of(target, text.encode()),))
    staged, plan = add_sentinels(snapshot, rng=random.Random(seed), fixed_shape=fixed_shape)
    return staged.files[0].data.decode(), plan


def _own_names(text: str) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)}


def test_no_fixed_feature_marks_them_and_they_move_between_runs() -> None:
    words = {w for name in _own_names(ORACLE) for w in name.split("_")}
    last_positions, containers = set(), set()
    for seed in range(40):
        text, plan = _stage(seed)
        assert BANNER not in text and "wfbench" not in text.lower() and not HEX.search(text)
        tree = ast.parse(text)  # still Python
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        assert classes == ["DoubleTest", "DoubleWithSetupTest"]  # no class of their own
        musts = sorted(s.must for s in plan.sentinels)
        assert musts in (["failed", "failed", "passed", "skipped"], ["failed", "failed", "skipped"])
        for sentinel in plan.sentinels:
            assert sentinel.token.startswith("test_") and sentinel.token not in _own_names(ORACLE)
            assert set(sentinel.token.split("_")) <= words | {"value", "values", "case", "cases"}
            containers.add(sentinel.scope)
        order = [
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
        ]
        last_positions.add(order[-1] in {s.token for s in plan.sentinels})
        # The must-pass one never goes where a set-up hook runs first.
        assert all(s.scope != "DoubleWithSetupTest" for s in plan.sentinels if s.must == "passed")
    assert containers == {"DoubleTest", "DoubleWithSetupTest", "test_double"}  # classes and the module
    assert last_positions == {True, False}  # not always after the oracle's tests


def test_the_fixed_shape_control_keeps_every_feature_the_attacks_used() -> None:
    text, plan = _stage(0, fixed_shape=True)
    assert BANNER in text and "WfbenchSentinel_" in text
    assert all(HEX.fullmatch(s.token) for s in plan.sentinels)


def _run(tmp_path: Path, text: str, code: str, runner: str) -> list[TestResult]:
    (tmp_path / "amounts.py").write_text(code)
    (tmp_path / "test_double.py").write_text(text)
    if runner == "unittest":
        cmd = [sys.executable, "-m", "unittest", "-v", "test_double"]
        out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120).stderr
        found = re.findall(
            r"^(test\w+) \((test_double\.\w+)(?:\.\w+)?\)[^\n]*?\.\.\. (ok|FAIL|ERROR|skipped)", out, re.M
        )
        kinds = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "skipped": "skipped"}
        return [TestResult(f"{cls}.{name}", kinds[kind]) for name, cls, kind in found]
    junit = tmp_path / "junit.xml"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        "test_double.py",
    ]
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=120)
    from workflow_bench.judging.junit import parse_junit

    return [TestResult(i, o) for i, o, _ in parse_junit(junit.read_bytes())]


@pytest.mark.parametrize("runner", ["unittest", "pytest"])
@pytest.mark.parametrize("code", [FIXED, BROKEN], ids=["fixed", "broken"])
def test_real_frameworks_report_them_as_planned(tmp_path, runner, code) -> None:
    for seed in (1, 2, 3):
        text, plan = _stage(seed)
        reported = _run(tmp_path, text, code, runner)
        if runner == "unittest":  # unittest does not collect the module-level function
            plan = SentinelPlan(tuple(s for s in plan.sentinels if s.scope != "test_double"))
        own, found = split(reported, plan)
        finding = check(plan, found, required=None)
        assert not finding.wrong and not finding.missing, (seed, finding, reported)
        assert {t.test_id.rsplit(".", 1)[-1].rsplit(":", 1)[-1] for t in own} <= _own_names(ORACLE)


def test_ids_are_matched_by_scope_and_name_only() -> None:
    method = Sentinel("test_doubles_zero_numbers", "failed", "test_double.py", "DoubleTest")
    assert matches(method, "wfbench_target_0.DoubleTest.test_doubles_zero_numbers")
    assert matches(method, "<oracle-root>/test_double.py::DoubleTest::test_doubles_zero_numbers")
    assert matches(method, "pytest::<oracle-root>.test_double.DoubleTest::test_doubles_zero_numbers")
    assert not matches(method, "wfbench_target_0.OtherTest.test_doubles_zero_numbers")  # same name elsewhere
    assert not matches(method, "wfbench_target_0.DoubleTest.test_doubles_zero_numbers_too")
    function = Sentinel("test_zero_doubles", "passed", "test_double.py", "test_double")
    assert matches(function, "<oracle-root>/test_double.py::test_zero_doubles[1-2]")
    assert not matches(function, "tests/test_other.py::test_zero_doubles")
    title = Sentinel("groups small amounts", "skipped", "a.test.js", "")
    assert matches(title, "test/a.test.js > suite > groups small amounts")
    assert matches(title, "junit::suite::groups small amounts")
    assert not matches(title, "test/a.test.js > regroups small amounts")


def test_javascript_sentinels_go_among_the_files_tests_with_their_binding() -> None:
    text = (
        "const { test } = require('node:test');\nconst assert = require('node:assert');\n"
        "describe('amounts', () => {\n  it('groups thousands', () => assert.strictEqual(f(1000), '1,000'));\n"
        "  it('keeps small amounts', () => assert.strictEqual(f(9), '9'));\n});\n"
        "test('formats zero', () => assert.strictEqual(f(0), '0'));\n"
    )
    for seed in range(10):
        staged, plan = _stage(seed, text=text, target="a.test.js")
        assert "typeof" not in staged and BANNER not in staged
        assert len(plan.sentinels) == 4
        for sentinel in plan.sentinels:
            line = next(line for line in staged.splitlines() if f"'{sentinel.token}'" in line)
            assert re.match(r"(\s*)(it|test)(\.skip)?\('", line), line
            assert f"'{sentinel.token}'" not in text  # never one of the file's own titles


NODE_CONTEXT_ASSERT = """'use strict'
const { test } = require('node:test')

test('doubles small numbers', t => {
  t.plan(1)
  t.assert.strictEqual(2 * 2, 4)
})

test('doubles negative numbers', (t) => {
  t.assert.strictEqual(-3 * 2, -6)
})

test('keeps zero as zero', async t => {
  t.assert.deepStrictEqual([0 * 2], [0])
})
"""


def _node_outcomes(tmp_path: Path, text: str) -> dict[str, str]:
    """{title: passed/failed/skipped} as the real ``node --test`` reports it (TAP)."""
    path = tmp_path / "a.test.js"
    path.write_text(text)
    out = subprocess.run(
        ["node", "--test", "--test-reporter=tap", str(path)], capture_output=True, text=True, timeout=120
    ).stdout
    found = {}
    for match in re.finditer(r"^\s*(not ok|ok) \d+ - (.*?)(?: # (SKIP).*)?$", out, re.MULTILINE):
        verdict_word, title, skip = match.groups()
        found[title] = "skipped" if skip else ("passed" if verdict_word == "ok" else "failed")
    return found


def test_node_test_context_assert_files_get_sentinels_through_the_test_parameter(tmp_path) -> None:
    """``t.assert`` (node:test's context) binds no ``assert``: a sentinel calling a bare
    ``assert.strictEqual`` throws whatever it must be (the must-pass one reported failed on every
    honest run: fastify's process-warning). Written through the anchor's own parameter, node
    reports each as planned, and the file's own tests still pass."""
    for seed in range(6):
        staged, plan = _stage(seed, text=NODE_CONTEXT_ASSERT, target="a.test.js")
        assert "assert.strictEqual(" not in staged.replace("t.assert.", "")  # no unbound assert
        reported = _node_outcomes(tmp_path, staged)
        for sentinel in plan.sentinels:
            assert reported.get(sentinel.token) == sentinel.must, (seed, sentinel, staged)
        own = {t: o for t, o in reported.items() if t not in {s.token for s in plan.sentinels}}
        assert own == dict.fromkeys(
            ("doubles small numbers", "doubles negative numbers", "keeps zero as zero"), "passed"
        ), (seed, reported)


def test_a_tampered_line_is_tampering_and_a_malformed_one_no_evidence() -> None:
    evidence = RunEvidence(
        exit_code=0, complete=True, tests=(TestResult("a", "passed"),), tampered=("x replaced",)
    )
    result = verdict(evidence, Expectation(min_tests=1))
    assert result.tampered and not result.passed and "x replaced" in result.detail
    report = {"nonce": "n", "exit_code": 0, "tests": {}, "junit": [], "junit_refused": None, "done": True}
    report |= {"timed_out": False, "decoy_bytes": 0}
    good = outcome_report.read_evidence(
        json.dumps({**report, "tampered": ["y"]}).encode(), nonce="n", junit_dir=None
    )
    assert good.tampered == ("y",)
    bad = outcome_report.read_evidence(
        json.dumps({**report, "tampered": [1]}).encode(), nonce="n", junit_dir=None
    )
    assert bad.problem == "the outcome report is malformed"


GUARD_SCRIPT = """
import sys, unittest
sys.path.insert(0, {kit!r})
import wfbench_framework_guard as g
guard = g.Guard(("unittest",))
unittest.TestCase.maxDiff = None  # a setting: allowed
print(guard.changed())
{patch}
print(guard.changed())
"""


@pytest.mark.parametrize(
    ("patch", "finding"),
    [
        ("unittest.TestCase.run = lambda self, result=None: None", "unittest.case.TestCase.run replaced"),
        (
            "type.__setattr__(unittest.TestResult, 'addFailure', print)",
            "unittest.result.TestResult.addFailure replaced",
        ),
        (
            "unittest.TestCase.__getattribute__ = object.__getattribute__",
            "unittest.case.TestCase.__getattribute__ added",
        ),
        ("import builtins; builtins.__build_class__ = print", "builtins.__build_class__ replaced"),
        ("pass", None),  # nothing changed: nothing found (the guard is no blanket alarm)
    ],
)
def test_the_guard_sees_the_framework_patched(patch, finding) -> None:
    script = GUARD_SCRIPT.format(kit=str(outcome_report.KIT), patch=patch)
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    before, after = out.stdout.splitlines()
    assert before == "[]", out.stderr
    assert (finding in after) if finding else after == "[]", after
