"""stats.json's rules one at a time: what is compared, what is unknown, and the documented methods.

test_stats_and_rerender.py checks a realistic sweep end to end; these pin each rule with its
negative control: a task measured on one side only is skipped (and the next task still counts),
an unmeasured cost is an unknown delta (never 0), the CI is the documented bootstrap (percentile,
2000 resamples, seed 0: a re-render is byte-identical), the arm CI is Wilson's, and pass@k /
pass^k cover exactly k = 1..runs over the tasks with at least k valid runs.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats as scipy_stats

from tests.builders import sweep_row, sweep_runs
from workflow_bench.reports import stats
from workflow_bench.reports.stats import pass_at_k, pass_hat_k, stats_text

pytestmark = pytest.mark.unit


# The statistics are typed documents (reports/stats_model.py); these tests read their JSON form,
# the keys stats.json keeps.
def summarize_deltas(deltas):
    return stats.summarize_deltas(deltas).model_dump(mode="json")


def mcnemar(rows, arm, reference):
    return stats.mcnemar(rows, arm, reference).model_dump(mode="json")


def paired_statistics(rows, **kwargs):
    return stats.paired_statistics(rows, **kwargs).model_dump(mode="json")


def _stats(rows, arms, tasks, n=3):
    return paired_statistics(rows, arms=arms, tasks=tasks, runs=n)


def test_the_ci_is_the_documented_bootstrap_and_repeats_exactly() -> None:
    deltas = [0.3, -0.1, 0.25, 0.05, 0.4, 0.12, -0.2, 0.33]
    expected = scipy_stats.bootstrap(
        (np.asarray(deltas),),
        np.median,
        confidence_level=0.95,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval
    summary = summarize_deltas(deltas)
    assert summary["ci95"] == [round(expected.low, 6), round(expected.high, 6)]
    assert summarize_deltas(deltas) == summary  # fixed seed: the same input, the same CI
    assert summary["tasks"] == 8 and summary["median_delta"] == round(float(np.median(deltas)), 6)


def test_two_tasks_are_enough_for_a_ci_and_integer_deltas_are_fine() -> None:
    assert summarize_deltas([1, 3])["ci95"] is not None
    assert summarize_deltas([])["median_delta"] is None and summarize_deltas([])["tasks"] == 0


def test_a_task_measured_on_one_side_only_is_skipped_and_later_tasks_still_count() -> None:
    rows = sweep_runs(3, "t1", "baseline", cost_usd=1.0) + sweep_runs(3, "t2", "baseline", cost_usd=1.0)
    rows += sweep_runs(3, "t2", "workflow", cost_usd=3.0)  # t1: workflow never ran
    [comparison] = _stats(rows, ["workflow", "baseline"], ["t1", "t2"])["comparisons"]
    assert [t["task"] for t in comparison["per_task"]] == ["t2"]
    assert comparison["cost_usd"]["median_delta"] == 2.0 and comparison["cost_usd"]["tasks"] == 1
    assert comparison["kind"] == "vs-baseline"


def test_an_unmeasured_cost_is_an_unknown_delta_not_zero() -> None:
    rows = sweep_runs(3, "t1", "baseline", cost_usd=1.0) + sweep_runs(3, "t1", "workflow", cost_usd=None)
    rows += sweep_runs(3, "t2", "baseline", cost_usd=None) + sweep_runs(3, "t2", "workflow", cost_usd=1.0)
    [comparison] = _stats(rows, ["workflow", "baseline"], ["t1", "t2"])["comparisons"]
    assert [t["cost_usd_delta"] for t in comparison["per_task"]] == [None, None]
    # A flag is not a cost: a row cannot even carry one (the row model is strict).
    with pytest.raises(ValueError, match="cost_usd"):
        sweep_runs(1, "t2", "baseline", cost_usd=True)
    assert [t["resolve_rate_delta"] for t in comparison["per_task"]] == [0.0, 0.0]
    assert comparison["cost_usd"]["tasks"] == 0 and comparison["cost_usd"]["median_delta"] is None
    assert _stats(rows, ["workflow"], ["t1"])["arms"]["workflow"]["median_cost_usd"] is None


def test_a_candidate_is_compared_with_its_incumbent_only_when_the_incumbent_ran() -> None:
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow")
    kinds = [
        (c["arm"], c["reference"], c["kind"])
        for c in _stats(rows, ["workflow", "candidate_workflow"], ["t1"])["comparisons"]
    ]
    assert kinds == [("candidate_workflow", "workflow", "candidate-vs-incumbent")]
    assert _stats(rows, ["candidate_workflow"], ["t1"])["comparisons"] == []


def test_the_arm_summary_uses_wilsons_interval_and_knows_when_there_is_nothing() -> None:
    rows = [
        *sweep_runs(2, "t1", "workflow", cost_usd=2.0),
        sweep_row("t1", "workflow", 2, cost_usd=4.0),
        sweep_row("t1", "workflow", 3, resolved=False, cost_usd=4.0),
    ]
    summary = _stats(rows, ["workflow", "baseline"], ["t1"])["arms"]
    wilson = scipy_stats.binomtest(3, 4).proportion_ci(0.95, method="wilson")
    assert summary["workflow"] == {
        "valid_runs": 4,
        "resolved": 3,
        "resolve_rate": 0.75,
        "resolve_rate_ci95": [round(wilson.low, 6), round(wilson.high, 6)],
        "median_cost_usd": 3.0,
        "impossible_runs": 0,
        "impossible_resolved": 0,
    }
    assert summary["baseline"] == {
        "valid_runs": 0,
        "resolved": 0,
        "resolve_rate": None,
        "resolve_rate_ci95": None,
        "median_cost_usd": None,
        "impossible_runs": 0,
        "impossible_resolved": 0,
    }


def test_pass_k_covers_k_up_to_runs_over_tasks_with_enough_valid_runs() -> None:
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(2, "t2", "workflow", resolved=False)
    pass_k = _stats(rows, ["workflow"], ["t1", "t2"])["pass_k"]["workflow"]
    assert set(pass_k) == {"1", "2", "3"}
    assert [pass_k[k]["tasks"] for k in ("1", "2", "3")] == [2, 2, 1]
    assert pass_k["1"]["pass_at_k"] == 0.5 and pass_k["3"]["pass_hat_k"] == 1.0
    none = _stats(sweep_runs(2, "t1", "workflow"), ["workflow"], ["t1"])["pass_k"]["workflow"]["3"]
    assert none == {"tasks": 0, "pass_at_k": None, "pass_hat_k": None}


def test_pass_k_bounds_and_their_message() -> None:
    assert pass_hat_k(3, 0, 1) == 0.0 and pass_at_k(3, 0, 1) == 0.0  # c = 0 is a valid count
    for fn, n, c, k in ((pass_hat_k, 2, 1, 3), (pass_hat_k, 2, 3, 1), (pass_at_k, 2, -1, 1)):
        with pytest.raises(ValueError, match=rf"got n={n} c={c} k={k}"):
            fn(n, c, k)


def test_the_document_names_its_schema_and_methods() -> None:
    stats = _stats(
        sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "baseline"), ["workflow", "baseline"], ["t1"]
    )
    assert stats["schema_version"] == 3
    assert set(stats["method"]) == {
        "delta", "ci", "sign_test", "resolve_rate_ci95", "impossible", "pass_k", "mcnemar",
    }  # fmt: skip
    assert "2000 resamples, seed 0" in stats["method"]["ci"] and "95%" in stats["method"]["ci"]


def test_stats_text_is_canonical_json_and_refuses_nan() -> None:
    document = stats.paired_statistics(
        sweep_runs(3, "t1", "workflow"), arms=["workflow"], tasks=["t1"], runs=3
    )
    text = stats_text(document)
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert json.loads(text) == document.model_dump(mode="json") and json.loads(text)["schema_version"] == 3
    with pytest.raises(ValueError):
        # model_copy skips validation (which refuses NaN): the text refuses it all the same
        broken = document.arms["workflow"].model_copy(update={"resolve_rate": math.nan})
        stats_text(document.model_copy(update={"arms": {"workflow": broken}}))


def test_a_non_finite_cost_is_an_unknown_delta() -> None:
    rows = sweep_runs(3, "t1", "baseline", cost_usd=1.0) + sweep_runs(3, "t1", "workflow", cost_usd=math.inf)
    [comparison] = _stats(rows, ["workflow", "baseline"], ["t1"])["comparisons"]
    assert comparison["per_task"][0]["cost_usd_delta"] is None
    assert _stats(rows, ["workflow"], ["t1"])["arms"]["workflow"]["median_cost_usd"] is None


def test_an_arm_the_registry_does_not_know_is_summarized_without_an_incumbent() -> None:
    stats = _stats(sweep_runs(3, "t1", "my_arm"), ["my_arm"], ["t1"])
    assert stats["comparisons"] == [] and stats["arms"]["my_arm"]["valid_runs"] == 3


def test_the_ci_is_seed_zero_with_2000_resamples_on_data_where_that_matters() -> None:
    deltas = [float(x) for x in np.random.default_rng(42).normal(0.1, 0.3, 40).round(3)]

    def ci(seed: int, resamples: int) -> list[float]:
        interval = scipy_stats.bootstrap(
            (np.asarray(deltas),),
            np.median,
            confidence_level=0.95,
            n_resamples=resamples,
            method="percentile",
            rng=np.random.default_rng(seed),
        ).confidence_interval
        return [round(interval.low, 6), round(interval.high, 6)]

    # negative control: on these data another seed or resample count gives another interval
    assert ci(0, 2000) != ci(1, 2000) and ci(0, 2000) != ci(0, 9999)
    assert summarize_deltas(deltas)["ci95"] == ci(0, 2000)


def _outcome(task: str, arm: str, run: int, outcome: str):
    """One cell: "T" resolved, "F" failed (charged to the arm), "X" excluded (a harness fault)."""
    if outcome == "T":
        return sweep_row(task, arm, run)
    kind = "oracle-failed" if outcome == "F" else "infra-error"
    return sweep_row(task, arm, run, resolved=False, error_kind=kind)


def test_each_comparison_carries_mcnemar_over_its_own_arms_with_excluded_cells_unpaired() -> None:
    # per (task, run): baseline, workflow, candidate_workflow
    cells = {
        ("t1", 0): "FTT",
        ("t1", 1): "FTT",
        ("t1", 2): "TFT",
        ("t1", 3): "TTT",
        ("t1", 4): "FFT",
        ("t2", 0): "FTF",  # run 0 again, another task: its own pair
        ("t2", 1): "FTF",
        ("t2", 2): "TXT",  # workflow excluded: no pair with either arm
        ("t2", 3): "XTT",  # baseline excluded: no workflow-baseline pair
    }
    arms = ["baseline", "workflow", "candidate_workflow"]
    rows = [_outcome(t, arm, r, o[i]) for (t, r), o in cells.items() for i, arm in enumerate(arms)]
    stats = _stats(rows, arms, ["t1", "t2"])
    by_pair = {(c["arm"], c["reference"]): c["mcnemar"] for c in stats["comparisons"]}
    assert set(by_pair) == {
        ("workflow", "baseline"),
        ("candidate_workflow", "baseline"),
        ("candidate_workflow", "workflow"),
    }
    assert by_pair[("workflow", "baseline")] == {
        "pairs": 7,
        "both": 1,
        "neither": 1,
        "arm_only": 4,
        "reference_only": 1,
        "p_value": round(scipy_stats.binomtest(4, 5, 0.5).pvalue, 6),
    }
    assert by_pair[("workflow", "baseline")]["p_value"] == 0.375  # 2 × 6/32
    assert by_pair[("candidate_workflow", "workflow")] == {
        "pairs": 8,
        "both": 4,
        "neither": 0,
        "arm_only": 2,
        "reference_only": 2,
        "p_value": 1.0,
    }
    assert by_pair[("candidate_workflow", "baseline")]["pairs"] == 8
    # the per-task resolve rates leave the excluded cells out too: t2 is 3/3 against 1/3
    [vs_baseline] = [
        c for c in stats["comparisons"] if (c["arm"], c["reference"]) == ("workflow", "baseline")
    ]
    assert [t["resolve_rate_delta"] for t in vs_baseline["per_task"]] == [0.2, 0.666667]


def test_an_empty_comparison_is_unknown_without_a_numpy_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns on the median of nothing; we must not ask it
        summary = summarize_deltas([])
    assert summary["median_delta"] is None and summary["ci95"] is None
    assert summary["sign_test"] == {"positive": 0, "negative": 0, "zero": 0, "p_value": None}


def test_impossible_tasks_stay_out_of_resolve_rates_and_are_counted_beside_them() -> None:
    probes = [
        sweep_row("p1", "workflow", 0, task_impossible=True),
        sweep_row("p1", "workflow", 1, task_impossible=True, resolved=False, error_kind="oracle-failed"),
        sweep_row("p1", "workflow", 2, task_impossible=True, error_kind="infra-error", resolved=False),
    ]
    rows = [*sweep_runs(3, "t1", "workflow"), *probes]
    summary = _stats(rows, ["workflow"], ["t1", "p1"])["arms"]["workflow"]
    assert (summary["valid_runs"], summary["resolved"], summary["resolve_rate"]) == (3, 3, 1.0)
    assert (summary["impossible_resolved"], summary["impossible_runs"]) == (1, 2)  # excluded run left out
    # negative control: unflagged, the same rows are an ordinary task in the rate
    plain = [r.model_copy(update={"task_impossible": False}) for r in rows]
    again = _stats(plain, ["workflow"], ["t1", "p1"])["arms"]["workflow"]
    assert (again["valid_runs"], again["resolved"], again["impossible_runs"]) == (5, 4, 0)
    # nor are they paired in McNemar's test against another arm
    other = [*sweep_runs(3, "t1", "baseline"), *(r.model_copy(update={"arm": "baseline"}) for r in probes)]
    assert mcnemar([*rows, *other], "workflow", "baseline")["pairs"] == 3
    assert (
        mcnemar(
            [*plain, *(r.model_copy(update={"task_impossible": False}) for r in other)],
            "workflow",
            "baseline",
        )["pairs"]
        == 5
    )
