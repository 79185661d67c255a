"""The review tasks' authored verify under the outcome contract, in the real sandbox.

``python3 -I -B "$WORKFLOW_BENCH_REVIEW_CHECK"`` with ``verify_min_tests: 2`` (tasks.review.yaml):
a non-empty JSON-object artifact passes on a verified report; anything else is refused with the
reason; and the old exit-status check, judged under the same contract, proves nothing.
"""

from __future__ import annotations

import threading

import pytest

from workflow_bench.judging.judge import run_verify
from workflow_bench.judging.verdict import Expectation
from workflow_bench.review.contract import REVIEW_OUTPUT_DIR, REVIEW_OUTPUT_ENV_VAR, REVIEW_OUTPUT_PATH
from workflow_bench.sandbox import Mount, SandboxKind, create_sandbox

pytestmark = pytest.mark.component
CHECK = 'python3 -I -B "$WORKFLOW_BENCH_REVIEW_CHECK"'


@pytest.fixture
def judge(tmp_path, bwrap_bin):
    workspace, review_dir = tmp_path / "ws", tmp_path / "review"
    workspace.mkdir()
    review_dir.mkdir()
    sandbox = create_sandbox(SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin)

    def run(artifact: bytes | None, command: str = CHECK):
        target = review_dir / REVIEW_OUTPUT_PATH.rsplit("/", 1)[1]
        if artifact is not None:
            target.write_bytes(artifact)
        return run_verify(
            sandbox,
            command,
            scratch=tmp_path,
            expectation=Expectation(min_tests=2),
            timeout_s=60,
            cancel=threading.Event(),
            mounts=(Mount(source=review_dir, target=REVIEW_OUTPUT_DIR),),
            env_extra={REVIEW_OUTPUT_ENV_VAR: REVIEW_OUTPUT_PATH},
        )

    return run


def test_a_json_object_artifact_passes_on_a_verified_report(judge):
    outcome = judge(b'{"verdict": "approve", "findings": []}')
    assert outcome.passed, outcome.detail
    assert (outcome.tests_run, outcome.tests_passed) == (2, 2)
    assert "outcome report verified" in outcome.detail


@pytest.mark.parametrize(
    ("artifact", "passed"),
    [(None, 0), (b"", 0), (b"not json", 1), (b"[1, 2]", 1), (b" " * (256 * 1024 + 1), 0)],
    ids=["missing", "empty", "not-json", "json-array", "oversized"],
)
def test_anything_else_is_refused_with_the_reason(judge, artifact, passed):
    outcome = judge(artifact)
    assert not outcome.passed
    assert outcome.detail.startswith("no proof of success: ")
    assert (outcome.tests_run, outcome.tests_passed) == (2, passed)


def test_the_old_exit_status_check_proves_nothing_under_the_contract(judge):
    """Negative control: `test -s` exits 0 on this artifact, but reports no test."""
    outcome = judge(b'{"verdict": "approve"}', command=f'test -s "${REVIEW_OUTPUT_ENV_VAR}"')
    # Nothing reported any test: the count is unknown (None), never 0.
    assert not outcome.passed and outcome.tests_run is None, outcome.detail
