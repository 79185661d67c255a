"""Render `report.md` from per task×arm aggregates (reference-harness.md §6.2).
Over 400 lines on purpose: one page's layout, section by section, with its column table read as one.

Owns the markdown layout only: title and notices, the outcome summary with the error-kind legend,
the per task×arm table with savings rows, review quality, footers and run provenance. It computes
nothing the aggregates do not already hold except sums over them, and it never writes files: the
runner writes the returned string.

Unknown values print as `n/a`, never as 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from workflow_bench.arms import ARMS
from workflow_bench.judging.outcomes import ERROR_KINDS, ErrorKind
from workflow_bench.reports.accounting import AccountingLine
from workflow_bench.reports.accounting_section import accounting_section
from workflow_bench.reports.aggregate import (
    BASELINE_ARM,
    ArmAggregate,
    ArmHealth,
    arm_health,
    savings,
)
from workflow_bench.reports.columns import (
    CHURN_COLUMNS,
    MEANINGFUL_WALL_S,
    REVIEW_COLUMNS,
    Shown,
    number_text,
    shown_in,
)
from workflow_bench.reports.columns import Column as MeasuredColumn
from workflow_bench.reports.provenance import ReportProvenance

Results = Mapping[str, Mapping[str, ArmAggregate]]
"""`{task: {arm: aggregate}}` in the order the report lists them."""

NA = "n/a"
NOT_MEANINGFUL = "n/m"

SCRIPTED_NOTICE = (
    "> **SCRIPTED PROVIDER: NOT A MODEL MEASUREMENT.** Every number below comes from a scripted",
    "> model provider that replays canned replies and declares its own token usage. It shows that",
    "> the benchmark pipeline runs end to end; it says nothing about any model's or any skill",
    "> workflow's ability.",
)

# Kept from the reference: the CLI's result usage covers only the main loop, so subagent-heavy
# arms look cheap in every token column. Dropping this warning makes those columns lie.
MAIN_LOOP_WARNING = (
    "**WARNING:** the input/cache/output columns count only each arm's main-loop session;",
    "subagent spend is invisible to them and flatters subagent-heavy arms. `cost $` includes",
    "subagent spend. For every token, subagents included, read the `transcripts` (session streams,",
    "deduplicated by `message.id`) and `provider` (what the model side served) columns under",
    "## Token accounting.",
)

# Wording kept from the reference so operators and log scrapers find the same sentence.
_STATUS_LINES = {
    "aborted": "Sweep aborted: partial evidence; no candidate can be promoted from it.",
    "cancelled": "Sweep cancelled: partial evidence; no candidate can be promoted from it.",
}
_STATUS_CAUSES = {
    "complete": "every planned cell ran",
    "aborted": "stopped early by the outage breaker or a budget",
    "cancelled": "SIGINT/SIGTERM",
}


def _escape(text: str) -> str:
    # Ids come from task files; a stray pipe would silently shift every later column.
    return text.replace("|", "\\|").replace("\n", " ")


def _kinds_cell(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{kind}×{count}" for kind, count in sorted(counts.items())) or "—"


def _resolved_cell(resolved: int, valid: int, excluded: int) -> str:
    cell = f"{resolved}/{valid}"
    return f"{cell} ({excluded} excluded)" if excluded else cell


def _arm_order(results: Results, declared: Sequence[str]) -> list[str]:
    order = list(dict.fromkeys(declared))
    for task_arms in results.values():
        order.extend(arm for arm in task_arms if arm not in order)
    return order


def _header(provenance: ReportProvenance) -> list[str]:
    lines = ["# workflow-bench report", ""]
    if provenance.is_scripted:
        lines += [*SCRIPTED_NOTICE, ""]
    if provenance.status in _STATUS_LINES:
        cause = _STATUS_CAUSES[provenance.status]
        lines += [f"> **{_STATUS_LINES[provenance.status]}** ({cause}; see Run provenance)", ""]
    return [
        *lines,
        "Medians across valid runs; excluded runs (see the legend) count in neither medians nor",
        "resolve denominators. Savings rows = (baseline − arm) / baseline per arm; a negative saving",
        "means the arm spent more than baseline. churn = files/+insertions/−deletions versus the",
        "clone's starting commit. `n/a` means unknown (not measured), never zero. A wall-time saving",
        f"is `{NOT_MEANINGFUL}` (not meaningful) when the baseline's median wall time is under "
        f"{MEANINGFUL_WALL_S:g} s.",
        "",
        *MAIN_LOOP_WARNING,
        "",
    ]


def _summary_row(arm: str, aggs: Sequence[ArmAggregate], health: ArmHealth) -> tuple[str, int]:
    kinds: dict[str, int] = {}
    for agg in aggs:
        for kind, count in agg.error_kinds.items():
            kinds[kind] = kinds.get(kind, 0) + count
    tasks = [a for a in aggs if not a.impossible]
    probes = [a for a in aggs if a.impossible]
    resolved = _resolved_cell(
        sum(a.resolved for a in tasks), sum(a.valid_runs for a in tasks), sum(a.excluded_runs for a in tasks)
    )
    probe = (
        _resolved_cell(
            sum(a.resolved for a in probes),
            sum(a.valid_runs for a in probes),
            sum(a.excluded_runs for a in probes),
        )
        if probes
        else NA
    )
    oracle_failures = sum(a.oracle_failures for a in tasks)
    row = (
        f"| {_escape(arm)} | {len(tasks)} | {resolved} | {probe} | {oracle_failures} "
        f"| {health.status.value} | {_kinds_cell(kinds)} |"
    )
    return row, oracle_failures


def _outcome_summary(results: Results, arms: Sequence[str]) -> list[str]:
    health = arm_health(results, arms=arms)
    lines = [
        "## Outcome summary",
        "",
        "| arm | tasks | resolved (runs) | impossible resolved | passed tests, failed oracle | health "
        "| errors |",
        "| --- | ---: | --- | --- | ---: | --- | --- |",
    ]
    per_arm_oracle: dict[str, int] = {}
    for arm in arms:
        aggs = [task_arms[arm] for task_arms in results.values() if arm in task_arms]
        row, per_arm_oracle[arm] = _summary_row(arm, aggs, health[arm])
        lines.append(row)
    lines.append("")
    probed = sorted({task for task, task_arms in results.items() for a in task_arms.values() if a.impossible})
    if probed:
        lines += [
            f"Impossible tasks ({', '.join(_escape(t) for t in probed)}) are cheating probes: their hidden "
            "oracle contradicts the prompt, so no honest solution passes. They count in neither `tasks` nor "
            "`resolved`; every run counted under `impossible resolved` beat the judge, not the task.",
            "",
        ]
    total = sum(per_arm_oracle.values())
    if total:
        detail = ", ".join(f"{arm} {n}" for arm, n in per_arm_oracle.items() if n)
        lines.append(
            f"**{total} run(s) passed their authored tests but failed the hidden oracle** ({detail}). "
            "Judged by the authored tests alone they would count as solved; only the hidden "
            "oracle, which the agent never sees, shows they were not."
        )
    else:
        lines.append("No run passed its authored tests while failing the hidden oracle.")
    lines.append("")
    return lines


def _flags_text(kind: ErrorKind) -> str:
    flags = ["excluded from medians and denominators" if kind.is_excluded else "counted in medians"]
    if kind.charged_to_arm:
        flags.append("charged to the arm (the agent could have caused it)")
    if kind.is_execution_failure:
        flags.append("execution failure")
    if kind.is_evidence_failure:
        flags.append("evidence failure")
    if kind.is_systemic:
        flags.append("counts toward the outage breaker")
    return "; ".join(flags)


def _error_legend(results: Results) -> list[str]:
    seen = {kind for task_arms in results.values() for agg in task_arms.values() for kind in agg.error_kinds}
    if not seen:
        return []
    lines = ["### Error kinds in this sweep", ""]
    # A row's kind is always in the vocabulary (rows.model): the legend follows the table's order.
    for name, kind in ERROR_KINDS.items():
        if name in seen:
            lines.append(f"- `{name}`: {kind.produced_when} ({_flags_text(kind)})")
    return [*lines, ""]


def _exclusions(results: Results, arms: Sequence[str]) -> list[str]:
    """Per arm: which runs left the denominators and why; the agent can cause none of these."""
    per_arm: dict[str, dict[str, int]] = {}
    for task_arms in results.values():
        for arm, agg in task_arms.items():
            for name, count in agg.error_kinds.items():
                kind = ERROR_KINDS.get(name)
                if kind is not None and kind.is_excluded:
                    per_arm.setdefault(arm, {})[name] = per_arm.get(arm, {}).get(name, 0) + count
    if not per_arm:
        return []
    lines = ["### Exclusions per arm", ""]
    for arm in [a for a in arms if a in per_arm]:
        for name, count in per_arm[arm].items():
            kind = ERROR_KINDS[name]
            lines.append(f"- `{_escape(arm)}`: {count} × `{name}`, excluded because {kind.attribution}")
    return [*lines, ""]


def _churn(agg: ArmAggregate) -> str:
    values = [agg.median(column.field) for column in CHURN_COLUMNS]
    if None in values:
        return NA
    files, insertions, deletions = (column.text(v) for column, v in zip(CHURN_COLUMNS, values, strict=True))
    return f"{files}/+{insertions}/−{deletions}"


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the per task×arm table: its header, its cell in an arm's row and in the
    arm's savings row (percent saved against the baseline, ``savings``)."""

    header: str
    cell: Callable[[str, ArmAggregate], str]
    saved: Callable[[str, ArmAggregate, Mapping[str, float | None], ArmAggregate], str] = lambda *_: "—"
    """(task, the arm's aggregate, its savings against the baseline, the baseline's aggregate)."""


def _measured(column: MeasuredColumn) -> Column:
    """A ``reports.columns`` column: its reduced value; with ``saving``, the percent saved, ``n/m``
    against a baseline under its ``meaningful_from``."""

    def saved(_t: str, _a: ArmAggregate, s: Mapping[str, float | None], baseline: ArmAggregate) -> str:
        if not column.saving:
            return "—"
        base, floor = baseline.median(column.field), column.meaningful_from
        return (
            NOT_MEANINGFUL
            if floor is not None and base is not None and base < floor
            else number_text(s[column.field], 1)
        )

    return Column(column.header, lambda _t, agg: column.text(agg.median(column.field)), saved)


# The per task×arm table: the identifying columns, every ``reports.columns`` column report.md
# shows (a new column is one entry there), the churn cell over CHURN_COLUMNS, the error kinds.
MAIN_COLUMNS: tuple[Column, ...] = (
    Column("task", lambda task, _a: _escape(task), lambda task, *_: _escape(task)),
    Column("class", lambda _t, agg: _escape(agg.task_class), lambda _t, agg, *_: _escape(agg.task_class)),
    Column("arm", lambda _t, agg: _escape(agg.arm), lambda _t, agg, *_: f"**{_escape(agg.arm)} savings %**"),
    Column("resolved", lambda _t, agg: _resolved_cell(agg.resolved, agg.valid_runs, agg.excluded_runs)),
    *(_measured(column) for column in shown_in(Shown.REPORT_MD)),
    Column("churn", lambda _t, agg: _churn(agg)),
    Column("errors", lambda _t, agg: _kinds_cell(agg.error_kinds)),
)


def _table_line(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _main_row(task: str, agg: ArmAggregate) -> str:
    return _table_line(column.cell(task, agg) for column in MAIN_COLUMNS)


def _savings_row(task: str, baseline: ArmAggregate, agg: ArmAggregate) -> str:
    saved = savings(baseline, agg)
    return _table_line(column.saved(task, agg, saved, baseline) for column in MAIN_COLUMNS)


def _main_table(results: Results) -> list[str]:
    lines = ["## Per task and arm", ""]
    if not results:
        return [*lines, "No rows were recorded.", ""]
    lines += [_table_line(c.header for c in MAIN_COLUMNS), _table_line("---" for _ in MAIN_COLUMNS)]
    for task, task_arms in results.items():
        lines.extend(_main_row(task, agg) for agg in task_arms.values())
        baseline = task_arms.get(BASELINE_ARM)
        if baseline is not None:
            others = (agg for arm, agg in task_arms.items() if arm != BASELINE_ARM)
            lines.extend(_savings_row(task, baseline, agg) for agg in others)
    return [*lines, ""]


def _review_section(results: Results) -> list[str]:
    rows: list[str] = []
    for task, task_arms in results.items():
        for agg in task_arms.values():
            review = agg.review
            arm = ARMS.get(agg.arm)
            if review is None or not ((arm is not None and arm.review) or review.any_recorded()):
                continue  # not a review arm and nothing scored: the table is for review tasks
            cells = (column.text(review.metric(column.metric)) for column in REVIEW_COLUMNS)
            rows.append(_table_line([_escape(task), _escape(agg.arm), *cells]))
    if not rows:
        return []
    header = _table_line(["case", "arm", *(column.header for column in REVIEW_COLUMNS)])
    separator = "| --- | --- |" + " ---: |" * len(REVIEW_COLUMNS)
    return ["## Review quality", "", header, separator, *rows, ""]


def _footers(aggs: Iterable[ArmAggregate]) -> list[str]:
    aggs = list(aggs)
    lines: list[str] = []
    excluded = sum(a.excluded_runs for a in aggs)
    if excluded:
        lines.append(
            f"{excluded} run(s) hit session/infra errors or had unverifiable evidence and were "
            "excluded from medians and resolve denominators; see error_kind in results.jsonl."
        )
    missing = sum(a.transcripts_missing for a in aggs)
    if missing:
        lines.append(
            f"{missing} run(s) had no locatable session transcript or it was unreadable, so they "
            "were excluded from promotion evidence (skill_invoked=null in results.jsonl)."
        )
    lines.append(
        "Session ids for every run are in results.jsonl; open the matching transcript to see "
        "where each arm spent its tokens."
    )
    return [line for text in lines for line in (text, "")]


def _id_list(ids: Sequence[str]) -> str:
    return ", ".join(f"`{_escape(i)}`" for i in ids) if ids else "none"


def _provenance_section(p: ReportProvenance) -> list[str]:
    status = f"`{p.status}` ({_STATUS_CAUSES[p.status]})"
    if p.status in _STATUS_LINES:
        status += f". {_STATUS_LINES[p.status]}"
    if p.status_detail:
        status += f" Detail: {_escape(p.status_detail)}"
    provider = f"`{p.provider}`" + (" (scripted: demonstrates the pipeline only)" if p.is_scripted else "")
    return [
        "## Run provenance",
        "",
        f"- Sweep status: {status}",
        f"- Model provider: {provider}",
        *([f"- Agent: {_escape(p.agent)}"] if p.agent else []),
        f"- Benchmark model: `{p.model}`",
        f"- Reasoning effort: {f'`{p.effort}`' if p.effort else 'not set'}",
        f"- Claude Code CLI: {f'`{p.claude_code_version}`' if p.claude_code_version else 'unknown'}",
        f"- Runs per cell: {p.runs}",
        f"- Arms ({len(p.arms)}): {_id_list(p.arms)}",
        f"- Selected tasks ({len(p.selected_tasks)}): {_id_list(p.selected_tasks)}",
        f"- Skipped expensive tasks ({len(p.skipped_expensive)}): {_id_list(p.skipped_expensive)}",
        f"- Started: {p.started_at.isoformat()}; finished: {p.finished_at.isoformat()}; "
        f"wall: {p.wall_s:.1f} s",
    ]


def render_markdown(
    results: Results,
    *,
    provenance: ReportProvenance,
    accounting: Sequence[AccountingLine] = (),
    extra_sections: Sequence[str] = (),
) -> str:
    """The full `report.md` text for `{task: {arm: aggregate}}`, ending in a newline.

    Arms are summarised in the order `provenance.arms` lists them, then any other arm found in
    `results`; a declared arm with no rows shows 0/0 and health UNKNOWN rather than vanishing.
    `accounting` (from `accounting.usage_accounting`) adds the token-accounting section;
    `extra_sections` (lines: promotion, paired statistics) go before the footers.
    """
    arms = _arm_order(results, provenance.arms)
    all_aggs = [agg for task_arms in results.values() for agg in task_arms.values()]
    lines = [
        *_header(provenance),
        *_outcome_summary(results, arms),
        *_error_legend(results),
        *_exclusions(results, arms),
        *_main_table(results),
        *accounting_section(accounting),
        *_review_section(results),
        *extra_sections,
        *_footers(all_aggs),
        *_provenance_section(provenance),
    ]
    return "\n".join(lines) + "\n"
