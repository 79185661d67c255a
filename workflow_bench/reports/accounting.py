"""Token accounting: the three usage figures of each row, summed per task×arm, and where they disagree.

Every row carries three views of the same spend (see ``rows.schema``): ``usage_main_loop`` (the
CLI's ``result.usage``; subagents excluded), ``usage_transcripts`` (every assistant message in the
captured streams, subagents included) and ``usage_provider`` (what the scripted provider or the
gateway itself observed). They agree only when nothing is hidden, so a disagreement is evidence:
main loop < transcripts means subagents spent tokens the main-loop columns do not show;
transcripts < provider means the stream omitted messages the provider served.

Pure: rows in, frozen values out. Sums run over *every* row of a task×arm, failed and excluded
runs included: they spent tokens too. Unknown is not zero: a field that any row left unknown is
unknown in the sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workflow_bench.rows.model import Row, Usage
from workflow_bench.usage import USAGE_FIELDS, sum_usage

FIGURES = (
    ("usage_main_loop", "main loop"),
    ("usage_transcripts", "transcripts"),
    ("usage_provider", "provider"),
)


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Four per-field sums; ``None`` where a row left the field unknown."""

    input_tokens: int | None
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None
    output_tokens: int | None

    def values(self) -> tuple[int | None, ...]:
        return tuple(getattr(self, name) for name in USAGE_FIELDS)


@dataclass(frozen=True, slots=True)
class AccountingLine:
    """One task×arm: its runs, the three figures summed over them, and the disagreements seen."""

    task: str
    arm: str
    runs: int
    main_loop: UsageTotals
    transcripts: UsageTotals
    provider: UsageTotals | None
    """``None`` when no row of the group was observed by a provider or gateway."""
    flags: tuple[str, ...]
    """Distinct disagreements, each with the number of runs that showed it, e.g.
    ``"main loop < transcripts (subagent spend) ×2"``."""


def _figure(row: Row, key: str) -> tuple[int | None, ...] | None:
    value: Usage | None = getattr(row, key)
    if value is None:
        return None
    return tuple(getattr(value, name) for name in USAGE_FIELDS)


def _compare(a: tuple[int | None, ...], b: tuple[int | None, ...]) -> str | None:
    """'<', '>' or '≠' over the fields both know; ``None`` when they agree (or share no field)."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if all(x == y for x, y in pairs):
        return None
    if all(x <= y for x, y in pairs):
        return "<"
    if all(x >= y for x, y in pairs):
        return ">"
    return "≠"


# Why a known disagreement happens, where one explanation is the usual one.
_WHY = {
    ("main loop", "<", "transcripts"): " (subagent spend)",
    ("main loop", "<", "provider"): " (subagent spend)",
    ("transcripts", "<", "provider"): " (the stream omits messages)",
}


def row_flags(row: Row) -> list[str]:
    """Every pairwise disagreement between a row's known usage figures."""
    figures = [(label, _figure(row, key)) for key, label in FIGURES]
    flags = []
    for i, (left, a) in enumerate(figures):
        for right, b in figures[i + 1 :]:
            if a is None or b is None:
                continue
            sign = _compare(a, b)
            if sign is not None:
                flags.append(f"{left} {sign} {right}{_WHY.get((left, sign, right), '')}")
    return flags


def _totals(rows: Sequence[Row], key: str) -> UsageTotals | None:
    figures = [_figure(row, key) for row in rows]
    known = [f for f in figures if f is not None]
    if not known:
        return None
    return UsageTotals(**sum_usage(dict(zip(USAGE_FIELDS, f, strict=True)) if f else {} for f in figures))


_UNKNOWN = UsageTotals(None, None, None, None)


def usage_accounting(rows: Iterable[Row]) -> tuple[AccountingLine, ...]:
    """One line per task×arm, in first-seen row order."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((str(row.task), str(row.arm)), []).append(row)
    lines = []
    for (task, arm), group in groups.items():
        counts: dict[str, int] = {}
        for row in group:
            for flag in row_flags(row):
                counts[flag] = counts.get(flag, 0) + 1
        lines.append(
            AccountingLine(
                task=task,
                arm=arm,
                runs=len(group),
                main_loop=_totals(group, "usage_main_loop") or _UNKNOWN,
                transcripts=_totals(group, "usage_transcripts") or _UNKNOWN,
                provider=_totals(group, "usage_provider"),
                flags=tuple(f"{flag} ×{n}" for flag, n in counts.items()),
            )
        )
    return tuple(lines)
