"""`sweep.json`: the sweep's provenance, written at sweep start and finalised at its end.

Everything a report needs besides `results.jsonl` and `not-run.jsonl` lives here (model, provider,
task bindings, arms, runs, timing, status, scheduling policy and order, promotion policy, candidate
overlay identity and the toolkit files' base digests at sweep start), so
`python -m workflow_bench.report DIR` re-renders byte-identical reports from the directory alone.
Written twice by the sweep driver: with status `running` before any cell (a crash still leaves
provenance beside the rows), then with the final status.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workflow_bench.input_files import problem_line
from workflow_bench.reports.overlay_model import CANDIDATE_ORIGIN, OverlayFile, OverlayRecord
from workflow_bench.reports.provenance import SCRIPTED_PROVIDER, ReportProvenance
from workflow_bench.reports.stats_model import Document

SWEEP_RECORD_FILE = "sweep.json"
SWEEP_RECORD_SCHEMA = 1
RUNNING = "running"
OPTIONAL_FIELDS = frozenset({"schedule", "agent_script"})
PREDICTIONS_PROVIDER = "predictions"
"""The provider of a regraded predictions file (``workflow_bench.regrade``): no model ran here."""


class SweepRecordError(ValueError):
    """sweep.json is missing, unreadable or inconsistent."""


class AgentScriptRecord(Document):
    """``--provider scripted``: the agent script that drove the sweep."""

    path: str = Field(description="the script file as given on the command line")
    sha256: str = Field(description="sha256 of the script's bytes")


class TaskIdentity(BaseModel):
    """The identity of one recorded task binding (``TaskBinding.to_json()``), read by key.

    A view, not the document: the binding's other keys (digests, the oracle manifest, runtimes)
    stay in the recorded mapping, which is compared (``promotion verify``) and digested whole, so
    ignoring them here loses nothing. No coercion: an id that is not a string does not parse.
    """

    model_config = ConfigDict(frozen=True, strict=True, extra="ignore", populate_by_name=True)

    id: str = Field(description="the task id")
    task_class: str | None = Field(
        default=None, alias="class", description="the task class from the task file (None: unrecorded)"
    )


def task_identities(tasks: Sequence[Any], *, where: str) -> tuple[TaskIdentity, ...]:
    """Each recorded binding's identity, in order; ``ValueError`` naming the first that has none."""
    identities = []
    for index, task in enumerate(tasks):
        try:
            identities.append(TaskIdentity.model_validate(task))
        except ValidationError as exc:
            raise ValueError(f"{where}[{index}]: {problem_line(exc)}") from None
    return tuple(identities)


@dataclass(frozen=True, slots=True)
class SweepRecord:
    model: str
    effort: str | None
    provider: str
    claude_code_version: str | None
    runs: int
    arms: tuple[str, ...]
    tasks: tuple[Mapping[str, Any], ...]  # TaskBinding.to_json() per selected task, in order
    skipped_expensive: tuple[str, ...]
    started_at: str  # ISO-8601 UTC
    policy: Mapping[str, Any] | None  # PromotionPolicy.to_json() when candidate arms run
    overlay: OverlayRecord | None  # overlay_record() when a candidate overlay runs
    schedule: Mapping[str, Any] | None = None  # schedule.not_run.schedule_record(): scheduler, order
    # --provider scripted: the script as given and its digest; None for a model.
    agent_script: AgentScriptRecord | None = None
    status: str = RUNNING
    status_detail: str | None = None
    finished_at: str | None = None
    wall_s: float | None = None
    schema_version: int = SWEEP_RECORD_SCHEMA

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in task_identities(self.tasks, where="sweep.json: tasks"))

    def finished(
        self, *, status: str, detail: str | None, finished_at: datetime, wall_s: float
    ) -> SweepRecord:
        return replace(
            self, status=status, status_detail=detail, finished_at=finished_at.isoformat(), wall_s=wall_s
        )

    def to_text(self) -> str:
        data = asdict(self)
        # The typed parts dump as they were recorded: a field a parsed record never had (an old
        # overlay record's origin) stays absent, so a re-written record keeps its keys.
        for name, value in (("overlay", self.overlay), ("agent_script", self.agent_script)):
            data[name] = None if value is None else value.model_dump(mode="json", exclude_unset=True)
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, raw: Any, *, source: str = SWEEP_RECORD_FILE) -> SweepRecord:
        if not isinstance(raw, Mapping):
            raise SweepRecordError(f"{source}: want a JSON object")
        version = raw.get("schema_version")  # key read: before the shape (another version, another shape)
        if version != SWEEP_RECORD_SCHEMA:
            raise SweepRecordError(f"{source}: schema_version {version!r}, want {SWEEP_RECORD_SCHEMA}")
        fields = set(cls.__slots__)
        # `schedule` and `agent_script` arrived after schema 1 shipped; a record without `schedule`
        # renders no Scheduling section, one without `agent_script` says its script is unrecorded.
        if set(raw) != fields and set(raw) | OPTIONAL_FIELDS != fields:
            raise SweepRecordError(
                f"{source}: keys differ: unknown {sorted(set(raw) - fields)}, missing"
                f" {sorted(fields - set(raw))}"
            )
        data = {}
        for name, value in raw.items():
            convert = _FIELD_PARSERS.get(name)
            try:
                data[name] = value if convert is None else convert(value)
            except (TypeError, ValueError) as exc:
                problem = problem_line(exc) if isinstance(exc, ValidationError) else exc
                raise SweepRecordError(f"{source}: {name}: {problem}") from None
        record = cls(**data)
        try:
            task_identities(record.tasks, where="tasks")
        except ValueError as exc:
            raise SweepRecordError(f"{source}: {exc}") from None
        return record

    def provenance(self) -> ReportProvenance:
        if self.finished_at is None or self.wall_s is None or self.status == RUNNING:
            raise SweepRecordError("sweep.json: the sweep never finished (status running); no final report")
        return ReportProvenance(
            model=self.model,
            effort=self.effort,
            provider=self.provider,
            claude_code_version=self.claude_code_version,
            selected_tasks=self.task_ids,
            skipped_expensive=self.skipped_expensive,
            runs=self.runs,
            arms=self.arms,
            started_at=datetime.fromisoformat(self.started_at),
            finished_at=datetime.fromisoformat(self.finished_at),
            wall_s=self.wall_s,
            status=self.status,  # type: ignore[arg-type]
            status_detail=self.status_detail,
            agent=self._agent(),
        )

    def _agent(self) -> str:
        """What drove the sweep, as the report names it: the agent script, the model, or neither."""
        if self.provider == PREDICTIONS_PROVIDER:
            return "none: a predictions file was regraded"
        if self.provider != SCRIPTED_PROVIDER:
            return f"the model `{self.model}`"
        if self.agent_script is None:
            return "an agent script this sweep.json does not record (written before scripts were)"
        script = self.agent_script
        return f"the agent script `{script.path}` (sha256 `{script.sha256[:12]}`)"


def _optional(model: type[Document]) -> Any:
    def parse(value: Any) -> Any:
        return None if value is None else model.model_validate(value)

    return parse


# sweep.json's fields that are not stored as they are read: lists become tuples, records models.
_FIELD_PARSERS: Mapping[str, Any] = {
    "arms": tuple,
    "tasks": tuple,
    "skipped_expensive": tuple,
    "overlay": _optional(OverlayRecord),
    "agent_script": _optional(AgentScriptRecord),
}


def read_sweep_record(out_dir: Path) -> SweepRecord:
    path = out_dir / SWEEP_RECORD_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SweepRecordError(f"{path}: {exc}") from exc
    return SweepRecord.from_json(raw, source=str(path))


def overlay_record(
    *,
    digest: str,
    files: Sequence[tuple[str, bytes]],
    roles: Sequence[str],
    toolkit_root: Path,
    origin: str = CANDIDATE_ORIGIN,
) -> OverlayRecord:
    """The overlay's identity plus each destination's sha256 in the toolkit at sweep start.

    `target_base_digests` is what `promotion apply` compares-and-swaps against: a toolkit file that
    changed after the sweep means the evidence was about a different incumbent.
    """

    def digest_of(path: Path) -> str | None:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None

    return OverlayRecord(
        digest=digest,
        roles=sorted(roles),
        files=[
            OverlayFile(path=p, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data)) for p, data in files
        ],
        target_base_digests={p: digest_of(toolkit_root / p) for p, _ in files},
        origin=origin,  # who wrote the overlay (--candidate-origin)
    )
