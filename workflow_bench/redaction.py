"""Credential redaction for everything the harness persists or prints.

Two layers: *structural* (values under credential-looking keys become
``[REDACTED]`` whatever they hold) and *textual* (known secrets and common
token shapes are replaced inside any string). Rows, transcripts, error
details and live log lines all pass through here before they leave memory.
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


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern in _TOKEN_SHAPES:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def redact_value(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Deep-redact a JSON-like value (dict keys included)."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            new_key = redact_text(str(key), secrets)
            if new_key in out:
                raise ValueError("redaction made two keys collide; refusing to guess which to keep")
            out[new_key] = REDACTED if str(key).lower() in SENSITIVE_KEYS else redact_value(item, secrets)
        return out
    return value
