"""vitest: the repository's own (``node_modules``), with the harness's streaming reporter from
vitest 3.2 on, and JUnit XML before it (``_node.STREAMING_VITEST``: no custom reporter API
before 3; 3.0-3.1 load no reporter from outside the project, where the kit is staged)."""

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
        "the repository's own vitest (< 3.2: no reporter loaded from the kit) writing JUnit XML",
        needs_tree="node_modules",
    ),
)
