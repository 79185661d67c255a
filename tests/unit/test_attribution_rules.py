"""What an attributed session failure records: the verdict, and why, beside the parser's own detail.

test_attribution.py pins which kind each endpoint history yields; these pin that every verdict
carries its reason (a row reader must see why a failure was or was not excused) and that the
attribution adds to the session's detail instead of replacing it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from workflow_bench.cells.sessions import parse_session
from workflow_bench.judging.attribution import attribute_session
from workflow_bench.process import ProcessResult
from workflow_bench.relay.server import EndpointLog

pytestmark = pytest.mark.unit


def _failed(state: str):
    result = ProcessResult(("claude",), state, -9 if state == "exited" else None, b"", False, "", 1.0)
    return parse_session(result, expected_skill=None, secrets=())


def _log(*, in_flight: bool = False, fault: str | None = None) -> EndpointLog:
    log = EndpointLog()
    log.finish(log.start(), fault)
    if in_flight:
        log.start()
    return log


@pytest.mark.parametrize(
    ("state", "log", "kind", "why"),
    [
        ("timeout", _log(in_flight=True), "session-error", "stalled"),
        ("timeout", _log(), "session-timeout", "no model request was in flight"),
        ("exited", _log(fault="upstream status 529"), "session-error", "upstream status 529"),
        ("exited", _log(), "session-failed", "the endpoint answered every request"),
    ],
)
def test_every_attribution_says_why_and_keeps_the_session_detail(state, log, kind, why) -> None:
    outcome = _failed(state)
    before = dict(outcome.error_detail)
    attributed = attribute_session(outcome, log)
    assert attributed.error_kind == kind
    assert why in attributed.error_detail["attribution"]
    assert {k: attributed.error_detail[k] for k in before} == before  # added to, not replaced
    assert outcome.error_detail == before  # the input outcome is not changed


def test_a_session_error_without_structured_detail_is_still_attributed() -> None:
    outcome = replace(_failed("exited"), error_detail=None)
    attributed = attribute_session(outcome, _log())
    assert attributed.error_kind == "session-failed"
    assert attributed.error_detail == {
        "attribution": "the endpoint answered every request; the CLI failed on its own side"
    }
