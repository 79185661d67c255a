"""Reading stored rows: today's rows are validated exactly, older ones go through one migration.

Every reader of results.jsonl (reports, ``--reuse-results``, ``--resume``, promotion verify, the
evolve evidence bundle) turns stored JSON into a ``Row`` here, and nowhere else:

- ``schema_version`` equal to ``SCHEMA_VERSION``: every field present, nothing else, each value
  of its declared type (``Row`` is strict), ``error_kind`` from the closed vocabulary;
- 1 to ``SCHEMA_VERSION - 1`` (``migrate_older``): the row was written before a field existed.
  Fields were only ever added, never renamed or repurposed (``git log -p`` of the old
  ``row_schema.py``), so an absent field is one that was not measured: ``None``, except those in
  ``ABSENT_IN_OLDER_ROWS`` whose absence has a known value; so is an absent bound of
  ``resource_limits`` (it was not enforced). One field changed its spelling, not its meaning:
  ``oracle_sealed`` true / false / null (schemas 8, 9; absent before) is ``sealed`` /
  ``unsealed`` / ``unknown`` (schema 10). Then validated like a new row;
- anything else (a newer version, no version, not an object) is a ``RowReadError`` naming where.

Must never: guess a value a row did not record, or accept a field the model does not declare.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from .model import SCHEMA_VERSION, ResourceLimits, Row, stored_names

# Older rows lacking these fields recorded them implicitly: before reuse existed every row was paid;
# before schema 8 no task was an impossible probe.
ABSENT_IN_OLDER_ROWS: Mapping[str, Any] = {"reused": False, "task_impossible": False}
# Schema 10 spells ``oracle_sealed`` in the lock's words; 8 and 9 stored a bool or null.
_SEALING_BEFORE_10: Mapping[object, str] = {True: "sealed", False: "unsealed", None: "unknown"}


class RowReadError(ValueError):
    """A stored row that is not a valid row of any known schema version; the message says where."""


def migrate_older(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A row of an older schema as a row of today's schema: absent fields not measured (``None``)."""
    upgraded = {name: ABSENT_IN_OLDER_ROWS.get(name) for name in stored_names() if name not in stored}
    limits = stored.get("resource_limits")
    if isinstance(limits, dict):
        # Bounds added later (cpus, files, ptys, cell_uid, …) were not enforced then: unknown.
        upgraded["resource_limits"] = {**dict.fromkeys(ResourceLimits.model_fields), **limits}
    sealed = stored.get("oracle_sealed")
    if sealed is None or type(sealed) is bool:  # anything else fails validation, naming the field
        upgraded["oracle_sealed"] = _SEALING_BEFORE_10[sealed]
    return {**stored, **upgraded, "schema_version": SCHEMA_VERSION}


def row_from_stored(stored: object, *, where: str) -> Row:
    """The ``Row`` a stored JSON object holds (migrated when older); ``RowReadError`` naming ``where``."""
    if not isinstance(stored, dict):
        raise RowReadError(f"{where}: want a JSON object, got {type(stored).__name__}")
    version = stored.get("schema_version")
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        raise RowReadError(
            f"{where}: schema_version {version!r} is not one this version reads (1 to {SCHEMA_VERSION})"
        )
    if version < SCHEMA_VERSION:
        stored = migrate_older(stored)
    else:
        missing = [name for name in stored_names() if name not in stored]
        if missing:
            raise RowReadError(f"{where}: a schema {version} row lacks {', '.join(missing[:8])}")
    try:
        return Row.model_validate(stored)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        count = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise RowReadError(f"{where}: {field}: {first['msg']}{count}") from None


def row_from_line(line: str | bytes, *, where: str) -> Row:
    """One results.jsonl line as a ``Row``; ``RowReadError`` for bad JSON too."""
    try:
        stored = json.loads(line)
    except ValueError as exc:
        raise RowReadError(f"{where}: not JSON ({exc})") from None
    return row_from_stored(stored, where=where)


def read_rows(text: str, *, source: str = "results.jsonl") -> list[Row]:
    """Every non-blank line of a results.jsonl text, each a ``Row``; the first bad line raises."""
    return [
        row_from_line(line, where=f"{source}: line {number}")
        for number, line in enumerate(text.split("\n"), 1)
        if line.strip()
    ]


def readable_rows(
    lines: Iterable[bytes], *, source: str, skipped: Callable[[str], None] | None = None
) -> list[Row]:
    """The lines that are valid rows; each other line is reported to ``skipped`` (never reusable)."""
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(row_from_line(line, where=f"{source}: line {number}"))
        except RowReadError as exc:
            if skipped is not None:
                skipped(str(exc))
    return rows


def stored_line(row: Row) -> str:
    """The one spelling of a row in results.jsonl: sorted keys, UTF-8 as is, no NaN."""
    return json.dumps(row.to_json_obj(), sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
