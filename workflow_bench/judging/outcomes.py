"""The closed `error_kind` vocabulary and the row predicates derived from it.

Owns the one table that says, for every `error_kind` a row may carry, whether that row is
excluded from medians and resolve denominators, whether it is an execution failure or an
evidence failure, and whether it counts toward the outage breaker. Every set and predicate here
is computed from that table, so a policy change is a one-line diff in `_KINDS` and nowhere else.
The values follow the reference harness (reference-harness.md §5.1).

Must never: import from higher layers, perform I/O, or grow a second copy of any flag. Callers:
`cell` (producing kinds), `schedule` (breaker), `aggregate`, `report`, `reuse`, `promotion`.

The evolve-only `runtime-cap-exhausted` kind never appears in a results row, so it is not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeAlias

Row: TypeAlias = Mapping[str, Any]
"""One `results.jsonl` row, as parsed JSON."""


class UnknownErrorKind(ValueError):
    """An `error_kind` outside the closed vocabulary."""


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """One entry of the vocabulary and its classification flags."""

    name: str
    """The exact `error_kind` string stored in rows."""
    produced_when: str
    """One line: what makes a cell record this kind (shown in the report legend)."""
    is_excluded: bool
    """Dropped from medians and resolve denominators: the row measured nothing usable."""
    is_execution_failure: bool
    """The process or its tooling did not complete."""
    is_evidence_failure: bool
    """It completed, but what it produced cannot be trusted or scored."""
    is_systemic: bool
    """Counts toward the outage breaker's consecutive-failure streak."""

    def __post_init__(self) -> None:
        # A kind that executed-and-failed but still feeds medians would let a dead session's
        # placeholder zeros drag an arm's cost down; the table must never say that.
        if self.is_execution_failure and not self.is_excluded:
            raise ValueError(f"error kind {self.name!r}: an execution failure must be excluded")


def _kind(
    name: str,
    produced_when: str,
    *,
    excluded: bool = False,
    execution: bool = False,
    evidence: bool = False,
    systemic: bool = False,
) -> ErrorKind:
    return ErrorKind(name, produced_when, excluded, execution, evidence, systemic)


# Keep in sync with reference-harness.md §5.1; tests/unit/test_outcomes.py restates every flag.
# skill-not-invoked is an evidence failure yet stays IN the medians: the session ran and spent
# real tokens, and dropping an arm's systematically worst rows biases toward promoting it.
# evidence-unverified is excluded but not systemic: it resets the breaker streak, because a
# transcript we could not verify says nothing about the upstream being down.
_KINDS: tuple[ErrorKind, ...] = (
    _kind(
        "session-error",
        "the Claude process exited abnormally, its stream was unparseable or unterminated, "
        "it reported an error, or its usage lacked one of the four token fields",
        excluded=True,
        execution=True,
        systemic=True,
    ),
    _kind(
        "infra-error",
        "the harness failed while preparing or running the cell (sandbox, process, OS error) "
        "or the verifier's infrastructure failed",
        excluded=True,
        execution=True,
        systemic=True,
    ),
    _kind(
        "cleanup-failure",
        "the cell's clone could not be removed afterwards (overrides the primary kind)",
        excluded=True,
        execution=True,
        systemic=True,
    ),
    _kind(
        "cancelled",
        "the sweep was cancelled (SIGINT/SIGTERM or the outage breaker) before or during the cell",
        excluded=True,
        execution=True,
    ),
    _kind(
        "evidence-unverified",
        "the session succeeded but its event stream, skill evidence or transcript could not be "
        "verified (sets transcript_missing)",
        excluded=True,
        evidence=True,
    ),
    _kind(
        "evidence-tampered",
        "the CLI's stream disagrees with the relay's wire record (an event the model never "
        "produced, a forged result or usage, a request that continues no conversation of the "
        "session): charged to the arm, never excluded",
        evidence=True,
    ),
    _kind(
        "review-evidence-invalid",
        "the review artifact was missing or invalid, or the review changed the workspace or skills",
        excluded=True,
        evidence=True,
        systemic=True,
    ),
    _kind(
        "skill-not-invoked",
        "the event stream shows no successful request for the arm's expected skill",
        evidence=True,
    ),
    _kind(
        "plan-evidence-invalid",
        "planning did not produce exactly one plan document, changed other paths, or altered skills",
    ),
    _kind(
        "implementation-evidence-invalid",
        "a work session changed the evaluated skill files",
    ),
    _kind("verify-failed", "the sessions succeeded but the task's authored tests failed"),
    _kind(
        "oracle-failed",
        "the authored tests passed but the hidden oracle (or hidden review labels) failed",
    ),
    _kind("oracle-unavailable", "no hidden oracle snapshot was available to judge the cell"),
    _kind(
        "no-work-produced",
        "an implementation arm finished without changing anything outside its plan",
    ),
    # Charged to the arm: only the agent's processes (and the judges of its code) run in the cell's
    # cgroups and volume, so hitting a bound is the agent's doing; never excluded, never systemic.
    _kind(
        "resource-limit",
        "a process of the cell hit a kernel bound: the memory limit (OOM kill), the process limit "
        "(a refused fork) or the disk volume (full); only the agent's processes run there",
    ),
)

ERROR_KINDS: Mapping[str, ErrorKind] = MappingProxyType({kind.name: kind for kind in _KINDS})
"""Every `error_kind` a row may carry, in the order of the reference table."""

EXCLUDED_ERROR_KINDS = frozenset(k.name for k in _KINDS if k.is_excluded)
EXECUTION_FAILURE_KINDS = frozenset(k.name for k in _KINDS if k.is_execution_failure)
EVIDENCE_FAILURE_KINDS = frozenset(k.name for k in _KINDS if k.is_evidence_failure)
SYSTEMIC_ERROR_KINDS = frozenset(k.name for k in _KINDS if k.is_systemic)


def error_kind_info(name: str) -> ErrorKind:
    """The vocabulary entry for `name`.

    Raises:
        UnknownErrorKind: `name` is not in the vocabulary; the message lists the known kinds.
    """
    try:
        return ERROR_KINDS[name]
    except KeyError:
        known = ", ".join(ERROR_KINDS)
        raise UnknownErrorKind(f"unknown error_kind {name!r}; known kinds: {known}") from None


# The predicates read rows as recorded, so a kind outside the vocabulary (an older schema, a
# hand-edited file) carries no flag here; the report legend names it as unknown instead of
# this layer crashing and losing a sweep's paid evidence.


def execution_failed(row: Row) -> bool:
    """The process or its tooling did not complete: nothing was measured."""
    return row.get("error_kind") in EXECUTION_FAILURE_KINDS


def evidence_failed(row: Row) -> bool:
    """It completed, but what it produced cannot be trusted or scored.

    Also true when the review evidence was marked invalid or the transcript is missing, even if
    an earlier, different `error_kind` was recorded first.
    """
    return (
        row.get("error_kind") in EVIDENCE_FAILURE_KINDS
        or row.get("review_evidence_valid") is False
        or row.get("transcript_missing") is True
    )


def is_excluded(row: Row) -> bool:
    """Dropped from medians and resolve denominators (it measured nothing usable)."""
    return row.get("error_kind") in EXCLUDED_ERROR_KINDS or row.get("review_evidence_valid") is False


def is_admissible(row: Row) -> bool:
    """The harness delivered a trustworthy measurement; says nothing about correctness.

    `resolved=False` and zero quality scores are admissible: they are valid negatives.
    """
    return not execution_failed(row) and not evidence_failed(row)


def is_systemic_failure(row: Row) -> bool:
    """Counts toward the outage breaker's streak.

    Invalid review evidence counts even when another kind was recorded first, because the review
    phase breaking on every cell is exactly the outage the breaker exists to stop.
    """
    return row.get("error_kind") in SYSTEMIC_ERROR_KINDS or row.get("review_evidence_valid") is False
