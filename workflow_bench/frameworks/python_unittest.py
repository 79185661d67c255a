"""unittest, through the harness's shim (``judging/kit/unittest_shim.py``): stdlib only."""

from __future__ import annotations

from ._model import Framework
from ._python import runs_module

FRAMEWORKS = (
    Framework(
        "unittest",
        "python",
        runs_module,
        '{pythonpath}python3 -B "$WORKFLOW_BENCH_UNITTEST" {files}',
        "unittest through the harness's adapter ($WORKFLOW_BENCH_UNITTEST)",
    ),
)
