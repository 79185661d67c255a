"""`python -m workflow_bench.promotion {verify DIR | apply DIR --target TOOLKIT_DIR}`.

Exit codes: 0 verified / applied; 1 the promotion does not verify or cannot be applied (the first
difference or the refusal on stderr; nothing written); 2 bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench import argtypes
from workflow_bench.promotion.apply import ApplyError, apply_promotion
from workflow_bench.promotion.verify import VerifyError, verify_promotion


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=argtypes.prog("promotion"),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser(
        "verify", help="recompute promotion.json from results.jsonl; exit 0 only on an exact match"
    )
    verify.add_argument("dir", type=Path, help="a sweep's output directory")
    apply = commands.add_parser(
        "apply", help="write a verified promote overlay into a toolkit, all or nothing"
    )
    apply.add_argument("dir", type=Path, help="a sweep's output directory")
    apply.add_argument(
        "--target", type=Path, required=True, help="toolkit directory (holds skills/<name>/SKILL.md)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    now = datetime.now(UTC)
    if args.command == "verify":
        try:
            doc = verify_promotion(args.dir, now=now)
        except VerifyError as exc:
            print(f"promotion verify: FAILED: {exc}", file=sys.stderr)
            return 1
        verdicts = ", ".join(f"{d.candidate_arm}={d.decision}" for d in doc.decisions)
        print(f"promotion verify: OK ({verdicts})")
        return 0
    if not args.target.is_dir():
        print(f"error: --target {args.target} is not a directory", file=sys.stderr)
        return 2
    try:
        written = apply_promotion(args.dir, target=args.target, now=now)
    except ApplyError as exc:
        print(f"promotion apply: REFUSED: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    print(f"promotion apply: {len(written)} file(s) written; nothing committed or pushed")
    return 0
