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
from workflow_bench.relay.server import (
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    WORKER_THREAD,
    ModelRelay,
    new_session_key,
)

pytestmark = pytest.mark.component
SESSION = "11111111-2222-3333-4444-555555555555"
KEY = new_session_key()
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
        client_key=KEY,
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
    body: dict | bytes,
    *,
    path="/v1/messages?beta=true",
    method="POST",
    session=SESSION,
    length=None,
    key=KEY,
    extra="",
):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n{extra}"
    if key:
        head += f"x-api-key: {key}\r\n"
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


def _good_with_head(mutate) -> bytes:
    """The good request with its head bytes passed through ``mutate`` (a smuggling attempt)."""
    raw = _request(GOOD)
    head, _, body = raw.partition(b"\r\n\r\n")
    return mutate(head) + b"\r\n\r\n" + body


_SESSION_LINE = f"X-Claude-Code-Session-Id: {SESSION}".encode()


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        # A bare LF ends a header line for a lenient upstream: the second "header" was once
        # forwarded verbatim and read by the upstream as another agent's identity.
        (
            "bare LF",
            _good_with_head(
                lambda h: h.replace(b"Host: localhost", b"Host: localhost\nx-claude-code-agent-id: evil")
            ),
        ),
        ("all bare LF", _good_with_head(lambda h: h.replace(b"\r\n", b"\n"))),
        ("bare CR", _good_with_head(lambda h: h.replace(b"Host: localhost", b"Host: local\rhost"))),
        (
            "obs-fold",
            _good_with_head(
                lambda h: h.replace(b"Host: localhost", b"Host: localhost\r\n x-claude-code-agent-id: evil")
            ),
        ),
        ("control byte", _good_with_head(lambda h: h.replace(b"Host: localhost", b"Host: local\x01host"))),
        ("DEL byte", _good_with_head(lambda h: h.replace(b"Host: localhost", b"Host: local\x7fhost"))),
        ("NUL byte", _good_with_head(lambda h: h.replace(b"Host: localhost", b"Host: local\x00host"))),
        ("non-ASCII byte", _good_with_head(lambda h: h.replace(b"Host: localhost", b"Host: local\xffhost"))),
        ("space before colon", _good_with_head(lambda h: h.replace(b"Host: ", b"Host : "))),
        ("repeated Content-Length", _good_with_head(lambda h: h + b"\r\n" + h.split(b"\r\n")[-1])),
        ("conflicting Content-Length", _good_with_head(lambda h: h + b"\r\nContent-Length: 1")),
        (
            "Content-Length list",
            _good_with_head(lambda h: h.replace(b"Content-Length: ", b"Content-Length: 7, ")),
        ),
        ("CL and TE", _good_with_head(lambda h: h + b"\r\nTransfer-Encoding: chunked")),
        ("repeated session id", _good_with_head(lambda h: h + b"\r\n" + _SESSION_LINE)),
        (
            "repeated agent id",
            _good_with_head(lambda h: h + b"\r\nx-claude-code-agent-id: a\r\nx-claude-code-agent-id: b"),
        ),
        ("repeated key", _good_with_head(lambda h: h + f"\r\nx-api-key: {KEY}".encode())),
        ("HTTP/1.0", _good_with_head(lambda h: h.replace(b"HTTP/1.1", b"HTTP/1.0", 1))),
        ("pipelined second request", _request(GOOD) + _request(GOOD)),
    ],
)
def test_header_smuggling_is_refused_counted_and_never_forwarded(relay, name, raw):
    """Strict HTTP/1.1 (relay/http_request.py): what a lenient parser forwards never reaches upstream."""
    response = _send(relay, raw)
    assert response.split(b" ")[1] in (b"400", b"411"), (name, response[:200])
    assert b"relay: " in response
    assert _Model.seen == [], name
    assert relay.record().refused == 1 and relay.record().exchanges == ()


def test_chunked_bodies_are_refused(relay):
    body = json.dumps(GOOD).encode()
    head = (
        _request(GOOD)
        .partition(b"\r\n\r\n")[0]
        .replace(b"Content-Length: ", b"Transfer-Encoding: chunked\r\nX-Was: ")
    )
    raw = head + b"\r\n\r\n" + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    response = _send(relay, raw)
    assert response.split(b" ")[1] == b"411", response[:200]
    assert _Model.seen == []


@pytest.mark.parametrize(
    "key",
    [None, "wfbench-session-" + "0" * 64, KEY[:-1], KEY + "x", "sk-ant-guessed"],
    ids=["no key", "another key", "prefix", "longer", "provider-shaped"],
)
def test_a_request_without_this_sessions_credential_is_refused(relay, key):
    """The session id is in the CLI's argv (readable through /proc): the credential is what proves the CLI."""
    response = _send(relay, _request(GOOD, key=key))
    assert response.split(b" ")[1] == b"401"
    assert _Model.seen == [] and relay.record().refused == 1


def test_the_upstream_head_is_rebuilt_from_parsed_headers(relay):
    """What reaches upstream is the relay's own serialization: the session key never leaves."""
    response = _send(relay, _request(GOOD, extra="anthropic-beta: b1\r\n"))
    assert b" 200 " in response[:20]
    assert _Model.seen == [("/v1/messages?beta=true", "real-key", GOOD)]
    assert KEY not in str(_Model.seen)


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
        # This relay's own connection threads, not the process's: an xdist worker also holds
        # whatever earlier tests' servers and relays still run down, more of them under load.
        serving = [t for t in threading.enumerate() if t.name == WORKER_THREAD]
        assert len(serving) <= MAX_CONNECTIONS
    finally:
        for client in idle:
            client.close()
    # Once the idle ones are gone, the session is served again. Until the relay has seen them go, a
    # connection is still refused, and a refusal closed over our request reaches us as a reset on
    # the read, or (when we were descheduled between connect and send, as under load) as a broken
    # pipe on the write: both are a refusal, so try again.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            response = _send(relay, _request(GOOD))
        except (ConnectionResetError, BrokenPipeError):
            response = b""
        if b" 200 " in response[:20]:
            break
        time.sleep(0.1)
    assert b" 200 " in response[:20]
