"""docs/*-schema.json for the documents built from rows, generated (`python tools/derived_schemas.py`).

Beside docs/results-schema.json (the row, ``python -m workflow_bench.rows json-schema``): one JSON
Schema per derived document, from its typed model, each field with its meaning. The JSON a sweep
writes keeps these keys. `tests/unit/test_no_drift.py` fails when a committed schema differs from
what this prints: a field added, renamed or re-described without regenerating.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic import BaseModel  # noqa: E402

from workflow_bench.reports.promotion_model import PromotionDocument  # noqa: E402
from workflow_bench.reports.stats_model import PairedStatistics  # noqa: E402
from workflow_bench.review.score import ReviewMetrics  # noqa: E402

SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "docs/stats-schema.json": (PairedStatistics, "workflow-bench/stats"),
    "docs/promotion-schema.json": (PromotionDocument, "workflow-bench/promotion"),
    "docs/review-metrics-schema.json": (ReviewMetrics, "workflow-bench/review-metrics"),
}


def schema_text(model: type[BaseModel], schema_id: str) -> str:
    schema = model.model_json_schema(mode="serialization")
    schema["$id"] = schema_id
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    for relative, (model, schema_id) in SCHEMAS.items():
        (ROOT / relative).write_text(schema_text(model, schema_id), encoding="utf-8")
        print(f"wrote {relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
