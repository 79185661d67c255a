"""``python -m workflow_bench.regrade``: re-judge saved patches in clean rooms, pay no session.

Two sources, one output: a finished sweep directory (``SWEEP --tasks FILE``: every saved patch
re-judged under the task file, which may correct or extend the oracle), or a SWE-bench predictions
file (``--predictions FILE --tasks FILE``: one arm per ``model_name_or_path``). Either way
``--out NEW`` becomes a complete sweep directory (rows, ``sweep.json``, report, stats, viewer)
plus ``regrade.json``/``regrade.md``: every verdict that changed (task/arm/run, before -> after,
why). No model is asked, no CLI is started, the source is only read. Bad input (a task the sweep
never ran or ran against another repository or base commit, a bad predictions line, an unknown
instance id, an --out that is not new) exits 2 naming it, with nothing written.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench import argtypes
from workflow_bench.cells.cleanroom import CleanRoom
from workflow_bench.cells.context import TaskContext, prepare_task_context
from workflow_bench.output.directory import OutputDir, OutputWriteError
from workflow_bench.output.lock import OutputDirError, claim_output_dir
from workflow_bench.promotion.document import sweep_promotion
from workflow_bench.report.render import render_reports, write_rendered
from workflow_bench.reports.sweep_record import PREDICTIONS_PROVIDER, SWEEP_RECORD_FILE, SweepRecord
from workflow_bench.reports.viewer import DirectoryFiles
from workflow_bench.rows.model import Row
from workflow_bench.sandbox import SandboxError, SandboxKind, preflight
from workflow_bench.tasks.deps import DependencyBuildError
from workflow_bench.taskspec.spec import TaskBinding, TaskFileError, bind_tasks, load_task_file
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.spec import Toolkit, ToolkitError
from workflow_bench.workspace.paths import make_work_root
from workflow_bench.workspace.remove import remove_tree

from .judge import judge_job
from .source import Job, RegradeInputError, read_predictions, read_sweep
from .write import changes_document, changes_markdown

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
CHANGES_JSON, CHANGES_MD = "regrade.json", "regrade.md"
JUDGE_TIMEOUT_S = 600.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=argtypes.prog("regrade"), description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", nargs="?", type=Path, help="a finished sweep directory (read only)")
    parser.add_argument(
        "--predictions", type=Path, help="a SWE-bench predictions JSONL (instance_id, model_name_or_path, "
        "model_patch) to judge instead of a sweep",
    )  # fmt: skip
    parser.add_argument(
        "--tasks", type=Path, required=True,
        help="the task file to judge under (the sweep's own, or one with a corrected or extended oracle); "
        "sweep.json does not keep the task file, so it is always named",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, required=True, help="a new directory for the regraded sweep")
    parser.add_argument(
        "--toolkit",
        default="demo",
        help="toolkit whose skills the clean rooms are seeded with (default: demo)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=JUDGE_TIMEOUT_S,
        help="seconds per judge (verify, oracle); default 600",
    )
    parser.add_argument("--bwrap-bin", default="bwrap", help="bubblewrap binary (default: bwrap on PATH)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if (args.sweep is None) == (args.predictions is None):
        print("regrade: give either a SWEEP directory or --predictions FILE (exactly one)", file=sys.stderr)
        return EXIT_USAGE
    try:
        bindings = _bindings(args.tasks)
        old_verify: dict[str, str | None] = {}
        if args.sweep is not None:
            source, jobs = read_sweep(args.sweep, bindings)
            old_verify = {str(t["id"]): t.get("verify_digest") for t in source.record.tasks}
            record = _sweep_record(source.record, bindings, skipped=source.skipped)
            for task_id in source.skipped:
                print(f"regrade: task {task_id!r} was skipped by the sweep as expensive: left out")
        else:
            jobs = read_predictions(args.predictions, bindings)
            record = _predictions_record(jobs, bindings)
        _refuse_out(args.out, args.sweep, args.predictions)
        toolkit = load_toolkit(args.toolkit)
        bwrap = preflight(SandboxKind.BWRAP, bwrap_bin=args.bwrap_bin)
    except (RegradeInputError, TaskFileError, ToolkitError, SandboxError) as exc:
        print(f"regrade: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        claim = claim_output_dir(args.out)
    except OutputDirError as exc:
        print(f"regrade: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _regrade(
            jobs, record, bindings, out=args.out, toolkit=toolkit, bwrap=bwrap, timeout=args.timeout,
            old_verify_digests=old_verify,
        )  # fmt: skip
    finally:
        claim.release()


def _bindings(path: Path) -> tuple[TaskBinding, ...]:
    return bind_tasks(load_task_file(path))


def _refuse_out(out: Path, sweep: Path | None, predictions: Path | None) -> None:
    for source in (sweep, predictions):
        if source is not None and (
            out.resolve() == source.resolve() or out.resolve().is_relative_to(source.resolve())
        ):
            raise RegradeInputError(
                f"--out {out} lies in the source {source}: a regrade never writes its source"
            )


def _regrade(
    jobs: list[Job], record: SweepRecord, bindings: Sequence[TaskBinding], *, out: Path, toolkit: Toolkit,
    bwrap: str, timeout: float, old_verify_digests: Mapping[str, str | None],
) -> int:  # fmt: skip
    started_at, started = datetime.now(UTC), time.monotonic()
    by_id = {b.spec.task_id: b for b in bindings}
    work_root = make_work_root()
    output = OutputDir(out)
    rows: list[tuple[Job, Row]] = []
    room = CleanRoom(kind=SandboxKind.BWRAP, bwrap_bin=bwrap, timeout_s=timeout, cancel=threading.Event())
    contexts: dict[str, TaskContext] = {}
    try:
        for index, job in enumerate(jobs):
            task_id = job.task_id
            if task_id not in contexts:
                print(f"regrade: building the template of {task_id}")
                contexts[task_id] = prepare_task_context(
                    by_id[task_id], toolkit=toolkit, dest=work_root / f"template-{len(contexts)}"
                )
            old_verify = old_verify_digests.get(task_id) if job.row is not None else None
            row = judge_job(
                job, contexts[task_id], room, where=work_root / f"room-{index}", old_verify_digest=old_verify
            )
            artifacts = dict(job.artifacts or {})
            if job.row is None or job.row.patch_artifact is not None:
                artifacts["patch.diff"] = job.patch
            rows.append((job, output.persist(row.key.slug, row, artifacts)))
            print(f"regrade: {row.key.label} resolved={row.resolved} {row.error_kind or ''}".rstrip())
    except (OutputWriteError, DependencyBuildError, OSError, RuntimeError) as exc:
        print(f"regrade: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        remove_tree(work_root)
    record = replace(record, started_at=started_at.isoformat()).finished(
        status="complete",
        detail=None,
        finished_at=datetime.now(UTC),
        wall_s=round(time.monotonic() - started, 1),
    )
    output.write_text(SWEEP_RECORD_FILE, record.to_text())
    results = (out / "results.jsonl").read_text(encoding="utf-8") if (out / "results.jsonl").exists() else ""
    rendered = render_reports(
        record, results, "", promotion=sweep_promotion(record, results), files=DirectoryFiles(out)
    )
    document = changes_document(rows)
    changes = changes_markdown(document)
    # The report lists every changed verdict too (``report`` re-renders it without: regrade.md stays).
    files = {
        **rendered.files,
        "report.md": rendered.files["report.md"] + "\n" + changes.replace("# ", "## ", 1),
    }
    write_rendered(output, replace(rendered, files=files))
    output.write_text(CHANGES_JSON, document.to_text())
    output.write_text(CHANGES_MD, changes)
    print(f"regrade: {len(rows)} rows, {len(document.changed)} changed verdict(s); see {out / CHANGES_MD}")
    return EXIT_OK


def _sweep_record(
    source: SweepRecord, bindings: Sequence[TaskBinding], *, skipped: Sequence[str]
) -> SweepRecord:
    chosen = [b for b in bindings if b.spec.task_id not in skipped]
    return replace(source, tasks=tuple(b.to_json() for b in chosen), status_detail=None)


def _predictions_record(jobs: Sequence[Job], bindings: Sequence[TaskBinding]) -> SweepRecord:
    used = {j.task_id for j in jobs}
    return SweepRecord(
        model=PREDICTIONS_PROVIDER,
        effort=None,
        provider=PREDICTIONS_PROVIDER,
        claude_code_version=None,
        runs=max(j.run for j in jobs) + 1,
        arms=tuple(dict.fromkeys(j.arm for j in jobs)),
        tasks=tuple(b.to_json() for b in bindings if b.spec.task_id in used),
        skipped_expensive=(),
        started_at=datetime.now(UTC).isoformat(),
        policy=None,
        overlay=None,
    )


if __name__ == "__main__":
    sys.exit(main())
