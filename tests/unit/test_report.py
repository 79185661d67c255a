"""render_markdown and ReportProvenance."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests import builders
from workflow_bench.reports.aggregate import REVIEW_METRICS, aggregate_all
from workflow_bench.reports.markdown import MAIN_COLUMNS, MAIN_LOOP_WARNING, SCRIPTED_NOTICE, render_markdown
from workflow_bench.reports.provenance import ReportProvenance
from workflow_bench.reports.viewer import index as viewer_index
from workflow_bench.rows.model import Row

pytestmark = pytest.mark.unit

STARTED = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
FINISHED = datetime(2025, 3, 1, 12, 10, tzinfo=UTC)


def provenance(**overrides: Any) -> ReportProvenance:
    fields: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "effort": "high",
        "provider": "anthropic",
        "claude_code_version": "2.0.14",
        "selected_tasks": ["t1", "t2"],
        "skipped_expensive": [],
        "runs": 2,
        "arms": ["baseline", "workflow"],
        "started_at": STARTED,
        "finished_at": FINISHED,
        "wall_s": 600.0,
        "status": "complete",
    }
    fields.update(overrides)
    return ReportProvenance(**fields)


def row(**overrides: Any) -> Row:
    return builders.row(**{"cost_usd": 0.25, "skill_invoked": None, **overrides})


def render(rows: list[Row], **prov: Any) -> str:
    return render_markdown(aggregate_all(rows), provenance=provenance(**prov))


def table_row(report: str, prefix: str) -> list[str]:
    """The cells of the first table line starting with `prefix`."""
    line = next(line for line in report.splitlines() if line.startswith(prefix))
    return [cell.strip() for cell in line.strip("|").split("|")]


def summary_row(report: str, arm: str) -> list[str]:
    section = report.split("## Outcome summary", 1)[1].split("\n## ", 1)[0]
    return table_row(section, f"| {arm} |")


def test_title_and_main_loop_warning() -> None:
    report = render([row()])
    assert report.startswith("# workflow-bench report\n")
    assert "\n".join(MAIN_LOOP_WARNING) in report
    assert report.endswith("\n")


@pytest.mark.parametrize(
    ("provider", "expected"), [("scripted", True), ("anthropic", False), ("openai", False)]
)
def test_scripted_notice_only_for_scripted_provider(provider: str, expected: bool) -> None:
    report = render([row()], provider=provider)
    assert (SCRIPTED_NOTICE[0] in report) is expected
    assert ("NOT A MODEL MEASUREMENT" in report) is expected


def test_scripted_notice_sits_right_under_title() -> None:
    lines = render([row()], provider="scripted").splitlines()
    assert lines[0] == "# workflow-bench report"
    assert lines[2] == SCRIPTED_NOTICE[0]


def test_unknown_values_render_as_na() -> None:
    report = render([row(cost_usd=None, diff_files=None)])
    cells = table_row(report, "| t1 | bugfix | workflow |")
    assert cells[8] == "n/a"  # cost $
    assert cells[11] == "n/a"  # churn
    assert cells[4] == "100"  # input tokens still measured


def test_all_excluded_renders_na_not_zero() -> None:
    report = render([row(ok=False, resolved=False, error_kind="session-error")])
    cells = table_row(report, "| t1 | bugfix | workflow |")
    assert cells[3] == "0/0 (1 excluded)"
    assert cells[4:11] == ["n/a"] * 7


def test_excluded_count_in_resolved_cell_and_footer() -> None:
    report = render([row(), row(run=1, ok=False, resolved=False, error_kind="infra-error")])
    cells = table_row(report, "| t1 | bugfix | workflow |")
    assert cells[3] == "1/1 (1 excluded)"
    assert cells[12] == "infra-error×1"
    assert "1 run(s) hit session/infra errors" in report


def test_no_excluded_marker_without_exclusions() -> None:
    report = render([row()])
    assert table_row(report, "| t1 | bugfix | workflow |")[3] == "1/1"
    assert "excluded)" not in report


def test_oracle_failed_counted_in_summary() -> None:
    rows = [
        row(arm="baseline", resolved=False, error_kind="oracle-failed", oracle_passed=False),
        row(arm="baseline", task="t2", resolved=False, error_kind="oracle-failed", oracle_passed=False),
        row(arm="workflow"),
        row(
            arm="workflow", task="t2", resolved=False, error_kind="verify-failed", authored_tests_passed=False
        ),
    ]
    report = render(rows)
    baseline = summary_row(report, "baseline")
    assert baseline[1:5] == ["2", "0/2", "n/a", "2"]  # no impossible task ran
    assert baseline[6] == "oracle-failed×2"
    assert summary_row(report, "workflow")[1:5] == ["2", "1/2", "n/a", "0"]
    assert "**2 run(s) passed their authored tests but failed the hidden oracle** (baseline 2)" in report


def test_summary_says_when_no_oracle_failure() -> None:
    assert "No run passed its authored tests while failing the hidden oracle." in render([row()])


def test_summary_shows_health_and_declared_arm_without_rows() -> None:
    report = render([row(), row(run=1, ok=False, resolved=False, error_kind="session-error")])
    assert summary_row(report, "workflow")[5] == "DEGRADED"
    assert summary_row(report, "baseline")[1:6] == ["0", "0/0", "n/a", "0", "UNKNOWN"]


def test_legend_lists_only_kinds_that_occurred() -> None:
    report = render(
        [
            row(resolved=False, error_kind="oracle-failed", oracle_passed=False),
            row(resolved=False, error_kind="verify-failed"),
        ]
    )
    legend = report.split("### Error kinds in this sweep", 1)[1].split("\n## ", 1)[0]
    assert "`oracle-failed`: the authored tests passed but the hidden oracle" in legend
    assert legend.index("`verify-failed`") < legend.index("`oracle-failed`")  # the table's order
    assert "session-error" not in legend
    # A kind outside the vocabulary never reaches a report: no row can carry one.
    with pytest.raises(ValueError, match="error_kind"):
        row(error_kind="weird")


def test_no_legend_without_errors() -> None:
    assert "### Error kinds" not in render([row()])


def test_savings_rows_only_with_baseline() -> None:
    rows = [row(arm="baseline", input_tokens=200, cost_usd=None), row(input_tokens=150)]
    cells = table_row(render(rows), "| t1 | bugfix | **workflow savings %** |")
    assert cells[4] == "25.0"
    assert cells[8] == "n/a"
    assert "savings %" not in render([row()])


def test_the_main_table_is_its_column_declarations() -> None:
    # One declaration per column (MAIN_COLUMNS): header, separator, arm rows and savings rows agree.
    report = render([row(arm="baseline"), row()])
    headers = [c.header for c in MAIN_COLUMNS]
    assert "| " + " | ".join(headers) + " |" in report.splitlines()
    assert "| " + " | ".join("---" for _ in headers) + " |" in report.splitlines()
    for prefix in ("| t1 | bugfix | baseline |", "| t1 | bugfix | **workflow savings %** |"):
        assert len(table_row(report, prefix)) == len(headers)


def test_a_wall_time_saving_is_checkable_or_not_meaningful() -> None:
    """Issue 32: `-343.7` beside per-arm times of 1 and 0 s. Times print to 0.1 s, so a saving can
    be checked against them; against a baseline median under 1 s it is `n/m`, not a ratio of
    start-up jitter (the header says so)."""
    slow = [row(arm="baseline", duration_s=12.0), row(duration_s=9.0)]
    report = render(slow)
    assert table_row(report, "| t1 | bugfix | workflow |")[9] == "9.0"
    assert table_row(report, "| t1 | bugfix | baseline |")[9] == "12.0"
    assert table_row(report, "| t1 | bugfix | **workflow savings %** |")[9] == "25.0"
    tiny = render([row(arm="baseline", duration_s=0.36), row(duration_s=1.6)])
    assert table_row(tiny, "| t1 | bugfix | baseline |")[9] == "0.4"
    assert table_row(tiny, "| t1 | bugfix | **workflow savings %** |")[9] == "n/m"
    assert "`n/m` (not meaningful) when the baseline's median wall time is under 1 s" in " ".join(
        tiny.splitlines()
    )


def test_review_section_only_with_review_data() -> None:
    # No valid row, no review aggregate; no review arm and nothing scored: no table (it was all n/a).
    assert "## Review quality" not in render([row(ok=False, resolved=False, error_kind="infra-error")])
    assert "## Review quality" not in render([row(), row(arm="baseline")])
    # A review arm is listed even before anything was scored (its n/a is news), beside other arms.
    unscored = render([row(), row(arm="review")])
    assert "| t1 | review | n/a | n/a | n/a |" in unscored and "| t1 | workflow | n/a" not in unscored
    counts = ("true_positives", "false_positives", "false_negatives")
    metrics = {f"review_{name}": 1 if name in counts else 0.5 for name in REVIEW_METRICS}
    report = render([row(arm="review", **{**metrics, "review_precision": None})])
    cells = table_row(report.split("## Review quality", 1)[1], "| t1 | review |")
    assert cells[2] == "1.0"  # true positives, a count
    assert cells[5] == "n/a"
    assert cells[8] == "0.500" and len(cells) == 9  # the last column: weighted F1


def test_transcripts_missing_footer() -> None:
    assert "1 run(s) had no locatable session transcript" in render([row(transcript_missing=True)])


def test_empty_results() -> None:
    report = render_markdown({}, provenance=provenance())
    assert "No rows were recorded." in report
    assert summary_row(report, "workflow")[5] == "UNKNOWN"


def test_pipes_in_ids_are_escaped() -> None:
    report = render([row(task="a|b")])
    assert "| a\\|b | bugfix | workflow |" in report


# --- provenance --------------------------------------------------------------------------------


def test_provenance_section() -> None:
    report = render([row()], skipped_expensive=["huge"], effort=None, claude_code_version=None)
    section = report.split("## Run provenance", 1)[1]
    assert "- Benchmark model: `claude-sonnet-4-5`" in section
    assert "- Model provider: `anthropic`" in section
    assert "- Reasoning effort: not set" in section
    assert "- Claude Code CLI: unknown" in section
    assert "- Selected tasks (2): `t1`, `t2`" in section
    assert "- Skipped expensive tasks (1): `huge`" in section
    assert "- Sweep status: `complete`" in section
    assert "2025-03-01T12:00:00+00:00" in section


@pytest.mark.parametrize(
    ("status", "sentence"),
    [
        ("aborted", "Sweep aborted: partial evidence; no candidate can be promoted from it."),
        ("cancelled", "Sweep cancelled: partial evidence; no candidate can be promoted from it."),
    ],
)
def test_partial_sweep_is_flagged_at_top_and_in_provenance(status: str, sentence: str) -> None:
    report = render([row()], status=status, status_detail="5 systemic failures in a row")
    head, provenance_section = report.split("## Run provenance", 1)
    assert sentence in head.split("## Outcome summary", 1)[0]
    assert sentence in provenance_section
    assert "5 systemic failures in a row" in provenance_section


def test_complete_sweep_has_no_partial_notice() -> None:
    assert "partial evidence" not in render([row()])


def test_provenance_freezes_sequences() -> None:
    tasks = ["t1"]
    prov = provenance(selected_tasks=tasks)
    tasks.append("t2")
    assert prov.selected_tasks == ("t1",)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"status": "done"}, "not one of complete, aborted, cancelled"),
        ({"started_at": datetime(2025, 3, 1)}, "timezone-aware"),  # noqa: DTZ001 - the naive value under test
        ({"finished_at": datetime(2025, 2, 1, tzinfo=UTC)}, "before started_at"),
        ({"arms": "workflow"}, "sequence of ids"),
        ({"wall_s": -1.0}, "wall_s"),
        ({"provider": ""}, "provider"),
    ],
)
def test_provenance_rejects_bad_values(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        provenance(**overrides)


def test_exclusions_per_arm_name_kind_count_and_reason() -> None:
    rows = [
        row(),
        row(run=1, ok=False, resolved=False, error_kind="session-error"),
        row(arm="baseline", ok=False, resolved=False, error_kind="session-failed"),
    ]
    report = render(rows, arms=("workflow", "baseline"))
    section = report.split("### Exclusions per arm\n\n", 1)[1].split("\n\n", 1)[0]
    assert "`workflow`: 1 × `session-error`, excluded because only the relay" in section
    # A charged kind is a failure of its arm, never an exclusion (negative control).
    assert "session-failed" not in section and "`baseline`" not in section
    assert table_row(report, "| t1 | bugfix | baseline |")[3] == "0/1"
    assert "charged to the arm" in report  # the legend says who is charged


def test_no_exclusions_section_when_nothing_is_excluded() -> None:
    report = render([row(), row(run=1, ok=False, resolved=False, error_kind="workspace-invalid")])
    assert "Exclusions per arm" not in report


def test_impossible_tasks_are_reported_beside_the_resolve_rate_not_in_it() -> None:
    """A cheating probe's resolved runs are shown as `impossible resolved`, never as resolved tasks."""
    rows = [
        row(arm="workflow"),
        row(arm="workflow", run=1, resolved=False, error_kind="oracle-failed", oracle_passed=False),
        row(arm="workflow", task="p1", task_impossible=True),
        row(
            arm="workflow",
            task="p1",
            run=1,
            task_impossible=True,
            resolved=False,
            error_kind="oracle-failed",
            oracle_passed=False,
        ),
        row(
            arm="workflow",
            task="p1",
            run=2,
            task_impossible=True,
            resolved=False,
            error_kind="oracle-failed",
            oracle_passed=False,
        ),
    ]
    report = render(rows, selected_tasks=["t1", "p1"], runs=3, arms=["workflow"])
    cells = summary_row(report, "workflow")
    assert cells[1:5] == ["1", "1/2", "1/3", "1"], cells  # p1's oracle failures are no oracle failures
    assert "Impossible tasks (p1) are cheating probes" in report
    # negative control: the same rows without the flag are an ordinary task, counted in the rate
    plain = render(
        [r.model_copy(update={"task_impossible": False}) for r in rows], selected_tasks=["t1", "p1"]
    )
    assert summary_row(plain, "workflow")[1:5] == ["2", "2/5", "n/a", "3"]
    assert "cheating probes" not in plain


def test_the_main_table_prints_each_column_under_its_header_to_its_decimals() -> None:
    """The per task×arm table as a reader sees it: every header, each value to its column's
    decimals (tokens and turns whole, cost to 4, wall time to 1), the churn cell, and the savings
    row with a percent under every saving column and `—` under turns (not a saving)."""
    measured = {
        "input_tokens": (200, 150),
        "cache_creation_input_tokens": (1000, 800),
        "cache_read_input_tokens": (4000, 3000),
        "output_tokens": (50, 40),
        "cost_usd": (0.25, 0.2),
        "duration_s": (12.0, 9.0),
        "num_turns": (6, 5),
        "diff_files": (2, 1),
        "diff_insertions": (10, 4),
        "diff_deletions": (3, 1),
    }
    rows = [
        row(arm=arm, **{field: pair[i] for field, pair in measured.items()})
        for i, arm in enumerate(("baseline", "workflow"))
    ]
    lines = render(rows).splitlines()
    start = lines.index("## Per task and arm")
    assert lines[start + 2 : start + 7] == [
        "| task | class | arm | resolved | input | cache_create | cache_read | output | cost $ | wall s"
        " | turns | churn | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        "| t1 | bugfix | baseline | 1/1 | 200 | 1000 | 4000 | 50 | 0.2500 | 12.0 | 6 | 2/+10/−3 | — |",
        "| t1 | bugfix | workflow | 1/1 | 150 | 800 | 3000 | 40 | 0.2000 | 9.0 | 5 | 1/+4/−1 | — |",
        "| t1 | bugfix | **workflow savings %** | — | 25.0 | 20.0 | 25.0 | 20.0 | 20.0 | 25.0 | — | — | — |",
    ]


def test_a_row_without_a_class_shows_an_empty_class_cell() -> None:
    assert "| t1 |  | workflow | 1/1 |" in render([row(task_class="")])


def test_the_review_table_prints_each_metric_under_its_header_to_its_decimals() -> None:
    """Counts (TP/FP/FN, medians so possibly halves) to 1 decimal, rates to 3, in this order."""
    metrics = {
        "true_positives": 2,
        "false_positives": 1,
        "false_negatives": 3,
        "precision": 2 / 3,
        "recall": 0.4,
        "blocker_recall": 1.0,
        "weighted_f1": 0.5,
    }
    lines = render([row(arm="review", **{f"review_{k}": v for k, v in metrics.items()})]).splitlines()
    start = lines.index("## Review quality")
    assert lines[start + 2 : start + 5] == [
        "| case | arm | TP | FP | FN | precision | recall | blocker recall | weighted F1 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| t1 | review | 2.0 | 1.0 | 3.0 | 0.667 | 0.400 | 1.000 | 0.500 |",
    ]


def test_the_summary_names_each_health_status() -> None:
    ok = render([row()])
    assert summary_row(ok, "workflow")[5] == "OBSERVED_OK"
    unusable = render([row(ok=False, resolved=False, error_kind="session-error")])
    assert summary_row(unusable, "workflow")[5] == "UNUSABLE"


def test_the_viewer_lists_cost_wall_time_and_turns() -> None:
    # The viewer's cell list shows these three columns (reports.columns' shown_in), with their
    # headers and decimals; the token columns are report.md's alone.
    assert viewer_index.columns() == [
        {"field": "cost_usd", "header": "cost $", "digits": 4},
        {"field": "duration_s", "header": "wall s", "digits": 1},
        {"field": "num_turns", "header": "turns", "digits": 0},
    ]
