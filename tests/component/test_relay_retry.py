"""The relay retries a provider-side transport fault once, before any byte reaches the client.

The upstream is a raw loopback TCP server whose connections each behave as told (reset, close,
answer, answer then cut), so every transport fault is produced by the real kernel; the relay, its
Unix socket, its endpoint log and its wire record are the real ones.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from workflow_bench.providers.access import CellCredentials
from workflow_bench.relay import server as relay_server
from workflow_bench.relay.server import ModelRelay, new_session_key

pytestmark = pytest.mark.component
SESSION = "11111111-2222-3333-4444-555555555555"
KEY = new_session_key()
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello"}]}).encode()
REPLY = json.dumps({"id": "msg_1", "type": "message", "content": [], "usage": {"input_tokens": 1}}).encode()
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(REPLY),
    REPLY,
)


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))[15:]
    )
    while len(body) < length:
        body += conn.recv(65536)


def _reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


BEHAVIOURS = {
    # read the whole request, then drop the connection with an RST: nothing answered
    "reset": lambda conn: (_read_request(conn), _reset(conn)),
    # hang up (FIN) before reading anything: the relay's write or its first read fails
    "hangup": lambda conn: conn.close(),
    "answer": lambda conn: (_read_request(conn), conn.sendall(ANSWER), conn.close()),
    # the status line went out, then the connection was reset: a byte reached the client
    "cut": lambda conn: (_read_request(conn), conn.sendall(ANSWER[:20]), _reset(conn)),
}


class Upstream:
    """Serves its i-th connection with ``plan[i]`` (the last entry repeats)."""

    def __init__(self, plan: list[str]) -> None:
        self.plan = plan
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            behaviour = self.plan[min(self.connections, len(self.plan) - 1)]
            self.connections += 1
            try:
                BEHAVIOURS[behaviour](conn)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def relay_to(short_tmpdir) -> Iterator:
    opened: list[tuple[Upstream, ModelRelay]] = []

    def start(plan: list[str] | None = None, *, url: str | None = None) -> tuple[Upstream | None, ModelRelay]:
        upstream = Upstream(plan) if plan is not None else None
        relay = ModelRelay(
            short_tmpdir / f"api{len(opened)}.sock",
            upstream=url or upstream.url,  # type: ignore[union-attr]
            credentials=CellCredentials(api_key="real-key", auth_token=None),
            client_key=KEY,
            session_id=SESSION,
            model="m",
        ).__enter__()
        opened.append((upstream, relay))  # type: ignore[arg-type]
        return upstream, relay

    yield start
    for upstream, relay in opened:
        relay.close()
        if upstream is not None:
            upstream.close()


def _send(relay: ModelRelay) -> bytes:
    head = (
        f"POST /v1/messages?beta=true HTTP/1.1\r\nHost: localhost\r\nx-api-key: {KEY}\r\n"
        f"X-Claude-Code-Session-Id: {SESSION}\r\nContent-Length: {len(BODY)}\r\n\r\n"
    ).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(str(relay.socket_path))
        client.sendall(head + BODY)
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("first", ["reset", "hangup"])
def test_a_first_connection_that_failed_before_any_byte_is_retried_unseen(relay_to, first):
    upstream, relay = relay_to([first, "answer"])
    response = _send(relay)
    assert response == ANSWER  # the client saw the second attempt's answer, and only it
    assert upstream.connections == 2
    (exchange,) = relay.record().exchanges  # one request, one exchange: the retry is inside it
    assert exchange.response.status == 200 and exchange.delivered
    assert exchange.retried is not None and "upstream" in exchange.retried
    assert relay.endpoint.last_fault is None


def test_negative_control_without_the_retry_the_same_reset_reaches_the_client(relay_to, monkeypatch):
    monkeypatch.setattr(relay_server, "UPSTREAM_ATTEMPTS", 1)
    upstream, relay = relay_to(["reset", "answer"])
    response = _send(relay)
    assert response.startswith(b"HTTP/1.1 502 ")
    assert upstream.connections == 1
    assert relay.endpoint.last_fault is not None and "before any response byte" in relay.endpoint.last_fault
    (exchange,) = relay.record().exchanges
    assert exchange.retried is None


def test_a_fault_that_repeats_is_retried_once_only_and_says_so(relay_to):
    upstream, relay = relay_to(["reset"])
    response = _send(relay)
    assert response.startswith(b"HTTP/1.1 502 ")
    assert upstream.connections == 2
    fault = relay.endpoint.last_fault
    assert fault is not None and "retried once; 1st attempt: upstream reset before any response byte" in fault
    (exchange,) = relay.record().exchanges
    assert exchange.response.status == 502 and exchange.retried is not None


def test_a_refused_connect_is_retried_then_reported(relay_to):
    closed = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()  # nothing listens there now: connect is refused
    _, relay = relay_to(url=url)
    response = _send(relay)
    assert response.startswith(b"HTTP/1.1 502 ") and b"upstream unreachable" in response
    fault = relay.endpoint.last_fault
    assert fault is not None and fault.startswith(
        "upstream unreachable: ConnectionRefusedError (retried once"
    )


def test_once_a_byte_arrived_the_answer_is_never_retried(relay_to):
    upstream, relay = relay_to(["cut", "answer"])
    response = _send(relay)
    assert response == ANSWER[:20]  # what the client got is what the upstream sent, cut
    assert upstream.connections == 1
    (exchange,) = relay.record().exchanges
    assert exchange.retried is None and relay.endpoint.last_fault is not None
