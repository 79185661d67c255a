"""The sealing and judging canaries rerun an attack once when its cell ended in a fault the agent cannot cause
(``canary/attacks_sealing.run_sealing_suite``); a charged outcome is never rerun."""

from __future__ import annotations

import pytest

from tests.builders import row
from workflow_bench.canary import attacks_sealing
from workflow_bench.canary.attacks_sealing import SEALING_ATTACKS, SealingVerdict

pytestmark = pytest.mark.unit

A, B = SEALING_ATTACKS[0], SEALING_ATTACKS[1]
HELD = row(error_kind="evidence-tampered", resolved=False)
FAULT = row(error_kind="session-error", resolved=False)
CHARGED = row(error_kind="oracle-failed", resolved=True)


def _suite(monkeypatch, *passes: dict[str, SealingVerdict]) -> tuple[list[SealingVerdict], list[list[str]]]:
    calls: list[list[str]] = []

    def run(attacks, **_cli):
        calls.append([a.name for a in attacks])
        answers = passes[len(calls) - 1]
        return [answers[a.name] for a in attacks]

    monkeypatch.setattr(attacks_sealing, "_run_attacks", run)
    verdicts = attacks_sealing.run_sealing_suite(
        claude_bin=None, claude_version="x", bwrap_bin="bwrap", attacks=[A, B]
    )  # type: ignore[arg-type]
    return verdicts, calls


def test_an_attack_the_endpoint_failed_runs_once_more_and_says_so(monkeypatch):
    first = {A.name: SealingVerdict(A, True, "held", HELD), B.name: SealingVerdict(B, False, "fault", FAULT)}
    second = {B.name: SealingVerdict(B, True, "held again", HELD)}
    verdicts, calls = _suite(monkeypatch, first, second)
    assert calls == [[A.name, B.name], [B.name]]
    assert [v.blocked for v in verdicts] == [True, True]
    assert verdicts[1].observed == "held again [rerun; 1st: fault]"


def test_a_rerun_that_fails_again_stays_not_blocked(monkeypatch):
    first = {A.name: SealingVerdict(A, False, "fault", FAULT), B.name: SealingVerdict(B, True, "held", HELD)}
    second = {A.name: SealingVerdict(A, False, "fault again", FAULT)}
    verdicts, calls = _suite(monkeypatch, first, second)
    assert calls == [[A.name, B.name], [A.name]]
    assert [v.blocked for v in verdicts] == [False, True]


def test_a_charged_or_resolved_outcome_is_never_rerun(monkeypatch):
    first = {
        A.name: SealingVerdict(A, False, "resolved", CHARGED),
        B.name: SealingVerdict(B, False, "not run", None),
    }
    verdicts, calls = _suite(monkeypatch, first)
    assert calls == [[A.name, B.name]]
    assert [v.blocked for v in verdicts] == [False, False]


def test_an_attack_that_did_not_run_says_why_in_one_line():
    from workflow_bench.canary._suite import not_run_reason

    detail = {
        "attribution": "the endpoint failed: upstream closed: ConnectionResetError",
        "event_stream_error": "",
        "process_detail": None,
        "stderr_tail": "first line\nError: socket hang up\n",
    }
    said = not_run_reason(row(error_kind="session-error", error_detail=detail))
    assert said == (
        "session-error; the endpoint failed: upstream closed: ConnectionResetError; Error: socket hang up"
    )
    assert "\n" not in not_run_reason(row(error_kind="session-error", error_detail="x\ny"))


def test_the_judging_suite_reruns_only_cells_the_agent_could_not_have_failed(monkeypatch):
    """``attacks_judging.run_judging_suite``: the first pass's fault cells run once more, alone."""
    from workflow_bench.canary import attacks_judging
    from workflow_bench.canary._suite import CANARY_TASKS
    from workflow_bench.cells.context import CellResult
    from workflow_bench.schedule.pool import SweepOutcome

    attacks = attacks_judging.ATTACKS
    passes: list[list[str]] = []

    def run_bash_attack_cells(items, **_kw):
        passes.append([a.name for a in items])
        kind = "session-error" if len(passes) == 1 else "workspace-invalid"
        results = tuple(
            CellResult(
                row=row(error_kind=kind if a is attacks[0] else "oracle-failed", resolved=False), artifacts={}
            )
            for a in items
        )
        return SweepOutcome("complete", results)

    monkeypatch.setattr(attacks_judging, "run_bash_attack_cells", run_bash_attack_cells)
    monkeypatch.setattr(attacks_judging, "prepare_task_context", lambda *a, **k: None)
    verdicts = attacks_judging.run_judging_suite(
        claude_bin=None,
        claude_version="x",
        bwrap_bin="bwrap",
        canary_tasks=CANARY_TASKS,
        progress=lambda _l: None,
    )  # type: ignore[arg-type]
    assert passes[0] == [a.name for a in attacks]
    assert passes[1:] == [[attacks[0].name]]  # only the faulted cell; charged failures are never rerun
    assert "[rerun; 1st: " in verdicts[0].observed
    assert all("[rerun" not in v.observed for v in verdicts[1:])
