"""The two judges of an implementation cell: the authored verify and the hidden oracle.

Both run after every model process has exited, in a fresh sandbox with the
workspace read-only and no network. The oracle is staged only then, at a
random mount outside the workspace, its output is never kept (it could quote
the hidden tests into a row the next proposer reads), and every staged byte
is re-checked afterwards before anything else happens to the clone.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import threading
from pathlib import Path
from typing import Any

from workflow_bench.process import ProcessError
from workflow_bench.review.contract import MAX_ARTIFACT_BYTES
from workflow_bench.review.score import (
    REVIEW_OUTPUT_FILE,
    ReviewArtifactError,
    labels_from_oracle,
    parse_review_artifact,
    review_oracle_passed,
    review_row_fields,
    score_review,
)
from workflow_bench.sandbox import Mount, RunPolicy, Sandbox, tool_environment
from workflow_bench.tasks.oracle_staging import stage_oracle, verify_staged
from workflow_bench.tasks.oracles import OracleSnapshot

ORACLE_ENV_VAR = "WORKFLOW_BENCH_ORACLE_ROOT"  # keep in sync with the oracle commands in tasks.*.yaml
OUTPUT_TAIL_CHARS = 4000  # reference value for authored_test_output


def run_verify(
    sandbox: Sandbox,
    command: str,
    *,
    timeout_s: float,
    cancel: threading.Event,
    mounts: tuple[Mount, ...] = (),
    env_extra: dict[str, str] | None = None,
) -> tuple[bool, str]:
    """Run the task's authored verify; returns (passed, output tail). Infrastructure failures raise."""
    result = sandbox.run(
        ["/bin/sh", "-c", command],
        policy=RunPolicy(workspace_writable=False, mounts=mounts),
        env=tool_environment(env_extra),
        timeout_s=timeout_s,
        cancel=cancel,
    )
    if result.state != "exited":
        raise ProcessError("authored verify", result)
    output = (result.stdout.decode("utf-8", "replace") + result.stderr_tail)[-OUTPUT_TAIL_CHARS:]
    return result.returncode == 0, output


def run_hidden_oracle(
    sandbox: Sandbox, snapshot: OracleSnapshot, *, scratch: Path, timeout_s: float, cancel: threading.Event
) -> bool:
    """Stage the oracle under ``scratch``, run it read-only, re-check its bytes, erase it."""
    token = secrets.token_hex(8)
    staged = scratch / f"oracle-{token}"
    target = f"/.wfbench-oracle-{token}"
    stage_oracle(snapshot, staged)
    try:
        result = sandbox.run(
            ["/bin/sh", "-c", snapshot.command],
            policy=RunPolicy(workspace_writable=False, mounts=(Mount(source=staged, target=target),)),
            env=tool_environment({ORACLE_ENV_VAR: target}),
            timeout_s=timeout_s,
            cancel=cancel,
        )
        verify_staged(snapshot, staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    if result.state != "exited":
        # Never carry the oracle's own output into an error: it may quote the hidden tests.
        raise RuntimeError(f"hidden oracle did not complete: {result.state}")
    return result.returncode == 0


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


def judge_review(
    artifact_dir: Path, snapshot: OracleSnapshot
) -> tuple[dict[str, Any], bytes | None, str | None]:
    """Score the review artifact against the labels staged now (the model has exited).

    Returns (row fields incl. oracle_passed/oracle_output, artifact bytes or None,
    the contract violation or None). ``oracle_passed`` means every label matched,
    no false positive and the right verdict; the oracle *command* is not run.
    """
    data: bytes | None = None
    try:
        data = read_review_artifact(artifact_dir)
        artifact = parse_review_artifact(data)
    except ReviewArtifactError as exc:
        fields = review_row_fields(None, evidence_valid=False)
        return (
            {**fields, "oracle_passed": False, "oracle_output": "hidden review labels not scored"},
            data,
            exc.message,
        )
    score = score_review(artifact, labels_from_oracle(snapshot.files))
    passed = review_oracle_passed(score)
    outcome = "hidden review labels matched" if passed else "hidden review labels not fully matched"
    return (
        {**review_row_fields(score, evidence_valid=True), "oracle_passed": passed, "oracle_output": outcome},
        data,
        None,
    )
