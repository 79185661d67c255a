"""``regrade.json`` and ``regrade.md``: every verdict a regrade changed, and why.

One entry per regraded row whose verdict (resolved, authored verify, hidden oracle or error kind)
differs from its source row's: task, arm, run, before -> after and the reason (the oracle or the
expected-tests lock changed, or the same task judged differently in the clean room, with the
clean room's own account). Rows of a predictions file have no source verdict: none is "changed".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from workflow_bench.rows.model import Row

from .source import Job

SCHEMA = 1


@dataclass(frozen=True, slots=True)
class ChangedVerdict:
    task: str
    arm: str
    run: int
    before: dict[str, Any]
    after: dict[str, Any]
    why: str


@dataclass(frozen=True, slots=True)
class ChangesDocument:
    rows: int
    rejudged: int
    changed: tuple[ChangedVerdict, ...]
    sources: tuple[str, ...]

    def to_text(self) -> str:
        data = {"schema_version": SCHEMA, **asdict(self)}
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _verdict(row: Row) -> dict[str, Any]:
    return {
        "resolved": row.resolved,
        "authored_tests_passed": row.authored_tests_passed,
        "oracle_passed": row.oracle_passed,
        "error_kind": None if row.error_kind is None else str(row.error_kind),
    }


def changes_document(rows: Sequence[tuple[Job, Row]]) -> ChangesDocument:
    changed = []
    for job, row in rows:
        if job.row is None or row.regrade_change is None:
            continue
        changed.append(
            ChangedVerdict(row.task, row.arm, row.run, _verdict(job.row), _verdict(row), row.regrade_change)
        )
    sources = tuple(dict.fromkeys(_source_name(job) for job, _ in rows))
    return ChangesDocument(
        rows=len(rows),
        rejudged=sum(1 for job, _ in rows if job.rejudge),
        changed=tuple(changed),
        sources=sources,
    )


def _source_name(job: Job) -> str:
    """The sweep directory of '<dir> <task>/<arm>/<run>', the file of '<predictions file>:<line>'."""
    return job.source.rsplit(" ", 1)[0] if job.row is not None else job.source.rsplit(":", 1)[0]


def changes_markdown(document: ChangesDocument) -> str:
    lines = [
        "# Regrade: changed verdicts",
        "",
        f"Source: {', '.join(document.sources)}. {document.rows} rows, {document.rejudged} re-judged in "
        f"clean rooms, {len(document.changed)} changed verdict(s).",
        "",
    ]
    if document.changed:
        lines += ["| task | arm | run | before | after | why |", "|---|---|---|---|---|---|"]
        for c in document.changed:
            before = ", ".join(f"{k}={v}" for k, v in c.before.items())
            after = ", ".join(f"{k}={v}" for k, v in c.after.items())
            why = c.why.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {c.task} | {c.arm} | {c.run} | {before} | {after} | {why} |")
    else:
        lines.append("No verdict changed.")
    return "\n".join(lines) + "\n"
