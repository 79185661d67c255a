"""A cell's row while the cell runs: the typed parts so far, and how a failure overrides the verdict.

``CellDraft`` holds one part per step (``None``: that step did not happen) and becomes a
``rows.model.Row`` once, at the end of ``run_cell`` (``assemble``). The override rules live here:
a later failure (a kernel bound, unreadable counters, a clone that will not go) replaces the
verdict and names the primary kind in its detail; nothing else of what was measured changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.rows.model import (
    Churn,
    CleanRoomJudgement,
    OracleJudgement,
    Part,
    Resolution,
    Review,
    SessionLayer,
    VerifyJudgement,
)


@dataclass(frozen=True, slots=True)
class CellDraft:
    verdict: Resolution
    session: SessionLayer | None = None
    verify: VerifyJudgement | None = None
    oracle: OracleJudgement | None = None
    churn: Churn | None = None
    review: Review | None = None
    cleanroom: CleanRoomJudgement | None = None

    @property
    def kind(self) -> ErrorKind | None:
        return self.verdict.error_kind

    def with_verdict(self, **changes: Any) -> CellDraft:
        """The draft with ``changes`` to its verdict (validated like a new one)."""
        return replace(self, verdict=Resolution.model_validate({**self.verdict.model_dump(), **changes}))

    def failed(self, kind: ErrorKind, detail: str) -> CellDraft:
        """Not ok, not resolved, ``kind`` with ``detail``: a failure that overrides what came before."""
        return self.with_verdict(ok=False, resolved=False, error_kind=kind, error_detail=detail)

    def parts(self) -> tuple[Part, ...]:
        steps = (self.session, self.verify, self.oracle, self.churn, self.review, self.cleanroom)
        return (self.verdict, *(part for part in steps if part is not None))
