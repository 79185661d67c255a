"""Credential redaction and sanitizing for everything the harness persists or prints.

Two layers: *structural* (values under credential-looking keys become
``[REDACTED]`` whatever they hold) and *textual* (known secrets and common
token shapes are replaced inside any string). Rows, transcripts, error
details and live log lines all pass through here before they leave memory.

Total on agent-controlled input: ``redact_value`` never raises (two keys
that redact to the same string get a deterministic ``#2``, ``#3`` suffix in
input order; nesting of any depth is walked without recursion) and every
string it returns is encodable as UTF-8 (a lone surrogate becomes U+FFFD).
``printable`` is the last step before a terminal: control characters are
escaped and the length is bounded, so a tool name cannot move the
operator's cursor or flood the console.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
SENSITIVE_KEYS = frozenset(
    {
        "authorization",
        "x-api-key",
        "api_key",
        "apikey",
        "anthropic_api_key",
        "anthropic_auth_token",
        "openai_api_key",
        "token",
        "access_token",
        "refresh_token",
        "secret",
        "client_secret",
        "cookie",
        "set-cookie",
        "password",
    }
)
_TOKEN_SHAPES = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-(?:proj-|scripted-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"(?i)(authorization:\s*)(\S+(?:\s+\S+)?)"),
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@"),
)


# A lone surrogate (from a JSON ``\\ud800`` escape) cannot be encoded as UTF-8:
# left in, it makes the row writer or a print raise.
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls and DEL (terminal escape sequences start with these), line
# separators and bidi overrides (they reorder what the operator reads). Keep in sync with
# input_files._CONTROL (names refused): tests/unit/test_input_tree_walk.py compares them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
PRINTABLE_LIMIT = 200


def encodable(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (always UTF-8 encodable)."""
    return _SURROGATE.sub("\ufffd", text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, limit: int = PRINTABLE_LIMIT) -> str:
    """One console-safe token: controls escaped (``\\x1b``), surrogates replaced, at most ``limit`` chars."""
    text = encodable(value if isinstance(value, str) else str(value))
    text = _CONTROL.sub(_escape, text)
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    text = encodable(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern in _TOKEN_SHAPES:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def _unique_key(out: dict[str, Any], key: str) -> str:
    """``key``, or ``key#2``, ``key#3``… : the first free name (deterministic in input order)."""
    if key not in out:
        return key
    suffix = 2
    while f"{key}#{suffix}" in out:
        suffix += 1
    return f"{key}#{suffix}"


def redact_value(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Deep-redact a JSON-like value (dict keys included). Never raises.

    Walked with an explicit stack, not recursion: an agent-shaped value
    nested thousands deep must not turn into a ``RecursionError``.
    """
    secrets = tuple(secrets)

    def convert(item: Any) -> tuple[Any, bool]:
        """(converted scalar or empty container, whether its children still need filling)."""
        if isinstance(item, str):
            return redact_text(item, secrets), False
        if isinstance(item, list | tuple):
            return [], True
        if isinstance(item, dict):
            return {}, True
        return item, False

    root, pending = convert(value)
    stack: list[tuple[Any, Any]] = [(value, root)] if pending else []
    while stack:
        source, target = stack.pop()
        if isinstance(target, list):
            for item in source:
                converted, pending = convert(item)
                target.append(converted)
                if pending:
                    stack.append((item, converted))
            continue
        for key, item in source.items():
            new_key = _unique_key(target, redact_text(str(key), secrets))
            if str(key).lower() in SENSITIVE_KEYS:
                target[new_key] = REDACTED
                continue
            converted, pending = convert(item)
            target[new_key] = converted
            if pending:
                stack.append((item, converted))
    return root
