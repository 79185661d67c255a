"""Per-cell gateway keys: ``sk-wfbench-<tag>-<mac>``, minted by the runner, verified in the proxy.

Standard library only: imported by the runner and, inside the LiteLLM proxy, by
``_proxy_hooks``. mac = HMAC-SHA256(gateway secret, tag), truncated; the secret lives only in the
runner and the proxy process, so a sandbox holding one cell's key can neither forge another
cell's key nor reach the upstream credential. One ``sk-`` token with no dots, so every ``sk-``
redaction pattern covers the whole key.
"""

from __future__ import annotations

import hashlib
import hmac
import re

# Environment of the proxy process (set by ``Gateway``, read by ``_proxy_hooks``).
ENV_SECRET = "WORKFLOW_BENCH_GATEWAY_SECRET"
ENV_USAGE_LOG = "WORKFLOW_BENCH_GATEWAY_USAGE_LOG"
ENV_FORWARD_CELL = "WORKFLOW_BENCH_GATEWAY_FORWARD_CELL"
KEY_PREFIX = "sk-wfbench-"
MAC_HEX_CHARS = 32  # 128 bits of HMAC-SHA256: unguessable, and short enough for a header
TAG_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")


def key_mac(secret: bytes, tag: str) -> str:
    return hmac.new(secret, tag.encode(), hashlib.sha256).hexdigest()[:MAC_HEX_CHARS]


def cell_tag(api_key: object, secret: bytes) -> str | None:
    """The tag of a valid cell key, or ``None``."""
    if not isinstance(api_key, str) or not api_key.startswith(KEY_PREFIX):
        return None
    rest = api_key[len(KEY_PREFIX) :]
    tag, dash, mac = (
        rest[: -MAC_HEX_CHARS - 1],
        rest[-MAC_HEX_CHARS - 1 : -MAC_HEX_CHARS],
        rest[-MAC_HEX_CHARS:],
    )
    if dash != "-" or not TAG_PATTERN.fullmatch(tag):
        return None
    return tag if hmac.compare_digest(mac, key_mac(secret, tag)) else None


def mint_cell_key(secret: bytes, tag: str) -> str:
    """``sk-wfbench-<tag>-<mac>``: one token, so every ``sk-`` redaction pattern covers all of it."""
    if not TAG_PATTERN.fullmatch(tag):
        raise ValueError(f"cell tag {tag!r} must match {TAG_PATTERN.pattern}")
    return f"{KEY_PREFIX}{tag}-{key_mac(secret, tag)}"
