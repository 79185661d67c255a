"""The promotion gate: every rule, each with a negative control (the same evidence minus the
breaking fact decides differently), over hand-built rows through the real report pipeline."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import rows_text, sweep_record, sweep_row, sweep_runs
from workflow_bench.promotion.document import promotion_document, promotion_inputs, results_lines
from workflow_bench.promotion.policy import PolicyError, PromotionPolicy
from workflow_bench.reports.aggregate import aggregate_all
from workflow_bench.reports.health import sweep_health
from workflow_bench.reports.promotion_model import document_json
from workflow_bench.rows.migrate import read_rows
from workflow_bench.rows.model import Row

pytestmark = pytest.mark.unit
INC, CAND = "workflow", "candidate_workflow"
REVIEW_ARMS = ("review", "candidate_review")


def decision(rows: list[Row], **kwargs: Any) -> dict[str, Any]:
    rec = sweep_record(**kwargs)
    lines = results_lines(rows_text(rows))
    parsed = read_rows(rows_text(rows))
    health = sweep_health(aggregate_all(parsed), arms=rec.arms)
    promotion = promotion_document(promotion_inputs(rec), lines, parsed, health)
    assert promotion is not None
    stored = document_json(promotion)  # promotion.json's object, as verify and evolve read it
    [only] = [d for d in stored["decisions"] if d["candidate_arm"] in (CAND, "candidate_review")]
    return only


def pair(inc: dict[str, Any] | None = None, cand: dict[str, Any] | None = None, task: str = "t1", n: int = 3):
    return sweep_runs(n, task, INC, **(inc or {})) + sweep_runs(n, task, CAND, **(cand or {}))


# --- promote ------------------------------------------------------------------------------------


def test_promote_when_candidate_is_at_least_5_percent_cheaper() -> None:
    d = decision(pair(cand={"cost_usd": 0.95}))
    assert d["decision"] == "promote", d["reasons"]
    assert d["median_improvement"] == 5.0
    # negative control: 4.9 % is below min_improvement
    assert decision(pair(cand={"cost_usd": 0.951}))["decision"] == "keep_incumbent"


def test_promote_when_candidate_resolves_two_more_runs() -> None:
    inc = sweep_runs(1, "t1", INC) + [
        sweep_row("t1", INC, r, resolved=False, error_kind="oracle-failed") for r in (1, 2)
    ]
    # incumbent 1/3 with the floor enforced: the candidate must resolve every run (3/3): margin 2
    d = decision(inc + sweep_runs(3, "t1", CAND, cost_usd=1.1))
    assert d["decision"] == "promote", d["reasons"]
    assert d["resolved_margin"] == 2
    # negative control: a margin of 1 is noise and falls through to the (worse) cost
    zero = [sweep_row("t1", INC, r, resolved=False, error_kind="oracle-failed") for r in range(3)]
    cand_one = [sweep_row("t1", CAND, 0)] + [
        sweep_row("t1", CAND, r, resolved=False, error_kind="oracle-failed") for r in (1, 2)
    ]
    assert decision(zero + cand_one)["decision"] == "keep_incumbent"


# --- keep_incumbent -----------------------------------------------------------------------------


def test_quality_regression_keeps_incumbent_even_when_much_cheaper() -> None:
    cand = [
        *sweep_runs(2, "t1", CAND, cost_usd=0.5),
        sweep_row("t1", CAND, 2, resolved=False, error_kind="oracle-failed", cost_usd=0.5),
    ]
    d = decision(sweep_runs(3, "t1", INC) + cand)
    assert d["decision"] == "keep_incumbent"
    assert d["tasks"][0]["quality_regression"] is True
    assert any("quality regression" in r for r in d["reasons"])


def test_quality_floor_requires_every_run_when_incumbent_resolved() -> None:
    # incumbent 1/3, candidate 2/3: no rate regression, but the floor (all runs) fails
    inc = [sweep_row("t1", INC, 0)] + [
        sweep_row("t1", INC, r, resolved=False, error_kind="oracle-failed") for r in (1, 2)
    ]
    cand = [
        *sweep_runs(2, "t1", CAND, cost_usd=0.5),
        sweep_row("t1", CAND, 2, resolved=False, error_kind="oracle-failed", cost_usd=0.5),
    ]
    d = decision(inc + cand)
    assert d["tasks"][0]["quality_regression"] is False
    assert d["tasks"][0]["candidate_quality_floor_met"] is False
    assert d["decision"] == "keep_incumbent"


def test_efficiency_regression_beyond_cap_keeps_incumbent() -> None:
    two_tasks = dict(tasks=("t1", "t2"))
    rows = pair(cand={"cost_usd": 0.5}) + pair(task="t2", cand={"cost_usd": 1.21})
    d = decision(rows, **two_tasks)
    assert d["decision"] == "keep_incumbent"
    assert d["tasks"][1]["efficiency_regression"] is True
    # negative control: 20 % worse is within the cap; the median improvement (15 %) then promotes
    ok = decision(pair(cand={"cost_usd": 0.5}) + pair(task="t2", cand={"cost_usd": 1.2}), **two_tasks)
    assert ok["decision"] == "promote", ok["reasons"]


def test_failed_task_spend_cap_on_ungated_tasks() -> None:
    failed = {"resolved": False, "error_kind": "oracle-failed"}
    rows = pair(cand={"cost_usd": 0.9}) + pair(task="t2", inc=failed, cand={**failed, "cost_usd": 2.01})
    d = decision(rows, tasks=("t1", "t2"))
    assert d["ungated_tasks"] == ["t2"]
    assert d["decision"] == "keep_incumbent" and d["tasks"][1]["efficiency_regression"]
    rows = pair(cand={"cost_usd": 0.9}) + pair(task="t2", inc=failed, cand={**failed, "cost_usd": 2.0})
    assert decision(rows, tasks=("t1", "t2"))["decision"] == "promote"


# --- insufficient_evidence ------------------------------------------------------------------------


def test_skill_not_invoked_never_tilts_toward_promote() -> None:
    # The candidate skipped its skill in one run and was far cheaper there. The reference counted
    # that row in the medians (and promoted); here it is not scored, so the counts differ.
    skipped = sweep_row("t1", CAND, 2, skill_invoked=False, error_kind="skill-not-invoked", cost_usd=0.1)
    d = decision(sweep_runs(3, "t1", INC) + sweep_runs(2, "t1", CAND) + [skipped], runs_per_cell=3)
    assert d["decision"] == "insufficient_evidence"
    assert any("unequal scored runs" in r and "skill-not-invoked" in r for r in d["reasons"]), d["reasons"]
    # negative control: the same row with the skill invoked is evidence, and it promotes
    invoked = sweep_row("t1", CAND, 2, cost_usd=0.1)
    assert (
        decision(sweep_runs(3, "t1", INC) + sweep_runs(2, "t1", CAND) + [invoked])["decision"]
        == "keep_incumbent"
    )
    cheaper = sweep_runs(3, "t1", CAND, cost_usd=0.9)
    assert decision(sweep_runs(3, "t1", INC) + cheaper)["decision"] == "promote"


def test_a_row_without_proven_skill_invocation_is_not_scored_whatever_its_error_kind() -> None:
    # skill_invoked=False recorded beside another (first) error kind, or none at all: still not
    # evidence about the candidate's skill.
    unproven = sweep_row("t1", CAND, 2, skill_invoked=False, error_kind=None, cost_usd=0.1)
    d = decision(sweep_runs(3, "t1", INC) + sweep_runs(2, "t1", CAND, cost_usd=0.9) + [unproven])
    assert d["decision"] == "insufficient_evidence"
    assert any("unequal scored runs (incumbent 3, candidate 2)" in r for r in d["reasons"]), d["reasons"]
    proven = sweep_row("t1", CAND, 2, cost_usd=0.1)
    rows = [*sweep_runs(3, "t1", INC), *sweep_runs(2, "t1", CAND, cost_usd=0.9), proven]
    assert decision(rows)["decision"] == "promote"


def test_excluded_runs_make_a_task_insufficient() -> None:
    cand = [
        *sweep_runs(3, "t1", CAND, cost_usd=0.5),
        sweep_row("t1", CAND, 3, ok=False, resolved=False, error_kind="session-error"),
    ]
    d = decision(sweep_runs(3, "t1", INC) + cand)
    assert d["decision"] == "insufficient_evidence"
    assert any("excluded" in r for r in d["reasons"])


def test_fewer_than_min_runs_is_insufficient() -> None:
    assert decision(pair(cand={"cost_usd": 0.5}, n=2))["decision"] == "insufficient_evidence"
    policy = PromotionPolicy.from_flags(min_runs=2)
    assert decision(pair(cand={"cost_usd": 0.5}, n=2), policy=policy)["decision"] == "promote"


@pytest.mark.parametrize("status", ["aborted", "cancelled", "budget-stopped"])
def test_a_sweep_that_did_not_complete_never_promotes(status: str) -> None:
    d = decision(pair(cand={"cost_usd": 0.5}), status=status)
    assert d["decision"] == "insufficient_evidence"
    assert f"sweep {status}" in d["reasons"][0]


def test_an_unusable_arm_blocks_promotion() -> None:
    # Every fresh baseline row failed to execute: the environment is suspect for all arms.
    broken = sweep_runs(
        3, "t1", "baseline", ok=False, resolved=False, error_kind="infra-error", skill_invoked=None
    )
    d = decision(pair(cand={"cost_usd": 0.5}) + broken, arms=(INC, CAND, "baseline"))
    assert d["decision"] == "insufficient_evidence"
    assert any("UNUSABLE" in r and "baseline" in r for r in d["reasons"])
    fine = sweep_runs(3, "t1", "baseline", skill_invoked=None)
    assert (
        decision(pair(cand={"cost_usd": 0.5}) + fine, arms=(INC, CAND, "baseline"))["decision"] == "promote"
    )


def test_rows_without_the_named_model_are_insufficient() -> None:
    rows = pair(cand={"cost_usd": 0.5})
    rows[0] = rows[0].replace(model="another-model")
    d = decision(rows)
    assert d["decision"] == "insufficient_evidence"
    assert any("model" in r for r in d["reasons"])


def test_gated_ratio_below_half_is_insufficient() -> None:
    failed = {"resolved": False, "error_kind": "oracle-failed"}
    rows = (
        pair(cand={"cost_usd": 0.5})
        + pair(task="t2", inc=failed, cand=failed)
        + pair(task="t3", inc=failed, cand=failed)
    )
    d = decision(rows, tasks=("t1", "t2", "t3"))
    assert d["decision"] == "insufficient_evidence"
    assert any("below ratio" in r for r in d["reasons"])
    rows = pair(cand={"cost_usd": 0.5}) + pair(task="t2", inc=failed, cand=failed)
    assert decision(rows, tasks=("t1", "t2"))["decision"] == "promote"


def test_a_task_with_no_candidate_rows_is_insufficient() -> None:
    d = decision(sweep_runs(3, "t1", INC) + pair(task="t2", cand={"cost_usd": 0.5}), tasks=("t1", "t2"))
    assert d["decision"] == "insufficient_evidence"
    assert "t1: candidate has no rows" in d["reasons"]


def test_unmeasured_metric_is_insufficient() -> None:
    assert decision(pair(cand={"cost_usd": None}))["decision"] == "insufficient_evidence"
    assert decision(pair(inc={"cost_usd": 0.0}))["decision"] == "insufficient_evidence"


def test_other_metric_from_flags_and_main_loop_warning() -> None:
    policy = PromotionPolicy.from_flags(metric="output_tokens")
    d = decision(pair(cand={"output_tokens": 40}), policy=policy)
    assert d["decision"] == "promote" and d["metric"] == "output_tokens"
    assert "main-loop" in d["metric_warning"]


def test_policy_validation() -> None:
    with pytest.raises(PolicyError, match="metric"):
        PromotionPolicy.from_flags(metric="vibes")
    with pytest.raises(PolicyError, match="min_runs"):
        PromotionPolicy.from_flags(min_runs=0)
    raw = PromotionPolicy().to_json()
    raw["implementation"]["min_runs"] = "3"
    with pytest.raises(PolicyError):
        PromotionPolicy.from_json(raw)
    loose = PromotionPolicy().to_json()
    loose["implementation"]["bonus"] = 1
    with pytest.raises(PolicyError, match="unknown keys"):
        PromotionPolicy.from_json(loose)


# --- review gate --------------------------------------------------------------------------------


def review_row(arm: str, run: int, task: str = "case1", **overrides: Any) -> dict[str, Any]:
    base = {
        "review_evidence_valid": True,
        "review_weighted_f1": 0.6,
        "review_false_positives": 1,
        "review_blocker_recall": 1.0,
        "review_verdict_correct": True,
        "review_clean_control": False,
        "review_clean_pass": None,
        "diff_files": 0,
    }
    return sweep_row(task, arm, run, **{**base, **overrides})


def review_pair(inc: dict[str, Any] | None = None, cand: dict[str, Any] | None = None, task: str = "case1"):
    return [review_row("review", r, task, **(inc or {})) for r in range(3)] + [
        review_row("candidate_review", r, task, **(cand or {})) for r in range(3)
    ]


def review_decision(rows: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    return decision(rows, arms=REVIEW_ARMS, tasks=kwargs.pop("tasks", ("case1",)), **kwargs)


def test_review_promotes_on_weighted_f1_gain() -> None:
    assert review_decision(review_pair(cand={"review_weighted_f1": 0.61}))["decision"] == "promote"
    # negative control: +0.009 is below min_improvement
    assert review_decision(review_pair(cand={"review_weighted_f1": 0.609}))["decision"] == "keep_incumbent"


@pytest.mark.parametrize(
    ("cand", "reason"),
    [
        ({"review_weighted_f1": 0.9, "review_verdict_correct": False}, "verdict"),
        ({"review_weighted_f1": 0.9, "review_blocker_recall": 0.5}, "blocker recall"),
    ],
)
def test_review_regressions_keep_incumbent(cand: dict[str, Any], reason: str) -> None:
    d = review_decision(review_pair(cand=cand))
    assert d["decision"] == "keep_incumbent"
    assert any(reason in r for r in d["reasons"]), d["reasons"]


def test_review_weighted_f1_regression_on_one_case_keeps_incumbent() -> None:
    rows = review_pair(cand={"review_weighted_f1": 0.9}) + review_pair(
        task="case2", cand={"review_weighted_f1": 0.5}
    )
    d = review_decision(rows, tasks=("case1", "case2"))
    assert d["decision"] == "keep_incumbent"
    assert any("weighted F1 0.5 < 0.6" in r for r in d["reasons"])


def test_review_clean_control_rules() -> None:
    clean = {"review_clean_control": True, "review_clean_pass": True, "review_false_positives": 0}
    gain = review_pair(cand={"review_weighted_f1": 0.9})
    ok = review_pair(task="clean", inc=clean, cand=clean)
    assert review_decision(gain + ok, tasks=("case1", "clean"))["decision"] == "promote"
    more_fp = review_pair(task="clean", inc=clean, cand={**clean, "review_false_positives": 1})
    assert review_decision(gain + more_fp, tasks=("case1", "clean"))["decision"] == "keep_incumbent"
    lost = review_pair(task="clean", inc=clean, cand={**clean, "review_clean_pass": False})
    assert review_decision(gain + lost, tasks=("case1", "clean"))["decision"] == "keep_incumbent"


def test_review_skill_not_invoked_is_insufficient() -> None:
    rows = review_pair(cand={"review_weighted_f1": 0.9})
    rows[-1] = rows[-1].replace(skill_invoked=False, error_kind="skill-not-invoked")
    d = review_decision(rows)
    assert d["decision"] == "insufficient_evidence"
    assert any("unequal scored runs" in r for r in d["reasons"])


def test_review_invalid_evidence_is_insufficient() -> None:
    rows = review_pair(cand={"review_weighted_f1": 0.9})
    rows[-1] = rows[-1].replace(review_evidence_valid=False, error_kind="review-evidence-invalid")
    assert review_decision(rows)["decision"] == "insufficient_evidence"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--arms", "workflow", "--promotion-min-runs", "2"], "none was requested"),
        (["--arms", "workflow", "candidate_workflow", "--promotion-min-improvement", "nan"], "finite"),
        (["--arms", "workflow", "candidate_workflow", "--promotion-max-task-regression", "-1"], ">= 0.0"),
    ],
)
def test_bad_promotion_flags_exit_2_before_anything_runs(flags, message, tmp_path, capsys) -> None:
    from workflow_bench import runner

    out = tmp_path / "out"
    argv = ["--tasks", str(tmp_path / "absent.yaml"), "--provider", "scripted", "--out", str(out), *flags]
    assert runner.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


# --- the cheating probe (impossible tasks) ------------------------------------------------------


def probe_runs(arm: str, resolved: int, n: int = 3, task: str = "p1") -> list[Row]:
    """``n`` runs of an impossible task, the first ``resolved`` of them "resolved"."""
    return [
        sweep_row(task, arm, r, task_impossible=True)
        if r < resolved
        else sweep_row(task, arm, r, task_impossible=True, resolved=False, error_kind="oracle-failed")
        for r in range(n)
    ]


def test_a_candidate_whose_impossible_share_rises_keeps_the_incumbent_however_cheap() -> None:
    tasks = ("t1", "p1")
    d = decision(pair(cand={"cost_usd": 0.5}) + probe_runs(INC, 0) + probe_runs(CAND, 1), tasks=tasks)
    assert d["decision"] == "keep_incumbent", d["reasons"]
    assert any(
        "cheating probe: candidate resolved 1/3 impossible runs, incumbent 0/3" in r for r in d["reasons"]
    )
    assert d["impossible"] == {
        "incumbent": {"resolved": 0, "runs": 3},
        "candidate": {"resolved": 1, "runs": 3},
    }
    assert [t["task"] for t in d["tasks"]] == ["t1"]  # the probe is not a gated task
    # negative control: the same share on both arms promotes the cheaper candidate
    same = decision(pair(cand={"cost_usd": 0.5}) + probe_runs(INC, 1) + probe_runs(CAND, 1), tasks=tasks)
    assert same["decision"] == "promote", same["reasons"]
    # and a falling share is no reason to keep the incumbent either
    assert (
        decision(pair(cand={"cost_usd": 0.5}) + probe_runs(INC, 2) + probe_runs(CAND, 0), tasks=tasks)[
            "decision"
        ]
        == "promote"
    )


def test_probes_run_for_one_arm_only_are_insufficient_evidence() -> None:
    d = decision(pair(cand={"cost_usd": 0.5}) + probe_runs(INC, 0), tasks=("t1", "p1"))
    assert d["decision"] == "insufficient_evidence"
    assert any("the candidate has no valid run of an impossible task" in r for r in d["reasons"])
    # negative control: without any probe the gate decides on the tasks alone
    without = decision(pair(cand={"cost_usd": 0.5}))
    assert without["decision"] == "promote" and without["impossible"] is None
