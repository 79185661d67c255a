"""The two judges of an implementation cell: the authored verify and the hidden oracle.

Both run after every model process has exited, in a fresh sandbox with the
workspace read-only and no network. The oracle is staged only then, at a
random mount outside the workspace, its output is never kept (it could quote
the hidden tests into a row the next proposer reads), and every staged byte
is re-checked afterwards before anything else happens to the clone.

Both run under the harness's judge runner (``judging.outcome_report``), and
neither is believed on its exit status: the oracle always, and verify when the
task declares ``verify_min_tests`` or has expected tests recorded, pass only on
a nonce-bound outcome report judged by ``judging.verdict`` against what the task
expects (``verify_expectation`` / ``oracle_expectation``: the expected-tests lock
``tasks check`` wrote, else ``min_tests``). A verify that declares neither is
judged by its exit status, still under the runner, so its tests are recorded.
"""

from __future__ import annotations

import os
import secrets
import stat
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.outcome_report import JudgeOutcome, run_with_report
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.judging.sentinels import add_sentinels
from workflow_bench.judging.verdict import Expectation, for_task
from workflow_bench.review.contract import MAX_ARTIFACT_BYTES
from workflow_bench.review.score import (
    REVIEW_OUTPUT_FILE,
    ReviewArtifactError,
    ReviewScore,
    labels_from_oracle,
    parse_review_artifact,
    review_oracle_passed,
    score_review,
)
from workflow_bench.sandbox import Mount, Sandbox
from workflow_bench.taskspec.expected_tests import ExpectedTests
from workflow_bench.taskspec.oracle_staging import stage_oracle, verify_staged
from workflow_bench.taskspec.oracles import OracleSnapshot
from workflow_bench.taskspec.spec import TaskSpec
from workflow_bench.workspace.remove import remove_tree

# Keep in sync with the oracle commands in tasks.*.yaml (tests/unit/test_no_drift.py checks).
ORACLE_ENV_VAR = "WORKFLOW_BENCH_ORACLE_ROOT"


def verify_expectation(spec: TaskSpec, expected: ExpectedTests | None) -> Expectation:
    """What verify must show: the lock entry's tests, else ``verify_min_tests``, else exit 0."""
    recorded = expected.verify if expected is not None else None
    return for_task(
        min_tests=spec.verify_min_tests,
        expected=(recorded.passed, recorded.skipped) if recorded is not None else None,
        report_required=False,
    )


def oracle_expectation(spec: TaskSpec, expected: ExpectedTests | None) -> Expectation:
    """What the oracle must show: the lock entry's tests, else ``oracle.min_tests`` (default 1); the
    sentinel tests of the files the lock records as sealed, else of every file that carries them."""
    recorded = expected.oracle if expected is not None else None
    return for_task(
        min_tests=spec.oracle.min_tests,
        expected=(recorded.passed, recorded.skipped) if recorded is not None else None,
        report_required=True,
        sealed=expected.oracle_sealed if expected is not None else None,
    )


def run_verify(
    sandbox: Sandbox,
    command: str,
    *,
    scratch: Path,
    expectation: Expectation,
    timeout_s: float,
    cancel: threading.Event,
    mounts: tuple[Mount, ...] = (),
    env_extra: dict[str, str] | None = None,
) -> JudgeOutcome:
    """Run the task's authored verify under the judge runner, read-only and offline.

    Raises:
        ChargedFailure: ``verify-timeout`` (the agent's code hung).
        ProcessError: the sandbox could not run it.
    """
    return run_with_report(
        sandbox,
        command,
        scratch=scratch,
        expectation=expectation,
        timeout_kind=ErrorKind.VERIFY_TIMEOUT,
        timeout_s=timeout_s,
        cancel=cancel,
        mounts=mounts,
        env_extra=env_extra,
    )


def run_hidden_oracle(
    sandbox: Sandbox,
    snapshot: OracleSnapshot,
    *,
    expectation: Expectation,
    scratch: Path,
    timeout_s: float,
    cancel: threading.Event,
) -> JudgeOutcome:
    """Stage a per-run copy of the oracle under ``scratch`` with this run's sentinel tests added
    (``judging.sentinels``), run it under the judge runner, re-check its bytes, erase it.

    The copy is mounted writable for this run only (frameworks write beside their config; the
    oracle files themselves stay read-only, see ``tasks.oracle_staging``). Success needs the
    nonce-bound outcome report (``judging.outcome_report``); the exit status alone proves
    nothing. The returned ``output`` is blanked and failure messages are dropped: both may quote
    hidden tests. A timeout still raises ``ChargedFailure`` after the bytes were re-checked.
    """
    token = secrets.token_hex(8)
    staged = scratch / f"oracle-{token}"
    target = f"/.wfbench-oracle-{token}"
    snapshot, plan = add_sentinels(snapshot)
    stage_oracle(snapshot, staged)
    try:
        try:
            outcome = run_with_report(
                sandbox,
                snapshot.command,
                scratch=scratch,
                expectation=expectation,
                timeout_kind=ErrorKind.ORACLE_TIMEOUT,
                timeout_s=timeout_s,
                cancel=cancel,
                mounts=(Mount(source=staged, target=target, writable=True),),
                env_extra={ORACLE_ENV_VAR: target},
                sentinels=plan,
            )
        except ChargedFailure as exc:
            verify_staged(snapshot, staged)
            if isinstance(exc.outcome, JudgeOutcome):
                exc.outcome = hide_oracle_text(exc.outcome)
            raise
        verify_staged(snapshot, staged)
    finally:
        remove_tree(staged)
    return hide_oracle_text(outcome)


def hide_oracle_text(outcome: JudgeOutcome) -> JudgeOutcome:
    """The oracle's outcome without anything that may quote hidden tests: no output, no failure
    messages (test ids stay: a row names which hidden test failed, never what it asserts)."""
    evidence = outcome.evidence
    if evidence is not None and evidence.tests is not None:
        tests = tuple(replace(t, message=None) for t in evidence.tests)
        evidence = replace(evidence, tests=tests)
    return replace(outcome, output="", evidence=evidence)


# ── review arms: the artifact against the hidden labels ────────────────────


def read_review_artifact(artifact_dir: Path) -> bytes | None:
    """The artifact's bytes (None if never written), never through a symlink, bounded."""
    path = artifact_dir / REVIEW_OUTPUT_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReviewArtifactError(
            "unreadable", f"{REVIEW_OUTPUT_FILE} cannot be opened: {exc.strerror}"
        ) from exc
    # fstat before fdopen: fdopen itself raises IsADirectoryError on a directory, which would
    # turn an agent-made directory into a harness crash instead of an invalid artifact.
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ReviewArtifactError("unreadable", f"{REVIEW_OUTPUT_FILE} is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_ARTIFACT_BYTES + 1)


@dataclass(frozen=True, slots=True)
class ReviewJudgement:
    """A review artifact judged against the hidden labels (the oracle *command* is not run)."""

    score: ReviewScore | None
    """None when the artifact broke the contract."""
    evidence_valid: bool
    oracle_passed: bool
    """Every label matched, no false positive, the right verdict."""
    oracle_output: str
    artifact: bytes | None
    """The artifact's bytes as read (kept beside the row), or None when unreadable."""
    problem: str | None
    """The contract violation, or None."""


def judge_review(artifact_dir: Path, snapshot: OracleSnapshot) -> ReviewJudgement:
    """Score the review artifact against the labels staged now (the model has exited)."""
    data: bytes | None = None
    try:
        data = read_review_artifact(artifact_dir)
        artifact = parse_review_artifact(data)
    except ReviewArtifactError as exc:
        return ReviewJudgement(None, False, False, "hidden review labels not scored", data, exc.message)
    score = score_review(artifact, labels_from_oracle(snapshot.files))
    passed = review_oracle_passed(score)
    outcome = "hidden review labels matched" if passed else "hidden review labels not fully matched"
    return ReviewJudgement(score, True, passed, outcome, data, None)
