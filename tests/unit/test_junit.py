"""JUnit XML parsing (`judging.junit`): the formats real frameworks write, and hostile documents.

Samples are trimmed copies of what the pinned frameworks wrote here (vitest 4.1, pytest 8.3,
node 20 ``--test-reporter=junit``, jest-junit 17); the hostile ones are the classic XML attacks,
each refused without being expanded or fetched.
"""

from __future__ import annotations

import pytest

from workflow_bench.judging.junit import MAX_DEPTH, JUnitError, parse_junit

pytestmark = pytest.mark.unit

VITEST = b"""<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="3" failures="1" errors="0" time="0.005">
    <testsuite name="test/money.test.ts" tests="3" failures="1" errors="0" skipped="1">
        <testcase classname="test/money.test.ts" name="fmt &gt; formats" time="0.001"></testcase>
        <testcase classname="test/money.test.ts" name="fmt &gt; always skipped" time="0">
            <skipped/>
        </testcase>
        <testcase classname="test/money.test.ts" name="fmt &gt; fails" time="0.003">
            <failure message="expected &apos;2.00&apos; to be &apos;x&apos;" type="AssertionError">
                trace</failure>
        </testcase>
    </testsuite>
</testsuites>"""
PYTEST = b"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1">
<testcase classname="tests.test_p" name="test_ok" time="0.001" />
<testcase classname="tests.test_p" name="test_param[1]" time="0.001" />
<testcase classname="tests.test_p" name="test_skip" time="0.000">
  <skipped type="pytest.skip" message="never">x</skipped></testcase>
<testcase classname="tests.test_p" name="test_setup" time="0.000">
  <error message="failed on setup with &quot;E&quot;">E</error></testcase>
<testcase classname="" name="tests.test_broken" time="0.000">
  <error message="collection failure">ImportError</error></testcase>
</testsuite></testsuites>"""
NODE = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="adds" time="0.000737" classname="test"/>
	<testcase name="fails" time="0.000863" classname="test" failure="x">
		<failure type="testCodeFailure" message="Expected values to be strictly equal:2 !== 3">
			[Error]</failure>
	</testcase>
	<testsuite name="group" time="0.000336" tests="2" failures="0" skipped="1">
		<testcase name="inner" time="0.000099" classname="test"/>
		<testcase name="later" time="0.000061" classname="test">
			<skipped type="todo" message="true"/></testcase>
	</testsuite>
	<!-- tests 4 -->
</testsuites>"""


def test_vitest() -> None:
    assert parse_junit(VITEST) == [
        ("test/money.test.ts::fmt > formats", "passed", None),
        ("test/money.test.ts::fmt > always skipped", "skipped", None),
        ("test/money.test.ts::fmt > fails", "failed", "expected '2.00' to be 'x'"),
    ]


def test_pytest_including_setup_errors_and_collection_errors() -> None:
    assert parse_junit(PYTEST) == [
        ("pytest::tests.test_p::test_ok", "passed", None),
        ("pytest::tests.test_p::test_param[1]", "passed", None),
        ("pytest::tests.test_p::test_skip", "skipped", "never"),
        ("pytest::tests.test_p::test_setup", "error", 'failed on setup with "E"'),
        ("pytest::tests.test_broken", "error", "collection failure"),
    ]


def test_node_test_runner_with_nested_suites() -> None:
    assert parse_junit(NODE) == [
        ("test::adds", "passed", None),
        ("test::fails", "failed", "Expected values to be strictly equal:2 !== 3"),
        ("group::test::inner", "passed", None),
        ("group::test::later", "skipped", "true"),
    ]


def test_a_bare_testsuite_root_and_the_worst_child_outcome() -> None:
    doc = b'<testsuite name="s"><testcase name="t"><skipped/><failure>first line\nsecond</failure></testcase>'
    doc += b"</testsuite>"
    assert parse_junit(doc) == [("s::t", "failed", "first line")]


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<testsuites><testsuite name="&lol3;"><testcase name="t"/></testsuite></testsuites>"""
XXE = b"""<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<testsuites><testsuite name="&x;"><testcase name="t"/></testsuite></testsuites>"""
DTD_ONLY = b"""<?xml version="1.0"?><!DOCTYPE testsuites SYSTEM "http://example.invalid/junit.dtd">
<testsuites><testsuite name="s"><testcase name="t"/></testsuite></testsuites>"""


@pytest.mark.parametrize(
    "document", [BILLION_LAUGHS, XXE, DTD_ONLY], ids=["billion-laughs", "xxe", "external-dtd"]
)
def test_dtds_entities_and_external_references_are_refused(document) -> None:
    with pytest.raises(JUnitError, match=r"^forbidden XML \("):
        parse_junit(document)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (b"<testsuites><testsuite>", "malformed XML"),
        (b"", "malformed XML"),
        (b"<html/>", "the root element is <html>, not <testsuites> or <testsuite>"),
        (
            b"<testsuites>"
            + b"<testsuite>" * (MAX_DEPTH + 2)
            + b"</testsuite>" * (MAX_DEPTH + 2)
            + b"</testsuites>",
            f"suites nest deeper than {MAX_DEPTH} levels",
        ),
    ],
    ids=["truncated", "empty", "not-junit", "too-deep"],
)
def test_what_is_no_junit_report_is_refused_with_the_reason(document, reason) -> None:
    with pytest.raises(JUnitError) as caught:
        parse_junit(document)
    assert str(caught.value).startswith(reason)


def test_an_empty_report_has_zero_cases_and_names_are_bounded() -> None:
    assert parse_junit(b"<testsuites/>") == []
    long = b'<testsuites><testsuite><testcase name="' + b"n" * 5000 + b'"/></testsuite></testsuites>'
    ((test_id, outcome, _),) = parse_junit(long)
    assert len(test_id) == 1000 and outcome == "passed"
    assert parse_junit(b"<testsuites><testsuite><testcase/></testsuite></testsuites>") == [
        ("<unnamed test case>", "passed", None)
    ]


def test_depth_and_case_count_bounds_are_exact(monkeypatch) -> None:
    def nested(levels: int) -> bytes:
        return (
            b"<testsuites>"
            + b"<testsuite>" * levels
            + b'<testcase name="t"/>'
            + b"</testsuite>" * levels
            + b"</testsuites>"
        )

    assert parse_junit(nested(MAX_DEPTH - 1)) == [("t", "passed", None)]  # the test case sits at MAX_DEPTH
    with pytest.raises(JUnitError, match=f"deeper than {MAX_DEPTH}"):
        parse_junit(nested(MAX_DEPTH))
    from workflow_bench.judging import junit

    monkeypatch.setattr(junit, "MAX_TESTCASES", 3)
    three = b"<testsuites>" + b'<testcase name="t"/>' * 3 + b"</testsuites>"
    assert len(parse_junit(three)) == 3
    with pytest.raises(JUnitError, match=r"^more than 3 test cases$"):
        parse_junit(three.replace(b"</testsuites>", b'<testcase name="u"/></testsuites>'))


def test_case_details_unnamed_roots_other_children_ties_and_bounds() -> None:
    assert parse_junit(b'<testsuite><testcase name="t"/></testsuite>') == [("t", "passed", None)]
    doc = (
        b'<testsuites><testcase name="t"><system-out>noise</system-out>'
        b'<failure message="first"/><error message="second"/></testcase></testsuites>'
    )
    assert parse_junit(doc) == [("t", "failed", "first")]  # a tie keeps the first; other tags ignored
    long = b'<testsuites><testcase name="t"><failure message="' + b"m" * 900 + b'"/></testcase></testsuites>'
    assert parse_junit(long)[0][2] == "m" * 500
    with pytest.raises(JUnitError) as caught:
        parse_junit(b"<" + b"r" * 60 + b"/>")
    assert str(caught.value) == f"the root element is <{'r' * 40}>, not <testsuites> or <testsuite>"
    with pytest.raises(JUnitError, match=r"^forbidden XML \(DTDForbidden: "):
        parse_junit(BILLION_LAUGHS)
