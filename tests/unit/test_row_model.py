"""The row model: one declaration per field, strict values, generated docs, and one migration."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Optional

import pytest

from tests.builders import row
from workflow_bench.evolve.evidence import _KEEP as EVOLVE_KEEP
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.promotion.policy import PROMOTION_METRICS
from workflow_bench.reports.aggregate import MEDIAN_FIELDS, REVIEW_METRICS
from workflow_bench.review.score import METRIC_NAMES, ReviewMetrics
from workflow_bench.rows.docs import render_json_schema, render_markdown
from workflow_bench.rows.migrate import (
    ABSENT_IN_OLDER_ROWS,
    RowReadError,
    read_rows,
    row_from_line,
    row_from_stored,
    stored_line,
)
from workflow_bench.rows.model import (
    PARTS,
    SCHEMA_VERSION,
    Resolution,
    Row,
    Usage,
    assemble,
    stored_names,
)
from workflow_bench.usage import USAGE_FIELDS

pytestmark = pytest.mark.unit
DOCS = Path(__file__).resolve().parents[2] / "docs"
PACKAGE = Path(__file__).resolve().parents[2] / "workflow_bench"


def test_generated_docs_are_current():
    assert (DOCS / "results-schema.md").read_text() == render_markdown(), (
        "run: python -m workflow_bench.rows markdown > docs/results-schema.md"
    )
    assert (DOCS / "results-schema.json").read_text() == render_json_schema(), (
        "run: python -m workflow_bench.rows json-schema > docs/results-schema.json"
    )


def test_the_json_schema_describes_every_stored_field_and_forbids_others():
    schema = json.loads(render_json_schema())
    assert set(schema["properties"]) == set(stored_names())
    assert schema["additionalProperties"] is False
    assert all(schema["properties"][name].get("description") for name in stored_names())


def test_each_field_is_declared_once_in_exactly_one_part_with_a_meaning():
    declared = [name for part in PARTS for name in part.model_fields]
    assert len(declared) == len(set(declared))
    assert set(declared) == set(Row.model_fields)
    for part in PARTS:
        assert part.SECTION and part.__doc__
        for name, info in part.model_fields.items():
            assert info.description and "\n" not in info.description, name


def test_nested_records_match_what_they_flatten():
    assert tuple(Usage.model_fields) == USAGE_FIELDS
    assert Row.model_fields["review_score"].annotation == ReviewMetrics | None
    assert tuple(ReviewMetrics.model_fields) == METRIC_NAMES
    assert [
        n.removeprefix("review_") for n in Row.model_fields if n.removeprefix("review_") in METRIC_NAMES
    ] == [*METRIC_NAMES]


def test_the_flattened_review_fields_are_generated_from_the_metrics():
    """Each metric is declared once (``ReviewMetrics``): its row field takes its type and meaning."""
    for name, info in ReviewMetrics.model_fields.items():
        field = Row.model_fields[f"review_{name}"]
        assert field.annotation == Optional[info.annotation]  # noqa: UP045
        assert field.default is None and info.description in (field.description or "")
    source = (Path(__file__).parents[2] / "workflow_bench" / "rows" / "model.py").read_text()
    assert not [m for m in METRIC_NAMES if f"review_{m}:" in source], "a metric declared again in the row"
    scored = row(review_weighted_f1=0.5, review_verdict_correct=True)
    assert scored.review_metric("weighted_f1") == 0.5 and scored.review_metric("verdict_correct") is True
    with pytest.raises(KeyError, match="weighted_f2"):
        scored.review_metric("weighted_f2")


def test_fields_read_by_name_are_row_fields():
    """Reports, promotion and evolve read a few fields by name: each must exist (a rename fails here)."""
    by_name = {*MEDIAN_FIELDS, *PROMOTION_METRICS, *(f"review_{m}" for m in REVIEW_METRICS)}
    assert by_name <= set(Row.model_fields)
    assert set(EVOLVE_KEEP) <= set(stored_names())


def test_a_typo_or_a_wrong_type_fails_where_the_row_is_built():
    with pytest.raises(ValueError, match="cost_usdd"):
        row(cost_usdd=1.0)
    with pytest.raises(ValueError, match="num_turns"):
        row(num_turns=True)  # a flag is not a count
    with pytest.raises(ValueError, match="input_tokens"):
        row(input_tokens="100")
    with pytest.raises(ValueError, match="error_kind"):
        row(error_kind="infra-eror")
    with pytest.raises(ValueError, match="frozen"):
        row().ok = False  # type: ignore[misc]
    assert row(error_kind="infra-error").error_kind is ErrorKind.INFRA_ERROR


def test_a_row_stores_and_reads_back_as_the_same_row():
    original = row(cost_usd=0, duration_s=1.5, usage_wire={**dict.fromkeys(USAGE_FIELDS, 1)})
    line = stored_line(original)
    stored = json.loads(line)
    assert stored["class"] == "bugfix" and "task_class" not in stored  # the stored name
    assert stored["cost_usd"] == 0 and type(stored["cost_usd"]) is int  # an int stays an int
    assert list(stored) == sorted(stored)
    assert row_from_line(line, where="x") == original


def test_assemble_takes_each_part_once():
    verdict = Resolution(ok=False, resolved=False, error_kind=ErrorKind.INFRA_ERROR)
    with pytest.raises(ValueError, match="set twice"):
        assemble(verdict, verdict)


def _stored(**changes) -> dict:
    return {**row().to_json_obj(), **changes}


def test_a_row_of_this_version_must_carry_every_field():
    incomplete = _stored()
    del incomplete["diff_files"]
    lacks = rf"results.jsonl: line 3: a schema {SCHEMA_VERSION} row lacks diff_files"
    with pytest.raises(RowReadError, match=lacks):
        row_from_stored(incomplete, where="results.jsonl: line 3")


def test_a_schema_5_row_reads_with_its_per_test_outcomes():
    # Schema 5 (issue 20) rows carry every field of today's model; reading them keeps each value.
    tests = {"tests": [{"id": "t.a", "outcome": "failed", "message": None}], "omitted": 0}
    stored = _stored(schema_version=5, oracle_tests=tests, oracle_tests_run=1, expected_tests_digest="d" * 64)
    migrated = row_from_stored(stored, where="x")
    assert migrated.schema_version == SCHEMA_VERSION and migrated.expected_tests_digest == "d" * 64
    assert migrated.oracle_tests is not None and migrated.oracle_tests.tests[0].outcome == "failed"
    older = {k: v for k, v in stored.items() if not k.endswith(("_tests", "_tests_skipped", "_digest"))}
    assert row_from_stored({**older, "schema_version": 4}, where="x").oracle_tests is None
    with pytest.raises(RowReadError, match="oracle_tests"):
        row_from_stored(
            _stored(oracle_tests={"tests": [{"id": "t", "outcome": "maybe"}], "omitted": 0}), where="x"
        )


def test_an_older_row_migrates_with_unmeasured_fields_unknown():
    old = {
        k: v for k, v in _stored(schema_version=4).items() if k not in ("usage_wire", "reused", "cell_wall_s")
    }
    migrated = row_from_stored(old, where="x")
    assert migrated.schema_version == SCHEMA_VERSION
    assert migrated.usage_wire is None and migrated.cell_wall_s is None  # not measured then: unknown
    assert migrated.reused is ABSENT_IN_OLDER_ROWS["reused"] is False  # before reuse, every row was paid
    assert migrated.cost_usd == 1.0  # what it did record is kept
    # A field the model does not know is refused even in an old row: nothing is guessed away.
    with pytest.raises(RowReadError, match="made_up"):
        row_from_stored({**old, "made_up": 1}, where="x")


@pytest.mark.parametrize(("old", "word"), [(True, "sealed"), (False, "unsealed"), (None, "unknown")])
def test_sealing_is_told_in_the_locks_words_and_older_rows_read_as_such(old, word):
    # Schema 8-9 stored true/false/null; 10 says sealed/unsealed/unknown (the lock's summary words).
    assert row_from_stored(_stored(schema_version=9, oracle_sealed=old), where="x").oracle_sealed == word
    before_8 = {k: v for k, v in _stored(schema_version=7).items() if k != "oracle_sealed"}
    assert row_from_stored(before_8, where="x").oracle_sealed == "unknown"  # not measured then
    # Today's rows carry the word: a bool, or a word from nowhere, is refused naming the field.
    for wrong in (old, "maybe"):
        with pytest.raises(RowReadError, match="oracle_sealed"):
            row_from_stored(_stored(oracle_sealed=wrong), where="x")


def test_an_older_rows_resource_limits_read_with_the_later_bounds_unknown():
    # Before issue 23 a row held four bounds; the kernel budgets added since were not enforced then.
    older = _stored(
        schema_version=5, resource_limits={"memory_mib": 4096, "pids": 1024, "disk_mib": 16, "sampled": []}
    )
    limits = row_from_stored(older, where="x").resource_limits
    assert limits is not None and (limits.memory_mib, limits.sampled) == (4096, [])
    assert (limits.cpus, limits.files, limits.ptys, limits.cell_uid, limits.seccomp_denied) == (None,) * 5
    # Today's rows carry every bound: one missing is refused, not guessed.
    today = _stored(resource_limits={"memory_mib": 4096, "pids": 1024, "disk_mib": 16, "sampled": []})
    with pytest.raises(RowReadError, match=r"resource_limits\.cpus"):
        row_from_stored(today, where="x")


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ([1, 2], "want a JSON object"),
        (_stored(schema_version=SCHEMA_VERSION + 1), f"schema_version {SCHEMA_VERSION + 1} is not one"),
        ({k: v for k, v in _stored().items() if k != "schema_version"}, "schema_version None"),
        (_stored(error_kind="from-the-future"), "error_kind"),
    ],
)
def test_what_no_version_reads_is_refused_naming_the_line(stored, message):
    with pytest.raises(RowReadError, match=message) as raised:
        read_rows(json.dumps(stored) + "\n", source="out/results.jsonl")
    assert str(raised.value).startswith("out/results.jsonl: line 1: ")


def test_a_line_that_is_not_json_is_refused_too():
    with pytest.raises(RowReadError, match="line 2: not JSON"):
        read_rows(stored_line(row()) + "{torn", source="r")


# ── no literal row-key lookups outside the row model ─────────────────────────────────────────

# Variable names the code gives rows, and the attribute spelling of a cell's row.
_ROW_SUBJECT = re.compile(r"^(row|rows|r|stored|prior|copied|fallback|rows\[.*\]|\w+\.row)$")
# The row model's own serializers read stored JSON by name; nothing else does.
_ALLOWED = ("rows/",)


def literal_row_lookups(path: str, text: str) -> list[str]:
    """``X["field"]`` / ``X.get("field")`` on a row-named subject, for a row field name."""
    fields = set(stored_names())
    found = []
    for node in ast.walk(ast.parse(text)):
        key = subject = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key, subject = node.slice.value, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            key, subject = node.args[0].value, node.func.value
        if key in fields and _ROW_SUBJECT.match(ast.unparse(subject)):
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_literal_row_key_lookups_outside_the_row_model():
    found = [
        hit
        for path in PACKAGE.rglob("*.py")
        if "corpus/target" not in path.as_posix()
        and not path.relative_to(PACKAGE).as_posix().startswith(_ALLOWED)
        for hit in literal_row_lookups(path.relative_to(PACKAGE).as_posix(), path.read_text())
    ]
    assert found == []
    # Negative control: the scan sees the spellings the typed row replaced.
    assert len(literal_row_lookups("x.py", 'a = row["error_kind"]; b = result.row.get("cost_usd")\n')) == 2
    assert literal_row_lookups("x.py", 'a = decision["task"]\n') == []  # not a row
