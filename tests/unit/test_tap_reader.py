"""The TAP adapter's strict reader (frameworks/kit/tap.py, prove's and tape's): a well-formed stream
becomes one result per test (per test line for prove, per ``# name`` group for tape); a malformed
or forged one (a doubled or skipped number, no plan, two plans, a plan the stream does not keep, a
plan in the middle, a bail-out, a non-zero exit with no failure) is refused with the first fault
named, so the file is one errored test, never a pass."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import workflow_bench.judging
from workflow_bench.frameworks import KIT

pytestmark = pytest.mark.unit
sys.path.insert(0, str(Path(workflow_bench.judging.__file__).parent / "kit"))  # its result channel
_spec = importlib.util.spec_from_file_location("tap", KIT / "tap.py")
assert _spec is not None and _spec.loader is not None
tap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tap)
del sys.path[0]

GOOD = """TAP version 13
# a comment
ok 1 - adds
not ok 2 - subtracts
#   Failed test 'subtracts'
    ---
    got: 1
    ...
ok 3 # skip no network
ok 4 - later # TODO not yet
some output the test printed
1..4
"""


def test_a_well_formed_stream_is_one_result_per_test() -> None:
    assert tap.read_tap(GOOD, 1) == [
        ("adds", "passed", None),
        ("subtracts", "failed", "not ok 2 - subtracts"),
        ("no network", "skipped", None),
        ("later", "skipped", None),
    ]
    assert tap.read_tap("1..1\nok 1 - first\n", 0) == [("first", "passed", None)]


@pytest.mark.parametrize(
    ("stream", "code", "fault"),
    [
        ("ok 1 - a\nok 1 - a\n1..2\n", 0, "test 2 is numbered 1"),
        ("ok 1 - a\nok 3 - c\n1..2\n", 0, "test 2 is numbered 3"),
        ("ok - a\n1..1\n", 0, "test 1 is numbered nothing"),
        ("ok 1 - a\n", 0, "0 plans"),
        ("1..1\nok 1 - a\n1..1\n", 0, "2 plans"),
        ("ok 1 - a\n1..3\n", 0, "the plan says 3 tests, the stream has 1"),
        ("ok 1 - a\n1..2\nok 2 - b\n", 0, "neither before the first test nor after the last"),
        ("1..2\nok 1 - a\nBail out! the database is gone\n", 1, "bailed out: the database is gone"),
        ("1..1\nok 1 - a\n", 255, "exited 255 with no failed test"),
    ],
)
def test_a_malformed_or_forged_stream_is_refused_naming_the_fault(stream, code, fault) -> None:
    with pytest.raises(tap.Malformed, match=fault):
        tap.read_tap(stream, code)


# What tape 5.10 prints for one file (`node test/a.js`): a `# name` line per test (t.test's too),
# assertion lines named after the assertion, `# SKIP name` for a test skipped by option, a summary.
TAPE = """TAP version 13
# adds
ok 1 should be strictly equal
ok 2 should be strictly equal
# fails
not ok 3 should be strictly equal
  ---
    operator: equal
  ...
# SKIP skipped one
# nested
# inner
ok 4 should be truthy
# adds
ok 5 later # SKIP

1..5
# tests 5
# pass  3
# fail  1
"""


def test_a_tape_stream_is_one_result_per_tape_test() -> None:
    assert tap.read_tap(TAPE, 1, grouped=True) == [
        ("adds", "passed", None),
        ("fails", "failed", "not ok 3 should be strictly equal"),
        ("skipped one", "skipped", None),
        ("inner", "passed", None),  # "nested" asserted nothing itself: no test
        ("adds [2]", "skipped", None),  # a name used twice stays two tests
    ]


@pytest.mark.parametrize(
    ("stream", "code", "fault"),
    [
        ("# a\nok 1 x\nok 1 x\n1..2\n", 0, "test 2 is numbered 1"),
        ("# a\nok 1 x\n1..2\n", 0, "the plan says 2 tests, the stream has 1"),
        ("# a\nok 1 x\n1..1\n", 1, "exited 1 with no failed test"),
        ("ok 1 x\n1..1\n", 0, "before any test's name"),
        ("# a\nok 1 x\n", 0, "0 plans"),
    ],
)
def test_a_forged_tape_stream_is_refused_naming_the_fault(stream, code, fault) -> None:
    with pytest.raises(tap.Malformed, match=fault):
        tap.read_tap(stream, code, grouped=True)


# What node-tap 21.8 prints for one file (`node test/a.js`): TAP 14, each top-level t.test a test
# line after its indented subtest stream, `# time=…` after the name, a summary comment.
NODE_TAP = """TAP version 14
# Subtest: adds
    ok 1 - should be equal
    1..1
ok 1 - adds # time=23.571ms

# Subtest: fails
    # hi
    not ok 1 - should be equal
      ---
      compare: ===
      ...
    1..1
not ok 2 - fails # time=109.792ms
  ---
  at:
    fileName: test/a.js
  ...

ok 3 - skipped # SKIP
# Subtest: nested
    # Subtest: inner
        ok 1 - should be equal
        1..1
    ok 1 - inner # time=0.957ms
    1..1
ok 4 - nested # time=3.215ms

1..4
# { total: 4, pass: 2, fail: 1, skip: 1 }
# time=273.63ms
"""


def test_a_node_tap_stream_is_one_result_per_top_level_test() -> None:
    assert tap.read_tap(NODE_TAP, 1) == [
        ("adds", "passed", None),
        ("fails", "failed", "not ok 2 - fails # time=109.792ms"),
        ("skipped", "skipped", None),
        ("nested", "passed", None),
    ]
    # Negative control: the same stream claiming success for the failed test but exiting 1.
    with pytest.raises(tap.Malformed, match="exited 1 with no failed test"):
        tap.read_tap(NODE_TAP.replace("not ok 2 - fails", "ok 2 - fails"), 1)
