"""The `## Token accounting` section: three usage figures per task×arm and their disagreements.

Renders `accounting.AccountingLine`s only; computes nothing but formatting. Unknown prints `n/a`.
"""

from __future__ import annotations

from collections.abc import Sequence

from workflow_bench.reports.accounting import AccountingLine, UsageTotals

NA = "n/a"
_HEADER = (
    "| task | arm | runs | main loop in/cc/cr/out | transcripts in/cc/cr/out | provider in/cc/cr/out "
    "| flags |"
)

ACCOUNTING_LEGEND = (
    "Three views of the same spend, summed over every run (failed and excluded runs included): "
    "**main loop** = the CLI's `result.usage` (subagents excluded, the same numbers as the columns "
    "above); **transcripts** = every assistant message in the captured session streams, subagents "
    "included, deduplicated by `message.id`; **provider** = what the scripted provider or the LiteLLM "
    "gateway itself served to this cell. in/cc/cr/out = ordinary input / cache writes / cache reads / "
    "output tokens. A flag names every pair of figures that disagree."
)


def _fmt(value: int | None) -> str:
    return NA if value is None else f"{value:,}"


def _cell(totals: UsageTotals | None) -> str:
    if totals is None:
        return "not observed"
    return " / ".join(_fmt(v) for v in totals.values())


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def accounting_section(lines: Sequence[AccountingLine]) -> list[str]:
    if not lines:
        return []
    out = ["## Token accounting", "", ACCOUNTING_LEGEND, "", _HEADER, "| --- " * 7 + "|"]
    for line in lines:
        flags = "; ".join(line.flags) or "—"
        out.append(
            f"| {_escape(line.task)} | {_escape(line.arm)} | {line.runs} | {_cell(line.main_loop)} "
            f"| {_cell(line.transcripts)} | {_cell(line.provider)} | {_escape(flags)} |"
        )
    out.append("")
    partial = [line for line in lines if any(f.startswith("main loop <") for f in line.flags)]
    if partial:
        names = ", ".join(f"{_escape(line.task)}×{_escape(line.arm)}" for line in partial)
        out += [
            f"**The main-loop figure is partial for {len(partial)} task×arm(s)** ({names}): subagents or "
            "other sessions spent tokens that the CLI's result usage, and so every token column above, "
            "does not count. Compare arms on the transcript or provider figures.",
            "",
        ]
    disagreeing = [line for line in lines if line.flags and line not in partial]
    if disagreeing:
        out += [f"{len(disagreeing)} other task×arm(s) show disagreeing figures; see the flags.", ""]
    return out
