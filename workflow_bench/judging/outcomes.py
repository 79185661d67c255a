"""The closed `error_kind` vocabulary, who is charged for each kind, and the row predicates.
Over 400 lines on purpose: the vocabulary is one table (each kind with its flags and why) read as one.

Owns the one table that says, for every `error_kind` a row may carry, whether the agent could
have caused it (then the row is charged to its arm: it stays in medians and resolve
denominators as a failure and never feeds the outage breaker), whether it is excluded, an
execution or evidence failure, and whether it counts toward the outage breaker. Every set and
predicate here is computed from that table, so a policy change is a one-line diff in `ErrorKind`.
The flags started from the reference harness (reference-harness.md §5.1) and deliberately
depart from it where the reference excluded a failure the agent can cause (DESIGN.md §4,
"failure attribution is explicit"); docs/error-kinds.md is the table with the reasons.

Must never: import from higher layers, perform I/O (``__main__`` prints the generated
docs/error-kinds.md), or grow a second copy of any flag. Callers:
`cell` (producing kinds), `schedule` (breaker), `aggregate`, `report`, `reuse`, `promotion`.

The evolve-only `runtime-cap-exhausted` kind never appears in a results row, so it is not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Protocol


class UnknownErrorKind(ValueError):
    """An `error_kind` outside the closed vocabulary."""


@dataclass(frozen=True, slots=True)
class KindFlags:
    """One entry's meaning and classification flags."""

    produced_when: str
    """One line: what makes a cell record this kind (shown in the report legend)."""
    attribution: str
    """Why the agent can, or cannot, cause this kind (the proof's one-line summary)."""
    is_excluded: bool
    """Dropped from medians and resolve denominators: the row measured nothing usable."""
    is_execution_failure: bool
    """The process or its tooling did not complete."""
    is_evidence_failure: bool
    """It completed, but what it produced cannot be trusted or scored."""
    is_systemic: bool
    """Counts toward the outage breaker's consecutive-failure streak."""
    charged_to_arm: bool
    """The agent could have caused it, so it is a failure of the arm, never excluded or systemic."""

    def __post_init__(self) -> None:
        # An agent that can exclude itself picks its own denominator, and one that can feed the
        # breaker can stop a paid sweep: a charged kind must be neither.
        if self.charged_to_arm and (self.is_excluded or self.is_systemic):
            raise ValueError("a kind charged to the arm cannot be excluded or systemic")
        # An execution failure that still feeds medians must be the agent's own doing; a harness
        # failure's placeholder values must never drag an arm's numbers.
        if self.is_execution_failure and not self.is_excluded and not self.charged_to_arm:
            raise ValueError("an uncharged execution failure must be excluded")


def _kind(
    produced_when: str,
    *,
    attribution: str,
    charged: bool,
    excluded: bool = False,
    execution: bool = False,
    evidence: bool = False,
    systemic: bool = False,
) -> KindFlags:
    return KindFlags(produced_when, attribution, excluded, execution, evidence, systemic, charged)


class ErrorKind(StrEnum):
    """The closed vocabulary: each member is one row of the table, its value the string rows store.

    A row's ``error_kind`` has this type (``rows.model``), so a kind outside the table cannot be
    recorded; code names a kind by its member (``ErrorKind.INFRA_ERROR``), never by a bare string.
    """

    flags: KindFlags

    def __new__(cls, value: str, flags: KindFlags) -> ErrorKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.flags = flags
        return member

    @property
    def produced_when(self) -> str:
        return self.flags.produced_when

    @property
    def attribution(self) -> str:
        return self.flags.attribution

    @property
    def is_excluded(self) -> bool:
        return self.flags.is_excluded

    @property
    def is_execution_failure(self) -> bool:
        return self.flags.is_execution_failure

    @property
    def is_evidence_failure(self) -> bool:
        return self.flags.is_evidence_failure

    @property
    def is_systemic(self) -> bool:
        return self.flags.is_systemic

    @property
    def charged_to_arm(self) -> bool:
        return self.flags.charged_to_arm

    # tests/unit/test_outcomes.py restates every flag by hand; docs/error-kinds.md explains them.
    # skill-not-invoked is an evidence failure yet stays IN the medians: the session ran and spent
    # real tokens, and dropping an arm's systematically worst rows biases toward promoting it.
    # evidence-unverified is excluded but not systemic: it resets the breaker streak, because a
    # transcript we could not verify says nothing about the upstream being down.
    SESSION_ERROR = (
        "session-error",
        _kind(
            "a session failed and the relay saw the endpoint fail it: the last upstream answer "
            "was an error status or a broken connection, or a model request was still in flight when the "
            "session hit its time limit",
            attribution="only the relay, on the host, observes the upstream; the agent's code "
            "never sees the credential or the network",
            charged=False,
            excluded=True,
            execution=True,
            systemic=True,
        ),
    )
    INFRA_ERROR = (
        "infra-error",
        _kind(
            "the harness failed before any agent process started (clone copy, task setup, "
            "sandbox, process spawn, OS error)",
            attribution="raised before the first session starts, so no agent code has run yet",
            charged=False,
            excluded=True,
            execution=True,
            systemic=True,
        ),
    )
    CANCELLED = (
        "cancelled",
        _kind(
            "the sweep was cancelled (SIGINT/SIGTERM or the outage breaker) before or during the cell",
            attribution="only the operator's signal or the breaker (fed by uncharged kinds only) "
            "sets the sweep's cancel event; sandboxed processes cannot signal the runner",
            charged=False,
            excluded=True,
            execution=True,
        ),
    )
    EVIDENCE_UNVERIFIED = (
        "evidence-unverified",
        _kind(
            "the session succeeded but its event stream, skill evidence or transcript could not "
            "be verified (sets transcript_missing)",
            attribution="the CLI's own stream lacked skill evidence; a stream the agent altered "
            "is the evidence cross-check's evidence-tampered, charged to the arm",
            charged=False,
            excluded=True,
            evidence=True,
        ),
    )
    EVIDENCE_TAMPERED = (
        "evidence-tampered",
        _kind(
            "the CLI's stream disagrees with the relay's wire record (an event the model never "
            "produced, a forged result or usage, a request that continues no conversation of the session): "
            "charged to the arm, never excluded",
            attribution="only processes in the agent's sandbox can write the CLI's stream; the "
            "wire record is the host's and the model's",
            charged=True,
            evidence=True,
        ),
    )
    SESSION_FAILED = (
        "session-failed",
        _kind(
            "a session's CLI died, was killed, exited non-zero or left an unusable stream or "
            "result while the relay saw the endpoint answer every request",
            attribution="the agent's tools run as the CLI's uid in its sandbox: they can kill "
            "it, exhaust it, or corrupt its stream",
            charged=True,
            execution=True,
        ),
    )
    SESSION_TIMEOUT = (
        "session-timeout",
        _kind(
            "a session exceeded its time limit with no model request in flight at the relay",
            attribution="the time went to the agent's own tool calls (a hang in its code), not "
            "to the endpoint",
            charged=True,
            execution=True,
        ),
    )
    WORKSPACE_INVALID = (
        "workspace-invalid",
        _kind(
            "the workspace the agent left cannot be judged: over the entry, byte or depth "
            "limits, or an entry the harness could not read",
            attribution="the workspace is the agent's to write",
            charged=True,
            evidence=True,
        ),
    )
    VERIFY_TIMEOUT = (
        "verify-timeout",
        _kind(
            "the task's authored verify ran past its time limit on the agent's code",
            attribution="verify runs the code the agent left (an import or a test that hangs)",
            charged=True,
            execution=True,
        ),
    )
    ORACLE_TIMEOUT = (
        "oracle-timeout",
        _kind(
            "the hidden oracle ran past its time limit on the agent's code",
            attribution="the oracle runs the code the agent left",
            charged=True,
            execution=True,
        ),
    )
    JUDGING_ERROR = (
        "judging-error",
        _kind(
            "the harness raised while judging or capturing what the agent left (after its first "
            "session started); a health reason to investigate",
            attribution="anything read after the agent ran may be the agent's doing, so an "
            "unexpected failure there is never excused as infrastructure",
            charged=True,
            execution=True,
        ),
    )
    CLEANUP_FAILURE = (
        "cleanup-failure",
        _kind(
            "the cell's clone could not be removed afterwards (overrides the primary kind)",
            attribution="the clone holds what the agent wrote (modes, depth, entry count)",
            charged=True,
            execution=True,
        ),
    )
    REVIEW_EVIDENCE_INVALID = (
        "review-evidence-invalid",
        _kind(
            "the review artifact was missing, invalid or of the wrong type, or the review "
            "changed the workspace or skills",
            attribution="the agent writes the artifact and is the only writer of its directory",
            charged=True,
            evidence=True,
        ),
    )
    SKILL_NOT_INVOKED = (
        "skill-not-invoked",
        _kind(
            "the event stream shows no successful request for the arm's expected skill",
            attribution="the model chose not to call the skill",
            charged=True,
            evidence=True,
        ),
    )
    PLAN_EVIDENCE_INVALID = (
        "plan-evidence-invalid",
        _kind(
            "planning did not produce exactly one plan document, changed other paths, or altered skills",
            attribution="the planning session's own writes",
            charged=True,
        ),
    )
    IMPLEMENTATION_EVIDENCE_INVALID = (
        "implementation-evidence-invalid",
        _kind(
            "a work session changed the evaluated skill files",
            attribution="the work session's own writes",
            charged=True,
        ),
    )
    VERIFY_FAILED = (
        "verify-failed",
        _kind(
            "the sessions succeeded but the task's authored tests failed, or passed without the "
            "outcome report the task declares",
            attribution="the agent's code",
            charged=True,
        ),
    )
    ORACLE_FAILED = (
        "oracle-failed",
        _kind(
            "the authored tests passed but the hidden oracle (or hidden review labels) failed, "
            "or exited 0 without a valid outcome report",
            attribution="the agent's code",
            charged=True,
        ),
    )
    ORACLE_UNAVAILABLE = (
        "oracle-unavailable",
        _kind(
            "no hidden oracle snapshot was available to judge the cell (defensive: tasks load "
            "only with an oracle)",
            attribution="the snapshot is taken on the host before any cell runs",
            charged=False,
            excluded=True,
        ),
    )
    NO_WORK_PRODUCED = (
        "no-work-produced",
        _kind(
            "an implementation arm finished without changing anything outside its plan",
            attribution="the agent's (lack of) writes",
            charged=True,
        ),
    )
    # Charged to the arm: only the agent's processes (and the judges of its code) run in the cell's
    # cgroups and volume, so hitting a bound is the agent's doing; never excluded, never systemic.
    RESOURCE_LIMIT = (
        "resource-limit",
        _kind(
            "a process of the cell hit a kernel bound: the memory limit (OOM kill), the process "
            "limit (a refused fork) or the disk volume (full); only the agent's processes run there",
            attribution="only the agent's processes run inside the cell's own bounds",
            charged=True,
        ),
    )


ERROR_KINDS: Mapping[str, ErrorKind] = MappingProxyType({kind.value: kind for kind in ErrorKind})
"""Every `error_kind` a row may carry, by its stored string, in the order of the reference table."""

EXCLUDED_ERROR_KINDS = frozenset(k for k in ErrorKind if k.is_excluded)
CHARGED_ERROR_KINDS = frozenset(k for k in ErrorKind if k.charged_to_arm)
EXECUTION_FAILURE_KINDS = frozenset(k for k in ErrorKind if k.is_execution_failure)
EVIDENCE_FAILURE_KINDS = frozenset(k for k in ErrorKind if k.is_evidence_failure)
SYSTEMIC_ERROR_KINDS = frozenset(k for k in ErrorKind if k.is_systemic)


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


class JudgedRow(Protocol):
    """What the predicates read of a row (``rows.model.Row`` is one; its kind is always in the table)."""

    @property
    def error_kind(self) -> ErrorKind | None: ...

    @property
    def review_evidence_valid(self) -> bool | None: ...

    @property
    def transcript_missing(self) -> bool | None: ...


def execution_failed(row: JudgedRow) -> bool:
    """The process or its tooling did not complete: nothing was measured."""
    return row.error_kind in EXECUTION_FAILURE_KINDS


def evidence_failed(row: JudgedRow) -> bool:
    """It completed, but what it produced cannot be trusted or scored.

    Also true when the review evidence was marked invalid or the transcript is missing, even if
    an earlier, different `error_kind` was recorded first.
    """
    return (
        row.error_kind in EVIDENCE_FAILURE_KINDS
        or row.review_evidence_valid is False
        or row.transcript_missing is True
    )


def is_excluded(row: JudgedRow) -> bool:
    """Dropped from medians and resolve denominators (it measured nothing usable).

    Only the row's kind decides: `review_evidence_valid` is the agent's artifact, and a flag the
    agent controls must never take its row out of the denominator.
    """
    return row.error_kind in EXCLUDED_ERROR_KINDS


def is_charged_to_arm(row: JudgedRow) -> bool:
    """A failure the agent could have caused: counted against its arm."""
    return row.error_kind in CHARGED_ERROR_KINDS


def is_admissible(row: JudgedRow) -> bool:
    """The harness delivered a trustworthy measurement; says nothing about correctness.

    `resolved=False` and zero quality scores are admissible: they are valid negatives.
    """
    return not execution_failed(row) and not evidence_failed(row)


def is_systemic_failure(row: JudgedRow) -> bool:
    """Counts toward the outage breaker's streak: only kinds the agent cannot cause.

    Five cells that each delete their `.git`, kill their CLI or hang their verify must not stop
    the sweep; an endpoint or harness outage still does.
    """
    return row.error_kind in SYSTEMIC_ERROR_KINDS


def vocabulary_markdown() -> str:
    """docs/error-kinds.md: the table above, with who is charged and why (generated; a test checks)."""
    yes = {True: "yes", False: "–"}
    lines = [
        "# Error kinds",
        "",
        "Generated from `workflow_bench/judging/outcomes.py`",
        "(`python -m workflow_bench.judging.outcomes`); do not edit by hand.",
        "",
        "A kind **charged to the arm** is one the agent could have caused: it stays in medians and",
        "resolve denominators as a failure of that arm and never feeds the outage breaker. Only",
        "kinds the agent cannot cause are excluded or systemic.",
        "",
        "| error_kind | produced when | charged to the arm | why "
        "| excluded | execution | evidence | systemic |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k in ErrorKind:
        lines.append(
            f"| `{k.value}` | {k.produced_when} | {yes[k.charged_to_arm]} | {k.attribution} "
            f"| {yes[k.is_excluded]} | {yes[k.is_execution_failure]} | {yes[k.is_evidence_failure]} "
            f"| {yes[k.is_systemic]} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(vocabulary_markdown(), end="")
