"""Redaction: known secrets, token shapes, credential keys — and what it must leave alone."""

from __future__ import annotations

import json

import pytest

from workflow_bench.redaction import REDACTED, printable, redact_text, redact_value

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "text",
    [
        "key sk-ant-api03-abcdefghijklmnop",
        "minted sk-scripted-0123456789abcdef0123456789abcdef",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123",
        "Authorization: Bearer abc.def",
        "url https://user:hunter2@example.com/x",
    ],
)
def test_token_shapes_are_redacted(text):
    redacted = redact_text(text)
    assert REDACTED in redacted
    assert "abcdefghijklmnop" not in redacted and "hunter2" not in redacted and "abc.def" not in redacted


def test_explicit_secrets_are_redacted_longest_first():
    assert redact_text("a=plainsecret b=plainsecret2", ["plainsecret", "plainsecret2"]) == (
        f"a={REDACTED} b={REDACTED}"
    )


def test_ordinary_text_is_left_alone():
    text = "input_tokens=12 output_tokens=3 sk-short token: fine"
    assert redact_text(text) == text


def test_structural_redaction_of_keys_at_any_depth():
    value = {"outer": [{"x-api-key": "anything", "Authorization": "x", "input_tokens": 4}]}
    assert redact_value(value) == {
        "outer": [{"x-api-key": REDACTED, "Authorization": REDACTED, "input_tokens": 4}]
    }


def test_secret_inside_a_key_is_redacted_and_collisions_get_a_deterministic_suffix():
    assert redact_value({"has-s3cr3tvalue": 1}, ["s3cr3tvalue"]) == {f"has-{REDACTED}": 1}
    # Two tool names that redact to the same string once killed the whole sweep (issue 8).
    value = {"a-s3cr3tvalue": 1, f"a-{REDACTED}": 2, f"a-{REDACTED}#2": 3}
    redacted = redact_value(value, ["s3cr3tvalue"])
    assert redacted == {f"a-{REDACTED}": 1, f"a-{REDACTED}#2": 2, f"a-{REDACTED}#2#2": 3}
    assert redact_value(value, ["s3cr3tvalue"]) == redacted  # deterministic
    assert sum(redacted.values()) == 6  # nothing dropped


def test_redact_value_is_total_on_hostile_shapes():
    deep: list = []
    cursor = deep
    for _ in range(50_000):  # far beyond the recursion limit
        cursor.append([])
        cursor = cursor[0]
    redact_value({"nested": deep})
    mixed = {"\ud800tool": ["\udfff", ("t", {"token": 1})], 3: None}
    out = redact_value(mixed)
    assert out == {"\ufffdtool": ["\ufffd", ["t", {"token": REDACTED}]], "3": None}
    json.dumps(out, ensure_ascii=False).encode("utf-8")  # encodable: a lone surrogate would raise here


def test_lone_surrogates_never_survive_redaction():
    assert redact_text("a\ud800b\udc00") == "a\ufffdb\ufffd"
    # negative control: the raw string is what used to crash the writer
    with pytest.raises(UnicodeEncodeError):
        "a\ud800b".encode()


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("Bash", "Bash"),
        ("\x1b[2J\x1b[31mEvil", "\\x1b[2J\\x1b[31mEvil"),
        ("line\nforged line", "line\\x0aforged line"),
        ("bell\x07\x9b", "bell\\x07\\x9b"),
        ("rtl\u202eexe.txt", "rtl\\u202eexe.txt"),
        ("lone\ud800", "lone\ufffd"),
        (42, "42"),
    ],
)
def test_printable_escapes_controls(raw, shown):
    assert printable(raw) == shown


def test_printable_bounds_length():
    assert len(printable("x" * 10_000, 50)) == 50
    assert printable("x" * 10_000, 50).endswith("…")
    assert printable("short", 50) == "short"  # negative control: nothing cut when it fits
