"""Did the treatment fire: per arm, how often each expected skill and granted MCP tool was invoked.

"The skill does not help" and "the skill never fired" look the same in a resolve rate, so before
reading an effect, read this. Per arm, over its valid cells (not excluded: the cells where the
agent had its chance, the same denominator as every resolve rate):

- each expected skill (``skills_expected``): the share of cells whose wire record proves it
  invoked (``skills_invoked``: requested through Skill and given a non-error result — never the
  agent-writable stream); cells whose rows predate those fields fall back to ``skill_invoked``
  (every expected skill at once), and a cell with no wire record is counted ``unknown``, never
  as not fired;
- each granted MCP tool (``mcp_tools_granted``): the share of cells the model called it in at
  least once (``tool_use_counts``, also from the wire record);
- against ``baseline`` when it ran: the resolve-rate difference and the median-cost difference
  over all valid cells, and over only the cells where every expected skill fired. The second is
  descriptive: whether a skill fires is not randomized (an easy task may both fire the skill and
  resolve), so it is not the skill's causal effect.

Pure: rows in, a ``TreatmentFiring`` (reports/stats_model.py) out (stats.json
``treatment_firing``, report.md, report.html, the viewer's index).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from workflow_bench.judging.outcomes import is_excluded
from workflow_bench.rows.model import Row

from .stats_model import (
    ArmFiring,
    FiringEffect,
    FiringShare,
    Outcome,
    OutcomeDelta,
    ShareKind,
    TreatmentFiring,
)

BASELINE_ARM = "baseline"
ALL_EXPECTED = "expected skills"
NOTE = (
    "Share of each arm's valid cells in which the wire record (not the agent-writable stream) proves "
    "the skill invoked or shows the MCP tool called. The effect over cells where the skills fired is "
    "descriptive: firing is not randomized, so it is not the skill's causal effect."
)
_DIGITS = 6


def _round(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, _DIGITS)


def fired_all(row: Row) -> bool | None:
    """Every expected skill of the row proven invoked (None: unknown, or the arm expects none)."""
    expected = row.skills_expected
    if expected is None:
        return row.skill_invoked  # a row from before the per-skill fields
    if not expected or row.skills_invoked is None:
        return None
    return all(skill in row.skills_invoked for skill in expected)


def _skill_fired(row: Row, skill: str) -> bool | None:
    if row.skills_expected is None or row.skills_invoked is None:
        return None
    return skill in row.skills_invoked


def _share(kind: ShareKind, name: str, verdicts: Sequence[bool | None]) -> FiringShare:
    fired = sum(1 for v in verdicts if v is True)
    unknown = sum(1 for v in verdicts if v is None)
    known = len(verdicts) - unknown
    return FiringShare(
        kind=kind,
        name=name,
        cells=len(verdicts),
        fired=fired,
        unknown=unknown,
        share=_round(fired / known) if known else None,
    )


def _outcome(rows: Sequence[Row]) -> Outcome:
    costs = [r.cost_usd for r in rows]
    known = [float(c) for c in costs if c is not None]
    return Outcome(
        cells=len(rows),
        resolve_rate=_round(sum(1 for r in rows if r.resolved) / len(rows)) if rows else None,
        median_cost_usd=_round(statistics.median(known)) if rows and len(known) == len(costs) else None,
    )


def _delta(mine: Outcome, reference: Outcome) -> OutcomeDelta:
    def minus(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else _round(a - b)

    return OutcomeDelta(
        **mine.model_dump(),
        resolve_rate_delta=minus(mine.resolve_rate, reference.resolve_rate),
        median_cost_usd_delta=minus(mine.median_cost_usd, reference.median_cost_usd),
    )


def _expected(valid: Sequence[Row]) -> list[FiringShare]:
    skills = list(dict.fromkeys(s for r in valid for s in r.skills_expected or ()))
    tools = sorted({t for r in valid for t in r.mcp_tools_granted or ()})
    out = [_share("skill", skill, [_skill_fired(r, skill) for r in valid]) for skill in skills]
    older = [r for r in valid if r.skills_expected is None]
    if len(skills) > 1 or any(r.skill_invoked is not None for r in older):
        out.append(_share("all", ALL_EXPECTED, [fired_all(r) for r in valid]))
    out += [
        _share("mcp tool", tool, [(r.tool_use_counts or {}).get(tool, 0) > 0 for r in valid])
        for tool in tools
    ]
    return out


def treatment_firing(rows: Sequence[Row], *, arms: Sequence[str]) -> TreatmentFiring:
    """Per arm: the firing shares of its expected skills and granted MCP tools, and the effects."""
    valid_by_arm = {arm: [r for r in rows if r.arm == arm and not is_excluded(r)] for arm in arms}
    reference = valid_by_arm.get(BASELINE_ARM)
    out = []
    for arm in arms:
        valid = valid_by_arm[arm]
        expected = _expected(valid)
        if not expected:
            continue
        effect = None
        has_skills = any(e.kind != "mcp tool" for e in expected)
        if reference and arm != BASELINE_ARM and has_skills:
            base = _outcome(reference)
            effect = FiringEffect(
                reference=BASELINE_ARM,
                reference_outcome=base,
                all_valid=_delta(_outcome(valid), base),
                skills_fired=_delta(_outcome([r for r in valid if fired_all(r) is True]), base),
            )
        out.append(ArmFiring(arm=arm, cells=len(valid), expected=expected, effect=effect))
    return TreatmentFiring(note=NOTE, arms=out)
