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

from workflow_bench.reports.provenance import SCRIPTED_PROVIDER, ReportProvenance

SWEEP_RECORD_FILE = "sweep.json"
SWEEP_RECORD_SCHEMA = 1
RUNNING = "running"
OPTIONAL_FIELDS = frozenset({"schedule", "agent_script"})
PREDICTIONS_PROVIDER = "predictions"
"""The provider of a regraded predictions file (``workflow_bench.regrade``): no model ran here."""


class SweepRecordError(ValueError):
    """sweep.json is missing, unreadable or inconsistent."""


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
    overlay: Mapping[str, Any] | None  # overlay_record() when a candidate overlay runs
    schedule: Mapping[str, Any] | None = None  # schedule.not_run.schedule_record(): scheduler, order
    # --provider scripted: {"path": the script as given, "sha256": its digest}; None for a model.
    agent_script: Mapping[str, str] | None = None
    status: str = RUNNING
    status_detail: str | None = None
    finished_at: str | None = None
    wall_s: float | None = None
    schema_version: int = SWEEP_RECORD_SCHEMA

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(str(t["id"]) for t in self.tasks)

    def finished(
        self, *, status: str, detail: str | None, finished_at: datetime, wall_s: float
    ) -> SweepRecord:
        return replace(
            self, status=status, status_detail=detail, finished_at=finished_at.isoformat(), wall_s=wall_s
        )

    def to_text(self) -> str:
        data = asdict(self)
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, raw: Any, *, source: str = SWEEP_RECORD_FILE) -> SweepRecord:
        if not isinstance(raw, Mapping):
            raise SweepRecordError(f"{source}: want a JSON object")
        if raw.get("schema_version") != SWEEP_RECORD_SCHEMA:
            raise SweepRecordError(
                f"{source}: schema_version {raw.get('schema_version')!r}, want {SWEEP_RECORD_SCHEMA}"
            )
        fields = set(cls.__slots__)
        # `schedule` and `agent_script` arrived after schema 1 shipped; a record without `schedule`
        # renders no Scheduling section, one without `agent_script` says its script is unrecorded.
        if set(raw) != fields and set(raw) | OPTIONAL_FIELDS != fields:
            raise SweepRecordError(
                f"{source}: keys differ: unknown {sorted(set(raw) - fields)}, missing"
                f" {sorted(fields - set(raw))}"
            )
        data = dict(raw)
        for name in ("arms", "tasks", "skipped_expensive"):
            data[name] = tuple(data[name])
        return cls(**data)

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
        return f"the agent script `{script.get('path')}` (sha256 `{str(script.get('sha256'))[:12]}`)"


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
    origin: str = "manual-initial-overlay",
) -> dict[str, Any]:
    """The overlay's identity plus each destination's sha256 in the toolkit at sweep start.

    `target_base_digests` is what `promotion apply` compares-and-swaps against: a toolkit file that
    changed after the sweep means the evidence was about a different incumbent.
    """

    def digest_of(path: Path) -> str | None:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None

    return {
        "digest": digest,
        "roles": sorted(roles),
        "files": [
            {"path": p, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)} for p, data in files
        ],
        "target_base_digests": {p: digest_of(toolkit_root / p) for p, _ in files},
        "origin": origin,  # who wrote the overlay (--candidate-origin)
    }
