"""The scripted provider's loopback HTTP server (Anthropic Messages and OpenAI Responses APIs).

Owns the socket, the routing and the scripted faults: ``POST /v1/messages`` (SSE or JSON),
``POST /v1/messages/count_tokens``, ``POST /v1/responses`` (SSE or JSON; what a LiteLLM gateway
sends upstream), ``POST /v1/responses/input_tokens``, ``HEAD /api/hello`` and ``GET /``; anything
else is 404.
Every model request must carry a key minted by ``ScriptedProvider.mint_key`` (``x-api-key`` or
``Authorization: Bearer``): the key is how a request is attributed to exactly one cell, so an
unknown key gets 401 and leaves no ledger entry. It binds 127.0.0.1 only and never logs or
stores request bodies outside memory.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from workflow_bench.providers.scripted import _responses, _wire
from workflow_bench.providers.scripted._ledger import Book, Decision, LedgerEntry
from workflow_bench.providers.scripted._script import Script, substitute_cwd

# The CLI's bodies are ~90 KB; a transcript near the context limit stays well under this.
_MAX_BODY_BYTES = 64 * 1024 * 1024
# How often a request sleeping on a scripted delay checks whether its client hung up.
_HANGUP_POLL_S = 0.05


class ScriptedProvider:
    """A loopback Anthropic Messages server answering from a ``Script``.

    Binds ``127.0.0.1:<ephemeral>`` and starts serving on a daemon thread when constructed; use
    it as a context manager (or call ``close()``) to stop. Thread-safe.

    Session index within a key is the first-seen order of the ``X-Claude-Code-Session-Id``
    header (falling back to ``metadata.user_id``'s session_id); the turn index is the number of
    assistant messages in the request, so retries of a request land on the same turn.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self._book = Book(script=script)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.book = self._book
        host, port = self._httpd.server_address[:2]
        self.base_url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name=f"scripted-provider:{port}", daemon=True
        )
        self._thread.start()

    def __enter__(self) -> ScriptedProvider:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and release the port. Idempotent."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()

    def mint_key(self, *, task: str, arm: str, run: int) -> str:
        """A fresh random key (``sk-scripted-<hex>``) bound to this cell. Every call mints a new key."""
        return self._book.mint(task=task, arm=arm, run=run)

    def ledger(self, key: str) -> tuple[LedgerEntry, ...]:
        """What was served for ``key``, in order. ``KeyError`` for a key this provider never minted."""
        return self._book.ledger(key)

    def all_ledger(self) -> tuple[LedgerEntry, ...]:
        """Every ledger entry of every key, in the order they were served."""
        return self._book.all_ledger()

    def request_count(self, key: str) -> int:
        """Raw HTTP requests that carried ``key`` (any path, including rejected and malformed ones)."""
        return self._book.request_count(key)


# path → dialect of the model routes (count-token routes share their dialect's auth and errors)
_ROUTES = {
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic",
    "/v1/responses": "openai-responses",
    "/v1/responses/input_tokens": "openai-responses",
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default listen backlog is 5. Parallel cells (each CLI with its subagents)
    # open more connections than that at once: measured, 18 concurrent relay connections
    # overflowed the accept queue 403 times in 40 s (TcpExtListenOverflows), and a connection
    # whose handshake was dropped there now and then ended in a reset the provider never saw
    # (the relay's "upstream closed"/"reset before any response byte"); with 128, none overflowed.
    request_queue_size = 128
    book: Book


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so JSON replies can keep the CLI's connection alive; SSE replies close it.
    protocol_version = "HTTP/1.1"
    server: _Server
    _reset = False  # set per request by _reset_after_reply

    def log_message(self, format: str, *args: Any) -> None:
        # Silence the default stderr access log: it would interleave with pytest and runner output.
        return

    # ---- routing

    def do_HEAD(self) -> None:
        path = urlsplit(self.path).path
        self._send_empty(200 if path in ("/", "/api/hello") else 404)

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/":
            self._send_json(200, {"ok": True, "server": "workflow-bench scripted provider"})
        else:
            self._send_json(404, _wire.error_body("not_found_error", message=f"no route GET {self.path}"))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self._read_body()
        if path not in _ROUTES:
            self._send_json(404, _wire.error_body("not_found_error", message=f"no route POST {path}"))
            return
        openai = _ROUTES[path] == "openai-responses"
        key = self._api_key()
        if key is None or not self.server.book.count_request(key):
            message = "invalid x-api-key"
            self._send_json(
                401,
                _responses.error_body(401, message=message)
                if openai
                else _wire.error_body("authentication_error", message=message),
            )
            return
        if not isinstance(body, dict):
            message = "body is not a JSON object"
            self._send_json(
                400,
                _responses.error_body(400, message=message)
                if openai
                else _wire.error_body("invalid_request_error", message=message),
            )
            return
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": _wire.estimate_tokens(body)})
            return
        if path == "/v1/responses/input_tokens":
            self._send_json(
                200, {"object": "response.input_tokens", "input_tokens": _wire.estimate_tokens(body)}
            )
            return
        decision = self.server.book.decide(
            key=key,
            session_id=_wire.session_id(self.headers, body),
            turn_index=_responses.assistant_turns(body) if openai else _wire.assistant_turns(body),
            stream=body.get("stream") is True,
            agent_id=_wire.agent_id(self.headers),
            dialect=_ROUTES[path],
        )
        fault = decision.fault
        if fault is not None and fault.delay_s and not self._still_connected_after(fault.delay_s):
            return  # the client hung up while we slept (its cell was cancelled): nothing was served
        if fault is not None and fault.reset:
            self._reset_after_reply()  # the request was read; nothing is answered, nothing served
            return
        self.server.book.record(key, decision.entry)
        if openai:
            self._answer_responses(decision, body)
        else:
            self._answer(decision, body)

    # ---- request helpers

    def _api_key(self) -> str | None:
        key = self.headers.get("x-api-key")
        if key:
            return key
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        return (token.strip() or None) if scheme.lower() == "bearer" else None

    def _read_body(self) -> object:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY_BYTES:
            self.close_connection = True
            return None
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            return json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None

    # ---- answering

    def _still_connected_after(self, delay_s: float) -> bool:
        """Sleep ``delay_s``; false as soon as the client closes its end of the connection."""
        deadline = time.monotonic() + delay_s
        while (remaining := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], min(remaining, _HANGUP_POLL_S))
            if not readable:
                continue
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    self.close_connection = True
                    return False
            except OSError:
                self.close_connection = True
                return False
            time.sleep(min(remaining, _HANGUP_POLL_S))  # pipelined bytes, not a hang-up: keep waiting
        return True

    def _answer(self, decision: Decision, body: dict[str, Any]) -> None:
        fault = decision.fault
        if fault is not None and fault.http_status is not None:
            self._send_json(fault.http_status, _wire.fault_error_body(fault.http_status))
            return
        reply = self._reply(
            decision, body, cwd=_wire.working_directory(body), message_id=_wire.new_message_id()
        )
        cut = fault.cut_after_events if fault is not None else None
        if decision.entry.stream:
            self._send_sse(_wire.sse_events(reply), cut_after_events=cut)
        elif cut is not None:
            # The CLI falls back to a non-streaming request after a broken stream (observed with
            # 2.1.332), so a cut must break that too or the fault would silently heal itself.
            self._send_json(200, _wire.json_message(reply), cut=True)
        else:
            self._send_json(200, _wire.json_message(reply))

    def _answer_responses(self, decision: Decision, body: dict[str, Any]) -> None:
        """The OpenAI Responses twin of ``_answer``: same turn, same faults, other wire."""
        fault = decision.fault
        if fault is not None and fault.http_status is not None:
            self._send_json(
                fault.http_status, _responses.error_body(fault.http_status, message="scripted fault")
            )
            return
        reply = self._reply(
            decision, body, cwd=_responses.request_cwd(body), message_id=_responses.new_response_id()
        )
        cut = fault.cut_after_events if fault is not None else None
        if decision.entry.stream:
            self._send_sse(_responses.sse_events(reply), cut_after_events=cut)
        else:
            self._send_json(200, _responses.json_response(reply), cut=cut is not None)

    def _reply(
        self, decision: Decision, body: dict[str, Any], *, cwd: str | None, message_id: str
    ) -> _wire.Reply:
        turn = decision.turn
        return _wire.Reply(
            message_id=message_id,
            model=str(body.get("model") or self.server.book.script.model),
            text=decision.text,
            tool_uses=tuple(
                _wire.ToolUse(id=_wire.new_tool_use_id(), name=c.name, input=substitute_cwd(c.input, cwd))
                for c in (turn.tool_calls if turn is not None else ())
            ),
            usage=decision.entry.usage,
        )

    def _send_empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_json(self, status: int, payload: dict[str, Any], *, cut: bool = False) -> None:
        """Send a JSON reply; with ``cut``, announce the full length, send half of it and reset."""
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2] if cut else data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        if cut:
            self._reset_after_reply()

    def _send_sse(self, events: list[tuple[str, dict[str, Any]]], *, cut_after_events: int | None) -> None:
        # SSE has no length; the body ends when the connection closes after message_stop.
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for index, (name, data) in enumerate(events):
                if cut_after_events is not None and index >= cut_after_events:
                    self._reset_after_reply()
                    return
                self.wfile.write(_wire.encode_sse(name, data))
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    def _reset_after_reply(self) -> None:
        """End this connection with a TCP RST once the handler finishes (see ``finish``)."""
        self.close_connection = True
        self._reset = True

    def finish(self) -> None:
        super().finish()  # flushes and closes the makefile() wrappers, so close() below is real
        if self._reset:
            # An RST, not a FIN: a FIN would read as a clean end of an SSE body. SO_LINGER on with
            # timeout 0 makes close() drop the connection with a reset. The server's own
            # shutdown_request then finds the socket closed and ignores the OSError.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
