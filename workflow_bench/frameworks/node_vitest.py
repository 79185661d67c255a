"""vitest: the repository's own (``node_modules``), with the harness's streaming reporter from
vitest 3 on, and JUnit XML before it (no custom reporter API)."""

from __future__ import annotations

from ._model import Framework
from ._node import runs_test_file

FRAMEWORKS = (
    Framework(
        "vitest",
        "node",
        runs_test_file,
        "./node_modules/.bin/vitest run --reporter=default "
        '--reporter="$WORKFLOW_BENCH_VITEST_REPORTER" {files}',
        "the repository's own vitest (node_modules) with the harness's streaming reporter",
        needs_tree="node_modules",
    ),
    Framework(
        "vitest-junit",
        "node",
        runs_test_file,
        "./node_modules/.bin/vitest run --reporter=default --reporter=junit "
        '--outputFile.junit="$WORKFLOW_BENCH_JUNIT" {files}',
        "the repository's own vitest (< 3: no custom reporter API) writing JUnit XML",
        needs_tree="node_modules",
    ),
)
