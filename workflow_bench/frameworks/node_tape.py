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

ESM = re.compile(rb"^\s*import\s[^\n]*\bfrom\s+['\"]|^\s*export\s", re.MULTILINE)
_JS = re.compile(r"\.[cm]?js$")


def loads_tape(data: bytes) -> bool:
    return bool(LOADS_TAPE.search(data))


def candidate(path: str) -> bool:
    """A JavaScript file where test files live (a test directory, ``*.test.js``, ``test.js``)."""
    name = path.rsplit("/", 1)[-1]
    return bool(_JS.search(path)) and (
        "/test" in f"/{path}" or bool(TEST_FILE.search(path)) or name.startswith("test.")
    )


def _runs(path: str, data: bytes) -> bool:
    # Helpers and fixtures beside the tests load no tape: run as a test they would print no TAP.
    return candidate(path) and bool(SOURCE.search(path)) and loads_tape(data)


def sentinels(data: bytes, names: Sequence[str]) -> bytes | None:
    """Four tape tests (names[1:]) appended to a file that loads tape, else None."""
    return appended(data, names, module="tape", call="") if loads_tape(data) else None


def appended(data: bytes, names: Sequence[str], *, module: str, call: str) -> bytes:
    """``data`` with four tests (names[1:]; must fail twice, pass, skip) appended, registered by
    ``<binding><call>(name, …)`` on ``module`` loaded under its own binding (names[0]); each ends."""
    binding, fail_library, fail_plain, passes, skips = names
    run = f"{module}_{binding}{call}"
    body = "".join(
        f'{run}("t_{name}", {options}(t) => {{ {assertion}; t.end(); }});\n'
        for name, options, assertion in (
            (fail_library, "", f't.equal("{fail_library}", "{fail_library}-")'),
            (fail_plain, "", f't.ok("{fail_plain}" === "{fail_plain}-")'),
            (passes, "", f't.pass("t_{passes}")'),
            (skips, "{ skip: true }, ", "t.pass()"),
        )
    )
    if ESM.search(data):  # an import cannot stand in a block; it is hoisted wherever it stands
        block = f'import {module}_{binding} from "{module}";\n{{\n{body}}}\n'
    else:
        block = f'{{\nconst {module}_{binding} = require("{module}");\n{body}}}\n'
    return data + (b"" if data.endswith(b"\n") or not data else b"\n") + block.encode()


TAPE = Framework(
    "tape",
    "node",
    _runs,
    'python3 -I -B "$WORKFLOW_BENCH_TAP" tape {files}',
    "each test file run as tape runs it (node FILE, the repository's own tape in node_modules) "
    "through the harness's TAP adapter ($WORKFLOW_BENCH_TAP), which reads its TAP strictly; ids "
    "<file>::<test name>",
    needs_tree="node_modules",
    kit={"WORKFLOW_BENCH_TAP": "tap.py"},
    reads_bytes=candidate,
    sentinels=(re.compile(r"[^/]*\.[cm]?js"), sentinels),
)
FRAMEWORKS = (TAPE,)
