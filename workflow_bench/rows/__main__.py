"""`python -m workflow_bench.rows markdown|json-schema`: print a generated row-schema document."""

import sys

from workflow_bench.rows.docs import render_json_schema, render_markdown

RENDERERS = {"markdown": render_markdown, "json-schema": render_json_schema}

if len(sys.argv) != 2 or sys.argv[1] not in RENDERERS:
    print(f"usage: python -m workflow_bench.rows {{{'|'.join(RENDERERS)}}}", file=sys.stderr)
    sys.exit(2)
print(RENDERERS[sys.argv[1]](), end="")
