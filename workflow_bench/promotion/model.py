"""What `promotion.json` is, for whoever reads or shows it: its file name, schema and canonical text.

The deciding lives in ``promotion.gate`` (one decision) and ``promotion.document`` (every decision
of a sweep); a renderer that shows the decisions imports this module only, never those two, so
rendering cannot decide (tests/unit/test_layering.py checks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

PROMOTION_FILE = "promotion.json"
PROMOTION_SCHEMA = 2  # 2: decisions carry the cheating probe ("impossible"; issue 23)


def document_text(doc: Mapping[str, Any]) -> str:
    """promotion.json's bytes: canonical JSON (sorted keys, two-space indent, no NaN), one newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
