"""Hidden review labels (reference harness §4.3): the human-written findings a review is scored on.

Owns the label file format, exactly ``{schema_version: 1, findings: [{id, severity, path,
line_start, line_end, category}]}`` (no evidence, scenario or blocking flag: a label says *where*
and *how bad*, never how to phrase it), ``Label``, ``parse_labels`` and ``labels_from_oracle``,
which picks the labels out of a task's captured oracle files. An empty ``findings`` list is a
clean control.

Labels are harness data, staged only after the model exited; a malformed file is a corpus bug,
reported as ``ReviewLabelsError`` and never blamed on the agent. Field rules are shared with the
artifact contract (``review.contract``), so a path or a line means the same on both sides.

Must never: read files or import workflow_bench modules other than ``review.contract``.
Callers: ``review.score`` (the public facade), tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn, Protocol

from .contract import (
    BLOCKING_SEVERITIES,
    MAX_ID_CHARS,
    REVIEW_LABELS_TARGET,
    SCHEMA_VERSION,
    FieldError,
    Severity,
    check_category,
    check_line,
    check_path,
    check_severity,
    check_text,
    echo,
    json_kind,
    key_problem,
    load_strict_json,
)

LABEL_FILE_KEYS = ("schema_version", "findings")
LABEL_KEYS = ("id", "severity", "path", "line_start", "line_end", "category")


class ReviewLabelsError(ValueError):
    """A hidden label file is malformed: a corpus bug, never the agent's fault."""


@dataclass(frozen=True, slots=True)
class Label:
    """One hidden, human-written expected finding. ``path`` normalized, ``category`` case-folded."""

    label_id: str
    severity: Severity
    path: str
    line_start: int
    line_end: int
    category: str

    def __post_init__(self) -> None:
        try:
            check_text(self.label_id, max_chars=MAX_ID_CHARS)
            check_severity(self.severity)
            object.__setattr__(self, "path", check_path(self.path))
            check_line(self.line_start)
            check_line(self.line_end)
            object.__setattr__(self, "category", check_category(self.category))
        except FieldError as err:
            raise ReviewLabelsError(f"label {echo(self.label_id)}: {err.message}") from None
        if self.line_end < self.line_start:
            raise ReviewLabelsError(f"label {self.label_id!r}: line_end is before line_start")

    @property
    def is_blocking(self) -> bool:
        return self.severity in BLOCKING_SEVERITIES


def _fail(message: str) -> NoReturn:
    raise ReviewLabelsError(message)


def _json_fail(_code: str, message: str) -> NoReturn:
    raise ReviewLabelsError(message)


def parse_labels(data: bytes) -> tuple[Label, ...]:
    """Validate a hidden label file: exactly ``{schema_version: 1, findings: [...]}``.

    An empty ``findings`` list is a clean control. Raises ``ReviewLabelsError``.
    """
    raw = load_strict_json(data, "review labels", _json_fail)
    if not isinstance(raw, dict):
        _fail(f"review labels must be a JSON object, got {json_kind(raw)}")
    if problem := key_problem(raw, LABEL_FILE_KEYS):
        _fail(f"review labels: {problem}")
    version = raw["schema_version"]
    if isinstance(version, bool) or version != SCHEMA_VERSION or not isinstance(version, int):
        _fail(f"review labels schema_version want {SCHEMA_VERSION}, got {echo(version)}")
    if not isinstance(raw["findings"], list):
        _fail(f"review labels findings want a list, got {json_kind(raw['findings'])}")
    labels = []
    for index, item in enumerate(raw["findings"]):
        if not isinstance(item, dict):
            _fail(f"review labels findings[{index}] want an object, got {json_kind(item)}")
        if problem := key_problem(item, LABEL_KEYS):
            _fail(f"review labels findings[{index}]: {problem}")
        labels.append(
            Label(
                label_id=item["id"],
                severity=item["severity"],
                path=item["path"],
                line_start=item["line_start"],
                line_end=item["line_end"],
                category=item["category"],
            )
        )
    ids = [label.label_id for label in labels]
    if len(set(ids)) != len(ids):
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        _fail(f"review labels repeat the id(s) {', '.join(map(repr, duplicates))}")
    return tuple(labels)


class OracleFileLike(Protocol):
    """What a captured oracle file offers (``oracles.OracleFile``), without importing it."""

    @property
    def target(self) -> str: ...

    @property
    def data(self) -> bytes: ...


def labels_from_oracle(files: Iterable[OracleFileLike]) -> tuple[Label, ...]:
    """The hidden labels among a review task's captured oracle files (target ``review-labels.json``)."""
    matches = [f for f in files if f.target == REVIEW_LABELS_TARGET]
    if len(matches) != 1:
        raise ReviewLabelsError(
            f"a review task's oracle needs exactly one file with target {REVIEW_LABELS_TARGET}, "
            f"found {len(matches)}"
        )
    return parse_labels(matches[0].data)
