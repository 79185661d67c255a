"""Redaction: known secrets, token shapes, credential keys — and what it must leave alone."""

from __future__ import annotations

import pytest

from workflow_bench.redaction import REDACTED, redact_text, redact_value

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


def test_secret_inside_a_key_is_redacted_and_collisions_refused():
    assert redact_value({"has-s3cr3tvalue": 1}, ["s3cr3tvalue"]) == {f"has-{REDACTED}": 1}
    with pytest.raises(ValueError, match="collide"):
        redact_value({"a-s3cr3tvalue": 1, f"a-{REDACTED}": 2}, ["s3cr3tvalue"])
