"""report.md sections for the promotion decision and the paired statistics.

Render only; every number comes from promotion.json / stats.json as built elsewhere. Unknown
prints `n/a`.
"""

from __future__ import annotations

from typing import Any

from workflow_bench.reports.promotion_model import PromotionDocument, ReviewTask
from workflow_bench.reports.stats_model import DeltaSummary, PairedStatistics, TreatmentFiring

NA = "n/a"


def _fmt(value: Any, spec: str = "") -> str:
    if value is None:
        return NA
    return format(value, spec) if spec else str(value)


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def promotion_section(promotion: PromotionDocument | None) -> list[str]:
    if promotion is None:
        return []
    lines = [
        "## Promotion",
        "",
        f"`promotion.json` (schema {promotion.schema_version}, run status `{promotion.run_status}`, "
        f"expires {promotion.evidence_expires_at}). Check it with "
        "`python -m workflow_bench.promotion verify DIR`.",
        "",
    ]
    for decision in promotion.decisions:
        lines += [
            f"### {_escape(decision.candidate_arm)} vs {_escape(decision.incumbent_arm)}: "
            f"**{decision.decision}**",
            "",
            f"Metric `{decision.metric}`; median improvement {_fmt(decision.median_improvement)}"
            f"{'' if decision.review else ' %'}; "
            f"resolved-run margin {_fmt(decision.resolved_margin)}.",
            "",
            *(f"- {_escape(reason)}" for reason in decision.reasons),
            "",
        ]
        if decision.review:
            lines += [
                "| case | clean control | incumbent wF1 | candidate wF1 | Δ wF1 | inc scored | cand"
                " scored | notes |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
            ]
            for r in decision.tasks:
                if not isinstance(r, ReviewTask):
                    continue
                notes = "; ".join([*r.insufficient, *r.regressions]) or "—"
                lines.append(
                    f"| {_escape(r.task)} | {r.clean_control} |"
                    f" {_fmt(r.incumbent.review_weighted_f1)} "
                    f"| {_fmt(r.candidate.review_weighted_f1)} | {_fmt(r.weighted_f1_delta)} "
                    f"| {r.incumbent.scored_runs} | {r.candidate.scored_runs} |"
                    f" {_escape(notes)} |"
                )
        else:
            lines += [
                "| task | gated | incumbent resolved | candidate resolved | incumbent metric |"
                " candidate metric "
                "| improvement % | notes |",
                "| --- | --- | --- | --- | ---: | ---: | ---: | --- |",
            ]
            for t in decision.tasks:
                if isinstance(t, ReviewTask):
                    continue
                flags = [*t.insufficient]
                flags += ["quality regression"] if t.quality_regression else []
                flags += ["quality floor not met"] if t.candidate_quality_floor_met is False else []
                flags += ["efficiency regression"] if t.efficiency_regression else []
                lines.append(
                    f"| {_escape(t.task)} | {t.gated} | {t.incumbent_resolved} |"
                    f" {t.candidate_resolved} "
                    f"| {_fmt(t.incumbent_metric)} | {_fmt(t.candidate_metric)} |"
                    f" {_fmt(t.improvement_pct)} "
                    f"| {_escape('; '.join(flags) or '—')} |"
                )
        lines.append("")
    return lines


def _ci(summary: DeltaSummary) -> str:
    ci = summary.ci95
    return NA if ci is None else f"[{_fmt(ci[0])}, {_fmt(ci[1])}]"


def stats_section(stats: PairedStatistics) -> list[str]:
    lines = [
        "## Paired statistics",
        "",
        "Descriptive only (the promotion gate does not read them). Per task: arm − reference over valid",
        "runs; across tasks: median delta, bootstrap 95 % CI of the median, sign test p-value; beside it",
        "McNemar's exact test on resolved over cells paired by (task, run): pairs, discordant pairs",
        "(arm only / reference only) and p-value. Full detail in `stats.json`.",
        "",
    ]
    if stats.arms:
        lines += [
            "| arm | valid runs | resolve rate | 95 % CI (Wilson) | impossible resolved | median cost $ |",
            "| --- | ---: | ---: | --- | --- | ---: |",
        ]
        for arm, summary in stats.arms.items():
            ci = summary.resolve_rate_ci95
            ci_text = NA if ci is None else f"[{_fmt(ci[0])}, {_fmt(ci[1])}]"
            probe = (
                f"{summary.impossible_resolved}/{summary.impossible_runs}" if summary.impossible_runs else NA
            )
            lines.append(
                f"| {_escape(arm)} | {summary.valid_runs} | {_fmt(summary.resolve_rate)} | {ci_text} "
                f"| {probe} | {_fmt(summary.median_cost_usd)} |"
            )
        lines.append("")
    if stats.comparisons:
        lines += [
            "| arm | reference | tasks | Δ resolve rate (median) | 95 % CI | sign p | McNemar pairs"
            " (arm only / ref only) | McNemar p | Δ cost $ (median) | 95 % CI | sign p |",
            "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: |",
        ]
        for c in stats.comparisons:
            rate, cost, paired = c.resolve_rate, c.cost_usd, c.mcnemar
            lines.append(
                f"| {_escape(c.arm)} | {_escape(c.reference)} | {len(c.per_task)} "
                f"| {_fmt(rate.median_delta)} | {_ci(rate)} | {_fmt(rate.sign_test.p_value)} "
                f"| {paired.pairs} ({paired.arm_only} / {paired.reference_only}) "
                f"| {_fmt(paired.p_value)} "
                f"| {_fmt(cost.median_delta)} | {_ci(cost)} | {_fmt(cost.sign_test.p_value)} |"
            )
        lines.append("")
    ks = sorted({int(k) for per_arm in stats.pass_k.values() for k in per_arm})
    if ks:
        header = " | ".join(f"pass@{k} | pass^{k}" for k in ks)
        lines += [f"| arm | {header} |", "| --- |" + " ---: |" * (2 * len(ks))]
        for arm, per_k in stats.pass_k.items():
            known = [per_k.get(str(k)) for k in ks]
            cells = " | ".join(
                f"{_fmt(None if p is None else p.pass_at_k)} | {_fmt(None if p is None else p.pass_hat_k)}"
                for p in known
            )
            lines.append(f"| {_escape(arm)} | {cells} |")
        lines.append("")
    return lines


def firing_section(firing: TreatmentFiring) -> list[str]:
    """report.md's "Did the treatment fire" (reports/firing.py); nothing when no arm expects any."""
    if not firing.arms:
        return []
    lines = [
        "## Did the treatment fire",
        "",
        firing.note,
        "",
        "| arm | expected | valid cells | fired | unknown | share |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for arm in firing.arms:
        for e in arm.expected:
            lines.append(
                f"| {_escape(arm.arm)} | {e.kind} `{_escape(e.name)}` | {e.cells} | {e.fired} "
                f"| {e.unknown} | {_fmt(e.share)} |"
            )
    effects = [(a.arm, a.effect) for a in firing.arms if a.effect is not None]
    if effects:
        lines += [
            "",
            "Effect vs `baseline` (resolve rate and median cost, arm − baseline), over every valid cell and "
            "over only the cells where every expected skill fired (descriptive, not causal):",
            "",
            "| arm | cells | Δ resolve rate | Δ median cost $ | cells (skills fired) | Δ resolve rate |"
            " Δ median cost $ |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name, effect in effects:
            every, fired = effect.all_valid, effect.skills_fired
            lines.append(
                f"| {_escape(name)} | {every.cells} | {_fmt(every.resolve_rate_delta)} "
                f"| {_fmt(every.median_cost_usd_delta)} | {fired.cells} "
                f"| {_fmt(fired.resolve_rate_delta)} | {_fmt(fired.median_cost_usd_delta)} |"
            )
    return [*lines, ""]
