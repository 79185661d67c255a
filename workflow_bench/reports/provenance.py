"""`ReportProvenance`: what a report must say about the sweep that produced its numbers.

Owns the validated, frozen record of model, provider, CLI version, task selection, timing and
sweep status that the renderers print. Built once by the runner at the end of a sweep; the
renderers trust it and never re-check it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

SweepStatus = Literal["complete", "aborted", "cancelled"]
"""complete: every planned cell ran; aborted: the outage breaker tripped; cancelled: SIGINT/SIGTERM."""

SWEEP_STATUSES: tuple[str, ...] = get_args(SweepStatus)
SCRIPTED_PROVIDER = "scripted"


@dataclass(frozen=True, slots=True)
class ReportProvenance:
    """The sweep's identity and outcome as printed under `## Run provenance`."""

    model: str
    effort: str | None
    provider: str
    """Model provider name ("anthropic", "scripted", ...); "scripted" flags every number as canned."""
    claude_code_version: str | None
    selected_tasks: Sequence[str]
    skipped_expensive: Sequence[str]
    runs: int
    arms: Sequence[str]
    started_at: datetime
    finished_at: datetime
    wall_s: float
    status: SweepStatus
    status_detail: str | None = field(default=None)
    agent: str | None = field(default=None)
    """What drove the sweep: the scripted provider's agent script (path, digest) or the model."""

    def __post_init__(self) -> None:
        # frozen is shallow: store tuples so a caller's later list mutation cannot edit a report.
        for name in ("selected_tasks", "skipped_expensive", "arms"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ValueError(f"ReportProvenance.{name}: want a sequence of ids, got the string {value!r}")
            object.__setattr__(self, name, tuple(str(item) for item in value))
        if self.status not in SWEEP_STATUSES:
            raise ValueError(
                f"ReportProvenance.status: {self.status!r} is not one of {', '.join(SWEEP_STATUSES)}"
            )
        if not self.provider:
            raise ValueError("ReportProvenance.provider: must name the model provider, got ''")
        if self.runs < 0:
            raise ValueError(f"ReportProvenance.runs: want >= 0, got {self.runs}")
        if self.wall_s < 0:
            raise ValueError(f"ReportProvenance.wall_s: want >= 0, got {self.wall_s}")
        for name in ("started_at", "finished_at"):
            moment: datetime = getattr(self, name)
            if moment.tzinfo is None:
                raise ValueError(f"ReportProvenance.{name}: want a timezone-aware datetime, got {moment}")
        if self.finished_at < self.started_at:
            raise ValueError(
                f"ReportProvenance: finished_at {self.finished_at} is before started_at {self.started_at}"
            )

    @property
    def is_scripted(self) -> bool:
        """The numbers came from the scripted provider, not from a model."""
        return self.provider == SCRIPTED_PROVIDER
