"""pytest plugin staged with an imported SWE-bench instance's oracle: run exactly its expected tests.

SWE-bench instances name their tests ``FAIL_TO_PASS`` and ``PASS_TO_PASS``; the files of their
test patch hold others too (tests that failed, or were skipped, where the instance was recorded),
and the judge refuses any failing test. ``pytest -p wfbench_select`` keeps the collected tests an
expected id names (``matches``) and deselects the rest. The ids are read from
``<rootdir>/.wfbench-select/tests.json`` (a JSON list), staged next to this file.

``matches`` is the one definition of how a SWE-bench id names a test reported by pytest (a node id
relative to the repository): the harness's import (``tasks.swebench``) checks the recorded
expected tests with it too. Stdlib only: it runs under the task's own Python in the sandbox.
"""

import json
import os
import re

SELECTION = os.path.join(".wfbench-select", "tests.json")
_UNITTEST = re.compile(r"^(?P<name>[^\s(]+) \((?P<dotted>[^\s()]+)\)$")


def dotted(nodeid):
    """``tests/test_x.py::Case::test_y`` -> ``tests.test_x.Case.test_y`` (unittest's spelling)."""
    path, _, rest = nodeid.partition("::")
    module = path[:-3] if path.endswith(".py") else path
    return ".".join([module.replace("/", "."), *[p for p in rest.split("::") if p]])


def matches(expected, nodeid):
    """Whether the SWE-bench id ``expected`` names the test pytest reports as ``nodeid``.

    1. the same string (pytest ids: ``tests/test_x.py::test_y[param]``);
    2. SWE-bench's log parser split each line at whitespace, so an id whose parameters hold a
       space is cut there: ``expected`` is ``nodeid`` up to its first whitespace;
    3. unittest's spelling ``test_y (pkg.test_x.Case)`` or ``test_y (pkg.test_x.Case.test_y)``:
       the node id's dotted form ends with ``pkg.test_x.Case.test_y``;
    4. a bare name (``test_y``): the node id's last part, parameters left out, is that name.
    """
    if expected == nodeid or expected == nodeid.split()[0]:
        return True
    form = _UNITTEST.match(expected)
    if form is not None:
        name, where = form.group("name"), form.group("dotted")
        full = where if where.endswith("." + name) else where + "." + name
        return dotted(nodeid) == full or dotted(nodeid).endswith("." + full)
    if "::" not in expected and "/" not in expected and " " not in expected:
        return nodeid.rsplit("::", 1)[-1].split("[", 1)[0] == expected
    return False


def pytest_collection_modifyitems(config, items):
    path = os.path.join(str(config.rootpath), SELECTION)
    with open(path, encoding="utf-8") as handle:
        wanted = json.load(handle)
    keep: list = []
    drop: list = []
    for item in items:
        (keep if any(matches(e, item.nodeid) for e in wanted) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
