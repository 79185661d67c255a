"""viewer.html and the cell data files: the bytes, the Content-Security-Policy, the escaping.

The page is one file beside report.html: its stylesheet and script inline (package data
``viewer.css``/``viewer.js``), the cell index embedded as a JSON data block (never executed), and
no reference to anything outside the sweep directory. A cell's detail is a data file
``viewer/<digest>.js`` holding one call, ``wfbViewer.receive(<file>, <JSON text as a string>)``:
a ``<script>`` element loads it, which works from ``file://`` (where Chromium refuses ``fetch``)
and from the read-only server alike; the page parses the string with ``JSON.parse``, so no
value is ever evaluated as code and no object key (``__proto__``) can reach a prototype.

Escaping. Every string in the index and the data files is JSON-encoded with ``<``, ``>``, ``&``,
U+2028 and U+2029 as ``\\uXXXX`` escapes: a ``</script>`` or ``<!--`` in a test id cannot end or
comment out the data block, and no line terminator can end a string literal. The data files
are pure ASCII (``ensure_ascii``). The page inserts text only as text nodes.

Content-Security-Policy (a ``<meta>`` here; the server sends the same as a header, plus
``frame-ancestors 'none'``): nothing loads but the page's own inline script and style (by
hash) and same-origin scripts; no inline handler, ``javascript:`` URL, ``eval``, plugin, frame,
image, font, form target or network connection; Trusted Types are required, so assigning a
string to ``innerHTML`` throws and a script URL must pass the page's one policy, which accepts
only ``viewer/<20 hex>.js``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from importlib import resources
from typing import Any

PAGE_FILE = "viewer.html"
TRUSTED_TYPES_POLICY = "wfb-viewer"


def asset(name: str) -> str:
    return resources.files("workflow_bench.reports.viewer").joinpath(name).read_text(encoding="utf-8")


_SAFE = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def safe_json(value: Any, *, ascii_only: bool = False) -> str:
    """``value`` as JSON that cannot break out of a script element or a string literal."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=ascii_only, allow_nan=False, separators=(",", ":"))
    return text.translate(_SAFE)


def data_script(file: str, document: Any) -> bytes:
    """A cell data file: one call handing the page the document as a JSON string."""
    payload = safe_json(safe_json(document, ascii_only=True), ascii_only=True)
    return f"wfbViewer.receive({safe_json(file, ascii_only=True)},{payload});\n".encode("ascii")


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


def content_security_policy(script: str, style: str) -> str:
    return (
        "default-src 'none'; "
        f"script-src 'self' {_hash(script)}; "
        f"style-src {_hash(style)}; "
        "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; "
        "frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; form-action 'none'; "
        f"require-trusted-types-for 'script'; trusted-types {TRUSTED_TYPES_POLICY}"
    )


def render_page(data: Any) -> tuple[str, str]:
    """(viewer.html, its Content-Security-Policy) for the page data (sweep facts and cell index)."""
    script, style = asset("viewer.js"), asset("viewer.css")
    policy = content_security_policy(script, style)
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n"
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        "<meta name='referrer' content='no-referrer'>\n"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>\n"
        f"<title>workflow-bench cells</title>\n<style>{style}</style></head>\n"
        "<body data-state='loading'><noscript>The cell viewer needs JavaScript; report.md and "
        "results.jsonl hold the same rows.</noscript><pre id='page-errors'></pre><main id='app'></main>\n"
        f"<script id='viewer-data' type='application/json'>{safe_json(data)}</script>\n"
        f"<script>{script}</script>\n</body></html>\n"
    )
    return page, policy
