"""jest: the repository's own (``node_modules``), with the harness's streaming reporter."""

from __future__ import annotations

from ._model import Framework
from ._node import runs_test_file

FRAMEWORKS = (
    Framework(
        "jest",
        "node",
        runs_test_file,
        # The files first: jest's --reporters is an array option, so files after it were read as
        # more reporters ("Could not resolve a module for a custom reporter").
        "./node_modules/.bin/jest {files} --ci --reporters=default "
        '--reporters="$WORKFLOW_BENCH_JEST_REPORTER"',
        "the repository's own jest (node_modules) with the harness's streaming reporter",
        needs_tree="node_modules",
    ),
)
