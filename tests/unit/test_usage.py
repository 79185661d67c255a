"""The one definition of the usage fields and the one unknown-aware sum (workflow_bench/usage.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workflow_bench.usage import USAGE_FIELDS, sum_usage, unknown_usage

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "workflow_bench"


def test_sum_is_per_field_and_unknown_wins() -> None:
    a = dict(zip(USAGE_FIELDS, (1, 2, 3, 4), strict=True))
    b = a | {"output_tokens": None}
    assert sum_usage([a, a]) == {k: 2 * v for k, v in a.items()}
    assert sum_usage(iter([a, b])) == {k: 2 * v for k, v in a.items()} | {"output_tokens": None}
    assert sum_usage([a, {}]) == unknown_usage()  # a missing field is unknown, not 0
    assert sum_usage([]) == unknown_usage() == dict.fromkeys(USAGE_FIELDS)  # nothing observed is not zero
    assert sum_usage([dict.fromkeys(USAGE_FIELDS, 0)]) == dict.fromkeys(USAGE_FIELDS, 0)  # a known 0 stays 0


def test_no_second_definition_of_the_fields_or_the_sum() -> None:
    """Negative control: a module that re-declares the tuple or a sum helper fails this test."""
    pattern = re.compile(r"^(USAGE_\w+\s*=|def \w*sum_usage\w*\()", re.MULTILINE)
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "usage.py" or p.parent != PACKAGE
        if pattern.search(p.read_text())
    ]
    assert offenders == []
    assert pattern.search('USAGE_KEYS = ("input_tokens",)\n') and pattern.search("def sum_usage_fields(x):\n")
