"""tape: a test file is a node script that requires ``tape`` and prints TAP; each file runs on its
own (``node FILE``, as ``tape FILE`` would) through the harness's TAP adapter, which reads the
stream strictly (``kit/tap.py``, shared with prove). tape itself is the repository's own
(``node_modules``). Test ids are ``<file>::<test name>`` (tape's ``# <name>`` line; its
assertions decide the outcome).

Detected when the fix's test files load tape, or package.json declares tape and its test script
runs it. Sentinels are four tape tests appended to a file that loads tape (``require("tape")`` or
an ``import`` from it), through their own binding, so nothing depends on what the file named it:
the JavaScript writer's tests (no ``t.end()``) would never end under tape.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._model import Framework
from ._node import LOADS_TAPE, SOURCE, TEST_FILE

_ESM = re.compile(rb"^\s*import\s[^\n]*\bfrom\s+['\"]|^\s*export\s", re.MULTILINE)
_JS = re.compile(r"\.[cm]?js$")


def loads_tape(data: bytes) -> bool:
    return bool(LOADS_TAPE.search(data))


def _candidate(path: str) -> bool:
    """A JavaScript file where test files live (a test directory, ``*.test.js``, ``test.js``)."""
    name = path.rsplit("/", 1)[-1]
    return bool(_JS.search(path)) and (
        "/test" in f"/{path}" or bool(TEST_FILE.search(path)) or name.startswith("test.")
    )


def _runs(path: str, data: bytes) -> bool:
    # Helpers and fixtures beside the tests load no tape: run as a test they would print no TAP.
    return _candidate(path) and bool(SOURCE.search(path)) and loads_tape(data)


def sentinels(data: bytes, names: Sequence[str]) -> bytes | None:
    """Four tape tests (names[1:]) appended to a file that loads tape, else None."""
    if not loads_tape(data):
        return None
    binding, fail_library, fail_plain, passes, skips = names
    run = f"tape_{binding}"
    body = (
        f'{run}("t_{fail_library}", (t) => {{ t.equal("{fail_library}", "{fail_library}-"); t.end(); }});\n'
        f'{run}("t_{fail_plain}", (t) => {{ t.ok("{fail_plain}" === "{fail_plain}-"); t.end(); }});\n'
        f'{run}("t_{passes}", (t) => {{ t.pass("t_{passes}"); t.end(); }});\n'
        f'{run}("t_{skips}", {{ skip: true }}, (t) => {{ t.end(); }});\n'
    )
    if _ESM.search(data):  # an import cannot stand in a block; it is hoisted wherever it stands
        block = f'import {run} from "tape";\n{{\n{body}}}\n'
    else:
        block = f'{{\nconst {run} = require("tape");\n{body}}}\n'
    return data + (b"" if data.endswith(b"\n") or not data else b"\n") + block.encode()


TAPE = Framework(
    "tape",
    "node",
    _runs,
    'python3 -I -B "$WORKFLOW_BENCH_TAP" node {files}',
    "each test file run as tape runs it (node FILE, the repository's own tape in node_modules) "
    "through the harness's TAP adapter ($WORKFLOW_BENCH_TAP), which reads its TAP strictly; ids "
    "<file>::<test name>",
    needs_tree="node_modules",
    kit={"WORKFLOW_BENCH_TAP": "tap.py"},
    reads_bytes=_candidate,
    sentinels=(re.compile(r"[^/]*\.[cm]?js"), sentinels),
)
FRAMEWORKS = (TAPE,)
