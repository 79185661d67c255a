"""The review artifact contract, rule by rule: what a review session may write, and how a
violation is reported (its code, the field, and the offending value quoted — bounded).

Complements tests/unit/test_review.py (one row per violation): here every size cap is pinned at
its boundary (exactly the cap is accepted, one more is refused), and the checks that apply when
the dataclasses are built directly (not only through `parse_review_artifact`) are exercised.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from workflow_bench.review.contract import (
    MAX_ARTIFACT_BYTES,
    MAX_CATEGORY_CHARS,
    MAX_FINDINGS,
    MAX_ID_CHARS,
    MAX_PATH_BYTES,
    MAX_TEXT_BYTES,
    ReviewArtifact,
    ReviewArtifactError,
    ReviewFinding,
    echo,
    json_kind,
    parse_review_artifact,
)

pytestmark = pytest.mark.unit
ECHO_CHARS = 40  # how much of a model-written value an error may quote


def _finding(**overrides: Any) -> dict[str, Any]:
    base = {
        "id": "f1",
        "severity": "high",
        "path": "src/a.py",
        "line": 3,
        "end_line": 4,
        "category": "correctness",
        "scenario": "s",
        "evidence": "e",
        "recommendation": "r",
        "blocking": True,
    }
    return {**base, **overrides}


def _artifact(findings=None, verdict="request_changes", **extra) -> bytes:
    body = {
        "schema_version": 1,
        "verdict": verdict,
        "findings": [_finding()] if findings is None else findings,
    }
    return json.dumps({**body, **extra}).encode()


def _refusal(data: bytes) -> ReviewArtifactError:
    with pytest.raises(ReviewArtifactError) as raised:
        parse_review_artifact(data)
    return raised.value


def _many(n: int) -> list[dict[str, Any]]:
    return [_finding(id=f"f{i}") for i in range(n)]


# ── size caps at their boundary ────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("field", "at_cap", "over", "code"),
    [
        ("id", "i" * MAX_ID_CHARS, "i" * (MAX_ID_CHARS + 1), "finding-id"),
        ("category", "c" * MAX_CATEGORY_CHARS, "c" * (MAX_CATEGORY_CHARS + 1), "finding-category"),
        ("path", "p" * MAX_PATH_BYTES, "p" * (MAX_PATH_BYTES + 1), "finding-path"),
        ("scenario", "s" * MAX_TEXT_BYTES, "s" * (MAX_TEXT_BYTES + 1), "finding-scenario"),
        ("evidence", "é" * (MAX_TEXT_BYTES // 2), "é" * (MAX_TEXT_BYTES // 2) + "x", "finding-evidence"),
        ("recommendation", "r" * MAX_TEXT_BYTES, "r" * (MAX_TEXT_BYTES + 1), "finding-recommendation"),
    ],
)
def test_each_text_cap_accepts_exactly_the_cap_and_refuses_one_more(field, at_cap, over, code):
    (accepted,) = parse_review_artifact(_artifact([_finding(**{field: at_cap})])).findings
    assert accepted.finding_id and getattr(accepted, "finding_id" if field == "id" else field)
    error = _refusal(_artifact([_finding(**{field: over})]))
    assert error.code == code
    unit = "characters" if field in ("id", "category") else "bytes"
    assert f"at most {len(at_cap.encode()) if unit == 'bytes' else len(at_cap)} allowed" in error.message
    assert error.message.startswith(f"findings[0].{field} is ")


def test_the_text_caps_count_bytes_where_they_say_bytes():
    # "é" is two bytes: half the cap in characters is the whole cap in bytes
    error = _refusal(_artifact([_finding(evidence="é" * (MAX_TEXT_BYTES // 2 + 1))]))
    assert error.code == "finding-evidence" and f"is {MAX_TEXT_BYTES + 2} bytes" in error.message


def test_the_findings_cap():
    assert (
        len(parse_review_artifact(_artifact(_many(MAX_FINDINGS), verdict="comment")).findings) == MAX_FINDINGS
    )
    error = _refusal(_artifact(_many(MAX_FINDINGS + 1), verdict="comment"))
    assert error.code == "too-many-findings"
    assert error.message == f"findings has {MAX_FINDINGS + 1} entries, at most {MAX_FINDINGS} allowed"


def test_the_artifact_size_cap():
    padding = " " * (MAX_ARTIFACT_BYTES - len(_artifact()))
    exactly = _artifact()[:-1] + padding.encode() + b"}"
    assert len(exactly) == MAX_ARTIFACT_BYTES and parse_review_artifact(exactly).verdict == "request_changes"
    error = _refusal(exactly + b" ")
    assert error.code == "too-large"
    assert (
        error.message
        == f"review artifact is {MAX_ARTIFACT_BYTES + 1} bytes, at most {MAX_ARTIFACT_BYTES} allowed"
    )


# ── values the contract refuses ────────────────────────────────────────────────────────────


@pytest.mark.parametrize("field", ["id", "path", "category", "scenario", "evidence", "recommendation"])
def test_no_text_field_may_contain_nul(field):
    error = _refusal(_artifact([_finding(**{field: "a\0b"})]))
    assert error.code == f"finding-{field}" and error.message == f"findings[0].{field} must not contain NUL"


@pytest.mark.parametrize("path", [".", "./", "a/..", "/etc/passwd", "../x", "a/../../x"])
def test_a_path_must_name_something_inside_the_repository(path):
    error = _refusal(_artifact([_finding(path=path)]))
    assert error.code == "finding-path"
    assert error.message == f"findings[0].path want a repository-relative path, got {path!r}"


def test_paths_are_normalized_and_categories_case_folded():
    (f,) = parse_review_artifact(
        _artifact([_finding(path=" ./src\\x/../a.py ", category=" Security ")])
    ).findings
    assert (f.path, f.category) == ("src/a.py", "security")


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ({}, "an object"),
        ([], "a list"),
        ("x", "a string"),
        (True, "a boolean"),
        (1, "a number"),
        (1.5, "a number"),
        (None, "null"),
    ],
)
def test_a_wrong_type_is_named_as_json_names_it(value, kind):
    assert json_kind(value) == kind
    if isinstance(value, list):
        return  # a list is the right type for findings
    error = _refusal(json.dumps({"schema_version": 1, "verdict": "comment", "findings": value}).encode())
    assert error.code == "findings-not-a-list" and error.message == f"findings want a list, got {kind}"


def test_a_type_json_cannot_produce_is_named_by_its_python_name():
    assert json_kind(b"x") == "a bytes" and json_kind((1,)) == "a tuple"


def test_a_finding_that_is_not_an_object_is_named_with_its_index():
    error = _refusal(_artifact([_finding(), "x"], verdict="comment"))
    assert (
        error.code == "finding-not-an-object" and error.message == "findings[1] want an object, got a string"
    )


def test_the_key_problem_lists_missing_and_unknown_keys():
    item = {k: v for k, v in _finding(extra=1, other=2).items() if k != "evidence"}
    error = _refusal(_artifact([item]))
    assert error.code == "finding-keys"
    assert error.message.endswith("(missing evidence; unknown 'extra', 'other')")
    two_missing = _refusal(
        _artifact([{k: v for k, v in _finding().items() if k not in ("line", "scenario")}])
    )
    assert two_missing.message.endswith("(missing line, scenario)")
    only_missing = _refusal(_artifact([{k: v for k, v in _finding().items() if k != "line"}]))
    assert only_missing.message.endswith("(missing line)")
    only_unknown = _refusal(_artifact(x=1))
    assert only_unknown.code == "keys"
    assert (
        only_unknown.message
        == "review artifact: want exactly the keys schema_version, verdict, findings (unknown 'x')"
    )


def test_schema_version_and_verdict_refusals_quote_the_value():
    assert _refusal(_artifact(schema_version=2)).message == "schema_version want 1, got 2"
    error = _refusal(_artifact(verdict="LGTM"))
    assert (
        error.code == "verdict"
        and error.message == "verdict want one of approve, comment, request_changes, got 'LGTM'"
    )


def test_severity_refusal_lists_the_severities():
    error = _refusal(_artifact([_finding(severity="blocker")]))
    assert error.message == "findings[0].severity want one of critical, high, medium, low, got 'blocker'"


def test_bytes_that_are_not_text_or_not_json_name_the_artifact():
    assert _refusal(b"\xff").message == "review artifact is not valid UTF-8 (bad byte at offset 0)"
    assert _refusal(b"{").message.startswith("review artifact is not JSON: ")
    assert _refusal(b'{"a": 1, "a": 2}').message == "review artifact: the key 'a' appears twice in one object"
    assert _refusal(b"").message == "review artifact is empty (0 bytes)"
    assert _refusal(b"[]").message == "review artifact must be a JSON object, got a list"


# ── echo: a model-written value is quoted, bounded ────────────────────────────────────────


def test_echo_quotes_short_values_whole_and_cuts_long_ones_to_the_bound():
    exact = "x" * (ECHO_CHARS - 2)  # repr adds two quotes: exactly the bound
    assert echo(exact) == repr(exact)
    cut = echo("y" * 500)
    assert len(cut) == ECHO_CHARS and cut == repr("y" * 500)[: ECHO_CHARS - 3] + "..."
    error = _refusal(_artifact([_finding(line="z" * 500)]))
    assert error.message == f"findings[0].line want a positive integer, got {cut.replace('y', 'z')}"


# ── the same rules when the dataclasses are built directly ────────────────────────────────


def _built(**overrides) -> ReviewFinding:
    base = dict(
        finding_id="f1", severity="high", path="a.py", line=1, end_line=1, category="c",
        scenario="s", evidence="e", recommendation="r", blocking=True,
    )  # fmt: skip
    return ReviewFinding(**{**base, **overrides})


def test_a_directly_built_artifact_is_checked_like_a_parsed_one():
    with pytest.raises(ReviewArtifactError) as raised:
        ReviewArtifact(verdict="yes", findings=())
    assert raised.value.code == "verdict"
    assert raised.value.message == "verdict want one of approve, comment, request_changes, got 'yes'"
    for findings in ([_built()], (_built(), "not a finding")):
        with pytest.raises(ReviewArtifactError) as raised:
            ReviewArtifact(verdict="comment", findings=findings)  # type: ignore[arg-type]
        assert raised.value.code == "findings-not-a-list"
        assert raised.value.message == "findings want a tuple of ReviewFinding"
    many = tuple(_built(finding_id=f"f{i}") for i in range(MAX_FINDINGS + 1))
    with pytest.raises(ReviewArtifactError) as raised:
        ReviewArtifact(verdict="comment", findings=many)
    assert raised.value.code == "too-many-findings"
    assert raised.value.message == f"findings has {MAX_FINDINGS + 1} entries, at most {MAX_FINDINGS} allowed"
    assert len(ReviewArtifact(verdict="comment", findings=many[:MAX_FINDINGS]).findings) == MAX_FINDINGS
    with pytest.raises(ReviewArtifactError) as raised:
        ReviewArtifact(verdict="comment", findings=(_built(), _built()))
    assert raised.value.message.startswith("finding id 'f1' is used by findings[0] and findings[1]")
    with pytest.raises(
        ReviewArtifactError, match=r"^verdict request_changes needs at least one finding with blocking: true$"
    ):
        ReviewArtifact(verdict="request_changes", findings=(_built(blocking=False),))
    with pytest.raises(ReviewArtifactError) as raised:
        _built(finding_id="i" * (MAX_ID_CHARS + 1))
    assert raised.value.code == "finding-id"
    assert _built(finding_id="i" * MAX_ID_CHARS).finding_id == "i" * MAX_ID_CHARS


def test_an_unknown_error_code_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown review artifact error code 'nope'"):
        ReviewArtifactError("nope", "m")


def test_every_contract_exception_reads_as_its_message():
    # Should one ever escape (a traceback, a log line), it must say what was wrong.
    from workflow_bench.review.contract import FieldError, _Reject

    assert str(FieldError("m1")) == "m1" and str(_Reject("empty", "m2")) == "m2"
    assert str(ReviewArtifactError("empty", "m3")) == "m3"
