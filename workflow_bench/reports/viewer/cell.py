"""One cell's detail document: its judgement per test, diagnostics, patch and trajectory.

Built from the row and the files it points at (read through ``SweepFiles``: plain relative paths,
never a link), bounded per part so no cell's data file can grow with its transcripts:
``JUDGEMENT_BYTES`` for the verify and oracle outcomes, ``PATCH_BYTES`` for the rendered diff,
``TRAJECTORY_BYTES`` shared by the sessions (each gets an equal share, and what one leaves
unused passes to the next). ``truncated`` says whether any part ran out; the raw files are
linked for the rest. Everything shown is made ``visible`` and cut (``text``). Pure given the files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from workflow_bench.arms import ARMS
from workflow_bench.rows.model import JudgedTests, Row

from .diff import parse_patch
from .source import SweepFiles, safe_relative
from .text import Budget, as_text, cut, visible
from .trajectory import Json, parse_jsonl, session_trajectory

# Budgets, in bytes of shown text (their sum bounds a cell's data file, ~0.45 MiB with structure;
# measured by benchmarks/viewer_scale.py). A demo cell needs ~25 KiB of them.
JUDGEMENT_BYTES = 48 * 1024
PATCH_BYTES = 96 * 1024
TRAJECTORY_BYTES = 256 * 1024
DIAGNOSTIC_BYTES = 16 * 1024
# Reading caps: a transcript's first 32 MiB (the viewer shows at most TRAJECTORY_BYTES of it), a
# wire record's first 8 MiB (its lines are facts only, ~300 bytes per exchange), the whole patch
# (the harness caps it at 300 000 bytes).
STREAM_READ_BYTES = 32 * 1024 * 1024
WIRE_READ_BYTES = 8 * 1024 * 1024
PATCH_READ_BYTES = 1024 * 1024
MAX_TESTS_SHOWN = 200
TEST_ID_CHARS = 300
MESSAGE_CHARS = 300
OUTPUT_CHARS = 4_000
_SESSION_INDEX = re.compile(r"-s(\d+)(?:-|\.jsonl$)")


def cell_key(row: Row) -> str:
    """The cell's stable name in the page's URL: ``<task>/<arm>/<run>``."""
    return f"{row.task}/{row.arm}/{row.run}"


def _session_index(path: str, slug: str) -> int | None:
    name = path.rsplit("/", 1)[-1]
    if not name.startswith(slug):
        return None
    found = _SESSION_INDEX.match(name[len(slug) :])
    return int(found.group(1)) if found else None


def _slug(row: Row) -> str:
    return f"{row.task}-{row.arm}-run{row.run}"


def _tests(listing: JudgedTests | None, budget: Budget) -> tuple[list[Json], int] | None:
    """The per-test outcomes a row lists (failures first), bounded; None when it lists none."""
    if listing is None:
        return None
    shown: list[Json] = []
    for test in listing.tests[:MAX_TESTS_SHOWN]:
        if not budget.charge(48):
            break
        shown.append(
            {
                "id": budget.take(test.id, TEST_ID_CHARS).text,
                "outcome": test.outcome,
                "message": budget.take(test.message, MESSAGE_CHARS).text if test.message else None,
            }
        )
    return shown, len(listing.tests) - len(shown) + listing.omitted


def _judge(row: Row, which: str, budget: Budget) -> Json:
    if which == "verify":
        tests = _tests(row.verify_tests, budget)
        output = row.authored_test_output
        detail, passed = row.verify_detail, row.authored_tests_passed
        counts = (row.verify_tests_run, row.verify_tests_passed, row.verify_tests_skipped)
    else:
        tests = _tests(row.oracle_tests, budget)
        output, detail, passed = None, row.oracle_output, row.oracle_passed
        counts = (row.oracle_tests_run, row.oracle_tests_passed, row.oracle_tests_skipped)
    return {
        "passed": passed,
        "detail": budget.take(detail, 2_000).text if detail else None,
        "tests_run": counts[0],
        "tests_passed": counts[1],
        "tests_skipped": counts[2],
        "tests": tests[0] if tests else None,
        "tests_omitted": tests[1] if tests else 0,
        "output": budget.take(output, OUTPUT_CHARS).text if output else None,
    }


def _usage(value: Any) -> Json | None:
    return None if value is None else dict(value.model_dump())


def _diagnostics(row: Row, budget: Budget, sessions: Sequence[Json]) -> Json:
    limits = row.resource_limits
    stream_only = sum(1 for s in sessions for t in _walk(s["items"]) if t.get("on_wire") is False)
    return {
        "evidence": [budget.take(d, 1_000).text for d in (row.evidence_diagnostics or [])[:40]],
        "relay_refused_requests": row.relay_refused_requests,
        "transcript_missing": row.transcript_missing,
        "resource_limits": None if limits is None else limits.model_dump(),
        "usage": {
            "main loop (CLI result)": _usage(row.usage_main_loop),
            "wire (relay, of record)": _usage(row.usage_wire),
            "transcripts (stream)": _usage(row.usage_transcripts),
            "provider": _usage(row.usage_provider),
        },
        "stream_items_not_on_wire": stream_only,
        "wire_only_exchanges": sum(len(s["wire_only"]) for s in sessions),
    }


def _walk(items: Sequence[Json]) -> list[Json]:
    """Every turn and tool call, subagents included."""
    out: list[Json] = []
    stack = list(items)
    while stack:
        item = stack.pop()
        out.append(item)
        for block in item.get("blocks", ()):
            if block["kind"] == "tool":
                out.append(block)
                stack.extend(block["children"])
    return out


def _files(row: Row, files: SweepFiles) -> tuple[list[Json], dict[int, str], dict[int, str], str | None]:
    """Links to the raw files and, per session index, its transcript and wire paths."""
    slug = _slug(row)
    links: list[Json] = []
    streams: dict[int, str] = {}
    wires: dict[int, str] = {}
    for artifact in row.transcript_artifacts or ():
        index = _session_index(artifact.path, slug)
        if safe_relative(artifact.path) and index is not None:
            streams.setdefault(index, artifact.path)
            links.append({"label": f"transcript s{index}", "path": artifact.path})
    for path in row.wire_artifacts or ():
        index = _session_index(path, slug)
        if safe_relative(path) and index is not None:
            wires.setdefault(index, path)
            links.append({"label": f"wire record s{index}", "path": path})
    patch = row.patch_artifact if row.patch_artifact and safe_relative(row.patch_artifact) else None
    if patch:
        links.append({"label": "patch", "path": patch})
    if row.review_artifact and safe_relative(row.review_artifact):
        links.append({"label": "review artifact", "path": row.review_artifact})
    present = [link for link in links if files.read(link["path"], limit=0) is not None]
    return present, streams, wires, patch


def _sessions(row: Row, files: SweepFiles, streams: dict[int, str], wires: dict[int, str]) -> list[Json]:
    arm = ARMS.get(row.arm)
    count = max([row.sessions or 0, *(i + 1 for i in streams), *(i + 1 for i in wires)])
    out: list[Json] = []
    left = TRAJECTORY_BYTES
    for index in range(count):
        budget = Budget(left // (count - index))
        wire_read = files.read(wires[index], limit=WIRE_READ_BYTES) if index in wires else None
        wire, _ = parse_jsonl(wire_read.data) if wire_read else ([], 0)
        stream_read = files.read(streams[index], limit=STREAM_READ_BYTES) if index in streams else None
        trajectory = session_trajectory(
            stream_read.data if stream_read else None,
            wire,
            budget,
            stream_truncated=bool(stream_read and stream_read.truncated),
        )
        spec = arm.sessions[index] if arm is not None and index < len(arm.sessions) else None
        ids = row.session_ids or []
        out.append(
            {
                "index": index,
                "phase": spec.phase if spec else None,
                "skill_role": spec.skill_role if spec else None,
                "session_id": visible(ids[index])[:128] if index < len(ids) else None,
                "transcript": streams.get(index) if stream_read else None,
                "wire": wires.get(index) if wire_read else None,
                "exchanges": len(wire),
                "truncated": budget.spent_out,
                **trajectory,
            }
        )
        left -= budget.total - max(budget.left, 0)
    return out


def cell_document(row: Row, files: SweepFiles) -> Json:
    """Everything the page shows for one cell (JSON-ready; see the module doc for its bounds)."""
    links, streams, wires, patch_path = _files(row, files)
    judgement_budget = Budget(JUDGEMENT_BYTES)
    judgement = {
        "verify": _judge(row, "verify", judgement_budget),
        "oracle": _judge(row, "oracle", judgement_budget),
    }
    patch = None
    if patch_path:
        read = files.read(patch_path, limit=PATCH_READ_BYTES)
        if read is not None:
            patch_budget = Budget(PATCH_BYTES)
            patch = parse_patch(read.data.decode("utf-8", errors="replace"), patch_budget)
            patch["truncated"] = patch_budget.spent_out or read.truncated
    sessions = _sessions(row, files, streams, wires)
    diag_budget = Budget(DIAGNOSTIC_BYTES)
    detail = row.error_detail
    detail_text = None if detail is None else cut(as_text(detail), 4_000).text
    return {
        "key": cell_key(row),
        "task": visible(row.task),
        "arm": visible(row.arm),
        "run": row.run,
        "summary": {
            "resolved": row.resolved,
            "ok": row.ok,
            "error_kind": row.error_kind.value if row.error_kind else None,
            "error_detail": detail_text,
            "cost_usd": row.cost_usd,
            "num_turns": row.num_turns,
            "duration_s": row.duration_s,
            "cell_wall_s": row.cell_wall_s,
            "sessions": row.sessions,
            "skill_invoked": row.skill_invoked,
            "tool_use_counts": {visible(k)[:128]: v for k, v in (row.tool_use_counts or {}).items()},
            "diff": [row.diff_files, row.diff_insertions, row.diff_deletions],
            "plan_doc": visible(row.plan_doc) if row.plan_doc else None,
            "model": visible(row.model) if row.model else None,
            "reused": row.reused,
        },
        "judgement": judgement,
        "diagnostics": _diagnostics(row, diag_budget, sessions),
        "files": links,
        "patch": patch,
        "sessions": sessions,
        "truncated": any(s["truncated"] or s["omitted_items"] for s in sessions)
        or bool(patch and patch["truncated"])
        or judgement_budget.spent_out,
    }
