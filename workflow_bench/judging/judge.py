"""The two judges of an implementation cell: the authored verify and the hidden oracle.

Both run after every model process has exited, in a fresh sandbox with the
workspace read-only and no network. The oracle is staged only then, at a
random mount outside the workspace, its output is never kept (it could quote
the hidden tests into a row the next proposer reads), and every staged byte
is re-checked afterwards before anything else happens to the clone.

Neither is believed on its exit status: the oracle always, and verify when the
task declares ``verify_min_tests``, run under the harness's judge runner and
pass only with a nonce-bound outcome report (``judging.outcome_report``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.outcome_report import OUTPUT_TAIL_CHARS, JudgeOutcome, run_with_report
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.process import ProcessError
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
from workflow_bench.sandbox import Mount, RunPolicy, Sandbox, tool_environment
from workflow_bench.taskspec.oracle_staging import stage_oracle, verify_staged
from workflow_bench.taskspec.oracles import OracleSnapshot

ORACLE_ENV_VAR = "WORKFLOW_BENCH_ORACLE_ROOT"  # keep in sync with the oracle commands in tasks.*.yaml


def run_verify(
    sandbox: Sandbox,
    command: str,
    *,
    scratch: Path,
    min_tests: int | None,
    timeout_s: float,
    cancel: threading.Event,
    mounts: tuple[Mount, ...] = (),
    env_extra: dict[str, str] | None = None,
) -> JudgeOutcome:
    """Run the task's authored verify, read-only and offline.

    With ``min_tests`` (the task's ``verify_min_tests``) success needs a verified outcome
    report; without it, the exit status is all the task offers (README says so).

    Raises:
        ChargedFailure: ``verify-timeout`` (the agent's code hung).
        ProcessError: the sandbox could not run it.
    """
    if min_tests is not None:
        return run_with_report(
            sandbox,
            command,
            scratch=scratch,
            min_tests=min_tests,
            timeout_kind=ErrorKind.VERIFY_TIMEOUT,
            timeout_s=timeout_s,
            cancel=cancel,
            mounts=mounts,
            env_extra=env_extra,
        )
    result = sandbox.run(
        ["/bin/sh", "-c", command],
        policy=RunPolicy(workspace_writable=False, mounts=mounts),
        env=tool_environment(env_extra),
        timeout_s=timeout_s,
        cancel=cancel,
    )
    if result.state == "timeout":
        raise ChargedFailure(ErrorKind.VERIFY_TIMEOUT, f"authored verify exceeded {timeout_s:.0f} s")
    if result.state != "exited":
        raise ProcessError("authored verify", result)
    output = (result.stdout.decode("utf-8", "replace") + result.stderr_tail)[-OUTPUT_TAIL_CHARS:]
    passed = result.returncode == 0
    return JudgeOutcome(passed, f"exit status {result.returncode} (no outcome report declared)", output)


def run_hidden_oracle(
    sandbox: Sandbox,
    snapshot: OracleSnapshot,
    *,
    min_tests: int,
    scratch: Path,
    timeout_s: float,
    cancel: threading.Event,
) -> JudgeOutcome:
    """Stage the oracle under ``scratch``, run it under the judge runner, re-check its bytes, erase it.

    Success needs the nonce-bound outcome report (``judging.outcome_report``); the exit status
    alone proves nothing. The returned ``output`` is blanked: oracle output may quote hidden tests.
    """
    token = secrets.token_hex(8)
    staged = scratch / f"oracle-{token}"
    target = f"/.wfbench-oracle-{token}"
    stage_oracle(snapshot, staged)
    try:
        outcome = run_with_report(
            sandbox,
            snapshot.command,
            scratch=scratch,
            min_tests=min_tests,
            timeout_kind=ErrorKind.ORACLE_TIMEOUT,
            timeout_s=timeout_s,
            cancel=cancel,
            mounts=(Mount(source=staged, target=target),),
            env_extra={ORACLE_ENV_VAR: target},
        )
        verify_staged(snapshot, staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return replace(outcome, output="")


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
