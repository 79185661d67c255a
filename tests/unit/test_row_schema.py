"""The row schema table, its generated doc, and row completion."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow_bench.rows.schema import ROW_FIELDS, RowSchemaError, complete_row, render_markdown

pytestmark = pytest.mark.unit
DOC = Path(__file__).resolve().parents[2] / "docs" / "results-schema.md"


def test_generated_doc_is_current():
    assert DOC.read_text() == render_markdown(), (
        "run: python -m workflow_bench.rows.schema > docs/results-schema.md"
    )


def test_complete_row_fills_unknowns_with_none_not_zero():
    row = complete_row({"task": "t", "input_tokens": 5})
    assert list(row) == list(ROW_FIELDS)
    assert row["input_tokens"] == 5 and row["output_tokens"] is None and row["cost_usd"] is None


def test_unknown_fields_are_refused():
    with pytest.raises(RowSchemaError, match="made_up"):
        complete_row({"made_up": 1})
