"""``python -m workflow_bench.view``: a read-only loopback server, over real sockets.

Pinned: GET/HEAD only; plain relative paths, never through a symlink; a foreign Host (DNS
rebinding) is refused; raw files are sandboxed text, the page gets its CSP; a directory without a
viewer is rendered in memory and nothing is written; bad input exits 2 with the reason.
"""

from __future__ import annotations

import http.client
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import sweep_record, sweep_runs, write_sweep
from workflow_bench.view.server import main, serve

pytestmark = pytest.mark.component


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    out = write_sweep(tmp_path / "out", sweep_record(arms=("workflow",)), sweep_runs(2, "t1", "workflow"))
    (out / "transcripts").mkdir()
    (out / "transcripts" / "a.jsonl").write_text('{"type": "x"}\n<script>alert(1)</script>\n')
    (tmp_path / "outside.txt").write_text("not yours")
    os.symlink(tmp_path / "outside.txt", out / "link.patch")
    return out


@pytest.fixture
def server(sweep: Path) -> Iterator[tuple[int, Path]]:
    before = sorted((p.relative_to(sweep), p.stat().st_mtime_ns) for p in sweep.rglob("*"))
    running = serve(sweep, port=0, render=False)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running.server_address[1], sweep
    running.shutdown()
    running.server_close()
    after = sorted((p.relative_to(sweep), p.stat().st_mtime_ns) for p in sweep.rglob("*"))
    assert after == before, "the server wrote into the sweep directory"


def _get(port: int, path: str, *, method: str = "GET", host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    conn.endheaders()
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def test_the_page_and_its_data_come_from_memory_when_the_directory_has_no_viewer(server) -> None:
    port, sweep = server
    assert not (sweep / "viewer.html").exists()
    response, body = _get(port, "/")
    assert response.status == 200 and response.getheader("Content-Type") == "text/html; charset=utf-8"
    policy = response.getheader("Content-Security-Policy")
    assert "trusted-types wfb-viewer" in policy and policy.endswith("frame-ancestors 'none'")
    data = body.decode()
    file = data.split('"file":"', 1)[1].split('"', 1)[0]
    response, body = _get(port, "/" + file)
    assert response.status == 200 and body.startswith(b"wfbViewer.receive(")
    assert not (sweep / "viewer").exists()


def test_raw_files_are_sandboxed_text(server) -> None:
    port, _ = server
    response, body = _get(port, "/transcripts/a.jsonl")
    assert response.status == 200 and b"<script>" in body
    assert response.getheader("Content-Type") == "text/plain; charset=utf-8"
    assert response.getheader("Content-Security-Policy") == "default-src 'none'; sandbox"
    assert response.getheader("X-Content-Type-Options") == "nosniff"
    head, body = _get(port, "/transcripts/a.jsonl", method="HEAD")
    assert (
        head.status == 200
        and body == b""
        and head.getheader("Content-Length") == str(len(b"" + _get(port, "/transcripts/a.jsonl")[1]))
    )


@pytest.mark.parametrize(
    "path",
    ["/link.patch", "/../outside.txt", "/%2e%2e/outside.txt", "/.wfbench.lock", "/nope", "//etc/passwd"],
)
def test_paths_outside_plain_files_are_not_found(server, path: str) -> None:
    port, _ = server
    assert _get(port, path)[0].status == 404


def test_only_reads_from_this_loopback_host(server) -> None:
    port, _ = server
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        assert _get(port, "/", method=method)[0].status == 405
    assert _get(port, "/", host="evil.example")[0].status == 421
    assert _get(port, "/", host=f"localhost:{port}")[0].status == 200


def test_bad_input_exits_2_with_the_reason(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "missing")]) == 2
    assert "sweep.json" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path), "--port", "70000"])
    assert exc.value.code == 2
