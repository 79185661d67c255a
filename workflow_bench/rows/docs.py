"""docs/results-schema.md and docs/results-schema.json, generated from the row model.

``python -m workflow_bench.rows markdown > docs/results-schema.md`` and
``python -m workflow_bench.rows json-schema > docs/results-schema.json``; a test fails when
either file differs from what the model generates.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from workflow_bench import argtypes

from .model import PARTS, SCHEMA_VERSION, Row


def render_markdown() -> str:
    lines = [
        "# results.jsonl row schema",
        "",
        f"Schema version {SCHEMA_VERSION}. One JSON object per cell, appended and fsynced as the cell",
        "finishes. Every row has every field; `null` means not measured (never 0).",
        "Generated from `workflow_bench/rows/model.py` (`python -m workflow_bench.rows markdown`);",
        "do not edit by hand. The JSON Schema beside it (`results-schema.json`) is generated from",
        f"the same model. Rows of schema 1–{SCHEMA_VERSION - 1} are read through",
        "`workflow_bench/rows/migrate.py`.",
        "",
        "Each section is one part of the row model: the fields one writer contributes.",
    ]
    for part in PARTS:
        summary = (part.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ").replace("``", "`")
        lines += ["", f"## {part.SECTION}", "", summary, "", "| field | meaning |", "| --- | --- |"]
        for name, info in part.model_fields.items():
            lines.append(f"| `{info.alias or name}` | {info.description} |")
    return "\n".join(lines) + "\n"


def render_json_schema() -> str:
    schema = Row.model_json_schema(by_alias=True, mode="serialization")
    schema["$id"] = f"workflow-bench/results-row/v{SCHEMA_VERSION}"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print one generated document (``markdown`` or ``json-schema``) to stdout."""
    renderers = {"markdown": render_markdown, "json-schema": render_json_schema}
    parser = argparse.ArgumentParser(
        prog=argtypes.prog("rows"), description="Print a row-schema document generated from the row model."
    )
    parser.add_argument("document", choices=renderers, help="markdown (results-schema.md) or json-schema")
    args = parser.parse_args(argv)
    print(renderers[args.document](), end="")
    return 0
