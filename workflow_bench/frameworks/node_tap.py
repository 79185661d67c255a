"""node-tap (``tap``): a test file is a node script that loads ``tap`` and prints TAP (version 14);
each file runs on its own (``node FILE``) through the harness's TAP adapter (``kit/tap.py``,
prove's and tape's strict reader). ``tap`` itself is the repository's own (``node_modules``).
Test ids are ``<file>::<name>`` of each top-level ``t.test`` (its subtests are indented in the
stream: they decide its outcome, as node-tap reports it, and are not tests of their own).

Detected when the fix's test files load tap, or package.json declares tap and its test script
runs it. Sentinels are four top-level ``t.test`` calls appended through their own binding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._model import Framework
from ._node import LOADS_TAP, SOURCE
from .node_tape import appended, candidate


def loads_tap(data: bytes) -> bool:
    return bool(LOADS_TAP.search(data))


def _runs(path: str, data: bytes) -> bool:
    return candidate(path) and bool(SOURCE.search(path)) and loads_tap(data)


def sentinels(data: bytes, names: Sequence[str]) -> bytes | None:
    """Four node-tap tests (names[1:]) appended to a file that loads tap, else None."""
    return appended(data, names, module="tap", call=".test") if loads_tap(data) else None


NODE_TAP = Framework(
    "node-tap",
    "node",
    _runs,
    'python3 -I -B "$WORKFLOW_BENCH_TAP" node-tap {files}',
    "each test file run with node (the repository's own tap in node_modules) through the harness's "
    "TAP adapter ($WORKFLOW_BENCH_TAP), which reads its TAP strictly; ids <file>::<top-level test>",
    needs_tree="node_modules",
    kit={"WORKFLOW_BENCH_TAP": "tap.py"},
    reads_bytes=candidate,
    sentinels=(re.compile(r"[^/]*\.[cm]?js"), sentinels),
)
FRAMEWORKS = (NODE_TAP,)
