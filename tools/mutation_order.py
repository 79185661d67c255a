"""A pytest plugin for `./dev mutation`: run a mutant's tests fastest first.

Contract: when `mutmut-stats.json` (mutmut's record of each test's duration, written in the
working directory after its stats run) exists, reorder the collected tests by that duration,
unknown ones last, keeping the original order among equals. mutmut passes each mutant its
covering tests as an unordered set and stops at the first failure (-x); a sandbox test that
takes seconds then no longer runs before a unit test that kills the mutant in milliseconds.
Order only: no test is added or dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STATS = Path("mutmut-stats.json")


def pytest_collection_modifyitems(items: list[Any]) -> None:
    try:
        durations = json.loads(STATS.read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    items.sort(key=lambda item: durations.get(item.nodeid, float("inf")))
