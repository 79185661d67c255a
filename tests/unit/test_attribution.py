"""Session failures are attributed from the relay's record of the upstream, never excused blindly."""

from __future__ import annotations

import socket
import threading

import pytest

from workflow_bench.cells.sessions import parse_session
from workflow_bench.judging.attribution import attribute_session
from workflow_bench.process import ProcessResult
from workflow_bench.relay.server import EndpointLog, _endpoint_fault, _pipe
from workflow_bench.relay.wire import parse_response

pytestmark = pytest.mark.unit


def _failed(state: str = "exited", returncode: int | None = -9):
    result = ProcessResult(("claude",), state, returncode if state == "exited" else None, b"", False, "", 1.0)
    outcome = parse_session(result, expected_skill=None, secrets=())
    assert outcome.error_kind == "session-error"  # the parser cannot tell who failed it
    return outcome


def test_a_killed_cli_with_a_healthy_endpoint_is_charged() -> None:
    log = EndpointLog()
    log.finish(log.start(), None)
    assert attribute_session(_failed(), log).error_kind == "session-failed"
    # Negative control: the same failure right after the endpoint failed is the endpoint's.
    log.finish(log.start(), "upstream status 529")
    outcome = attribute_session(_failed(), log)
    assert outcome.error_kind == "session-error"
    assert "529" in outcome.error_detail["attribution"]


def test_a_recovered_fault_does_not_excuse_a_later_failure() -> None:
    log = EndpointLog()
    log.finish(log.start(), "upstream status 529")
    log.finish(log.start(), None)  # the retry succeeded
    assert attribute_session(_failed(), log).error_kind == "session-failed"


def test_timeout_is_the_endpoints_only_with_a_request_in_flight() -> None:
    log = EndpointLog()
    log.finish(log.start(), None)
    assert attribute_session(_failed("timeout"), log).error_kind == "session-timeout"
    log.start()  # a model request that never finished: the endpoint stalled
    assert attribute_session(_failed("timeout"), log).error_kind == "session-error"


def test_other_kinds_pass_through() -> None:
    result = ProcessResult(("claude",), "cancelled", None, b"", False, "", 1.0)
    outcome = parse_session(result, expected_skill=None, secrets=())
    log = EndpointLog()
    log.finish(log.start(), None)
    assert attribute_session(outcome, log).error_kind == "cancelled"


def _relay_response(payload: bytes) -> str | None:
    upstream, far = socket.socketpair()
    client, sink = socket.socketpair()
    threading.Thread(target=lambda: (far.sendall(payload), far.close()), daemon=True).start()
    try:
        kept, overflow, delivered = _pipe(upstream, client)
        assert delivered  # the client end stays open: every byte reached it
        return _endpoint_fault(kept, parse_response(kept), overflow)
    finally:
        for s in (upstream, client, sink):
            s.close()


@pytest.mark.parametrize(
    ("payload", "fault"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}", None),
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: message_stop\n\n", None),
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: message_start\n\n",
            "message_stop",
        ),
        (b"HTTP/1.1 529 Overloaded\r\n\r\n{}", "529"),
        (b"HTTP/1.1 429 Too Many\r\n\r\n{}", "429"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n{}", None),  # the request's content: the session's own
        (b"", "no HTTP status"),
    ],
)
def test_relay_classifies_upstream_answers(payload: bytes, fault: str | None) -> None:
    observed = _relay_response(payload)
    if fault is None:
        assert observed is None
    else:
        assert observed is not None and fault in observed
