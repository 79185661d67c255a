"""Report renderers: turn per task×arm aggregates plus sweep provenance into human reports.

Public surface: `render_markdown` (report.md) and `ReportProvenance`. Renderers are pure (they
return text; the runner writes files) and import only `aggregate` and `outcomes` below them.
"""

from workflow_bench.report._markdown import MAIN_LOOP_WARNING, SCRIPTED_NOTICE, Results, render_markdown
from workflow_bench.report._provenance import SWEEP_STATUSES, ReportProvenance, SweepStatus

__all__ = [
    "MAIN_LOOP_WARNING",
    "SCRIPTED_NOTICE",
    "SWEEP_STATUSES",
    "ReportProvenance",
    "Results",
    "SweepStatus",
    "render_markdown",
]
