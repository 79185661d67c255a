"""jest: the repository's own (``node_modules``), with the harness's streaming reporter."""

from __future__ import annotations

from ._model import Framework
from ._node import runs_test_file

FRAMEWORKS = (
    Framework(
        "jest",
        "node",
        runs_test_file,
        "./node_modules/.bin/jest --ci --reporters=default "
        '--reporters="$WORKFLOW_BENCH_JEST_REPORTER" '
        "{files}",
        "the repository's own jest (node_modules) with the harness's streaming reporter",
        needs_tree="node_modules",
    ),
)
