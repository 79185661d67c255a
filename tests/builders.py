"""Shared test builders: rows, results.jsonl text, and what a sweep wrote into its output directory.

One place for what several test modules need (no test module imports another's private helper):

- ``row(**fields)``: a clean, valid ``Row`` (resolved, every usage figure known); any field by its
  model name (``task_class``, not ``class``), validated like a row the harness writes;
- ``rows_text(rows)``: the results.jsonl text of rows, spelled as the output directory spells it;
- ``results(out)`` / ``result_dicts(out)``: the rows a sweep stored, as ``Row`` or as stored JSON;
  ``jsonl(path)``: any JSON-lines file as objects (``[]`` when absent).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workflow_bench.rows.migrate import read_rows, stored_line
from workflow_bench.rows.model import SCHEMA_VERSION, Row

RECORDED_AT = "2026-11-30T11:00:00+00:00"
CLEAN: dict[str, Any] = {
    "schema_version": SCHEMA_VERSION,
    "task": "t1",
    "task_class": "bugfix",
    "arm": "workflow",
    "run": 0,
    "recorded_at": RECORDED_AT,
    "ok": True,
    "resolved": True,
    "error_kind": None,
    "input_tokens": 100,
    "cache_creation_input_tokens": 10,
    "cache_read_input_tokens": 1000,
    "output_tokens": 50,
    "cost_usd": 1.0,
    "duration_s": 30.0,
    "num_turns": 4,
    "diff_files": 2,
    "diff_insertions": 10,
    "diff_deletions": 1,
    "authored_tests_passed": True,
    "oracle_passed": True,
    "skill_invoked": True,
    "transcript_missing": False,
    "reused": False,
}


def row(**fields: Any) -> Row:
    """A clean row with ``fields`` changed (model field names); invalid values raise, as in the harness."""
    return Row.model_validate({**CLEAN, **fields})


def rows_text(rows: Iterable[Row]) -> str:
    return "".join(stored_line(r) for r in rows)


def usage(
    input_tokens: int | None, cache_creation: int | None, cache_read: int | None, output: int | None
) -> dict[str, int | None]:
    """One usage figure (``usage_main_loop``, ``usage_wire``, …) as a row holds it."""
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_creation,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output,
    }


def jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSON-lines file as an object; ``[]`` when the file does not exist."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def results(out: Path) -> list[Row]:
    """The rows a sweep stored in ``out/results.jsonl``, read as every reader reads them."""
    path = out / "results.jsonl"
    return read_rows(path.read_text(encoding="utf-8"), source=str(path)) if path.exists() else []


def result_dicts(out: Path) -> list[dict[str, Any]]:
    """The stored rows of ``out`` as the JSON objects on disk (keys as stored: ``class``, …)."""
    return jsonl(out / "results.jsonl")


def as_row(stored: dict[str, Any]) -> Row:
    """A stored row (as ``result_dicts`` returns it) as a ``Row``."""
    return Row.model_validate(stored)


def by_cell(out: Path) -> dict[tuple[str, str], Row]:
    """``{(task, arm): row}`` of a one-run sweep in ``out``."""
    return {(r.task, r.arm): r for r in results(out)}
