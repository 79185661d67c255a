"""The measured columns of the reports, each declared once: its row field, reducer, header, format.

A ``Column`` names a numeric ``rows.model.Row`` field. ``reports.aggregate`` reduces it per
task×arm with its ``reducer`` (the median of the valid runs; unknown when any is unknown);
``reports.markdown`` puts it in report.md's per task×arm table (and, with ``saving``, the percent
saved in each savings row), ``reports.html`` in report.html's per task×arm table and
``reports.viewer`` in the viewer's cell list (the row's own value there, one row per cell). So a
new column in all three is its Row field, the code that writes the field, and one entry in
``COLUMNS`` (tests/unit/test_report_columns.py adds one and finds it everywhere).

``shown_in`` says where a column appears: every document unless told. The columns below keep
what each document showed before they were declared here: report.md's table all of them, the
viewer's list cost, wall time and turns, report.html (charts over stats.json) none; its table is
drawn once a column is declared for it.

Also declared here: the review-quality table's columns (``REVIEW_COLUMNS``, over
``review.ReviewMetrics``' metrics) and the reducers (``Reducer``). Imports nothing of the reports,
so every renderer and the aggregate can import it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any


class Reducer(StrEnum):
    """How the runs of one task×arm fold into one value; unknown (`None`) if any run's is unknown."""

    MEDIAN = "median"
    MIN = "min"  # the worst run: for a rate where one bad run is the failure that matters

    def reduce(self, values: Sequence[Any]) -> float | None:
        """``values`` folded, or `None` when there are none or any is `None` (unknown is not zero)."""
        if not values or any(value is None for value in values):
            return None
        if self is Reducer.MIN:
            return float(min(values))
        return float(statistics.median(values))


class Shown(StrEnum):
    """A document that renders columns."""

    REPORT_MD = "report.md"  # the per task×arm table, medians over valid runs
    REPORT_HTML = "report.html"  # its per task×arm table
    VIEWER = "viewer"  # the cell list: one row per cell, the row's own value


EVERYWHERE = frozenset(Shown)


@dataclass(frozen=True, slots=True)
class Column:
    """One measured column of the reports."""

    field: str
    """The numeric ``Row`` field it reads (tests/unit/test_row_model.py checks each is one)."""
    header: str
    """Its header in every document."""
    digits: int
    """Decimals shown (``format(value, f".{digits}f")``; the viewer's ``toFixed(digits)``)."""
    reducer: Reducer = Reducer.MEDIAN
    """How the aggregate folds a task×arm's valid runs."""
    saving: bool = False
    """report.md's savings rows show the percent saved against the baseline (``aggregate.savings``)."""
    meaningful_from: float | None = None
    """A saving is ``n/m`` (not meaningful) when the baseline's value is under this."""
    shown_in: frozenset[Shown] = EVERYWHERE
    """The documents that show it; none (``frozenset()``) for a value only another column reads."""

    def text(self, value: float | None) -> str:
        return number_text(value, self.digits)


def number_text(value: float | None, digits: int) -> str:
    """``value`` as the reports print it, to ``digits`` decimals: ``n/a`` when unknown, never 0."""
    return "n/a" if value is None else format(value, f".{digits}f")


MEANINGFUL_WALL_S = 1.0
"""A wall-time saving against a baseline median under this is `n/m`: issue 32's report showed
`-343.7` beside times of 1 and 0 s, a ratio of start-up jitter no reader could check."""

_MD = frozenset({Shown.REPORT_MD})
_MD_VIEWER = frozenset({Shown.REPORT_MD, Shown.VIEWER})
_NOWHERE: frozenset[Shown] = frozenset()

# The churn fields: reduced like every column, shown by report.md's one "churn" cell
# (files/+insertions/−deletions, each to its decimals), so declared for no document of their own.
CHURN_COLUMNS: tuple[Column, ...] = (
    Column("diff_files", "files changed", 0, shown_in=_NOWHERE),
    Column("diff_insertions", "insertions", 0, shown_in=_NOWHERE),
    Column("diff_deletions", "deletions", 0, shown_in=_NOWHERE),
)

# In report order.
COLUMNS: tuple[Column, ...] = (
    Column("input_tokens", "input", 0, saving=True, shown_in=_MD),
    Column("cache_creation_input_tokens", "cache_create", 0, saving=True, shown_in=_MD),
    Column("cache_read_input_tokens", "cache_read", 0, saving=True, shown_in=_MD),
    Column("output_tokens", "output", 0, saving=True, shown_in=_MD),
    Column("cost_usd", "cost $", 4, saving=True, shown_in=_MD_VIEWER),
    Column("duration_s", "wall s", 1, saving=True, meaningful_from=MEANINGFUL_WALL_S, shown_in=_MD_VIEWER),
    Column("num_turns", "turns", 0, shown_in=_MD_VIEWER),
    *CHURN_COLUMNS,
)


def shown_in(document: Shown, columns: Sequence[Column] = COLUMNS) -> tuple[Column, ...]:
    """The columns ``document`` shows, in declaration order."""
    return tuple(column for column in columns if document in column.shown_in)


@dataclass(frozen=True, slots=True)
class ReviewColumn:
    """One column of report.md's review-quality table: a metric of ``review.ReviewMetrics``."""

    metric: str
    header: str
    digits: int

    def text(self, value: float | None) -> str:
        return number_text(value, self.digits)


REVIEW_COLUMNS: tuple[ReviewColumn, ...] = (
    ReviewColumn("true_positives", "TP", 1),
    ReviewColumn("false_positives", "FP", 1),
    ReviewColumn("false_negatives", "FN", 1),
    ReviewColumn("precision", "precision", 3),
    ReviewColumn("recall", "recall", 3),
    ReviewColumn("blocker_recall", "blocker recall", 3),
    ReviewColumn("weighted_f1", "weighted F1", 3),
)

# review_* metrics reduce by median, except blocker recall: one missed blocker in any run is the
# failure that matters, so the arm reports its worst run (min), as the reference does.
REVIEW_REDUCERS: Mapping[str, Reducer] = MappingProxyType({"blocker_recall": Reducer.MIN})
