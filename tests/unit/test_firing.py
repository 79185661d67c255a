"""Did the treatment fire (reports/firing.py) and McNemar's exact test (reports/stats.py).

Pinned: shares come from the wire-proven ``skills_invoked`` over each arm's valid cells (an
excluded cell is not a chance the agent had); a cell without a wire record is unknown, never
"not fired"; rows from before the per-skill fields fall back to ``skill_invoked``; MCP tools count
from ``tool_use_counts``; the effect over fired cells keeps only cells where every expected skill
fired; McNemar pairs cells by (task, run) and tests the discordant ones exactly.
"""

from __future__ import annotations

import pytest
from scipy import stats as scipy_stats

from tests.builders import sweep_row
from workflow_bench.reports import firing as firing_module
from workflow_bench.reports import stats
from workflow_bench.reports.firing import ALL_EXPECTED, fired_all
from workflow_bench.reports.markdown_sections import firing_section
from workflow_bench.reports.stats_model import TreatmentFiring

pytestmark = pytest.mark.unit


def treatment_firing(rows, *, arms):  # the JSON form stats.json keeps
    return firing_module.treatment_firing(rows, arms=arms).model_dump(mode="json")


def mcnemar(rows, arm, reference):  # the JSON form stats.json keeps
    return stats.mcnemar(rows, arm, reference).model_dump(mode="json")


WORKFLOW = {"skills_expected": ["plan", "work"]}


def _cell(arm: str, run: int, invoked: list[str] | None, *, task: str = "t1", **fields):
    expected = WORKFLOW if arm == "workflow" else {"skills_expected": []}
    return sweep_row(task, arm, run, skills_invoked=invoked, **{**expected, **fields})


def _entry(firing, arm, name):
    (found,) = [e for a in firing["arms"] if a["arm"] == arm for e in a["expected"] if e["name"] == name]
    return found


def test_each_expected_skill_gets_its_share_from_the_wire_proven_list() -> None:
    rows = [
        _cell("workflow", 0, ["plan", "work"]),
        _cell("workflow", 1, ["plan"]),  # work never fired
        _cell("workflow", 2, None),  # no wire record: unknown
        _cell("workflow", 3, [], ok=False, resolved=False, error_kind="infra-error"),  # excluded
        _cell("baseline", 0, []),
    ]
    firing = treatment_firing(rows, arms=["workflow", "baseline"])
    assert [a["arm"] for a in firing["arms"]] == ["workflow"]  # baseline expects nothing
    plan, work = _entry(firing, "workflow", "plan"), _entry(firing, "workflow", "work")
    assert (plan["cells"], plan["fired"], plan["unknown"], plan["share"]) == (3, 2, 1, 1.0)
    assert (work["cells"], work["fired"], work["unknown"], work["share"]) == (3, 1, 1, 0.5)
    every = _entry(firing, "workflow", ALL_EXPECTED)
    assert (every["fired"], every["unknown"], every["share"]) == (1, 1, 0.5)
    assert "descriptive" in firing["note"] and "not randomized" in firing["note"]


def test_a_stream_claim_is_not_evidence_only_the_row_list_counts() -> None:
    # skill_invoked (the fold's verdict) may say True; the per-skill share reads skills_invoked.
    (row,) = [_cell("workflow", 0, ["plan"], skill_invoked=True)]
    assert fired_all(row) is False
    assert _entry(treatment_firing([row], arms=["workflow"]), "workflow", "work")["fired"] == 0


def test_rows_from_before_the_per_skill_fields_fall_back_to_skill_invoked() -> None:
    old = [
        sweep_row("t1", "workflow", 0, skill_invoked=True),
        sweep_row("t1", "workflow", 1, skill_invoked=False),
        sweep_row("t1", "workflow", 2, skill_invoked=None),
    ]
    every = _entry(treatment_firing(old, arms=["workflow"]), "workflow", ALL_EXPECTED)
    assert (every["cells"], every["fired"], every["unknown"], every["share"]) == (3, 1, 1, 0.5)
    assert (
        treatment_firing([sweep_row("t1", "baseline", 0, skill_invoked=None)], arms=["baseline"])["arms"]
        == []
    )


def test_mcp_tools_are_read_from_the_wire_counts() -> None:
    tools = ["mcp__graph__impact", "mcp__graph__context"]
    rows = [
        _cell("baseline", 0, [], mcp_tools_granted=tools, tool_use_counts={"mcp__graph__impact": 2}),
        _cell("baseline", 1, [], mcp_tools_granted=tools, tool_use_counts={"Read": 1}),
    ]
    firing = treatment_firing(rows, arms=["baseline"])
    assert _entry(firing, "baseline", "mcp__graph__impact")["share"] == 0.5
    assert _entry(firing, "baseline", "mcp__graph__context")["fired"] == 0  # never called: still listed
    assert firing["arms"][0]["effect"] is None


def test_the_effect_over_fired_cells_keeps_only_cells_where_every_skill_fired() -> None:
    rows = [
        _cell("workflow", 0, ["plan", "work"], resolved=True, cost_usd=2.0),
        _cell("workflow", 1, ["plan"], resolved=False, error_kind="oracle-failed", cost_usd=1.0),
        _cell("baseline", 0, [], resolved=False, error_kind="oracle-failed", cost_usd=0.5),
        _cell("baseline", 1, [], resolved=True, cost_usd=0.5),
    ]
    effect = treatment_firing(rows, arms=["workflow", "baseline"])["arms"][0]["effect"]
    assert effect["reference_outcome"] == {"cells": 2, "resolve_rate": 0.5, "median_cost_usd": 0.5}
    assert (
        effect["all_valid"]["resolve_rate_delta"] == 0.0
        and effect["all_valid"]["median_cost_usd_delta"] == 1.0
    )
    fired = effect["skills_fired"]
    assert (fired["cells"], fired["resolve_rate_delta"], fired["median_cost_usd_delta"]) == (1, 0.5, 1.5)
    text = "\n".join(firing_section(firing_module.treatment_firing(rows, arms=["workflow", "baseline"])))
    assert "## Did the treatment fire" in text and "| workflow | skill `work` | 2 | 1 | 0 | 0.5 |" in text
    assert firing_section(TreatmentFiring(note="", arms=[])) == []


def test_mcnemar_pairs_by_task_and_run_and_tests_the_discordant_pairs_exactly() -> None:
    outcomes = [(True, False)] * 7 + [(False, True)] * 1 + [(True, True)] * 3 + [(False, False)] * 2
    rows = []
    for run, (mine, theirs) in enumerate(outcomes):
        rows.append(
            sweep_row(
                "t1", "workflow", run, resolved=mine, **({} if mine else {"error_kind": "oracle-failed"})
            )
        )
        rows.append(
            sweep_row(
                "t1", "baseline", run, resolved=theirs, **({} if theirs else {"error_kind": "oracle-failed"})
            )
        )
    rows.append(sweep_row("t1", "workflow", 99))  # unpaired: ignored
    result = mcnemar(rows, "workflow", "baseline")
    assert result == {
        "pairs": 13,
        "both": 3,
        "neither": 2,
        "arm_only": 7,
        "reference_only": 1,
        "p_value": round(scipy_stats.binomtest(7, 8, 0.5).pvalue, 6),
    }
    assert result["p_value"] == 0.070312  # 2 × P(X ≥ 7 | n = 8, ½) = 2 × 9/256
    ties = [sweep_row("t1", "workflow", 0), sweep_row("t1", "baseline", 0)]
    assert mcnemar(ties, "workflow", "baseline")["p_value"] is None  # no discordant pair: no test
