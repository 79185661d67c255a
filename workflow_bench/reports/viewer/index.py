"""The viewer's cell list: one small entry per row, embedded in the page (it never loads lazily).

An entry holds only what the list shows and filters on (task, arm, run, resolved, error kind,
the value of each ``reports.columns`` column the viewer shows, whether the expected skills fired,
failing test counts; ``columns`` describes those columns to the page) and the name of the
cell's data file, so the page stays ~200 bytes per cell whatever the transcripts hold. Data files
are named by a digest of the cell key, never by the row's strings (a task id in a file name
would be the row's to choose). Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from workflow_bench.reports.columns import Shown, shown_in
from workflow_bench.reports.firing import fired_all
from workflow_bench.rows.model import JudgedTests, Row

from .cell import cell_key
from .text import visible

DATA_DIR = "viewer"
_FAILED = frozenset({"failed", "error"})


def data_file(key: str) -> str:
    """The data file of the cell ``key``, relative to the sweep directory."""
    return f"{DATA_DIR}/{hashlib.sha256(key.encode('utf-8')).hexdigest()[:20]}.js"


def _failed(listing: JudgedTests | None) -> int | None:
    if listing is None:
        return None
    return sum(1 for t in listing.tests if t.outcome in _FAILED)


def index_entry(row: Row) -> dict[str, Any]:
    key = cell_key(row)
    return {
        "key": visible(key),
        "task": visible(row.task),
        "arm": visible(row.arm),
        "run": row.run,
        "resolved": row.resolved,
        "error_kind": row.error_kind.value if row.error_kind else None,
        **{column.field: getattr(row, column.field) for column in shown_in(Shown.VIEWER)},
        "skill_fired": fired_all(row),
        "verify_failed": _failed(row.verify_tests),
        "oracle_failed": _failed(row.oracle_tests),
        "file": data_file(key),
    }


def columns() -> list[dict[str, Any]]:
    """The measured columns of the cell list, for the page (field, header, decimals), in order."""
    return [{"field": c.field, "header": c.header, "digits": c.digits} for c in shown_in(Shown.VIEWER)]


def cell_index(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One entry per row, in the order given (the report's: task, run, arm)."""
    return [index_entry(row) for row in rows]
