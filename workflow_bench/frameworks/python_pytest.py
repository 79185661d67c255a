"""pytest, through the harness's streaming adapter (``judging/kit/pytest_run.py``)."""

from __future__ import annotations

import re

from ._model import Framework, Tree
from ._python import config_text, runs_module


def _options(base: Tree) -> tuple[tuple[str, ...], str | None]:
    """Coverage (pytest-cov's ``--cov`` in the repository's ``addopts``) writes its data file into
    the working directory, which is read-only while verify runs: pytest then stops with an
    internal error before reporting. ``--no-cov`` turns it off; its options still parse, so the
    dependency tree must hold pytest-cov."""
    if re.search(r"addopts\s*=.*--cov", config_text(base)):
        return ("--no-cov",), (
            "the repository's pytest addopts enable coverage (--cov), which writes into the read-only "
            "workspace: --no-cov (the dependency tree must still hold pytest-cov for its options to parse)"
        )
    return (), None


PYTEST = Framework(
    "pytest",
    "python",
    runs_module,
    '{pythonpath}python3 -B "$WORKFLOW_BENCH_PYTEST" -q -p no:cacheprovider --rootdir=. {files}',
    "pytest through the harness's streaming adapter ($WORKFLOW_BENCH_PYTEST): one result per "
    "test as it finishes, ids are pytest node ids relative to the repository",
    needs_tree=".wfbench-deps",
    options=_options,
)
FRAMEWORKS = (PYTEST,)
