"""The review artifact contract (reference harness §4.3): what a review session must write.
Over 400 lines on purpose: one contract, one parser; every rule sits beside the error code it raises.

Owns ``parse_review_artifact``, the frozen values it returns (``ReviewArtifact``,
``ReviewFinding``), the limits, where the artifact lives, and ``REVIEW_OUTPUT_CONTRACT``, the
prompt text that states the contract to the model (built from the same constants the parser
checks, so the two cannot drift). Also the field checks the hidden labels share
(``review.labels``): a path, a line or a severity means the same thing on both sides.

The contract is strict on purpose: an artifact is either exactly the shape asked for, or it is
invalid evidence with a typed ``ReviewArtifactError`` whose ``code`` names the one violation.
Codes and messages stay distinct: in the reference, folding "never written" into "not valid
UTF-8 JSON" made a sandbox that could not create the file read for 15 runs as an encoding fault.

Must never: read the filesystem (callers hand in the bytes, or ``None`` when no file was
written), import other workflow_bench modules, or quote more than a short prefix of a
model-written value in an error message. Callers: ``review.score`` (the public facade), ``review.labels``.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, TypeAlias, get_args

Severity: TypeAlias = Literal["critical", "high", "medium", "low"]
ReviewVerdict: TypeAlias = Literal["approve", "comment", "request_changes"]
SEVERITIES: tuple[str, ...] = get_args(Severity)
VERDICTS: tuple[str, ...] = get_args(ReviewVerdict)
BLOCKING_SEVERITIES = frozenset({"critical", "high"})
SUGGESTED_CATEGORIES = ("correctness", "security", "compatibility", "performance", "tests", "other")

SCHEMA_VERSION = 1
# Reference limits (§4.3): a review is a handful of findings; past these it is a runaway model.
MAX_ARTIFACT_BYTES = 256 * 1024
MAX_FINDINGS = 100
MAX_TEXT_BYTES = 4 * 1024  # scenario, evidence, recommendation, each
MAX_ID_CHARS = 128
MAX_CATEGORY_CHARS = 128
MAX_PATH_BYTES = 1024  # far above any path in a reviewed diff; keeps messages and rows bounded
_ECHO_CHARS = 40  # how much of a model-written value an error message may quote

# Where the artifact lives. The directory is writable and outside the read-only workspace; the
# env var names the file for the task's `verify` command. Keep in sync with tasks.review.yaml
# (tests/unit/test_no_drift.py checks).
REVIEW_OUTPUT_DIR = "/review-output"
REVIEW_OUTPUT_FILE = "review-output.json"
REVIEW_OUTPUT_PATH = f"{REVIEW_OUTPUT_DIR}/{REVIEW_OUTPUT_FILE}"
REVIEW_OUTPUT_ENV_VAR = "WORKFLOW_BENCH_REVIEW_OUTPUT"
REVIEW_LABELS_TARGET = "review-labels.json"  # the oracle target every review task declares

ARTIFACT_KEYS = ("schema_version", "verdict", "findings")
FINDING_KEYS = (
    "id",
    "severity",
    "path",
    "line",
    "end_line",
    "category",
    "scenario",
    "evidence",
    "recommendation",
    "blocking",
)

# No braces on purpose: arm prompts are str.format templates ("{task}"), and a literal JSON
# example here would break the formatting of every review prompt that includes it.
REVIEW_OUTPUT_CONTRACT = (
    f"Write the review as one JSON file at {REVIEW_OUTPUT_PATH} (outside the repository) and edit "
    "no file in the repository. The file holds exactly one JSON object, no Markdown, with exactly "
    f'the keys "schema_version" (the number {SCHEMA_VERSION}), "verdict" (one of '
    + ", ".join(VERDICTS)
    + f') and "findings" (a list of at most {MAX_FINDINGS} findings). Each finding is an object '
    'with exactly the keys "id" (unique string), "severity" (one of '
    + ", ".join(SEVERITIES)
    + '), "path" (repository-relative), "line" and "end_line" (1-based lines of the changed file, '
    'end_line >= line), "category" (one of '
    + ", ".join(SUGGESTED_CATEGORIES)
    + '), "scenario" (the input or situation that fails), "evidence" (the code that shows it), '
    '"recommendation" (the fix) and "blocking" (true if the change must not merge as it is). '
    '"approve" means nothing actionable and needs an empty findings list; "request_changes" needs '
    'at least one blocking finding; otherwise use "comment". Report only actionable defects '
    "introduced by the local diff."
)


# ── errors ─────────────────────────────────────────────────────────────────


# The closed vocabulary of artifact violations, one code per check, in the order they are checked.
# A row's error detail carries the message; tests pin that no two checks share a message.
# "unreadable" is the caller's: whoever reads the file (never following a symlink, regular files
# only, at most MAX_ARTIFACT_BYTES + 1 bytes) raises it for what it cannot read; every other code
# comes from parse_review_artifact.
ARTIFACT_ERROR_CODES = (
    "never-written",
    "unreadable",
    "empty",
    "too-large",
    "not-utf8",
    "not-json",
    "duplicate-key",
    "non-finite-number",
    "not-an-object",
    "keys",
    "schema-version",
    "verdict",
    "findings-not-a-list",
    "too-many-findings",
    "finding-not-an-object",
    "finding-keys",
    *(f"finding-{key.replace('_', '-')}" for key in FINDING_KEYS),
    "duplicate-finding-id",
    "approve-with-findings",
    "request-changes-without-blocker",
)


class ReviewArtifactError(ValueError):
    """The review artifact breaks the contract; ``code`` (one of ``ARTIFACT_ERROR_CODES``)
    names the violation and ``message`` says where and what, e.g. ``findings[2].line ...``."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ARTIFACT_ERROR_CODES:
            raise ValueError(f"unknown review artifact error code {code!r}; known: {ARTIFACT_ERROR_CODES}")
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self):
        return (type(self), (self.code, self.message))


class FieldError(Exception):
    """One field's violation, before the caller knows which error type and location to report.

    The checks below raise it; ``review.labels`` shares them (not part of the public API).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def echo(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _ECHO_CHARS else text[: _ECHO_CHARS - 3] + "..."


def json_kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number"}
    names.update({float: "a number", type(None): "null"})
    return names.get(type(value), f"a {type(value).__name__}")


# ── field checks, shared by findings and labels ───────────────────────────


def check_text(value: object, *, max_bytes: int | None = None, max_chars: int | None = None) -> str:
    if not isinstance(value, str):
        raise FieldError(f"want a nonblank string, got {json_kind(value)}")
    if not value.strip():
        raise FieldError("must not be blank")
    if "\0" in value:
        raise FieldError("must not contain NUL")
    if max_bytes is not None and len(value.encode()) > max_bytes:
        raise FieldError(f"is {len(value.encode())} bytes, at most {max_bytes} allowed")
    if max_chars is not None and len(value) > max_chars:
        raise FieldError(f"is {len(value)} characters, at most {max_chars} allowed")
    return value


def check_line(value: object) -> int:
    # bool is an int subclass; `true` as a line number is a typo, never line 1.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FieldError(f"want a positive integer, got {echo(value)}")
    return value


def check_severity(value: object) -> str:
    if value not in SEVERITIES:
        raise FieldError(f"want one of {', '.join(SEVERITIES)}, got {echo(value)}")
    return str(value)


def check_category(value: object) -> str:
    return check_text(value, max_chars=MAX_CATEGORY_CHARS).strip().casefold()


def check_path(value: object) -> str:
    """A repository-relative POSIX path with ``./``, ``a/../`` and backslashes resolved.

    Findings and labels are compared on this form only; an absolute path, ``.`` or one that
    leaves the repository is a violation.
    """
    text = check_text(value, max_bytes=MAX_PATH_BYTES).strip().replace("\\", "/")
    normalized = posixpath.normpath(text)
    if normalized.startswith("/") or normalized == "." or normalized.split("/")[0] == "..":
        raise FieldError(f"want a repository-relative path, got {echo(value)}")
    return normalized


def key_problem(obj: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    missing = [k for k in keys if k not in obj]
    unknown = sorted(str(k) for k in obj if k not in keys)
    if not missing and not unknown:
        return None
    detail = "; ".join(
        part
        for part in (
            f"missing {', '.join(missing)}" if missing else "",
            f"unknown {', '.join(echo(k) for k in unknown)}" if unknown else "",
        )
        if part
    )
    return f"want exactly the keys {', '.join(keys)} ({detail})"


# ── values ─────────────────────────────────────────────────────────────────


def _field(name: str, check: Callable[[Any], Any], value: object) -> Any:
    """Run one field check; report a violation as that field's artifact error."""
    try:
        return check(value)
    except FieldError as err:
        code = f"finding-{name.replace('_', '-')}"
        raise ReviewArtifactError(code, f"{name} {err.message}") from None


@dataclass(frozen=True, slots=True)
class ReviewFinding:
    """One finding as the reviewer reported it. ``path`` is normalized, ``category`` case-folded."""

    finding_id: str
    severity: Severity
    path: str
    line: int
    end_line: int
    category: str
    scenario: str
    evidence: str
    recommendation: str
    blocking: bool

    def __post_init__(self) -> None:
        _field("id", lambda v: check_text(v, max_chars=MAX_ID_CHARS), self.finding_id)
        _field("severity", check_severity, self.severity)
        object.__setattr__(self, "path", _field("path", check_path, self.path))
        _field("line", check_line, self.line)
        _field("end_line", check_line, self.end_line)
        if self.end_line < self.line:
            raise ReviewArtifactError(
                "finding-end-line", f"end_line {self.end_line} is before line {self.line}"
            )
        object.__setattr__(self, "category", _field("category", check_category, self.category))
        for name in ("scenario", "evidence", "recommendation"):
            _field(name, lambda v: check_text(v, max_bytes=MAX_TEXT_BYTES), getattr(self, name))
        if not isinstance(self.blocking, bool):
            raise ReviewArtifactError(
                "finding-blocking", f"blocking want true or false, got {echo(self.blocking)}"
            )


@dataclass(frozen=True, slots=True)
class ReviewArtifact:
    """A review that satisfies the contract: a verdict and its findings, in the order written."""

    verdict: ReviewVerdict
    findings: tuple[ReviewFinding, ...]

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ReviewArtifactError(
                "verdict", f"verdict want one of {', '.join(VERDICTS)}, got {echo(self.verdict)}"
            )
        if not isinstance(self.findings, tuple) or not all(
            isinstance(f, ReviewFinding) for f in self.findings
        ):
            raise ReviewArtifactError("findings-not-a-list", "findings want a tuple of ReviewFinding")
        if len(self.findings) > MAX_FINDINGS:
            raise ReviewArtifactError(
                "too-many-findings",
                f"findings has {len(self.findings)} entries, at most {MAX_FINDINGS} allowed",
            )
        first: dict[str, int] = {}
        for index, finding in enumerate(self.findings):
            if finding.finding_id in first:
                raise ReviewArtifactError(
                    "duplicate-finding-id",
                    f"finding id {echo(finding.finding_id)} is used by "
                    f"findings[{first[finding.finding_id]}] and findings[{index}]; ids must be unique",
                )
            first[finding.finding_id] = index
        if self.verdict == "approve" and self.findings:
            raise ReviewArtifactError(
                "approve-with-findings",
                f"verdict approve means nothing actionable but the review has {len(self.findings)} "
                "finding(s); use comment or request_changes, or drop them",
            )
        if self.verdict == "request_changes" and not any(f.blocking for f in self.findings):
            raise ReviewArtifactError(
                "request-changes-without-blocker",
                "verdict request_changes needs at least one finding with blocking: true",
            )


# ── parsing ────────────────────────────────────────────────────────────────


class _Reject(Exception):
    """Raised from inside json.loads hooks; kept apart from json's own ValueError."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            # json.loads would keep the last one silently: two verdicts must not pick themselves.
            raise _Reject("duplicate-key", f"the key {echo(key)} appears twice in one object")
        obj[key] = value
    return obj


def _finite(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _Reject("non-finite-number", f"the number {echo(token)} is not finite")
    return value


def _constant(token: str) -> NoReturn:
    raise _Reject("non-finite-number", f"{token} is not a JSON number")


def load_strict_json(data: bytes, what: str, fail: Callable[[str, str], NoReturn]) -> Any:
    """Decode UTF-8 JSON strictly (no duplicate keys, no NaN/Infinity); ``fail(code, message)``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        fail("not-utf8", f"{what} is not valid UTF-8 (bad byte at offset {err.start})")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_float=_finite, parse_constant=_constant)
    except _Reject as err:
        fail(err.code, f"{what}: {err.message}")
    except json.JSONDecodeError as err:
        fail("not-json", f"{what} is not JSON: {err.msg} at line {err.lineno} column {err.colno}")
    except (ValueError, RecursionError) as err:  # e.g. an over-long integer or absurd nesting
        fail("not-json", f"{what} is not JSON: {type(err).__name__}")


def _artifact_fail(code: str, message: str) -> NoReturn:
    raise ReviewArtifactError(code, message)


def parse_review_artifact(data: bytes | None) -> ReviewArtifact:
    """Validate the bytes a review session wrote; ``None`` means no file was ever written.

    Raises:
        ReviewArtifactError: the first violation found, with its ``code`` (see the class).
    """
    if data is None:
        _artifact_fail("never-written", f"review artifact was never written (no {REVIEW_OUTPUT_FILE})")
    if not data:
        _artifact_fail("empty", "review artifact is empty (0 bytes)")
    if len(data) > MAX_ARTIFACT_BYTES:
        _artifact_fail(
            "too-large", f"review artifact is {len(data)} bytes, at most {MAX_ARTIFACT_BYTES} allowed"
        )
    raw = load_strict_json(data, "review artifact", _artifact_fail)
    if not isinstance(raw, dict):
        _artifact_fail("not-an-object", f"review artifact must be a JSON object, got {json_kind(raw)}")
    if problem := key_problem(raw, ARTIFACT_KEYS):
        _artifact_fail("keys", f"review artifact: {problem}")
    version = raw["schema_version"]
    if isinstance(version, bool) or version != SCHEMA_VERSION or not isinstance(version, int):
        _artifact_fail("schema-version", f"schema_version want {SCHEMA_VERSION}, got {echo(version)}")
    if raw["verdict"] not in VERDICTS:
        _artifact_fail("verdict", f"verdict want one of {', '.join(VERDICTS)}, got {echo(raw['verdict'])}")
    items = raw["findings"]
    if not isinstance(items, list):
        _artifact_fail("findings-not-a-list", f"findings want a list, got {json_kind(items)}")
    if len(items) > MAX_FINDINGS:
        _artifact_fail(
            "too-many-findings", f"findings has {len(items)} entries, at most {MAX_FINDINGS} allowed"
        )
    findings = tuple(_finding(item, index) for index, item in enumerate(items))
    return ReviewArtifact(verdict=raw["verdict"], findings=findings)


def _finding(item: object, index: int) -> ReviewFinding:
    where = f"findings[{index}]"
    if not isinstance(item, dict):
        _artifact_fail("finding-not-an-object", f"{where} want an object, got {json_kind(item)}")
    if problem := key_problem(item, FINDING_KEYS):
        _artifact_fail("finding-keys", f"{where}: {problem}")
    try:
        return ReviewFinding(
            finding_id=item["id"],
            severity=item["severity"],
            path=item["path"],
            line=item["line"],
            end_line=item["end_line"],
            category=item["category"],
            scenario=item["scenario"],
            evidence=item["evidence"],
            recommendation=item["recommendation"],
            blocking=item["blocking"],
        )
    except ReviewArtifactError as err:
        raise ReviewArtifactError(err.code, f"{where}.{err.message}") from None
