"""Compare two sweeps' results.jsonl field by field: `python tools/compare_rows.py BEFORE AFTER`.

A refactor that must not change behaviour runs the same sweep (scripted provider, same task file,
arms, runs) before and after, then checks every row matches. Cells are matched by (task, arm,
run); both sides must have the same cells. Fields that differ between any two runs of one sweep
are not compared: times (`recorded_at`, `duration_s`, `cell_wall_s`, and the "Ran N tests in X s"
timing a test runner prints inside kept outputs, which is masked), per-session ids
(`session_ids`, the transcript file names and digests that carry them), the harness-source digest
(`runtime_digest`, which changes with any code change on purpose), where a reused row came from,
a candidate arm's `variant_head_sha` (the candidate overlay is committed inside the sandbox
with the wall-clock date, so that commit's SHA differs run to run), and the host uid a root
runner's cell ran as (`resource_limits.cell_uid`, drawn at random per cell: compared only as
present or null).
Transcripts are compared by count and source. `--expect FIELD=OLD:NEW` allows one known change
(e.g. `schema_version=4:5`). Exit 0 when every compared field matches, 1 otherwise (each
difference printed), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

VOLATILE = frozenset(
    {
        "recorded_at",
        "duration_s",
        "cell_wall_s",
        "session_ids",
        "runtime_digest",
        "reused_from_dir",
        "reused_from_recorded_at",
    }
)


def _rows(directory: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    path = directory / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(r["task"], r["arm"], r["run"]): r for r in rows}


_TEST_TIMING = re.compile(r"(Ran \d+ tests? in )\d+\.\d+s")


def _mask(value: Any) -> Any:
    return _TEST_TIMING.sub(r"\1<t>s", value) if isinstance(value, str) else value


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: _mask(v) for k, v in row.items() if k not in VOLATILE}
    if str(row.get("arm", "")).startswith("candidate_"):
        out.pop("variant_head_sha", None)
    out["transcript_artifacts"] = [a.get("source") for a in row.get("transcript_artifacts") or []]
    limits = row.get("resource_limits")
    if isinstance(limits, dict) and limits.get("cell_uid") is not None:
        out["resource_limits"] = {**limits, "cell_uid": "<a cell uid>"}
    return out


def differences(
    before: dict[tuple[str, str, int], dict[str, Any]],
    after: dict[tuple[str, str, int], dict[str, Any]],
    expected: dict[str, tuple[str, str]],
) -> list[str]:
    found = [f"cell {key} only before" for key in sorted(set(before) - set(after))]
    found += [f"cell {key} only after" for key in sorted(set(after) - set(before))]
    for key in sorted(set(before) & set(after)):
        old, new = _comparable(before[key]), _comparable(after[key])
        for field in sorted(set(old) | set(new)):
            a, b = old.get(field, "<absent>"), new.get(field, "<absent>")
            if a == b:
                continue
            if field in expected and (str(a), str(b)) == expected[field]:
                continue
            found.append(f"{key} {field}: {json.dumps(a)[:200]} -> {json.dumps(b)[:200]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--expect", action="append", default=[], metavar="FIELD=OLD:NEW")
    args = parser.parse_args(argv)
    expected = {}
    for item in args.expect:
        field, _, change = item.partition("=")
        old, _, new = change.partition(":")
        if not field or not _:
            print(f"error: --expect {item!r}: want FIELD=OLD:NEW", file=sys.stderr)
            return 2
        expected[field] = (old, new)
    try:
        before, after = _rows(args.before), _rows(args.after)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    found = differences(before, after, expected)
    for line in found:
        print(line)
    compared = len(set(before) & set(after))
    print(f"{compared} cells compared, {len(found)} difference(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
