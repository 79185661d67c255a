"""The one canonical JSON digest behind every digest of a record (task bindings, oracles, overlays).

Lowest layer: imports nothing of the package, so specs, the toolkit, the task command and the
promotion gate can all use it without importing each other.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_digest(value: Any) -> str:
    """sha256 of the canonical JSON encoding (sorted keys, compact separators, UTF-8).

    The only encoder behind every record digest, so a digest is a function of the value alone
    and survives a JSON round trip.
    """
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()
