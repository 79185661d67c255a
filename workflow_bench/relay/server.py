"""The model relay: the sandbox's only way to the model, and the only holder of the credential.

Sessions run with no network at all (``--unshare-net``). The CLI reaches the
model through ``ANTHROPIC_UNIX_SOCKET``: a Unix socket bound into the sandbox,
served here, on the host, by a small HTTP relay that

- forwards each request to the one configured upstream (the scripted
  provider, a gateway, or the Anthropic API over TLS) and nowhere else;
- strips whatever credential the client sent and injects the cell's real one,
  so the CLI process holds only a worthless surrogate: an agent that reads
  ``/proc/<cli pid>/environ`` finds nothing to steal;
- streams the response back byte for byte (SSE included).

Each request is forwarded with ``Connection: close`` and the upstream's raw
response is piped until it closes, so no HTTP framing is re-implemented.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import threading
from pathlib import Path
from urllib.parse import urlsplit

from workflow_bench.providers.access import CellCredentials

# A value the CLI accepts as "logged in" that is useless anywhere else. It must
# not look like a token (redaction would then hide leaks of the real one).
SURROGATE_API_KEY = "wfbench-surrogate-not-a-credential"
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024  # the CLI's largest requests are ~100 KB; this bounds abuse
UPSTREAM_TIMEOUT_S = 1800  # matches API_TIMEOUT_MS given to the CLI: a long turn must not be cut here
_DROPPED_HEADERS = frozenset(
    {"x-api-key", "authorization", "host", "connection", "proxy-connection", "keep-alive"}
)


class RelayError(RuntimeError):
    pass


class ModelRelay:
    """Serve one cell's sessions on ``socket_path``; use as a context manager."""

    def __init__(self, socket_path: Path, *, upstream: str, credentials: CellCredentials) -> None:
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
        self.socket_path = socket_path
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(socket_path))
        os.chmod(socket_path, 0o666)  # the sandbox uid must be able to connect
        self._server.listen(16)
        self._closed = threading.Event()
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
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            try:
                head, body = _read_request(client)
                upstream = self._open_upstream()
            except (RelayError, OSError) as exc:
                _reply_error(client, 502, str(exc))
                return
            with upstream:
                upstream.sendall(self._rewrite(head) + body)
                _pipe(upstream, client)

    def _open_upstream(self) -> socket.socket:
        raw = socket.create_connection((self._host, self._port), timeout=UPSTREAM_TIMEOUT_S)
        if self._scheme == "https":
            return ssl.create_default_context().wrap_socket(raw, server_hostname=self._host)
        return raw

    def _rewrite(self, head: bytes) -> bytes:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        if not target.startswith("/"):
            raise RelayError("only origin-form request targets are relayed")
        kept = [
            line
            for line in lines[1:]
            if line and line.split(":", 1)[0].strip().lower() not in _DROPPED_HEADERS
        ]
        host = self._host if self._port in (80, 443) else f"{self._host}:{self._port}"
        kept += [f"Host: {host}", "Connection: close"]
        if self._credentials.api_key:
            kept.append(f"x-api-key: {self._credentials.api_key}")
        if self._credentials.auth_token:
            kept.append(f"Authorization: Bearer {self._credentials.auth_token}")
        return ("\r\n".join([f"{method} {self._prefix}{target} {version}", *kept]) + "\r\n\r\n").encode(
            "latin-1"
        )


def _read_request(client: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(65536)
        if not chunk:
            raise RelayError("client closed before sending a request")
        data += chunk
        if len(data) > MAX_HEADER_BYTES:
            raise RelayError("request headers too large")
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        elif name.strip().lower() == "transfer-encoding":
            raise RelayError("chunked request bodies are not relayed")
    if length > MAX_BODY_BYTES:
        raise RelayError("request body too large")
    while len(body) < length:
        chunk = client.recv(min(65536, length - len(body)))
        if not chunk:
            raise RelayError("client closed mid-body")
        body += chunk
    return head, body


def _pipe(upstream: socket.socket, client: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := upstream.recv(65536):
            client.sendall(chunk)


def _reply_error(client: socket.socket, status: int, message: str) -> None:
    body = json.dumps(
        {"type": "error", "error": {"type": "api_error", "message": f"relay: {message}"}}
    ).encode()
    head = (
        f"HTTP/1.1 {status} Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    )
    with contextlib.suppress(OSError):
        client.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
