"""`report.html`: one self-contained page (no network at view time) beside report.md.

Charts (Chart.js, vendored inline from `vendor/`, see its README): resolve rate vs median cost
per arm with a 95 % CI, per-task median cost by arm, tokens per arm in the three accounting views
(main loop, transcripts incl. subagents, provider), error kinds per arm. Tables: the promotion
decision with per-task evidence, and measurement health. Everything the page shows is embedded as
one JSON block; the page script only draws it.

Self-check hooks for the headless-browser test: each chart canvas gets `data-points` (the number
of non-null points drawn) and `<body data-charts>` the number of charts drawn; uncaught errors
are appended to `#page-errors`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from workflow_bench.reports.accounting import AccountingLine
from workflow_bench.reports.aggregate import ArmAggregate, ArmHealth
from workflow_bench.reports.columns import Shown, shown_in
from workflow_bench.reports.promotion_model import PromotionDocument, ReviewTask
from workflow_bench.reports.provenance import ReportProvenance
from workflow_bench.reports.stats_model import PairedStatistics, TreatmentFiring

_CHART_JS = "chart.umd.min.js"


def _asset(*parts: str) -> str:
    return resources.files("workflow_bench.reports").joinpath(*parts).read_text(encoding="utf-8")


def _e(value: Any) -> str:
    return html.escape("n/a" if value is None else str(value))


def _tokens(accounting: Sequence[AccountingLine]) -> dict[str, dict[str, int | None]]:
    out: dict[str, dict[str, int | None]] = {}
    for line in accounting:
        views = {"main loop": line.main_loop, "transcripts": line.transcripts, "provider": line.provider}
        per_arm = out.setdefault(line.arm, {})
        for name, totals in views.items():
            values = None if totals is None else totals.values()
            known = [v for v in values or () if v is not None]
            total = None if values is None or len(known) != len(values) else sum(known)
            if name in per_arm and (per_arm[name] is None or total is None):
                per_arm[name] = None
            else:
                per_arm[name] = (per_arm.get(name) or 0) + total if total is not None else None
    return out


def _promotion_series(
    promotion: PromotionDocument | None, tasks: Sequence[str]
) -> list[tuple[str, list[float | None]]]:
    """Per candidate (its label), its improvement over the incumbent on each of ``tasks`` (the
    sweep's); empty when there is nothing to draw."""
    if promotion is None:
        return []
    series: list[tuple[str, list[float | None]]] = []
    for d in promotion.decisions:
        by_task = {
            t.task: t.weighted_f1_delta if isinstance(t, ReviewTask) else t.improvement_pct for t in d.tasks
        }
        unit = "Δ weighted F1" if d.review else f"{d.metric} improvement %"
        series.append((f"{d.candidate_arm} ({unit})", [by_task.get(t) for t in tasks]))
    return series if any(v is not None for _, values in series for v in values) else []


def _columns_table(results: Mapping[str, Mapping[str, ArmAggregate]]) -> str:
    """The per task×arm table of the ``reports.columns`` columns report.html shows ("" with none)."""
    columns = shown_in(Shown.REPORT_HTML)
    if not columns or not results:
        return ""
    head = "".join(f"<th>{_e(c.header)}</th>" for c in columns)
    rows = "".join(
        f"<tr><td>{_e(task)}</td><td>{_e(arm)}</td>"
        + "".join(f"<td>{_e(c.text(agg.median(c.field)))}</td>" for c in columns)
        + "</tr>"
        for task, task_arms in results.items()
        for arm, agg in task_arms.items()
    )
    return f"<h2>Per task and arm</h2><table><tr><th>task</th><th>arm</th>{head}</tr>{rows}</table>"


def _health_table(health: Mapping[str, ArmHealth]) -> str:
    rows = "".join(
        f"<tr><td>{_e(arm)}</td><td class='{h.status.value}'>{h.status.value}</td><td>{h.fresh_attempts}</td>"
        f"<td>{h.admissible}</td><td>{h.execution_failures}</td><td>{h.evidence_failures}</td>"
        f"<td>{_e(', '.join(h.reasons) or '—')}</td></tr>"
        for arm, h in health.items()
    )
    return (
        "<table><tr><th>arm</th><th>status</th><th>fresh attempts</th><th>admissible</th>"
        f"<th>execution failures</th><th>evidence failures</th><th>reasons</th></tr>{rows}</table>"
    )


def _firing_table(firing: TreatmentFiring) -> str:
    if not firing.arms:
        return "<p>No arm expects a skill or gets an MCP tool.</p>"
    rows = "".join(
        f"<tr><td>{_e(arm.arm)}</td><td>{_e(e.kind)} <code>{_e(e.name)}</code></td>"
        f"<td>{e.cells}</td><td>{e.fired}</td><td>{e.unknown}</td><td>{_e(e.share)}</td></tr>"
        for arm in firing.arms
        for e in arm.expected
    )
    return (
        f"<p>{_e(firing.note)}</p><table><tr><th>arm</th><th>expected</th><th>valid cells</th>"
        f"<th>fired</th><th>unknown</th><th>share</th></tr>{rows}</table>"
    )


def _promotion_html(promotion: PromotionDocument | None) -> str:
    if promotion is None:
        return "<p>No candidate arm ran: no promotion decision.</p>"
    parts = [
        f"<p>run status <code>{_e(promotion.run_status)}</code>; evidence expires "
        f"{_e(promotion.evidence_expires_at)}; verify with <code>python -m workflow_bench.promotion"
        " verify DIR</code>.</p>"
    ]
    for d in promotion.decisions:
        parts.append(
            f"<h3>{_e(d.candidate_arm)} vs {_e(d.incumbent_arm)}: "
            f"<span class='{_e(d.decision)}'>{_e(d.decision)}</span></h3>"
            "<ul>" + "".join(f"<li>{_e(r)}</li>" for r in d.reasons) + "</ul>"
        )
        head = (
            "<tr><th>case</th><th>incumbent wF1</th><th>candidate wF1</th><th>Δ</th><th>scored inc/cand"
            "</th><th>notes</th></tr>"
            if d.review
            else "<tr><th>task</th><th>gated</th><th>incumbent resolved</th><th>candidate resolved</th>"
            f"<th>incumbent {_e(d.metric)}</th><th>candidate {_e(d.metric)}</th><th>improvement %"
            "</th><th>notes</th></tr>"
        )
        body = []
        for t in d.tasks:
            inc, cand = t.incumbent, t.candidate
            if isinstance(t, ReviewTask):
                notes = "; ".join([*t.insufficient, *t.regressions]) or "—"
                body.append(
                    f"<tr><td>{_e(t.task)}</td><td>{_e(inc.review_weighted_f1)}</td>"
                    f"<td>{_e(cand.review_weighted_f1)}</td><td>{_e(t.weighted_f1_delta)}</td>"
                    f"<td>{inc.scored_runs}/{cand.scored_runs}</td><td>{_e(notes)}</td></tr>"
                )
            else:
                flags = [*t.insufficient]
                flags += ["quality regression"] if t.quality_regression else []
                flags += ["efficiency regression"] if t.efficiency_regression else []
                body.append(
                    f"<tr><td>{_e(t.task)}</td><td>{t.gated}</td><td>{_e(t.incumbent_resolved)}</td>"
                    f"<td>{_e(t.candidate_resolved)}</td><td>{_e(t.incumbent_metric)}</td>"
                    f"<td>{_e(t.candidate_metric)}</td><td>{_e(t.improvement_pct)}</td>"
                    f"<td>{_e('; '.join(flags) or '—')}</td></tr>"
                )
        parts.append("<table>" + head + "".join(body) + "</table>")
    return "".join(parts)


def render_html(
    *,
    results: Mapping[str, Mapping[str, ArmAggregate]],
    provenance: ReportProvenance,
    health: Mapping[str, ArmHealth],
    promotion: PromotionDocument | None,
    stats: PairedStatistics,
    accounting: Sequence[AccountingLine],
) -> str:
    arms = list(health)
    errors: dict[str, dict[str, int]] = {}
    for task_arms in results.values():
        for arm, agg in task_arms.items():
            for kind, count in agg.error_kinds.items():
                errors.setdefault(arm, {})[kind] = errors.get(arm, {}).get(kind, 0) + count
    error_kinds = sorted({k for per in errors.values() for k in per})
    series = _promotion_series(promotion, provenance.selected_tasks)
    data: dict[str, Any] = {
        "arms": arms,
        "tasks": list(results),
        "arm_summary": {arm: summary.model_dump(mode="json") for arm, summary in stats.arms.items()},
        "task_cost": {t: {a: agg.median("cost_usd") for a, agg in ta.items()} for t, ta in results.items()},
        "tokens": _tokens(accounting),
        "errors": errors,
        "error_kinds": error_kinds,
        "promotion_chart": {
            "labels": list(provenance.selected_tasks) if series else [],
            "datasets": [{"label": label, "data": values} for label, values in series],
        },
    }
    payload = json.dumps(data, sort_keys=True, allow_nan=False).replace("</", "<\\/")
    notice = (
        "<p class='notice'><b>SCRIPTED PROVIDER: NOT A MODEL MEASUREMENT.</b> Every number comes from a "
        "scripted model; it shows the pipeline runs end to end.</p>"
        if provenance.is_scripted
        else ""
    )
    errors_section = (
        "<div class='chart'><canvas id='chart-errors'></canvas></div>"
        if error_kinds
        else "<p>No run recorded an error kind.</p>"
    )
    promo_chart = "<div class='chart'><canvas id='chart-promotion'></canvas></div>" if series else ""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>workflow-bench report</title><style>{_asset('report.css')}</style></head><body>"
        "<h1>workflow-bench report</h1>"
        f"{notice}<pre id='page-errors'></pre>"
        f"<p>status <code>{_e(provenance.status)}</code>; model <code>{_e(provenance.model)}</code>;"
        " provider "
        f"<code>{_e(provenance.provider)}</code>; {provenance.runs} run(s) per cell; {len(results)} task(s); "
        f"{len(arms)} arm(s). Numbers: medians over valid runs; report.md and stats.json hold the tables.</p>"
        "<p>Every cell, with its trajectory, patch and judgement: <a href='viewer.html'>viewer.html</a>.</p>"
        "<h2>Measurement health</h2>"
        + _health_table(health)
        + "<h2>Did the treatment fire</h2>"
        + _firing_table(stats.treatment_firing)
        + "<h2>Outcomes and cost</h2><div class='grid'>"
        "<div class='chart'><canvas id='chart-rate-cost'></canvas></div>"
        "<div class='chart'><canvas id='chart-task-cost'></canvas></div>"
        "<div class='chart'><canvas id='chart-tokens'></canvas></div>"
        f"<div>{errors_section}</div></div>"
        + _columns_table(results)
        + "<h2>Promotion</h2>"
        + promo_chart
        + _promotion_html(promotion)
        + "\n"
        f"<script id='report-data' type='application/json'>{payload}</script>\n"
        f"<script>{_asset('vendor', _CHART_JS)}</script>\n<script>{_asset('report.js')}</script>\n"
        "</body></html>\n"
    )
