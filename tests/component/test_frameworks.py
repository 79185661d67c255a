"""Real test frameworks judged in the real sandbox: the JUnit path and every bundled adapter.

pytest (wheels built once by ``tasks deps``), vitest + tsc and jest (+ jest-junit) from the pinned
``tools/test-frameworks`` lockfile (``./dev`` installs it into the cache), and the host's
``node --test``. Each format passes an honest run and refuses, naming the test: a failing test,
an expected test that was skipped, a missing one. The hostile reports (malformed, oversized,
an entity bomb, a symlink, a forged file with the runner killed) are refused; a wrapper that
drops fd 9 (``sh -c 'exec 9>&-'``, ``npm test``, ``make``, ``npx``) still reports through the
channel's path; a run killed at its deadline keeps what streamed before it. The reference
corpus's vitest oracle command, as written, passes on a per-run writable copy of the oracle.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import replace

import pytest

from tests.framework_projects import NODE, PYTHON, TS_ORACLE, TYPESCRIPT, Project, write_files
from tests.framework_runs import COUNT, TS_IDS, TS_SKIP
from tests.framework_runs import ids as _ids
from tests.framework_runs import lock as _lock
from tests.framework_runs import oracle as _oracle
from tests.framework_runs import oracle_snapshot as _oracle_snapshot
from tests.framework_runs import sandbox as _sandbox
from tests.framework_runs import verify as _verify
from tests.framework_runs import workspace as _workspace
from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.outcome_report import run_with_report
from workflow_bench.sandbox import Mount, SandboxKind, create_sandbox
from workflow_bench.taskspec.oracle_staging import stage_oracle, verify_staged
from workflow_bench.taskspec.oracles import OracleFile, OracleSnapshot, OracleTamperError

pytestmark = pytest.mark.component

# ── pytest: stock --junitxml and the bundled adapter ────────────────────────

PYTEST_ADAPTER = PYTHON.verify.replace("-m pytest", '"$WORKFLOW_BENCH_PYTEST"').replace(
    ' --junitxml="$WORKFLOW_BENCH_JUNIT"', ""
)


@pytest.fixture
def py_sandbox(tmp_path, bwrap_bin, sandbox_pytest_deps):
    def make(*, fixed: bool, extra: dict[str, str] | None = None):
        ws = _workspace(tmp_path, PYTHON, fixed=fixed, extra=extra)
        return _sandbox(ws, bwrap_bin, {".wfbench-deps": sandbox_pytest_deps.parent})

    return make


@pytest.mark.parametrize(
    ("command", "prefix", "more"),
    [
        (PYTHON.verify, "pytest::tests.test_slug::", "pytest::tests.test_more::test_fails"),
        (PYTEST_ADAPTER, "tests/test_slug.py::", "tests/test_more.py::test_fails"),
    ],
    ids=["junitxml", "adapter"],
)
def test_pytest_passes_with_its_shared_skip_and_refuses_failures_and_unexpected_skips(
    py_sandbox, tmp_path, command, prefix, more
) -> None:
    passed = [f"{prefix}test_lowercases", f"{prefix}test_joins_words", f"{prefix}test_drops_punctuation"]
    skipped = [f"{prefix}test_windows_reserved_names"]
    fixed = py_sandbox(fixed=True)
    good = _verify(fixed, command, _lock(passed, skipped), tmp_path)
    assert good.passed, good.detail
    assert (good.tests_run, good.tests_passed, good.tests_skipped) == (4, 3, 1)
    # Negative controls: the same run under a lock that expected the skipped test to pass, and
    # the base, where the test the fix adds is missing and one fails.
    strict = _verify(fixed, command, _lock([*passed, *skipped]), tmp_path)
    assert strict.detail == (
        "no proof of success: 1 expected tests were skipped (they passed with the reference patch): "
        f"{prefix}test_windows_reserved_names"
    )
    broken = py_sandbox(fixed=False, extra={"tests/test_more.py": "def test_fails():\n    assert 1 == 2\n"})
    bad = _verify(broken, command, _lock(passed, skipped), tmp_path)
    assert bad.detail == (
        f"no proof of success: 1 of 4 tests failed: {more}; 1 expected tests were not reported: "
        f"{prefix}test_drops_punctuation; the command exited 1"
    )
    assert _ids(bad)[more] == "failed" and {t.message for t in bad.tests if t.test_id == more} == {
        "assert 1 == 2"
    }


def test_a_pytest_run_killed_at_its_deadline_keeps_what_streamed(py_sandbox, tmp_path) -> None:
    slow = "import time\n\n\ndef test_a():\n    pass\n\n\ndef test_b():\n    pass\n\n\n"
    slow += "def test_hangs():\n    time.sleep(600)\n"
    sandbox = py_sandbox(fixed=True, extra={"tests/test_slow.py": slow})
    with pytest.raises(ChargedFailure) as raised:
        _verify(
            sandbox, PYTEST_ADAPTER.replace(" tests", " tests/test_slow.py"), COUNT, tmp_path, timeout_s=10
        )
    assert raised.value.kind == "verify-timeout"
    assert str(raised.value).endswith("before that: 2 run, 2 passed, 0 skipped, 0 failed")
    assert _ids(raised.value.outcome) == {
        "tests/test_slow.py::test_a": "passed",
        "tests/test_slow.py::test_b": "passed",
    }
    # Negative control: stock --junitxml writes only at the end, so a killed run reported nothing.
    with pytest.raises(ChargedFailure) as plain:
        _verify(
            sandbox, PYTHON.verify.replace(" tests", " tests/test_slow.py"), COUNT, tmp_path, timeout_s=10
        )
    assert str(plain.value).endswith("before that: no tests reported")


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        (PYTHON.oracle_command, "pytest::test_slug_oracle::"),
        (
            PYTHON.oracle_command.replace("-m pytest", '"$WORKFLOW_BENCH_PYTEST"').replace(
                ' --junitxml="$WORKFLOW_BENCH_JUNIT"', ""
            ),
            "test_slug_oracle.py::",
        ),
    ],
    ids=["junitxml", "adapter"],
)
def test_the_pytest_oracle_runs_from_its_staged_copy(py_sandbox, tmp_path, command, prefix) -> None:
    snapshot = replace(_oracle_snapshot(PYTHON), command=command)
    names = (
        "test_punctuation_is_dropped",
        "test_runs_of_separators_collapse",
        "test_plain_words_are_unchanged",
    )
    ids = [f"{prefix}{name}" for name in names]
    fixed = _oracle(py_sandbox(fixed=True), snapshot, _lock(ids), tmp_path)
    assert fixed.passed, fixed.detail
    base = _oracle(py_sandbox(fixed=False), snapshot, _lock(ids), tmp_path)
    # The harness's sentinel tests ran in the same file: the framework's exit status 1 is theirs
    # as well, so the failing tests are the reason, and both runs are sealed.
    assert base.detail == f"no proof of success: 2 of 3 tests failed: {ids[0]}, {ids[1]}"
    assert fixed.sealed is True and base.sealed is True
    assert all(t.message is None for t in base.tests)  # oracle failure text never leaves the judge


# ── vitest + tsc, jest: stock JUnit and the bundled reporters ──────────────


@pytest.fixture
def js_sandbox(tmp_path, bwrap_bin, js_frameworks):
    def make(project: Project = TYPESCRIPT, *, fixed: bool, extra: dict[str, str] | None = None):
        ws = _workspace(tmp_path, project, fixed=fixed, extra=extra)
        return _sandbox(ws, bwrap_bin, {"node_modules": js_frameworks})

    return make


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        (TYPESCRIPT.verify, "test/range.test.ts::range > "),
        (
            'npx vitest run --reporter=default --reporter="$WORKFLOW_BENCH_VITEST_REPORTER"',
            "test/range.test.ts > range > ",
        ),
        # npm re-spawns with fds 0-2 only: the reporter reaches the runner through the channel's path.
        (
            'npm test -- --reporter=default --reporter="$WORKFLOW_BENCH_VITEST_REPORTER"',
            "test/range.test.ts > range > ",
        ),
    ],
    ids=["tsc-and-junit", "reporter-through-npx", "reporter-through-npm-test"],
)
def test_vitest(js_sandbox, tmp_path, command, prefix) -> None:
    expectation = _lock([prefix + name for name in TS_IDS], [prefix + TS_SKIP])
    good = _verify(js_sandbox(fixed=True), command, expectation, tmp_path)
    assert good.passed, good.detail + good.output
    assert (good.tests_run, good.tests_passed, good.tests_skipped) == (4, 3, 1)
    bad = _verify(js_sandbox(fixed=False), command, expectation, tmp_path)
    assert bad.detail == (
        f"no proof of success: 1 expected tests were not reported: {prefix}counts down with a negative step"
    )


def test_a_type_error_stops_the_verify_with_a_reason_that_says_so(js_sandbox, tmp_path) -> None:
    broken = {"src/typo.ts": "export const n: number = 'not a number';\n"}
    outcome = _verify(js_sandbox(fixed=True, extra=broken), TYPESCRIPT.verify, COUNT, tmp_path)
    assert outcome.detail.startswith(
        "no proof of success: no test reported a result (the command exited 2): "
    )
    assert "error TS2322" in outcome.output


def test_the_vitest_oracle_through_the_reporter(js_sandbox, tmp_path) -> None:
    command = TYPESCRIPT.oracle_command.replace(
        '--reporter=junit --outputFile="$WORKFLOW_BENCH_JUNIT"',
        '--reporter="$WORKFLOW_BENCH_VITEST_REPORTER"',
    )
    snapshot = replace(_oracle_snapshot(TYPESCRIPT), command=command)
    names = ("counts down to just above the end", "skips values on the way down", "still counts up")
    ids = [f"<oracle-root>/{TS_ORACLE}.oracle.test.ts > {name}" for name in names]
    fixed = _oracle(js_sandbox(fixed=True), snapshot, _lock(ids), tmp_path)
    assert fixed.passed, fixed.detail
    base = _oracle(js_sandbox(fixed=False), snapshot, _lock(ids), tmp_path)
    # The harness's sentinel tests ran in the same file: the framework's exit status 1 is theirs
    # as well, so the failing tests are the reason, and both runs are sealed.
    assert base.detail == f"no proof of success: 2 of 3 tests failed: {ids[0]}, {ids[1]}"
    assert fixed.sealed is True and base.sealed is True


JEST_ORACLE = {
    "sum.oracle.test.js": """const path = require('node:path');
const { add } = require(path.join(process.cwd(), 'jt', 'add.js'));
test('adds negatives', () => expect(add(-1, -2)).toBe(-3));
test('adds zero', () => expect(add(0, 5)).toBe(5));
"""
}


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        (
            'npx jest --ci --rootDir=. --roots "$WORKFLOW_BENCH_ORACLE_ROOT" '
            '--reporters="$WORKFLOW_BENCH_JEST_REPORTER"',
            "<oracle-root>/sum.oracle.test.js > ",
        ),
        (
            'JEST_JUNIT_OUTPUT_FILE="$WORKFLOW_BENCH_JUNIT" npx jest --ci --rootDir=. '
            '--roots "$WORKFLOW_BENCH_ORACLE_ROOT" --reporters=jest-junit',
            " ::",
        ),
    ],
    ids=["reporter", "jest-junit"],
)
def test_a_jest_oracle(js_sandbox, tmp_path, command, prefix) -> None:
    files = tuple(OracleFile.of(name, text.encode()) for name, text in JEST_ORACLE.items())
    snapshot = OracleSnapshot(command=command, files=files)
    fixed = js_sandbox(fixed=True, extra={"jt/add.js": "exports.add = (a, b) => a + b;\n"})
    outcome = _oracle(fixed, snapshot, COUNT, tmp_path)
    assert outcome.passed and outcome.tests_run == 2, outcome.detail
    assert outcome.sealed is True  # jest's globals registered the sentinels
    broken = js_sandbox(fixed=True, extra={"jt/add.js": "exports.add = (a, b) => Math.abs(a + b);\n"})
    assert _oracle(broken, snapshot, COUNT, tmp_path).detail.startswith(
        "no proof of success: 1 of 2 tests failed: "
    )


def test_the_reference_corpus_vitest_oracle_command_passes_on_a_writable_copy(js_sandbox, tmp_path) -> None:
    snapshot = _oracle_snapshot(TYPESCRIPT)
    file = f"<oracle-root>/{TS_ORACLE}.oracle.test.ts"
    ids = [
        f"{file}::{name}"
        for name in ("counts down to just above the end", "skips values on the way down", "still counts up")
    ]
    fixed = _oracle(js_sandbox(fixed=True), snapshot, _lock(ids), tmp_path)
    assert fixed.passed, fixed.detail
    base = _oracle(js_sandbox(fixed=False), snapshot, _lock(ids), tmp_path)
    # The harness's sentinel tests ran in the same file: the framework's exit status 1 is theirs
    # as well, so the failing tests are the reason, and both runs are sealed.
    assert base.detail == f"no proof of success: 2 of 3 tests failed: {ids[0]}, {ids[1]}"
    assert fixed.sealed is True and base.sealed is True
    # Negative control: the same staged files mounted read-only, as before: vite cannot write its
    # bundled config beside vitest.config.mts, and nothing runs.
    staged, scratch = tmp_path / "staged", tmp_path / "scratch-ro"
    stage_oracle(snapshot, staged)
    scratch.mkdir()
    read_only = run_with_report(
        js_sandbox(fixed=True),
        snapshot.command,
        scratch=scratch,
        expectation=_lock(ids),
        timeout_kind="oracle-timeout",
        timeout_s=120,
        cancel=threading.Event(),
        mounts=(Mount(source=staged, target="/.wfbench-oracle-0123456789abcdef"),),
        env_extra={"WORKFLOW_BENCH_ORACLE_ROOT": "/.wfbench-oracle-0123456789abcdef"},
    )
    assert not read_only.passed and "EROFS" in read_only.output and "timestamp" in read_only.output
    verify_staged(snapshot, staged)


JEST_TESTS = {
    "jt/sum.test.js": """const add = (a, b) => a + b;
describe('add', () => {
  test('adds', () => expect(add(1, 2)).toBe(3));
  test('is commutative', () => expect(add(2, 1)).toBe(add(1, 2)));
  test.skip('adds bigints (not yet)', () => {});
});
""",
}


@pytest.mark.parametrize(
    ("command", "ids"),
    [
        (
            'npx jest --ci --roots jt --reporters=default --reporters="$WORKFLOW_BENCH_JEST_REPORTER"',
            (
                "jt/sum.test.js > add adds",
                "jt/sum.test.js > add is commutative",
                "jt/sum.test.js > add adds bigints (not yet)",
            ),
        ),
        (
            'JEST_JUNIT_OUTPUT_FILE="$WORKFLOW_BENCH_JUNIT" ./node_modules/.bin/jest --ci --roots jt '
            "--reporters=default --reporters=jest-junit",
            ("add::add adds", "add::add is commutative", "add::add adds bigints (not yet)"),
        ),
    ],
    ids=["reporter", "jest-junit"],
)
def test_jest(js_sandbox, tmp_path, command, ids) -> None:
    expectation = _lock(ids[:2], ids[2:])
    good = _verify(js_sandbox(fixed=True, extra=JEST_TESTS), command, expectation, tmp_path)
    assert good.passed and (good.tests_run, good.tests_skipped) == (3, 1), good.detail + good.output
    failing = {"jt/sum.test.js": JEST_TESTS["jt/sum.test.js"].replace("toBe(3)", "toBe(4)")}
    bad = _verify(js_sandbox(fixed=True, extra=failing), command, expectation, tmp_path)
    assert bad.detail == f"no proof of success: 1 of 3 tests failed: {ids[0]}; the command exited 1"


def test_jest_judges_a_retried_test_by_its_last_attempt(js_sandbox, tmp_path) -> None:
    """jest calls the reporter once per attempt under ``jest.retryTimes``: a test that failed and
    then passed passed (as jest says); one that failed every attempt failed."""
    command = 'npx jest --ci --roots jt --reporters=default --reporters="$WORKFLOW_BENCH_JEST_REPORTER"'
    retried = {
        "jt/retry.test.js": """jest.retryTimes(2);
let attempts = 0;
test('passes on its second attempt', () => { attempts += 1; expect(attempts).toBe(2); });
test('fails every attempt', () => expect(1).toBe(FAILS));
"""
    }
    ids = ("jt/retry.test.js > passes on its second attempt", "jt/retry.test.js > fails every attempt")
    passing = {"jt/retry.test.js": retried["jt/retry.test.js"].replace("FAILS", "1")}
    good = _verify(js_sandbox(fixed=True, extra=passing), command, _lock(ids, ()), tmp_path)
    assert good.passed and good.tests_run == 2, good.detail + good.output
    failing = {"jt/retry.test.js": retried["jt/retry.test.js"].replace("FAILS", "2")}
    bad = _verify(js_sandbox(fixed=True, extra=failing), command, _lock(ids, ()), tmp_path)
    assert bad.detail == f"no proof of success: 1 of 2 tests failed: {ids[1]}; the command exited 1"


# ── node --test: stock junit reporter ───────────────────────────────────────


def test_node_test_runner(tmp_path, bwrap_bin) -> None:
    ids = [
        "test::short text stays on one line",
        "test::breaks at the width",
        "test::collapses runs of spaces",
    ]
    expectation = _lock(ids, ["test::hyphenates long words"])
    good = _verify(
        _sandbox(_workspace(tmp_path, NODE, fixed=True), bwrap_bin, {}), NODE.verify, expectation, tmp_path
    )
    assert good.passed and (good.tests_run, good.tests_skipped) == (4, 1), good.detail
    base = _verify(
        _sandbox(_workspace(tmp_path, NODE, fixed=False), bwrap_bin, {}), NODE.verify, expectation, tmp_path
    )
    assert (
        base.detail
        == "no proof of success: 1 expected tests were not reported: test::collapses runs of spaces"
    )
    snapshot = _oracle_snapshot(NODE)
    oracle_ids = [
        "test::runs of spaces collapse",
        "test::newlines count as spaces",
        "test::plain wrapping is unchanged",
    ]
    fixed = _oracle(
        _sandbox(_workspace(tmp_path / "o", NODE, fixed=True), bwrap_bin, {}),
        snapshot,
        _lock(oracle_ids),
        tmp_path,
    )
    assert fixed.passed, fixed.detail
    unfixed = _oracle(
        _sandbox(_workspace(tmp_path / "o", NODE, fixed=False), bwrap_bin, {}),
        snapshot,
        _lock(oracle_ids),
        tmp_path,
    )
    assert unfixed.detail.startswith(
        "no proof of success: 2 of 3 tests failed: test::runs of spaces collapse, "
    )
    assert fixed.sealed is True and unfixed.sealed is True  # node:test ran the sentinels too


# ── hostile reports and wrappers ────────────────────────────────────────────

PASSING_XML = '<testsuites><testsuite name="s"><testcase classname="c" name="t"/></testsuite></testsuites>'


@pytest.fixture
def plain_sandbox(tmp_path, bwrap_bin):
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "passing.xml").write_text(PASSING_XML)
    unit = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        pass\n"
    make = 'test:\n\tpython3 -I -B "$$WORKFLOW_BENCH_UNITTEST" tests.test_u\n'
    lines = '{"test": "t", "outcome": "passed"}\n{"done": true}\n'
    write_files(
        ws, {"tests/__init__.py": "", "tests/test_u.py": unit, "Makefile": make, "lines.jsonl": lines}
    )
    return create_sandbox(SandboxKind.BWRAP, workspace=ws, claude_bin=None, bwrap_bin=bwrap_bin)


BOMB = (
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><testsuites><testsuite name="&c;"><testcase name="t"/>'
    "</testsuite></testsuites>"
)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (
            "printf '<testsuites><testcase' > \"$WORKFLOW_BENCH_JUNIT\"",
            "the JUnit file 'junit.xml' is no test report: malformed XML",
        ),
        (
            f"printf '%s' '{BOMB}' > \"$WORKFLOW_BENCH_JUNIT\"",
            "the JUnit file 'junit.xml' is no test report: forbidden XML",
        ),
        (
            'truncate -s 17M "$WORKFLOW_BENCH_JUNIT"',
            "the JUnit report was refused: junit.xml is 17825792 bytes; the limit is 16777216",
        ),
        (
            'ln -s /workspace/passing.xml "$WORKFLOW_BENCH_JUNIT"',
            "the JUnit report was refused: junit.xml is a symbolic link",
        ),
        (
            'mkfifo "$WORKFLOW_BENCH_JUNIT_DIR/a.xml"',
            "the JUnit report was refused: a.xml is not a regular file",
        ),
        # Forged: a passing report and a fake outcome report, then the runner is killed so it
        # cannot write its own: no report carries this run's nonce, so the XML never counts.
        (
            'cp passing.xml "$WORKFLOW_BENCH_JUNIT"; for d in /.wfbench-out-*; do printf \'{"nonce": "x"}\' '
            '> "$d/outcome.json"; done; kill -9 $PPID',
            "the outcome report's nonce is not this run's (forged or stale)",
        ),
    ],
    ids=["malformed", "entity-bomb", "oversized", "symlink", "fifo", "forged-without-the-nonce"],
)
def test_hostile_junit_is_refused(plain_sandbox, tmp_path, command, reason) -> None:
    outcome = _verify(plain_sandbox, command, COUNT, tmp_path)
    assert not outcome.passed and outcome.detail.startswith(f"no proof of success: {reason}"), outcome.detail
    assert outcome.tests_run is None
    # Negative control: the honest copy of the same file passes.
    honest = _verify(plain_sandbox, 'cp passing.xml "$WORKFLOW_BENCH_JUNIT"', COUNT, tmp_path)
    assert honest.passed and _ids(honest) == {"s::c::t": "passed"}


@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'exec 9>&-; python3 -I -B \"$WORKFLOW_BENCH_UNITTEST\" tests.test_u'",
        "make -s test",
        # A hand-written adapter writing lines to the channel's path, fd 9 gone.
        "sh -c 'exec 9>&-; cat lines.jsonl > \"$WORKFLOW_BENCH_RESULT_PIPE\"'",
    ],
    ids=["sh-closing-fd-9", "make", "hand-written-to-the-path"],
)
def test_line_results_survive_wrappers_that_close_fd_9(plain_sandbox, tmp_path, command, make_bin) -> None:
    outcome = _verify(plain_sandbox, command, COUNT, tmp_path)
    assert outcome.passed and outcome.tests_run == 1, outcome.detail + outcome.output


def test_a_hand_written_adapter_on_a_closed_fd_9_is_told_what_happened(plain_sandbox, tmp_path) -> None:
    line = '{"test": "t", "outcome": "passed"}'
    outcome = _verify(plain_sandbox, f"exec 9>&-; echo '{line}' >&9", COUNT, tmp_path)
    assert outcome.detail.startswith(
        "no proof of success: no test reported a result (the command exited 2): "
    )
    assert "fd 9 is the same pipe, but wrappers such as npx, npm test and make close it" in outcome.detail
    assert _verify(plain_sandbox, f"echo '{line}' >&9; echo '{{\"done\": true}}' >&9", COUNT, tmp_path).passed


def test_a_runner_refuses_a_junit_directory_planted_before_the_run(tmp_path) -> None:
    """The harness mounts a fresh empty JUnit directory per run; the runner checks it anyway."""
    import subprocess

    from workflow_bench.judging.outcome_report import KIT, read_evidence

    junit = tmp_path / "junit"
    junit.mkdir()
    (junit / "junit.xml").write_text(PASSING_XML)
    request = {
        "nonce": "ab" * 16,
        "report": str(tmp_path / "outcome.json"),
        "channel": str(tmp_path / "channel"),
        "junit_dir": str(junit),
        "deadline_s": 30,
        "command": "true",
    }
    subprocess.run(
        ["python3", "-I", "-B", str(KIT / "judge_runner.py")],
        input=(json.dumps(request) + "\n").encode(),
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        check=True,
        timeout=60,
    )
    evidence = read_evidence((tmp_path / "outcome.json").read_bytes(), nonce="ab" * 16, junit_dir=junit)
    assert (
        evidence.problem
        == "the JUnit report was refused: the JUnit directory already held 'junit.xml' when the run started"
    )
    shutil.rmtree(junit)


def test_the_writable_oracle_copy_takes_new_files_but_never_a_changed_oracle_file(
    plain_sandbox, tmp_path
) -> None:
    """The run may write beside the oracle (vite, caches); as root the oracle's own files belong
    to a uid the sandbox does not map, so appending, replacing, renaming and removing all fail."""
    root = '"$WORKFLOW_BENCH_ORACLE_ROOT"'
    attempts = {
        "append": f"echo x >> {root}/check.txt",
        "remove": f"rm -f {root}/check.txt",
        "rename": f"mv {root}/check.txt {root}/moved.txt",
        "chmod": f"chmod 666 {root}/check.txt",
        "replace-dir": f"mv {root}/sub {root}/sub2",
    }
    lines = "; ".join(
        f"if {cmd} 2>/dev/null; then o=failed; else o=passed; fi; "
        f'echo "{{\\"test\\": \\"{name}-refused\\", \\"outcome\\": \\"$o\\"}}" >&9'
        for name, cmd in attempts.items()
    )
    by_product = (
        f'echo cache > {root}/by-product.tmp && echo \'{{"test": "write-beside", "outcome": "passed"}}\' >&9'
    )
    command = f"{lines}; {by_product}; echo '{{\"done\": true}}' >&9"
    files = (OracleFile.of("check.txt", b"oracle\n"), OracleFile.of("sub/inner.txt", b"inner\n"))
    snapshot = OracleSnapshot(command=command, files=files)
    if os.geteuid() != 0:  # the staged files belong to the sandbox's mapped uid: caught afterwards
        with pytest.raises(OracleTamperError):
            _oracle(plain_sandbox, snapshot, COUNT, tmp_path)
        return
    outcome = _oracle(plain_sandbox, snapshot, COUNT, tmp_path)
    assert outcome.passed, _ids(outcome)  # and verify_staged found every byte intact (else it raised)
    assert set(_ids(outcome)) == {f"{name}-refused" for name in attempts} | {"write-beside"}
