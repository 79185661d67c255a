"""The cell viewer: every cell of a sweep — its trajectory, patch and judgement — in one page.

``render_viewer(provenance, rows, files, firing)`` returns ``Viewer``: ``viewer.html`` (the cell
list embedded, filterable and sortable; a cell at ``viewer.html#cell=<task>/<arm>/<run>``, two
side by side with ``&compare=<task>/<arm>/<run>``) and one data file per cell under ``viewer/``,
loaded only when the cell is opened. Both work from ``file://`` and from the read-only loopback
server ``python -m workflow_bench.view DIR``.

Modules: ``text`` (untrusted text made visible and bounded), ``source`` (reading the directory's
files, never through a link), ``trajectory`` (a session's stream checked against its wire
record), ``diff`` (the patch as files and lines), ``cell`` (one cell's document and its byte
budgets), ``index`` (the embedded cell list), ``page`` (the page, its CSP, the escaping).
Pure over the files it reads: the sweep driver and ``python -m workflow_bench.report`` write the
result, byte-identical when nothing changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflow_bench.reports.provenance import ReportProvenance
from workflow_bench.rows.model import Row

from .cell import cell_document, cell_key
from .index import DATA_DIR, columns, data_file, index_entry
from .page import PAGE_FILE, data_script, render_page
from .source import DirectoryFiles, FileRead, SweepFiles, safe_relative

__all__ = [
    "DATA_DIR",
    "PAGE_FILE",
    "DirectoryFiles",
    "FileRead",
    "SweepFiles",
    "Viewer",
    "render_viewer",
    "safe_relative",
]


@dataclass(frozen=True, slots=True)
class Viewer:
    page: str
    """viewer.html"""
    policy: str
    """Its Content-Security-Policy (the server sends it as a header too)."""
    data: Mapping[str, bytes]
    """Relative path under the sweep directory (``viewer/<digest>.js``) → bytes."""


def _sweep_facts(provenance: ReportProvenance) -> dict[str, Any]:
    return {
        "model": provenance.model,
        "provider": provenance.provider,
        "scripted": provenance.is_scripted,
        "status": provenance.status,
        "runs": provenance.runs,
        "arms": list(provenance.arms),
        "tasks": list(provenance.selected_tasks),
    }


def render_viewer(
    provenance: ReportProvenance,
    rows: Sequence[Row],
    files: SweepFiles,
    *,
    firing: Mapping[str, Any] | None = None,
) -> Viewer:
    """The page and every cell's data file, for ``rows`` in report order."""
    entries: list[dict[str, Any]] = []
    data: dict[str, bytes] = {}
    seen: set[str] = set()
    for row in rows:
        entry = index_entry(row)
        key, copy = entry["key"], 2
        while entry["key"] in seen:  # a duplicated row (an edited results.jsonl) stays reachable
            entry["key"] = f"{key}#{copy}"
            copy += 1
        seen.add(entry["key"])
        entry["file"] = data_file(entry["key"])
        document = cell_document(row, files)
        document["key"] = entry["key"]
        data[entry["file"]] = data_script(entry["file"], document)
        entries.append(entry)
    page, policy = render_page(
        {"sweep": _sweep_facts(provenance), "cells": entries, "columns": columns(), "firing": firing}
    )
    return Viewer(page=page, policy=policy, data=data)


__all__ += ["cell_key"]
