"""node's built-in runner (``node --test``), writing JUnit XML: no dependency tree needed."""

from __future__ import annotations

from ._model import Framework
from ._node import SOURCE, TEST_FILE


def _runs(path: str, data: bytes) -> bool:
    return bool(TEST_FILE.search(path)) or (
        bool(SOURCE.search(path)) and b"node:test" in data and "/test" in f"/{path}"
    )


def needs_bytes(path: str) -> bool:
    """Whether deciding ``path`` needs its bytes (a ``test/`` script not named ``*.test.*``)."""
    return not TEST_FILE.search(path) and "/test" in f"/{path}" and bool(SOURCE.search(path))


FRAMEWORKS = (
    Framework(
        "node-test",
        "node",
        _runs,
        "node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit "
        '--test-reporter-destination="$WORKFLOW_BENCH_JUNIT" {files}',
        "node's built-in runner (node --test) writing JUnit XML",
        reads_bytes=needs_bytes,
    ),
)
