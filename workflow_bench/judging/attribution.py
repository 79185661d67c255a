"""Who failed a cell: the agent (charged to its arm) or something it cannot touch (excluded).

Contract: a failure is excused (``session-error``, ``infra-error``) only on host-side evidence
the agent cannot produce: the relay's record of the upstream, or the fact that no agent process
had started yet. Everything else that goes wrong once the agent has run is charged to the arm
(the kinds and their reasons live in ``outcomes``).

Session failures, decided from the relay's ``EndpointLog`` (measured, not assumed):
- timed out with a model request still in flight → the endpoint stalled: ``session-error``;
- timed out with none in flight → the time went to the agent's own tools: ``session-timeout``;
- otherwise failed after the endpoint's latest answer was a fault (5xx, 429, auth, a stream cut
  before ``message_stop``, a broken connection) → ``session-error``;
- otherwise (the endpoint answered every request well, yet the CLI died, was killed, exited
  non-zero or left an unusable stream) → ``session-failed``.

Must never: read agent-written files, or excuse a failure on evidence from inside the sandbox.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Protocol, TypeVar

from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.relay.server import EndpointLog


class SessionResult(Protocol):
    """What attribution reads of a session's outcome (``cells.sessions.SessionOutcome`` is one)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # re-attribution returns a copy (``replace``)

    @property
    def error_kind(self) -> ErrorKind | None: ...

    @property
    def error_detail(self) -> Any: ...


Outcome = TypeVar("Outcome", bound=SessionResult)


class ChargedFailure(Exception):
    """A failure the agent could have caused; ``kind`` is a charged error kind.

    ``outcome`` is what the failed step proved before it failed (a timed-out verify's or oracle's
    ``JudgeOutcome``: the tests that had reported), or None.
    """

    def __init__(self, kind: ErrorKind, message: str, *, outcome: Any = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.outcome = outcome


def attribute_session(outcome: Outcome, endpoint: EndpointLog) -> Outcome:
    """Re-attribute a ``session-error`` from what the relay saw; any other outcome is returned as is."""
    if outcome.error_kind != ErrorKind.SESSION_ERROR:
        return outcome
    detail = outcome.error_detail if isinstance(outcome.error_detail, dict) else {}
    state = detail.get("process_state")
    if state == "timeout":
        if endpoint.in_flight_since() is not None:
            return _with(
                outcome, ErrorKind.SESSION_ERROR, "the endpoint stalled: a model request was in flight"
            )
        return _with(
            outcome,
            ErrorKind.SESSION_TIMEOUT,
            "no model request was in flight: the agent's tools used the time",
        )
    if endpoint.last_fault is not None:
        return _with(outcome, ErrorKind.SESSION_ERROR, f"the endpoint failed: {endpoint.last_fault}")
    return _with(
        outcome,
        ErrorKind.SESSION_FAILED,
        "the endpoint answered every request; the CLI failed on its own side",
    )


def _with(outcome: Outcome, kind: ErrorKind, reason: str) -> Outcome:
    detail = dict(outcome.error_detail) if isinstance(outcome.error_detail, dict) else {}
    detail["attribution"] = reason
    return replace(outcome, error_kind=kind, error_detail=detail)
