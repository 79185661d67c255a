"""A read-only HTTP server for one sweep directory, bound to loopback: the cell viewer and its files.

``python -m workflow_bench.view DIR [--port N] [--render]`` serves ``DIR/viewer.html`` at ``/``, the
cell data files under ``/viewer/`` and every other regular file of DIR by its relative path (the
raw transcripts, wire records, patches the viewer links to), and prints the URL. When DIR has no
viewer yet (a sweep written before it existed, a directory on a share you may not write) or with
``--render``, the viewer is rendered in memory from DIR's rows and files at start; nothing is
ever written to DIR. Stdlib only.

What it refuses (the files are the agent's bytes and the port is reachable by every local
process and, through DNS rebinding, by web pages): any method but GET and HEAD (405); a path that
is not a plain relative path, has a dot-component, or passes through a symlink (404, never
followed); a ``Host`` that is not this loopback address (421: a rebound DNS name). Raw files are
sent as ``text/plain`` with ``nosniff`` and a ``sandbox`` CSP, so no file of DIR runs as a page;
the viewer page gets its own strict CSP (``reports.viewer.page``) plus ``frame-ancestors 'none'``.
Exit 0 on Ctrl-C, 2 when DIR is not a finished sweep or the port cannot be bound.
"""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from workflow_bench import argtypes
from workflow_bench.reports.sweep_record import SweepRecordError, read_sweep_record
from workflow_bench.reports.viewer import DATA_DIR, PAGE_FILE, DirectoryFiles, render_viewer
from workflow_bench.reports.viewer.page import asset, content_security_policy
from workflow_bench.rows.migrate import RowReadError, read_rows

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765
CHUNK = 1 << 16
RAW_POLICY = "default-src 'none'; sandbox"
# report.html inlines its script, style and Chart.js (reports.html) and loads nothing.
REPORT_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'"
)
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
REQUEST_TIMEOUT_S = 30  # a client that sends nothing for this long is dropped (one thread each)


class ViewerSite:
    """What the server serves: the directory (read only) and, when rendered at start, the viewer."""

    def __init__(self, root: Path, *, render: bool) -> None:
        self.files = DirectoryFiles(root)
        self.memory: Mapping[str, bytes] = {}
        self.page_policy = content_security_policy(asset("viewer.js"), asset("viewer.css"))
        if render or self.files.read(PAGE_FILE, limit=0) is None:
            record = read_sweep_record(root)
            results = self.files.read("results.jsonl", limit=1 << 34)
            rows = read_rows(results.data.decode("utf-8")) if results else []
            viewer = render_viewer(record.provenance(), rows, self.files)
            self.memory = {PAGE_FILE: viewer.page.encode("utf-8"), **viewer.data}
            self.page_policy = viewer.policy


class Handler(BaseHTTPRequestHandler):
    server_version = "workflow-bench-view"
    sys_version = ""
    timeout = REQUEST_TIMEOUT_S
    site: ViewerSite
    hosts: frozenset[str]

    def log_message(self, format: str, *args: object) -> None:
        return  # quiet: the page's requests are not news

    def _refuse(self, status: HTTPStatus) -> None:
        body = f"{status.value} {status.phrase}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", RAW_POLICY)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _not_allowed(self) -> None:
        self._refuse(HTTPStatus.METHOD_NOT_ALLOWED)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def _serve(self, *, body: bool) -> None:
        if self.headers.get("Host", "") not in self.hosts:
            self._refuse(HTTPStatus.MISDIRECTED_REQUEST)
            return
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        relative = PAGE_FILE if path == "/" else path.removeprefix("/")
        suffix = Path(relative).suffix
        if relative == PAGE_FILE:
            kind, policy = TYPES[".html"], self.site.page_policy + "; frame-ancestors 'none'"
        elif relative.startswith(f"{DATA_DIR}/") and suffix == ".js":
            kind, policy = TYPES[".js"], RAW_POLICY
        elif relative == "report.html":
            kind, policy = TYPES[".html"], REPORT_POLICY
        else:
            kind, policy = "text/plain; charset=utf-8", RAW_POLICY
        if relative in self.site.memory:
            data = self.site.memory[relative]
            self._head(kind, policy, len(data))
            if body:
                self.wfile.write(data)
            return
        opened = self.site.files.open(relative)
        if opened is None:
            self._refuse(HTTPStatus.NOT_FOUND)
            return
        handle, size = opened
        with handle:
            self._head(kind, policy, size)
            left = size
            while body and left > 0:
                chunk = handle.read(min(CHUNK, left))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)

    def _head(self, kind: str, policy: str, length: int) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Security-Policy", policy)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()


def serve(root: Path, *, port: int, render: bool) -> ThreadingHTTPServer:
    """A bound, not yet serving, server for ``root`` (``serve_forever`` it; tests use port 0)."""
    site = ViewerSite(root, render=render)
    server = ThreadingHTTPServer((LOOPBACK, port), Handler)
    bound = server.server_address[1]
    hosts = frozenset({f"{LOOPBACK}:{bound}", f"localhost:{bound}"})
    server.RequestHandlerClass = type("SiteHandler", (Handler,), {"site": site, "hosts": hosts})
    server.daemon_threads = True
    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=argtypes.prog("view"), description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="a sweep's output directory (read, never written)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"loopback port ({DEFAULT_PORT}; 0: any free port)"
    )
    parser.add_argument(
        "--render", action="store_true", help="render the viewer in memory even when DIR has one"
    )
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: want 0 to 65535")
    try:
        server = serve(args.dir, port=args.port, render=args.render)
    except (SweepRecordError, RowReadError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"serving {args.dir} read-only at http://{LOOPBACK}:{server.server_address[1]}/ (Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
