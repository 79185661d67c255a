"""JUnit XML reports, parsed with a hardened parser: every ``<testcase>`` becomes one test result.

Owns ``parse_junit``: bytes the judge runner attested (``judging.outcome_report`` checks size and
sha256 first) → ``(id, outcome, message)`` per test case. ``defusedxml`` refuses DTDs, entity
declarations and external references, so a billion-laughs or XXE document is refused, never
expanded or fetched; the size is capped before parsing and the tree is walked without recursion.

Ids are the ``::``-joined names of the enclosing ``<testsuite>`` elements, the ``classname`` and
the ``name``, without empty parts or a part that repeats its predecessor (vitest names the suite
after the file, as its classname). So vitest gives ``test/a.test.ts::suite > case``, pytest
``pytest::tests.test_a::test_case``, ``node --test`` ``suite::test::case``. The harness normalizes
them afterwards (``judging.test_results``). Outcomes: ``<failure>`` → failed, ``<error>`` →
error, ``<skipped>`` → skipped, none of them → passed; the message is the element's ``message``
attribute (else its first text line), which may quote test source: only verify's messages are
ever kept.

Must never: resolve an entity, read a DTD, follow a reference, or recurse on input depth.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree

MAX_TESTCASES = 100_000  # keep in sync with kit/judge_runner.py MAX_TESTS
MAX_DEPTH = 64  # real reports nest suites a few levels; deeper is not a test report
MAX_NAME_CHARS = 1000
MAX_MESSAGE_CHARS = 500
_OUTCOME_TAGS = {"failure": "failed", "error": "error", "skipped": "skipped"}
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}  # keep in sync with test_results.py


class JUnitError(ValueError):
    """The document is no JUnit report (malformed, forbidden constructs, wrong shape)."""


def parse_junit(data: bytes) -> list[tuple[str, str, str | None]]:
    """Every test case of one JUnit document as ``(id, outcome, message)``, in document order."""
    try:
        root = defusedxml.ElementTree.fromstring(data, forbid_dtd=True)
    except defusedxml.DefusedXmlException as exc:
        raise JUnitError(
            f"forbidden XML ({type(exc).__name__}: DTDs, entities and external references)"
        ) from None
    except ParseError as exc:
        raise JUnitError(f"malformed XML ({exc})") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitError(f"the root element is <{root.tag[:40]}>, not <testsuites> or <testsuite>")
    cases: list[tuple[str, str, str | None]] = []
    root_path = (root.get("name", ""),) if root.tag == "testsuite" else ()
    stack: list[tuple[Element, tuple[str, ...], int]] = [(root, root_path, 0)]
    while stack:
        element, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise JUnitError(f"suites nest deeper than {MAX_DEPTH} levels")
        children = []
        for child in element:
            if child.tag == "testsuite":
                children.append((child, (*path, child.get("name", "")), depth + 1))
            elif child.tag == "testcase":
                children.append((child, path, depth + 1))
        stack.extend(reversed(children))
        if element.tag == "testcase":
            if len(cases) >= MAX_TESTCASES:
                raise JUnitError(f"more than {MAX_TESTCASES} test cases")
            cases.append(_case(element, path))
    return cases


def _case(element: Element, suites: tuple[str, ...]) -> tuple[str, str, str | None]:
    parts: list[str] = []
    for part in (*suites, element.get("classname", ""), element.get("name", "")):
        part = " ".join(part.split())
        if part and (not parts or parts[-1] != part):
            parts.append(part)
    test_id = "::".join(parts)[:MAX_NAME_CHARS] or "<unnamed test case>"
    outcome, message = "passed", None
    for child in element:
        found = _OUTCOME_TAGS.get(child.tag)
        if found is not None and _RANK[found] > _RANK[outcome]:
            outcome, message = found, _message(child)
    return test_id, outcome, message


def _message(element: Element) -> str | None:
    text = element.get("message") or next(
        (ln.strip() for ln in (element.text or "").splitlines() if ln.strip()), ""
    )
    return text[:MAX_MESSAGE_CHARS] or None
