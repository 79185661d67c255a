"""The model relay: the sandbox's only way to the model, the only holder of the credential, and the
host-side witness of every exchange (the wire record: evidence of record, DESIGN §4).
Over 400 lines on purpose: the relay's admission, forwarding and wire record share one connection loop.

Sessions run with no network at all (``--unshare-net``). The CLI reaches the model through
``ANTHROPIC_UNIX_SOCKET``: a Unix socket bound into the sandbox, served here, on the host, by one
relay per session that

- accepts only what the CLI needs: one strictly parsed HTTP/1.1 request per connection
  (``http_request.py``: a bare LF, obs-fold, a control byte, a repeated header or
  ``Transfer-Encoding`` is refused), ``POST /v1/messages`` (any query), carrying this session's
  credential (``x-api-key``: a fresh key per session that only the CLI process holds, in its
  environment, which tool processes cannot read), for this session's id
  (``X-Claude-Code-Session-Id``) and the configured model, with a bounded ``Content-Length``
  body, from the CLI process itself (``_check_peer``: the socket peer of the first admitted
  request, so a child that inherited or read the key gains nothing); anything else gets a
  4xx/5xx and is counted in ``refused`` (the row's
  ``relay_refused_requests``), never forwarded;
- serves at most ``MAX_CONNECTIONS`` connections at once, each with read timeouts;
- forwards to the one configured upstream (the scripted provider, a gateway, or the Anthropic
  API over TLS) with ``Connection: close`` and ``Accept-Encoding: identity`` (so the record can
  be read), with a head rebuilt from the parsed headers (never the client's bytes), strips the
  session credential and injects the cell's real one — the CLI holds only the session key;
- streams the response back byte for byte, keeping a bounded copy, and records each exchange
  as ``wire.Exchange`` facts (never the bodies themselves).

Measured on CLI 2.1.332 with ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``: the only requests a
session makes are ``POST /v1/messages?beta=true`` (main loop and subagents alike), each carrying
``X-Claude-Code-Session-Id``; subagent requests add ``x-claude-code-agent-id``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from workflow_bench.providers.access import CellCredentials
from workflow_bench.relay.http_request import Request, RequestRefused, read_request
from workflow_bench.relay.wire import RequestFacts, ResponseFacts, parse_request, parse_response

# The CLI's credential for the relay, one per session: it is worthless beyond this session's relay
# (which injects the real one), and it proves a request is the CLI's. It must not look like a
# provider token (redaction would then hide leaks of the real one).
SESSION_KEY_PREFIX = "wfbench-session-"
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024  # the CLI's largest requests are ~100 KB; this bounds abuse
MAX_CONNECTIONS = 32  # parallel subagents share a session; more than this is abuse
MAX_RECORDED_RESPONSE_BYTES = 16 * 1024 * 1024  # a 128k-token reply is ~2 MB of SSE
MAX_EXCHANGES = 5000  # per session; beyond it the record is incomplete (unverifiable), not cut
CLIENT_READ_TIMEOUT_S = 60  # the CLI sends a whole request at once; a trickling client is abuse
UPSTREAM_TIMEOUT_S = 1800  # matches API_TIMEOUT_MS given to the CLI: a long turn must not be cut here
# A transport fault before any response byte is tried once more (``_reach_upstream``); 1 = no retry.
UPSTREAM_ATTEMPTS = 2
UPSTREAM_RETRY_PAUSE_S = 0.05
WORKER_THREAD = "model-relay-connection"  # one per served connection (at most MAX_CONNECTIONS)
MESSAGES_PATH = "/v1/messages"
SESSION_HEADER = "x-claude-code-session-id"
AGENT_HEADER = "x-claude-code-agent-id"
# The aliases CLI 2.1.332 resolves offline (reference/environment.md §4): with --model sonnet the
# request names claude-sonnet-5-5.
MODEL_ALIASES = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-2",
}
_DROPPED_HEADERS = frozenset(
    {
        "x-api-key",
        "authorization",
        "host",
        "connection",
        "proxy-connection",
        "keep-alive",
        "accept-encoding",
        "content-length",
        "transfer-encoding",
    }
)


class RelayError(RuntimeError):
    pass


def new_session_key() -> str:
    """A fresh per-session relay credential (256 random bits) for the CLI's ``ANTHROPIC_API_KEY``."""
    return SESSION_KEY_PREFIX + secrets.token_hex(32)


# Upstream statuses that are the endpoint's fault, not the request's: credentials and model
# routing are the harness's (the relay injects them), throttling, timeouts and 5xx are the
# provider's. 400 and 413 describe the request body, which the agent's session shapes.
_ENDPOINT_FAULT_STATUSES = frozenset({401, 403, 404, 407, 408, 429})


class EndpointLog:
    """What the relay saw of the upstream: when each request ran and whether it failed.

    Host-side evidence for failure attribution (judging): a session that failed right after the
    endpoint failed it, or that timed out while a model request was still in flight, is the
    endpoint's fault; otherwise the agent's. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, float] = {}  # request id -> start (monotonic)
        self._next = 0
        self.last_fault: str | None = None  # set by the latest finished request; None = it succeeded

    def start(self) -> int:
        with self._lock:
            self._next += 1
            self._open[self._next] = time.monotonic()
            return self._next

    def finish(self, request: int, fault: str | None) -> None:
        with self._lock:
            self._open.pop(request, None)
            self.last_fault = fault

    def in_flight_since(self) -> float | None:
        """Start of the oldest request still open, or None."""
        with self._lock:
            return min(self._open.values(), default=None)


@dataclass(frozen=True, slots=True)
class Exchange:
    """One forwarded request and what came back, as facts (bodies are never kept)."""

    index: int
    agent_id: str | None
    request: RequestFacts
    response: ResponseFacts
    response_overflow: bool
    delivered: bool = False
    """Every byte the upstream sent reached the client (False: unknown or cut on the client side)."""
    retried: str | None = None
    """The provider-side transport fault of a first attempt that the relay retried (None: none)."""


@dataclass(frozen=True, slots=True)
class WireRecord:
    """Everything one session's relay saw."""

    exchanges: tuple[Exchange, ...]
    refused: int
    refusal_reasons: tuple[str, ...]
    overflow: bool
    refused_peer: int = 0
    """Requests carrying the session's key from a process other than the CLI (``ModelRelay._check_peer``)."""


class ModelRelay:
    """Serve one session on ``socket_path``; use as a context manager, then read ``record()``.

    ``client_key``: the session's credential (``new_session_key``), given to its CLI only; a
    request without it is refused. ``session_id``/``model``: when set, requests must name them.
    """

    def __init__(
        self,
        socket_path: Path,
        *,
        upstream: str,
        credentials: CellCredentials,
        client_key: str,
        session_id: str | None = None,
        model: str | None = None,
        pin_peer: bool = True,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.query:
            raise RelayError(
                f"upstream must be http(s)://host[:port][/path] without credentials: {upstream!r}"
            )
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        self._credentials = credentials
        self._session_id = session_id
        self._client_key = client_key
        self._pin_peer = pin_peer
        self._peer: tuple[int, str] | None = None  # (host pid, /proc starttime) of the CLI, once admitted
        self.refused_peer = 0
        self._models = None if model is None else {model, MODEL_ALIASES.get(model, model)}
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._refusals: list[str] = []
        self._overflow = False
        self._next_index = 0
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.endpoint = EndpointLog()
        self._live: set[socket.socket] = set()  # open client and upstream sockets, closed by close()
        self._live_lock = threading.Lock()
        self.socket_path = socket_path
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(socket_path))
        os.chmod(socket_path, 0o666)  # the sandbox uid must be able to connect
        self._server.listen(64)
        self._closed = threading.Event()
        self._workers: set[threading.Thread] = set()
        self._thread = threading.Thread(target=self._accept_loop, name="model-relay", daemon=True)

    def __enter__(self) -> ModelRelay:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(timeout=5)
        # Connections still open (a stalled upstream) pin the socket's mount; the cell's volume
        # could not be unmounted. Closing them unblocks their threads too.
        with self._live_lock:
            live, self._live = list(self._live), set()
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        for worker in list(self._workers):
            worker.join(timeout=5)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    def record(self) -> WireRecord:
        with self._lock:
            exchanges = tuple(sorted(self._exchanges, key=lambda e: e.index))
            refused = len(self._refusals)
            return WireRecord(
                exchanges, refused, tuple(self._refusals[:20]), self._overflow, self.refused_peer
            )

    def _refuse(self, client: socket.socket, status: int, reason: str) -> None:
        with self._lock:
            self._refusals.append(f"{status} {reason}"[:200])
        _reply_error(client, status, reason)

    def _track(self, sock: socket.socket) -> None:
        with self._live_lock:
            if self._closed.is_set():
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._live.add(sock)

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                with client:
                    self._refuse(client, 503, f"more than {MAX_CONNECTIONS} concurrent connections")
                continue
            worker = threading.Thread(target=self._serve, args=(client,), name=WORKER_THREAD, daemon=True)
            with self._lock:
                self._workers = {w for w in self._workers if w.is_alive()} | {worker}
            worker.start()

    def _serve(self, client: socket.socket) -> None:
        try:
            with client:
                client.settimeout(CLIENT_READ_TIMEOUT_S)
                try:
                    request, agent_id, facts = self._admit(client)
                except RequestRefused as refused:
                    self._refuse(client, refused.status, str(refused))
                    return
                except OSError as exc:
                    self._refuse(client, 400, f"client read failed: {type(exc).__name__}")
                    return
                with self._lock:
                    index = self._next_index
                    self._next_index += 1
                ticket = self.endpoint.start()
                fault: str | None = "upstream closed without a response"
                self._track(client)
                try:
                    try:
                        upstream, first, retried = self._reach_upstream(request)
                    except _TransportFault as failed:
                        fault = failed.fault
                        _reply_error(client, 502, failed.shown)
                        raw = b"HTTP/1.1 502 relay\r\n\r\n"
                        self._store(index, agent_id, facts, raw, False, retried=failed.retried)
                        return
                    with upstream:
                        kept, overflow, delivered = _pipe(upstream, client, first)
                    fault = self._store(
                        index, agent_id, facts, kept, overflow, delivered=delivered, retried=retried
                    )
                finally:
                    self.endpoint.finish(ticket, fault)
                    with self._live_lock:
                        self._live = {
                            sock for sock in self._live if sock.fileno() != -1 and sock is not client
                        }
        finally:
            self._slots.release()

    def _store(
        self, index, agent_id, facts, raw: bytes, overflow: bool, *, delivered=False, retried=None
    ) -> str | None:
        """Record the exchange; return the endpoint's fault in it (None when it answered well)."""
        response = parse_response(raw)
        exchange = Exchange(index, agent_id, facts, response, overflow, delivered, retried)
        with self._lock:
            if len(self._exchanges) >= MAX_EXCHANGES:
                self._overflow = True
            else:
                self._exchanges.append(exchange)
        return _endpoint_fault(raw, response, overflow)

    def _admit(self, client: socket.socket) -> tuple[Request, str | None, RequestFacts]:
        request = read_request(client, max_header_bytes=MAX_HEADER_BYTES, max_body_bytes=MAX_BODY_BYTES)
        if request.method != "POST" or request.target.split("?", 1)[0] != MESSAGES_PATH:
            shown = f"{request.method} {request.target[:80]}"
            raise RequestRefused(404, f"only POST {MESSAGES_PATH} is relayed, not {shown}")
        if not hmac.compare_digest((request.header("x-api-key") or "").encode(), self._client_key.encode()):
            # Only this session's CLI holds the key: tool processes cannot read its environment
            # (sandbox/_confine.py), its argv or anything under HOME (measured: the CLI writes no
            # part of it to disk). A tool that learned the session id from /proc still lands here.
            raise RequestRefused(401, "request does not carry this session's credential")
        if self._session_id is not None and request.header(SESSION_HEADER) != self._session_id:
            raise RequestRefused(403, "request is not from this session")
        self._check_peer(client)
        facts = parse_request(bytes(request.body))
        if facts.parse_error:
            raise RequestRefused(400, facts.parse_error)
        if self._models is not None and facts.model not in self._models:
            raise RequestRefused(400, f"model {str(facts.model)[:80]!r} is not the configured model")
        return request, request.header(AGENT_HEADER) or None, facts

    def _check_peer(self, client: socket.socket) -> None:
        """Refuse a request whose socket peer is not the process of the first admitted one.

        The key is a bearer secret a child of the CLI could learn (a prefix the agent replaced, a
        helper the CLI runs itself); the peer process cannot be forged: ``SO_PEERCRED`` is the
        connecting process as the kernel saw it (its host pid, translated across the sandbox's
        pid namespace), and its start time pins it against pid reuse. The first admitted request
        is the CLI's: no tool exists before the model's first reply, which answers it. The CLI
        is one process (subagents run inside it; measured on 2.1.332).
        """
        if not self._pin_peer:
            return
        pid = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        peer = (pid, _start_time(pid))
        with self._lock:
            if self._peer is None and peer[1]:
                self._peer = peer
            if peer == self._peer:
                return
            self.refused_peer += 1
        raise RequestRefused(403, "request is not from this session's CLI process")

    def _reach_upstream(self, request: Request) -> tuple[socket.socket, bytes, str | None]:
        """The upstream socket, the first bytes of its answer, and the retried attempt's fault.

        A transport fault before any response byte (connect refused, the connection reset or
        closed while the request was written or before the answer began) is the provider side's
        and cannot be the agent's: nothing reached the CLI yet, so it is retried once, on a fresh
        connection, and the CLI never sees it. Once a byte arrived it was forwarded: never retried.
        Raises ``_TransportFault`` when every attempt failed.
        """
        retried: str | None = None
        for attempt in range(UPSTREAM_ATTEMPTS):
            try:
                upstream, first = self._attempt(request)
            except _TransportFault as failed:
                if attempt + 1 >= UPSTREAM_ATTEMPTS or not failed.retryable or self._closed.is_set():
                    if retried is not None:
                        failed.retried = retried
                        failed.fault += f" (retried once; 1st attempt: {retried})"
                    raise
                retried = failed.fault
                time.sleep(UPSTREAM_RETRY_PAUSE_S)
                continue
            return upstream, first, retried
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _attempt(self, request: Request) -> tuple[socket.socket, bytes]:
        """One connection: open it, write the request, wait for the answer's first bytes."""
        try:
            upstream = self._open_upstream()
        except OSError as exc:
            raise _TransportFault(
                f"upstream unreachable: {type(exc).__name__}", shown=f"upstream unreachable: {exc}"
            ) from exc
        self._track(upstream)
        try:
            try:
                upstream.sendall(self._rewrite(request))
                upstream.sendall(request.body)
            except OSError as exc:  # the upstream hung up mid-request
                raise _TransportFault(f"upstream closed: {type(exc).__name__}") from exc
            try:
                first = upstream.recv(65536)
            except TimeoutError as exc:  # it took the request and said nothing: never sent twice
                raise _TransportFault("upstream timed out before any response byte", retryable=False) from exc
            except OSError as exc:
                raise _TransportFault(
                    f"upstream reset before any response byte: {type(exc).__name__}"
                ) from exc
            if not first:
                raise _TransportFault("upstream closed before any response byte")
        except _TransportFault:
            upstream.close()
            raise
        return upstream, first

    def _open_upstream(self) -> socket.socket:
        raw = socket.create_connection((self._host, self._port), timeout=UPSTREAM_TIMEOUT_S)
        if self._scheme == "https":
            return ssl.create_default_context().wrap_socket(raw, server_hostname=self._host)
        return raw

    def _rewrite(self, request: Request) -> bytes:
        """The head sent upstream, rebuilt from the parsed headers: never the client's bytes."""
        kept = [f"{name}: {value}" for name, value in request.headers if name.lower() not in _DROPPED_HEADERS]
        host = self._host if self._port in (80, 443) else f"{self._host}:{self._port}"
        # identity: the record parses the response; a compressed one would be unreadable.
        kept += [f"Host: {host}", "Connection: close", "Accept-Encoding: identity"]
        kept.append(f"Content-Length: {len(request.body)}")
        if self._credentials.api_key:
            kept.append(f"x-api-key: {self._credentials.api_key}")
        if self._credentials.auth_token:
            kept.append(f"Authorization: Bearer {self._credentials.auth_token}")
        line = f"{request.method} {self._prefix}{request.target} HTTP/1.1"
        return ("\r\n".join([line, *kept]) + "\r\n\r\n").encode("ascii")


def _start_time(pid: int) -> str:
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks since boot), or "" when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    return fields[19] if len(fields) > 19 else ""


class _TransportFault(Exception):
    """No answer from the upstream at all, on the provider side of the relay (see ``_reach_upstream``)."""

    def __init__(self, fault: str, *, shown: str | None = None, retryable: bool = True) -> None:
        super().__init__(fault)
        self.fault = fault  # the endpoint log's words (failure attribution)
        self.shown = shown or fault  # what the client's 502 says
        self.retryable = retryable
        self.retried: str | None = None  # the first attempt's fault, when this was the retry


def _pipe(
    upstream: socket.socket, client: socket.socket, first: bytes | None = None
) -> tuple[bytes, bool, bool]:
    """Copy the answer (``first``: its bytes already read, if any) to the client: (bytes kept for
    the record, overflow, delivered whole)."""
    kept: list[bytes] = []
    size, overflow = 0, False
    if first is None:
        try:
            first = upstream.recv(65536)
        except OSError:
            first = b""  # the upstream's fault: the record shows a cut answer
    chunk = first
    while True:
        if not chunk:
            break
        if size + len(chunk) <= MAX_RECORDED_RESPONSE_BYTES:
            kept.append(chunk)
            size += len(chunk)
        else:
            overflow = True
        try:
            client.sendall(chunk)
        except OSError:
            return b"".join(kept), overflow, False  # the client left: it may retry this request
        try:
            chunk = upstream.recv(65536)
        except OSError:
            break  # the upstream's fault: the record shows a cut answer
    return b"".join(kept), overflow, True


_REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 411: "Length Required"}
_REASONS.update({413: "Payload Too Large", 431: "Header Fields Too Large", 502: "Bad Gateway"})
_REASONS.update({503: "Service Unavailable"})


def _endpoint_fault(raw: bytes, response: ResponseFacts, overflow: bool) -> str | None:
    """The endpoint's fault in one answer, for failure attribution (judging); None when it answered well.

    Only upstream failures count: credentials and model routing are the relay's (it injects them),
    throttling, timeouts and 5xx are the provider's; 400 and 413 describe the request body, which
    the agent's session shapes. A 200 reply cut before it completed was cut by the endpoint.
    """
    if response.status is None:
        return "upstream sent no HTTP status"
    if response.status >= 500 or response.status in _ENDPOINT_FAULT_STATUSES:
        return f"upstream status {response.status}"
    head = raw.partition(b"\r\n\r\n")[0].lower()
    cut = not (response.completed or overflow or b"message_stop" in raw)
    if response.status == 200 and b"text/event-stream" in head and cut:
        return "upstream event stream ended before message_stop"
    return None


def _reply_error(client: socket.socket, status: int, message: str) -> None:
    body = json.dumps(
        {"type": "error", "error": {"type": "invalid_request_error", "message": f"relay: {message}"}}
    ).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        client.sendall(head.encode() + body)
