"""Hidden review labels: a malformed label file is a corpus bug, refused with a message that
says which file part, which label and what value — so the corpus author can fix it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from workflow_bench.review.contract import MAX_ID_CHARS
from workflow_bench.review.labels import Label, ReviewLabelsError, labels_from_oracle, parse_labels

pytestmark = pytest.mark.unit


def _label(**overrides: Any) -> dict[str, Any]:
    base = {"id": "L1", "severity": "high", "path": "a.py", "line_start": 3, "line_end": 4, "category": "Bug"}
    return {**base, **overrides}


def _file(findings: Any, **extra: Any) -> bytes:
    return json.dumps({"schema_version": 1, "findings": findings, **extra}).encode()


def _refused(data: bytes) -> str:
    with pytest.raises(ReviewLabelsError) as raised:
        parse_labels(data)
    return str(raised.value)


def test_a_valid_file_parses_normalized():
    (label,) = parse_labels(_file([_label(path="./x/../a.py")]))
    assert (label.label_id, label.path, label.category, label.is_blocking) == ("L1", "a.py", "bug", True)
    assert parse_labels(_file([])) == ()  # a clean control


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff", "review labels is not valid UTF-8 (bad byte at offset 0)"),
        (b"[1]", "review labels must be a JSON object, got a list"),
        (
            _file([], extra=1),
            "review labels: want exactly the keys schema_version, findings (unknown 'extra')",
        ),
        (
            json.dumps({"schema_version": "1", "findings": []}).encode(),
            "review labels schema_version want 1, got '1'",
        ),
        (
            json.dumps({"schema_version": True, "findings": []}).encode(),
            "review labels schema_version want 1, got True",
        ),
        (_file({"a": 1}), "review labels findings want a list, got an object"),
        (_file([_label(), 5]), "review labels findings[1] want an object, got a number"),
        (_file([_label(id="L1"), _label(id="L2"), _label(id="L1")]), "review labels repeat the id(s) 'L1'"),
        (
            _file([_label(id="b"), _label(id="a"), _label(id="b"), _label(id="a"), _label(id="c")]),
            "review labels repeat the id(s) 'a', 'b'",
        ),
    ],
    ids=[
        "not-utf8",
        "not-object",
        "keys",
        "version-string",
        "version-bool",
        "findings-object",
        "item",
        "dup",
        "dups",
    ],
)
def test_a_malformed_file_is_refused_with_what_is_wrong(data, message):
    assert _refused(data) == message


def test_a_bad_label_is_named_by_its_id():
    assert _refused(_file([_label(severity="huge")])) == (
        "label 'L1': want one of critical, high, medium, low, got 'huge'"
    )
    assert _refused(_file([_label(line_end=2)])) == "label 'L1': line_end is before line_start"
    long_id = "L" * (MAX_ID_CHARS + 1)
    assert _refused(_file([_label(id=long_id)])).endswith(
        f"is {MAX_ID_CHARS + 1} characters, at most {MAX_ID_CHARS} allowed"
    )
    assert parse_labels(_file([_label(id="L" * MAX_ID_CHARS)]))[0].label_id == "L" * MAX_ID_CHARS


def test_a_label_is_checked_when_built_directly_too():
    with pytest.raises(ReviewLabelsError, match=r"^label 'L9': want a positive integer, got 0$"):
        Label(label_id="L9", severity="low", path="a.py", line_start=0, line_end=1, category="c")


@dataclass(frozen=True)
class _Captured:
    target: str
    data: bytes


def test_the_labels_are_the_one_oracle_file_with_the_labels_target():
    labels = _Captured("review-labels.json", _file([_label()]))
    assert len(labels_from_oracle([_Captured("other.py", b"x"), labels])) == 1
    for files in ([], [labels, labels]):
        with pytest.raises(
            ReviewLabelsError, match=f"exactly one file with target review-labels.json, found {len(files)}"
        ):
            labels_from_oracle(files)
