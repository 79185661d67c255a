"""The model relay accepts only the session's own POST /v1/messages, bounded, and records it.

The upstream here is a minimal stdlib model (the model is the only thing faked); the relay, its
Unix socket and its wire record are the real ones.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from workflow_bench.providers.access import CellCredentials
from workflow_bench.relay.server import MAX_BODY_BYTES, MAX_CONNECTIONS, ModelRelay

pytestmark = pytest.mark.component
SESSION = "11111111-2222-3333-4444-555555555555"
REPLY = {
    "id": "msg_1",
    "type": "message",
    "content": [{"type": "text", "text": "hi"}],
    "usage": {
        "input_tokens": 5,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    },
}


class _Model(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, dict]]] = []
    delay_s: ClassVar[float] = 0.0

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Model.seen.append((self.path, self.headers.get("x-api-key", ""), json.loads(body)))
        time.sleep(_Model.delay_s)
        data = json.dumps(REPLY).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args):
        pass


@pytest.fixture
def relay(short_tmpdir):
    _Model.seen, _Model.delay_s = [], 0.0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    with ModelRelay(
        short_tmpdir / "api.sock",  # a socket: under TMPDIR itself, not the deeper tmp_path
        upstream=upstream,
        credentials=CellCredentials(api_key="real-key", auth_token=None),
        session_id=SESSION,
        model="m",
    ) as model_relay:
        yield model_relay
    server.shutdown()


def _send(relay, raw: bytes, *, timeout=10.0) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        client.connect(str(relay.socket_path))
        client.sendall(raw)
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _request(
    body: dict | bytes, *, path="/v1/messages?beta=true", method="POST", session=SESSION, length=None
):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nx-api-key: surrogate\r\n"
    if session:
        head += f"X-Claude-Code-Session-Id: {session}\r\n"
    head += f"Content-Length: {len(data) if length is None else length}\r\n\r\n"
    return head.encode() + data


GOOD = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


def test_the_sessions_own_request_is_forwarded_with_the_real_key_and_recorded(relay):
    response = _send(relay, _request(GOOD))
    assert response.startswith(b"HTTP/1.0 200") or response.startswith(b"HTTP/1.1 200")
    assert _Model.seen == [("/v1/messages?beta=true", "real-key", GOOD)]
    record = relay.record()
    assert record.refused == 0 and len(record.exchanges) == 1
    assert record.exchanges[0].response.usage["input_tokens"] == 5
    assert record.exchanges[0].delivered  # the whole reply reached the client


def test_a_reply_the_client_left_before_is_not_delivered(relay):
    """What tells a CLI retry (its reply never arrived whole) from a replay (evidence.py)."""
    _Model.delay_s = 0.5
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(relay.socket_path))
        client.sendall(_request(GOOD))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not relay.record().exchanges:
        time.sleep(0.05)
    (exchange,) = relay.record().exchanges
    assert not exchange.delivered  # (the relay stops reading the upstream once the client is gone)


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (_request(GOOD, path="/v1/files"), b"404"),
        (_request(GOOD, path="/v1/messages/batches"), b"404"),
        (_request(GOOD, method="DELETE"), b"404"),
        (_request({**GOOD, "model": "claude-opus-5-5"}), b"400"),
        (_request(GOOD, session="another-session"), b"403"),
        (_request(GOOD, session=None), b"403"),
        (_request(GOOD, length="12abc"), b"400"),
        (_request(GOOD, length="-1"), b"400"),
        (_request(b"not json"), b"400"),
        (b"GARBAGE\r\n\r\n", b"400"),
    ],
)
def test_anything_else_is_refused_counted_and_never_forwarded(relay, raw, status):
    response = _send(relay, raw)
    assert response.split(b" ")[1] == status, response[:200]
    assert _Model.seen == []
    assert relay.record().refused == 1 and relay.record().exchanges == ()


def test_a_huge_body_is_refused_from_its_length_without_reading_it(relay):
    started = time.monotonic()
    response = _send(relay, _request(b"x" * 1024, length=str(MAX_BODY_BYTES + 1)))
    assert response.split(b" ")[1] == b"413"
    assert time.monotonic() - started < 5 and relay.record().refused == 1


def test_a_body_at_the_cap_is_read_in_linear_time(relay):
    """32 MiB of a (non-JSON, so refused after reading) body: bytes += loops took seconds here."""
    started = time.monotonic()
    payload = b"x" * MAX_BODY_BYTES
    response = _send(relay, _request(payload), timeout=30)
    assert response.split(b" ")[1] == b"400"
    assert time.monotonic() - started < 5


def test_connections_beyond_the_cap_are_refused_not_threaded(relay):
    idle = []
    try:
        for _ in range(MAX_CONNECTIONS + 20):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(10)
            client.connect(str(relay.socket_path))
            idle.append(client)
        deadline = time.monotonic() + 10
        while relay.record().refused < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert relay.record().refused == 20
        assert threading.active_count() < MAX_CONNECTIONS + 20
    finally:
        for client in idle:
            client.close()
    # Once the idle ones are gone, the session is served again. Until the relay has seen them go, a
    # connection is still refused, and a refusal closed over our unread request arrives as a reset.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            response = _send(relay, _request(GOOD))
        except ConnectionResetError:
            response = b""
        if b" 200 " in response[:20]:
            break
        time.sleep(0.1)
    assert b" 200 " in response[:20]
