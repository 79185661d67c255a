"""What a regrade judges: the saved patches of a finished sweep, or a SWE-bench predictions file.

Everything that could reject the input happens here, before any clone or output directory:
``RegradeInputError`` names the file, line, task or key, and the command exits 2 with nothing
written. A sweep is read as stored (``sweep.json``, ``results.jsonl`` through ``rows.migrate``,
each row's ``patch_artifact``) and never written. A task of the task file must be one the sweep ran
(a task it skipped as expensive is left out, and said so) against the same repository and base
commit; a prediction must name a task of the task file and carry the three SWE-bench keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.input_files import InputFileError, read_bounded
from workflow_bench.reports.sweep_record import (
    SWEEP_RECORD_FILE,
    SweepRecord,
    SweepRecordError,
    read_sweep_record,
)
from workflow_bench.rows.migrate import RowReadError, read_rows
from workflow_bench.rows.model import Row
from workflow_bench.taskspec.spec import TaskBinding

RESULTS_FILE = "results.jsonl"
PREDICTION_KEYS = ("instance_id", "model_name_or_path", "model_patch")
MAX_PREDICTIONS_BYTES = 256 * 1024 * 1024
MAX_RESULTS_BYTES = 1024 * 1024 * 1024


class RegradeInputError(ValueError):
    """Input a regrade refuses (exit 2, nothing written); the message names where."""


@dataclass(frozen=True, slots=True)
class Job:
    """One patch to judge: the task, the arm and run it is charged to, where it came from."""

    task_id: str
    arm: str
    run: int
    patch: bytes
    source: str
    """'<sweep dir> <task>/<arm>/<run>' or '<predictions file>:<line>'."""
    row: Row | None = None
    """The source row (a sweep), None for a prediction."""
    artifacts: Mapping[str, bytes] | None = None
    """The source row's other files (transcripts, wire records, review artifact), copied as they are."""
    rejudge: bool = True
    """False: carried over unchanged (no patch was judged at sweep time: see ``rejudgeable``)."""


@dataclass(frozen=True, slots=True)
class SourceSweep:
    root: Path
    record: SweepRecord
    rows: tuple[Row, ...]
    skipped: tuple[str, ...]
    """Task ids of the task file the sweep skipped as expensive (left out of the regrade)."""


def rejudgeable(row: Row) -> bool:
    """A row whose patch the judges ran against: sessions ok, a patch saved, not a review arm."""
    return row.ok and row.patch_artifact is not None and row.review_artifact is None


def read_sweep(root: Path, bindings: Sequence[TaskBinding]) -> tuple[SourceSweep, list[Job]]:
    """The sweep at ``root`` and one job per row of a task in ``bindings``; refusals named."""
    if not (root / SWEEP_RECORD_FILE).is_file():
        raise RegradeInputError(f"{root}: not a sweep directory (no {SWEEP_RECORD_FILE})")
    try:
        record = read_sweep_record(root)
        record.provenance()  # a sweep still running (or killed) has no final verdicts to regrade
        results = root / RESULTS_FILE
        text = read_bounded(results, max_bytes=MAX_RESULTS_BYTES).decode() if results.exists() else ""
        rows = read_rows(text, source=str(root / RESULTS_FILE))
    except (SweepRecordError, RowReadError, InputFileError, OSError, ValueError) as exc:
        raise RegradeInputError(f"{root}: {exc}") from None
    ran = {str(t["id"]): t for t in record.tasks}
    skipped = tuple(b.spec.task_id for b in bindings if b.spec.task_id in record.skipped_expensive)
    problems = []
    for binding in bindings:
        task_id = binding.spec.task_id
        if task_id in skipped:
            continue
        old = ran.get(task_id)
        if old is None:
            problems.append(f"task {task_id!r}: the sweep in {root} never ran it")
            continue
        for key, new in (("repo_identity", binding.repo_identity), ("resolved_sha", binding.resolved_sha)):
            if old.get(key) != new:
                problems.append(f"task {task_id!r}: {key} {new!r} differs from the sweep's {old.get(key)!r}")
    if problems:
        raise RegradeInputError("\n".join(problems))
    chosen = {b.spec.task_id for b in bindings} - set(skipped)
    jobs = [_sweep_job(root, row) for row in rows if row.task in chosen]
    return SourceSweep(root=root, record=record, rows=tuple(rows), skipped=skipped), jobs


def _sweep_job(root: Path, row: Row) -> Job:
    where = f"{root} {row.task}/{row.arm}/{row.run}"
    patch = b""
    if row.patch_artifact is not None:
        try:
            patch = _artifact(root, row.patch_artifact).read_bytes()
        except OSError as exc:
            raise RegradeInputError(
                f"{where}: patch_artifact {row.patch_artifact}: {exc.strerror or exc}"
            ) from None
    files: dict[str, bytes] = {}
    try:
        for transcript in row.transcript_artifacts or []:
            files[transcript.path] = _artifact(root, transcript.path).read_bytes()
        for wire in row.wire_artifacts or []:
            files[wire] = _artifact(root, wire).read_bytes()
        if row.review_artifact is not None:
            files["review.json"] = _artifact(root, row.review_artifact).read_bytes()
    except OSError as exc:
        raise RegradeInputError(f"{where}: an artifact of the row: {exc.strerror or exc}") from None
    return Job(row.task, row.arm, row.run, patch, where, row=row, artifacts=files, rejudge=rejudgeable(row))


def _artifact(root: Path, name: str) -> Path:
    path = (root / name).resolve()
    if not path.is_relative_to(root.resolve()):
        raise RegradeInputError(f"{root}: artifact {name!r} lies outside the sweep directory")
    return path


def read_predictions(path: Path, bindings: Sequence[TaskBinding]) -> list[Job]:
    """One job per line of a SWE-bench predictions JSONL; every bad line named ``file:line: key``."""
    try:
        text = read_bounded(path, max_bytes=MAX_PREDICTIONS_BYTES).decode("utf-8")
    except (InputFileError, OSError, UnicodeDecodeError) as exc:
        raise RegradeInputError(f"{path}: {exc}") from None
    known = {b.spec.task_id for b in bindings}
    jobs: list[Job] = []
    problems: list[str] = []
    runs: dict[tuple[str, str], int] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        if not isinstance(data, dict):
            problems.append(f"{where}: want a JSON object")
            continue
        bad = [k for k in PREDICTION_KEYS if not isinstance(data.get(k), str)]
        if bad:
            problems.append(f"{where}: {bad[0]}: missing or not a string")
            continue
        task_id, arm, patch = (str(data[k]) for k in PREDICTION_KEYS)
        if task_id not in known:
            problems.append(f"{where}: instance_id: {task_id!r} is not a task of the task file")
            continue
        if not arm.strip() or any(c in arm for c in "/\0\n"):
            problems.append(
                f"{where}: model_name_or_path: {arm!r} cannot name an arm (empty, '/' or control)"
            )
            continue
        run = runs.get((task_id, arm), 0)
        runs[(task_id, arm)] = run + 1
        jobs.append(Job(task_id, arm, run, patch.encode("utf-8", "surrogateescape"), where))
    if problems:
        raise RegradeInputError("\n".join(problems))
    if not jobs:
        raise RegradeInputError(f"{path}: no predictions")
    return jobs
