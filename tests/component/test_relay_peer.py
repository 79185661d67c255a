"""The relay serves only the CLI process: the socket peer of its first admitted request.

The session key is a bearer secret; a child of the CLI that learned it (a replaced shell
prefix, a helper the CLI runs itself) sends from another process. The peer pin refuses that
request (403, ``refused_peer``) even with the right key and session id; the negative control
(``pin_peer=False``) serves it. Real relay, real Unix socket, a real second process.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from workflow_bench.providers.access import CellCredentials
from workflow_bench.relay.server import ModelRelay, new_session_key

pytestmark = pytest.mark.component

SESSION = "11111111-2222-3333-4444-555555555555"
KEY = new_session_key()
GOOD = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
REPLY = json.dumps({"id": "msg_1", "type": "message", "content": [], "usage": {"input_tokens": 1}}).encode()


class _Model(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, *_args):
        pass


def _request(body: dict, *, key: str = KEY) -> bytes:
    data = json.dumps(body).encode()
    head = f"POST /v1/messages?beta=true HTTP/1.1\r\nHost: localhost\r\nx-api-key: {key}\r\n"
    head += f"X-Claude-Code-Session-Id: {SESSION}\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode() + data


def _send(relay, raw: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(relay.socket_path))
        client.sendall(raw)
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


_CHILD = """import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
s.sendall(sys.stdin.buffer.read())
out = b""
while chunk := s.recv(65536):
    out += chunk
sys.stdout.buffer.write(out)
"""


def _from_another_process(path, raw: bytes) -> bytes:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], input=raw, capture_output=True, timeout=30
    )
    return done.stdout


@pytest.fixture(params=[True, False], ids=["pinned", "negative-control"])
def pinned_relay(request, short_tmpdir):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with ModelRelay(
        short_tmpdir / "api.sock",
        upstream=f"http://127.0.0.1:{server.server_address[1]}",
        credentials=CellCredentials(api_key="real-key", auth_token=None),
        client_key=KEY,
        session_id=SESSION,
        model="m",
        pin_peer=request.param,
    ) as model_relay:
        yield model_relay, request.param
    server.shutdown()


def test_a_keyed_request_from_another_process_is_refused(pinned_relay):
    relay, pinned = pinned_relay
    assert _send(relay, _request(GOOD)).split(b" ")[1] == b"200"  # the first: pins this process
    other = _from_another_process(relay.socket_path, _request(GOOD))
    assert _send(relay, _request(GOOD)).split(b" ")[1] == b"200"  # the pinned process still is
    record = relay.record()
    if pinned:
        assert other.split(b" ")[1] == b"403" and b"CLI process" in other
        assert record.refused_peer == 1 and record.refused == 1 and len(record.exchanges) == 2
    else:  # the key alone decides: the other process is served
        assert other.split(b" ")[1] == b"200"
        assert record.refused_peer == 0 and len(record.exchanges) == 3


def test_a_request_without_the_key_is_refused_by_the_key_check_first(pinned_relay):
    """The key is checked before the peer: existing refusals keep their status (401)."""
    relay, _pinned = pinned_relay
    assert _send(relay, _request(GOOD)).split(b" ")[1] == b"200"
    other = _from_another_process(relay.socket_path, _request(GOOD, key="wfbench-session-wrong"))
    assert other.split(b" ")[1] == b"401"
    assert relay.record().refused_peer == 0
