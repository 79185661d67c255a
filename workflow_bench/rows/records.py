"""The row's building blocks: the strict base, ``Part`` and the small records row fields hold.

``rows.model`` assembles ``Row`` from parts; this module holds what those parts are made of (the
nested records a field's value is, the ``Strict`` base, ``Part`` and ``row_field``), so each record
is declared once and the part modules stay a table of fields. Must never: import from cells,
reports or anything above.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

Sealing = Literal["sealed", "unsealed", "unknown"]
"""A run's sealing (``oracle_sealed``): the words the expected-test lock and the docs use too."""

# A measured quantity that is an integer or a float as produced (``round`` keeps a sum of ints an
# int): the value is stored as given, so a row re-serializes to the same bytes.
Number = Annotated[int | float, Field(union_mode="left_to_right")]


class Strict(BaseModel):
    """Frozen, no extra keys, no coercion (``True`` is not a count, ``"3"`` is not a number)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)


class Usage(Strict):
    """The four token counts, each ``None`` when unknown.

    Keep in sync with ``usage.USAGE_FIELDS`` (tests/unit/test_no_drift.py checks).
    """

    input_tokens: int | None
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None
    output_tokens: int | None


class TranscriptArtifact(Strict):
    """One redacted session stream kept beside the row."""

    path: str
    sha256: str
    bytes: int
    source: str


class ResourceLimits(Strict):
    """The bounds a cell ran under (``sandbox.CellResources.enforced``)."""

    memory_mib: int | None
    pids: int | None
    disk_mib: int | None
    cpus: Number | None
    files: int | None
    nofile_per_process: int | None
    msgqueue_bytes: int | None
    ptys: int | None
    cell_uid: int | None
    namespace_limits: dict[str, int] | None
    seccomp_denied: list[str] | None
    sampled: list[str]


class RuntimeRecord(Strict):
    """One interpreter a task named (``runtimes.Provisioned.record``)."""

    name: str
    version: str
    digest: str


class Part(Strict):
    """One writer's fields of a row; ``SECTION`` heads it in docs/results-schema.md."""

    SECTION: ClassVar[str] = ""


def row_field(meaning: str, **options: Any) -> Any:
    """A row field: its meaning (documentation and JSON Schema) and, for most, ``None`` unless measured."""
    return Field(description=meaning, **options)


class JudgedTest(Strict):
    """One test a judge reported (``judging.verdict.TestResult``), as a row keeps it."""

    id: str = Field(description="the normalized test id")
    outcome: Literal["passed", "failed", "error", "skipped"]
    message: str | None = Field(
        description="the first 300 characters of a failure's message, redacted; always null for the oracle"
    )


class JudgedTests(Strict):
    """``verify_tests``/``oracle_tests``: a judge's tests, failures first, at most 200."""

    tests: list[JudgedTest]
    omitted: int = Field(description="how many more tests were reported than are listed")


class RegradeBefore(Strict):
    """``regrade_before``: the source row's verdict and the digests it was judged under."""

    resolved: bool | None
    oracle_passed: bool | None
    authored_tests_passed: bool | None
    error_kind: str | None
    oracle_digest: str | None
    verify_digest: str | None
    expected_tests_digest: str | None
