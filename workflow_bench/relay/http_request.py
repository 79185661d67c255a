"""One HTTP/1.1 request read strictly from a sandbox socket: the relay's only request parser.

Owns ``read_request(sock, …) -> Request``: the bytes are fed, as they arrive, to llhttp
(``httptools``) in its default strict mode, and everything it tolerates that the CLI never sends
is refused here on top. What is refused, and why it matters: a header line ending in a bare LF
was once forwarded upstream verbatim by a hand-written parser (it split on CRLF only), so the
upstream read a second header the relay never saw — a request under another agent's identity.

Refused (``RequestRefused``, status and reason; the relay counts each): a bare LF or bare CR,
obsolete line folding, a control or non-ASCII byte in a header value, a malformed request line
or a version other than HTTP/1.1, any repeated header name (the CLI sends none; measured on
2.1.332: 21 distinct names per request, all ASCII), ``Transfer-Encoding`` (with or without
``Content-Length``), a missing or malformed ``Content-Length``, a body over ``max_body_bytes``
(refused from the length alone, before any of it is read), headers over ``max_header_bytes``, and
any byte after the one request's body (pipelining: nothing the CLI does, everything a smuggler
needs). h11 0.16 was measured first and accepts a bare LF, obs-fold, a control byte in a value
and a repeated ``Content-Length``; llhttp refuses all four, and CL together with TE.

The relay never forwards these bytes: it rebuilds the head from the parsed ``headers``, whose
names llhttp checked as tokens and whose values are checked here as visible ASCII.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import httptools

# Visible ASCII, space and tab: all a header value may hold (RFC 9110 field-vchar minus obs-text).
_VALUE_BYTES = frozenset(range(0x20, 0x7F)) | {0x09}


class RequestRefused(Exception):
    """The request is not one the relay forwards; ``status`` is what the client is answered."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class Request:
    """One strictly parsed request: the method, target, headers as sent (names verbatim) and body."""

    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytearray

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive; names are unique, the reader made sure)."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


class _Sink:
    """httptools callbacks: collect one message, notice a second one starting."""

    def __init__(self) -> None:
        self.messages = 0
        self.url = bytearray()
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.complete = False
        self.body = bytearray()

    def on_message_begin(self) -> None:
        self.messages += 1

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((bytes(name), bytes(value)))

    def on_headers_complete(self) -> None:
        self.head_done = True

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.complete = True


def read_request(sock: socket.socket, *, max_header_bytes: int, max_body_bytes: int) -> Request:
    """Read exactly one request from ``sock`` (its timeout applies); raise ``RequestRefused`` otherwise.

    Raises ``OSError`` when the socket fails (e.g. the client's read timeout).
    """
    sink = _Sink()
    parser = httptools.HttpRequestParser(sink)
    received = 0
    checked = False
    while not sink.complete:
        chunk = sock.recv(65536)
        if not chunk:
            raise RequestRefused(400, "client closed before sending a whole request")
        received += len(chunk)
        _feed(parser, chunk)
        if sink.messages > 1:
            raise RequestRefused(400, "more than one request on a connection (pipelining is not relayed)")
        if not sink.head_done and received > max_header_bytes:
            raise RequestRefused(431, "request headers too large")
        if sink.head_done and not checked:
            _check_head(parser, sink, max_body_bytes=max_body_bytes)
            checked = True
    # Bytes after the body arrive in the same chunk or never (the CLI waits for the answer).
    if sink.messages > 1:
        raise RequestRefused(400, "more than one request on a connection (pipelining is not relayed)")
    return Request(
        method=parser.get_method().decode("ascii"),
        target=sink.url.decode("ascii"),
        headers=tuple((name.decode("ascii"), value.decode("ascii")) for name, value in sink.headers),
        body=sink.body,
    )


def _feed(parser: httptools.HttpRequestParser, chunk: bytes) -> None:
    try:
        parser.feed_data(chunk)
    except httptools.HttpParserUpgrade as exc:
        raise RequestRefused(400, "protocol upgrades are not relayed") from exc
    except httptools.HttpParserError as exc:
        raise RequestRefused(400, f"malformed HTTP/1.1 request: {exc}"[:160]) from exc


def _check_head(parser: httptools.HttpRequestParser, sink: _Sink, *, max_body_bytes: int) -> None:
    """What llhttp accepts but the relay does not: every rule of the module docstring."""
    if parser.get_http_version() != "1.1":
        raise RequestRefused(400, f"HTTP/{parser.get_http_version()} is not relayed (HTTP/1.1 only)")
    names = [name.lower() for name, _ in sink.headers]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        shown = repeated[0].decode("ascii", "replace")[:40]
        raise RequestRefused(400, f"header {shown!r} appears more than once")
    for name, value in sink.headers:
        if not set(value) <= _VALUE_BYTES:
            shown = name.decode("ascii", "replace")[:40]
            raise RequestRefused(400, f"header {shown!r} carries a control or non-ASCII byte")
    if b"transfer-encoding" in names:
        raise RequestRefused(411, "Transfer-Encoding request bodies are not relayed (Content-Length only)")
    length = dict(zip(names, (v for _, v in sink.headers), strict=True)).get(b"content-length")
    if length is None or not length.isdigit() or len(length) > 12:
        raise RequestRefused(411 if length is None else 400, "missing or malformed Content-Length")
    if int(length) > max_body_bytes:
        raise RequestRefused(413, f"request body of {int(length)} bytes exceeds {max_body_bytes}")
