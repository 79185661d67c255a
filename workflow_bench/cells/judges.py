"""A cell's judging stage, once its sessions ended: the patch, verify, the hidden oracle, the clean room.

``CellJudges.run`` is what ``cells.run`` calls after the sessions: it records each judged part on
the draft as it arrives (so a later failure keeps them) and turns any failure into the charged
kind (the agent's code ran in every judge). Order: the patch first (what is on disk now is what
the judges ran against), the authored verify on the workspace as left (read-only), the task's
test configuration put back, the hidden oracle on the workspace, then the same oracle in a clean
room (``cells.cleanroom``: a fresh clone of the base with exactly the saved patch applied). The two
oracle verdicts must agree: a disagreement means the workspace held something the patch does not
(bytecode shadowing a source file, a ``.git``-named path, a leftover process) or the patch holds
something the workspace hid, and is ``evidence-tampered`` (charged). ``Harness.clean_room`` off
(negative controls only) skips the clean room.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from workflow_bench.arms import ArmSpec
from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.judge import (
    judge_review,
    oracle_expectation,
    run_hidden_oracle,
    run_verify,
    verify_expectation,
)
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.judging.test_config import MAX_LISTED, TestConfigError, changed_test_config, restore
from workflow_bench.process import ProcessError
from workflow_bench.redaction import redact_text
from workflow_bench.review.score import REVIEW_OUTPUT_DIR, REVIEW_OUTPUT_ENV_VAR, REVIEW_OUTPUT_PATH
from workflow_bench.rows.model import Churn, CleanRoomJudgement, OracleJudgement, Review, VerifyJudgement
from workflow_bench.sandbox import CellResources, Mount, Sandbox
from workflow_bench.workspace.snapshot import NON_WORK_PATHS, WorkspaceLimitError

from .boundaries import WorkspaceTrack
from .cleanroom import CleanRoom, judge_patch, room_dir
from .context import SweepSettings, TaskContext
from .draft import CellDraft
from .rows import oracle_tests, verify_tests


class CellJudges:
    """The judges of one cell over its workspace, after every session exited."""

    def __init__(
        self,
        *,
        settings: SweepSettings,
        task: TaskContext,
        arm: ArmSpec,
        sandbox: Sandbox,
        track: WorkspaceTrack,
        cell_dir: Path,
        secrets: list[str],
        artifacts: dict[str, bytes],
        resources: CellResources,
        review_dir: Path,
        draft: CellDraft,
    ) -> None:
        self.settings, self.task, self.arm = settings, task, arm
        self.sandbox, self.track, self.cell_dir = sandbox, track, cell_dir
        self.secrets, self.artifacts, self.resources = secrets, artifacts, resources
        self.review_dir = review_dir
        self.draft = draft

    def run(self) -> CellDraft:
        """The judged draft; a failure in any judge is charged (the agent's code ran in each)."""
        settings = self.settings
        kind: ErrorKind
        failure: Exception
        try:
            return self._judge()
        except ChargedFailure as exc:
            failure, kind = exc, exc.kind
            if isinstance(exc.outcome, JudgeOutcome):  # a timed-out judge: what had reported by then
                if kind == ErrorKind.ORACLE_TIMEOUT:
                    self.step(oracle=oracle_tests(exc.outcome, self.secrets))
                else:
                    self.step(verify=verify_tests(exc.outcome, self.secrets))
        except WorkspaceLimitError as exc:
            failure, kind = exc, ErrorKind.WORKSPACE_INVALID
        except Exception as exc:  # anything the agent left may have caused it: charged, kept as data
            failure, kind = exc, ErrorKind.JUDGING_ERROR
        draft = self.draft.with_verdict(resolved=False)  # what the judges recorded before the failure
        if settings.cancel.is_set():
            return draft.with_verdict(
                ok=False, error_kind=ErrorKind.CANCELLED, error_detail="sweep cancelled"
            )
        if draft.kind is None:
            detail = redact_text(f"{type(failure).__name__}: {failure}", self.secrets)[:2000]
            return draft.with_verdict(error_kind=kind, error_detail=detail)
        return draft

    def step(self, **parts: Any) -> CellDraft:
        """Record judged parts on the draft as they arrive, so a later failure keeps them."""
        self.draft = replace(self.draft, **parts)
        return self.draft

    def _judge(self) -> CellDraft:
        settings, spec = self.settings, self.task.binding.spec
        if self.arm.review:
            return self._judge_review()
        # The patch first: what is on disk now is what the judges below ran against (read-only).
        patch, churn = self.track.patch()
        self.artifacts["patch.diff"] = patch
        self.step(churn=Churn(**churn))
        timeout, cancel = settings.cell.verify_timeout_s, settings.cancel
        binding = self.task.binding
        verify = run_verify(
            self.sandbox,
            spec.verify,
            scratch=self.cell_dir,
            expectation=verify_expectation(spec, binding.expected_tests),
            timeout_s=timeout,
            cancel=cancel,
        )
        self.step(verify=self.verify_part(verify))
        config = self._restore_test_config()
        oracle = run_hidden_oracle(
            self.sandbox,
            binding.oracle,
            expectation=oracle_expectation(spec, binding.expected_tests),
            scratch=self.cell_dir,
            timeout_s=timeout,
            cancel=cancel,
        )
        verdict = "hidden oracle passed: " if oracle.passed else "hidden oracle failed: "
        draft = self.step(
            oracle=oracle_tests(
                oracle,
                self.secrets,
                oracle_passed=oracle.passed,
                oracle_output=verdict + oracle.detail,
                test_config_changed=list(config[:MAX_LISTED]),
            )
        )
        if oracle.tampered and draft.kind is None:
            draft = self.step(
                verdict=draft.failed(
                    ErrorKind.EVIDENCE_TAMPERED, f"hidden oracle: {oracle.detail}"[:2000]
                ).verdict
            )
        if settings.harness.clean_room and draft.kind is None:
            draft = self._clean_room(patch, oracle)
        return self._judged(draft)

    def _clean_room(self, patch: bytes, oracle: JudgeOutcome) -> CellDraft:
        """The oracle again on a fresh clone of the base with exactly ``patch``; the verdicts must agree."""
        settings = self.settings
        room = CleanRoom(
            kind=settings.harness.sandbox_kind,
            bwrap_bin=settings.harness.bwrap_bin,
            timeout_s=settings.cell.verify_timeout_s,
            cancel=settings.cancel,
            resources=self.resources,
        )
        verdict = judge_patch(room, self.task, patch, where=room_dir(self.cell_dir), scratch=self.cell_dir)
        detail = redact_text(verdict.detail(), self.secrets)
        draft = self.step(
            cleanroom=CleanRoomJudgement(
                cleanroom_oracle_passed=verdict.oracle.passed, cleanroom_detail=detail
            )
        )
        if verdict.oracle.tampered:
            return self.step(
                verdict=draft.failed(ErrorKind.EVIDENCE_TAMPERED, f"clean room: {detail}").verdict
            )
        if verdict.oracle.passed != oracle.passed:
            why = (
                f"the hidden oracle {'passed' if oracle.passed else 'failed'} on the workspace as left but "
                f"{'passed' if verdict.oracle.passed else 'failed'} on a fresh clone with exactly the saved "
                f"patch: the workspace held what the patch does not ({detail})"
            )
            return self.step(verdict=draft.failed(ErrorKind.EVIDENCE_TAMPERED, why[:2000]).verdict)
        return draft

    def _judged(self, draft: CellDraft) -> CellDraft:
        track = self.track
        base = track.base
        assert base is not None  # marked before the sessions
        return judged(
            draft,
            implementation=self.arm.implementation,
            changed=track.changed_since_base(),
            base=base.entries,
            after=track.state.entries,
        )

    def _restore_test_config(self) -> tuple[str, ...]:
        """Put the test infrastructure the agent changed back as it was before the first session,
        so the hidden oracle runs with the task's own (``judging.test_config``); the changed paths.
        Compares only what changed since the base (the track's last boundary: what the agent left;
        the restore is not scanned, so the row and the no-work rule still see the agent's tree)."""
        track = self.track
        base, base_commit = track.base, track.base_commit
        assert base is not None and base_commit is not None  # marked before the sessions
        after = track.state.entries
        touched = track.changed_since_base()
        changed = changed_test_config(
            {p: base.entries[p] for p in touched if p in base.entries},
            {p: after[p] for p in touched if p in after},
        )
        try:
            restore(
                self.sandbox.workspace,
                changed,
                base=base.entries,
                after=after,
                read_base=lambda path: track.view.read(base_commit, path),
            )
        except (TestConfigError, ProcessError) as exc:
            raise ChargedFailure(ErrorKind.EVIDENCE_TAMPERED, str(exc)[:2000]) from exc
        return changed

    def verify_part(self, verify: JudgeOutcome) -> VerifyJudgement:
        output = redact_text(verify.output, self.secrets)
        return verify_tests(
            verify,
            self.secrets,
            authored_tests_passed=verify.passed,
            authored_test_output=output,
            verify_output=output,
            verify_detail=redact_text(verify.detail, self.secrets),
        )

    def _judge_review(self) -> CellDraft:
        """Review arms: the workspace must be untouched; the artifact is scored against hidden labels."""
        changed = self.track.changed_since_base()
        judged_review = judge_review(self.review_dir, self.task.binding.oracle)
        review = Review.scored(judged_review.score, evidence_valid=judged_review.evidence_valid)
        if judged_review.artifact is not None:
            self.artifacts["review.json"] = judged_review.artifact
        problem = judged_review.problem
        if changed:
            problem = problem or f"the review session changed the workspace: {list(changed)[:5]}"
            review = review.model_copy(update={"review_evidence_valid": False})
        draft = self.step(
            review=review,
            oracle=OracleJudgement(
                oracle_passed=judged_review.oracle_passed, oracle_output=judged_review.oracle_output
            ),
        )
        if problem and draft.kind is None:
            draft = self.step(
                verdict=draft.with_verdict(
                    ok=False, error_kind=ErrorKind.REVIEW_EVIDENCE_INVALID, error_detail=problem
                ).verdict
            )
        verify = run_verify(
            self.sandbox,
            self.task.binding.spec.verify,
            scratch=self.cell_dir,
            expectation=verify_expectation(self.task.binding.spec, self.task.binding.expected_tests),
            timeout_s=self.settings.cell.verify_timeout_s,
            cancel=self.settings.cancel,
            mounts=(Mount(source=self.review_dir, target=REVIEW_OUTPUT_DIR),),
            env_extra={REVIEW_OUTPUT_ENV_VAR: REVIEW_OUTPUT_PATH},
        )
        draft = self.step(
            verify=self.verify_part(verify),
            churn=Churn(diff_files=len(changed), diff_insertions=None, diff_deletions=None),
        )
        return self._judged(draft)


def judged(
    draft: CellDraft,
    *,
    implementation: bool,
    changed: tuple[str, ...],
    base: Mapping[str, str],
    after: Mapping[str, str],
) -> CellDraft:
    """resolved = ok ∧ authored ∧ oracle; then the first failing judge names the error kind."""
    authored = draft.verify.authored_tests_passed if draft.verify is not None else None
    oracle = draft.oracle.oracle_passed if draft.oracle is not None else None
    resolved = bool(draft.verdict.ok and authored and oracle)
    draft = draft.with_verdict(resolved=resolved)
    if draft.kind is None and not authored:
        draft = draft.with_verdict(error_kind=ErrorKind.VERIFY_FAILED)
    elif draft.kind is None and not oracle:
        draft = draft.with_verdict(error_kind=ErrorKind.ORACLE_FAILED)
    if implementation and resolved and not is_work(changed, base, after):
        draft = draft.with_verdict(resolved=False, error_kind=ErrorKind.NO_WORK_PRODUCED)
    return draft


def is_work(changed: tuple[str, ...], base: Mapping[str, str], after: Mapping[str, str]) -> bool:
    """Whether any changed path is implementation work: not bookkeeping (plans, seeded skills), and
    not a directory alone (e.g. the ``docs`` a plan was written into; its files are)."""
    return any(
        not any(p == n or p.startswith(n + "/") for n in NON_WORK_PATHS)
        and not all(side.get(p, "dir:").startswith("dir:") for side in (base, after))
        for p in changed
    )
