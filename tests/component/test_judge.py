"""The review judge (`judging.judge`): reading the artifact a review session left, and scoring it.

Component tests over real files (symlinks, FIFOs, directories, oversized files) in a private
tmp_path. The rules: the artifact is read only as a regular file, never through a symlink and
never past its cap; an artifact that cannot be scored is never a passed oracle; a scored one
passes only when every label is matched with no false positive and the right verdict.
(The verify/oracle half of this module is being rewritten in the `judging` lane, with its own
tests; see the integration notes.)
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from workflow_bench.judging.judge import judge_review, read_review_artifact
from workflow_bench.review.contract import MAX_ARTIFACT_BYTES, REVIEW_OUTPUT_FILE, ReviewArtifactError
from workflow_bench.review.score import REVIEW_ROW_FIELDS
from workflow_bench.rows.model import Review
from workflow_bench.taskspec.oracles import OracleFile, OracleSnapshot

pytestmark = pytest.mark.component

LABEL = {
    "id": "L1",
    "severity": "high",
    "path": "src/a.py",
    "line_start": 3,
    "line_end": 5,
    "category": "bug",
}
FINDING = {
    "id": "f1",
    "severity": "high",
    "path": "src/a.py",
    "line": 4,
    "end_line": 4,
    "category": "bug",
    "scenario": "s",
    "evidence": "e",
    "recommendation": "r",
    "blocking": True,
}


def _snapshot(labels: list[dict]) -> OracleSnapshot:
    data = json.dumps({"schema_version": 1, "findings": labels}).encode()
    file = OracleFile(
        target="review-labels.json", data=data, sha256=hashlib.sha256(data).hexdigest(), size=len(data)
    )
    return OracleSnapshot(command="true", files=(file,))


def _write(tmp_path: Path, verdict: str, findings: list[dict]) -> Path:
    (tmp_path / REVIEW_OUTPUT_FILE).write_text(
        json.dumps({"schema_version": 1, "verdict": verdict, "findings": findings})
    )
    return tmp_path


# ── reading ─────────────────────────────────────────────────────────────────────────────────


def test_a_never_written_artifact_reads_as_none(tmp_path):
    assert read_review_artifact(tmp_path) is None


def test_the_artifact_is_read_as_written(tmp_path):
    (tmp_path / REVIEW_OUTPUT_FILE).write_bytes(b'{"x": 1}')
    assert read_review_artifact(tmp_path) == b'{"x": 1}'


def test_the_read_stops_one_byte_past_the_cap(tmp_path):
    (tmp_path / REVIEW_OUTPUT_FILE).write_bytes(b"a" * (MAX_ARTIFACT_BYTES + 100))
    assert len(read_review_artifact(tmp_path)) == MAX_ARTIFACT_BYTES + 1  # enough to say "too large"


def test_a_symlinked_artifact_is_never_followed(tmp_path):
    secret = tmp_path / "host-secret"
    secret.write_text("do not read")
    out = tmp_path / "out"
    out.mkdir()
    (out / REVIEW_OUTPUT_FILE).symlink_to(secret)
    with pytest.raises(ReviewArtifactError) as raised:
        read_review_artifact(out)
    assert raised.value.code == "unreadable" and "cannot be opened" in raised.value.message


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_an_artifact_that_is_not_a_regular_file_is_unreadable(tmp_path, kind):
    path = tmp_path / REVIEW_OUTPUT_FILE
    os.mkfifo(path) if kind == "fifo" else path.mkdir()  # a FIFO must not block the judge
    with pytest.raises(ReviewArtifactError) as raised:
        read_review_artifact(tmp_path)
    assert raised.value.code == "unreadable"


# ── judging ─────────────────────────────────────────────────────────────────────────────────


def test_a_review_that_matches_every_label_passes(tmp_path):
    judged = judge_review(_write(tmp_path, "request_changes", [FINDING]), _snapshot([LABEL]))
    assert judged.problem is None and judged.artifact == (tmp_path / REVIEW_OUTPUT_FILE).read_bytes()
    assert judged.oracle_passed is True and judged.oracle_output == "hidden review labels matched"
    assert judged.evidence_valid is True and judged.score is not None and judged.score.true_positives == 1
    assert judged.score.recall == 1.0


@pytest.mark.parametrize(
    ("verdict", "findings"),
    [
        ("comment", [FINDING]),  # the right finding, the wrong verdict
        (
            "request_changes",
            [FINDING, {**FINDING, "id": "f2", "line": 40, "end_line": 40}],
        ),  # a false positive
        ("request_changes", [{**FINDING, "path": "src/b.py"}]),  # a miss
    ],
    ids=["wrong-verdict", "false-positive", "miss"],
)
def test_a_review_short_of_the_labels_fails(tmp_path, verdict, findings):
    judged = judge_review(_write(tmp_path, verdict, findings), _snapshot([LABEL]))
    assert judged.problem is None and judged.evidence_valid is True
    assert judged.oracle_passed is False and judged.oracle_output == "hidden review labels not fully matched"


def test_a_clean_control_passes_only_with_approve_and_no_findings(tmp_path):
    passed = judge_review(_write(tmp_path, "approve", []), _snapshot([]))
    assert passed.oracle_passed is True and passed.score is not None and passed.score.clean_pass is True
    failed = judge_review(_write(tmp_path, "comment", [{**FINDING, "blocking": False}]), _snapshot([]))
    assert failed.oracle_passed is False


@pytest.mark.parametrize(
    "setup",
    ["missing", "not-json", "contract-violation", "symlink", "directory"],
)
def test_an_unscorable_review_is_never_a_passed_oracle(tmp_path, setup):
    out = tmp_path / "out"
    out.mkdir()
    artifact = out / REVIEW_OUTPUT_FILE
    if setup == "not-json":
        artifact.write_text("{")
    elif setup == "contract-violation":
        artifact.write_text(json.dumps({"schema_version": 1, "verdict": "approve", "findings": [FINDING]}))
    elif setup == "symlink":
        (tmp_path / "elsewhere.json").write_text(
            json.dumps({"schema_version": 1, "verdict": "approve", "findings": []})
        )
        artifact.symlink_to(tmp_path / "elsewhere.json")
    elif setup == "directory":  # the agent can make one; it must be an invalid artifact, not a crash
        artifact.mkdir()
    # A clean control: approve with no findings would pass, if anything were scored.
    judged = judge_review(out, _snapshot([]))
    assert judged.oracle_passed is False and judged.oracle_output == "hidden review labels not scored"
    assert judged.evidence_valid is False and judged.score is None
    review = Review.scored(judged.score, evidence_valid=judged.evidence_valid)  # the row's review part
    assert all(getattr(review, name) is None for name in REVIEW_ROW_FIELDS)
    assert judged.problem  # the violation, for the row's error_detail
    assert judged.artifact == (artifact.read_bytes() if setup in ("not-json", "contract-violation") else None)


# ── the authored verify and the hidden oracle, in a real bwrap sandbox ─────────────────────
# Written against main's judge API (verify -> (passed, output), oracle -> bool). The `judging`
# lane changes both to a JudgeOutcome; `_verify` / `_oracle` are the only places to adapt.


@pytest.fixture
def sandbox(tmp_path, bwrap_bin):
    from workflow_bench.sandbox import SandboxKind, create_sandbox

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "code.txt").write_text("agent's work\n")
    return create_sandbox(SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin)


def _verify(sandbox, command: str, *, timeout_s: float = 60, cancel=None, **options) -> tuple[bool, str]:
    import tempfile
    import threading

    from workflow_bench.judging.judge import run_verify
    from workflow_bench.judging.verdict import Expectation

    # No verify_min_tests: the exit-status path (the outcome-report path has its own tests).
    with tempfile.TemporaryDirectory(prefix="judge-scratch-") as scratch:
        outcome = run_verify(
            sandbox,
            command,
            scratch=Path(scratch),
            expectation=Expectation(by_report=False),
            timeout_s=timeout_s,
            cancel=cancel or threading.Event(),
            **options,
        )
    return outcome.passed, outcome.output


def _oracle(sandbox, snapshot: OracleSnapshot, scratch: Path, *, timeout_s: float = 60, cancel=None) -> bool:
    import threading

    from workflow_bench.judging.judge import run_hidden_oracle
    from workflow_bench.judging.verdict import Expectation

    return run_hidden_oracle(
        sandbox,
        snapshot,
        expectation=Expectation(min_tests=1),
        scratch=scratch,
        timeout_s=timeout_s,
        cancel=cancel or threading.Event(),
    ).passed


def _cancelled():
    import threading

    event = threading.Event()
    event.set()
    return event


def _oracle_snapshot(command: str, content: bytes = b"SECRET-ORACLE-LINE\n") -> OracleSnapshot:
    file = OracleFile(
        target="check.txt", data=content, sha256=hashlib.sha256(content).hexdigest(), size=len(content)
    )
    return OracleSnapshot(command=command, files=(file,))


def test_verify_passes_on_exit_zero_and_fails_otherwise(sandbox):
    assert _verify(sandbox, "cat code.txt") == (True, "agent's work\n")
    passed, output = _verify(sandbox, "echo out; echo err >&2; exit 3")
    assert passed is False and "out" in output and "err" in output


def test_verify_keeps_only_the_tail_of_its_output(sandbox):
    passed, output = _verify(sandbox, "head -c 10000 /dev/zero | tr '\\0' a; echo END")
    assert passed and len(output) == 4000 and output.endswith("aEND\n")


def test_verify_cannot_change_the_workspace(sandbox, tmp_path):
    passed, _ = _verify(sandbox, "echo changed > code.txt")
    assert passed is False and (tmp_path / "ws" / "code.txt").read_text() == "agent's work\n"


def test_a_verify_that_never_finishes_raises_instead_of_failing_quietly(sandbox):
    with pytest.raises(Exception, match=r"^'sleep 30' exceeded 1 s"):
        _verify(sandbox, "sleep 30", timeout_s=1)


def test_a_cancelled_sweep_stops_the_verify(sandbox):
    with pytest.raises(Exception, match=r"^judge runner: cancelled"):
        _verify(sandbox, "sleep 30", cancel=_cancelled())


def test_verify_gets_the_tool_environment_its_extra_variables_and_its_mounts(sandbox, tmp_path):
    from workflow_bench.sandbox import Mount

    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "note.txt").write_text("mounted\n")
    command = 'test "$HOME" = /home/agent && test "$X_EXTRA" = yes && cat /extra-mount/note.txt'
    mounts = (Mount(source=extra, target="/extra-mount"),)
    assert _verify(sandbox, command, env_extra={"X_EXTRA": "yes"}, mounts=mounts) == (True, "mounted\n")
    assert _verify(sandbox, command, mounts=mounts)[0] is False  # negative control: no extra variable


def test_verify_output_that_is_not_utf8_is_kept_with_replacement_characters(sandbox):
    passed, output = _verify(sandbox, "printf 'ok\\377\\n'")
    assert passed and output == "ok\ufffd\n"


def test_the_oracle_reads_its_files_at_the_announced_root_and_is_erased_after(sandbox, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # A shell oracle speaks the outcome-report protocol itself: one result line per test on fd 9.
    command = (
        'grep -q SECRET-ORACLE-LINE "$WORKFLOW_BENCH_ORACLE_ROOT/check.txt" && '
        """printf '{"test": "check", "outcome": "passed"}\\n{"done": true}\\n' >&9"""
    )
    assert _oracle(sandbox, _oracle_snapshot(command), scratch) is True
    assert _oracle(sandbox, _oracle_snapshot(command, b"other\n"), scratch) is False
    assert list(scratch.iterdir()) == []  # nothing of the oracle stays on disk


def test_the_oracle_sees_the_workspace_read_only(sandbox, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert _oracle(sandbox, _oracle_snapshot("echo x > code.txt"), scratch) is False
    assert (tmp_path / "ws" / "code.txt").read_text() == "agent's work\n"


def test_an_oracle_that_never_finishes_raises_without_quoting_itself(sandbox, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(Exception) as raised:
        _oracle(
            sandbox,
            _oracle_snapshot('cat "$WORKFLOW_BENCH_ORACLE_ROOT/check.txt"; sleep 30'),
            scratch,
            timeout_s=1,
        )
    assert "SECRET-ORACLE-LINE" not in str(raised.value)
    assert list(scratch.iterdir()) == []
