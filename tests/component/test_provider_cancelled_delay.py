"""A request still sleeping on a scripted ``delay_s`` when its client hangs up is never served.

The cell's CLI and relay go away when a cell is cancelled; the provider must then not log the
request as served, nor count its declared usage (the ledger is the accounting ground truth).
Real provider over real loopback HTTP; the negative control is the same request left to finish.
"""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import pytest

from workflow_bench.providers.scripted import ScriptedProvider, parse_script

pytestmark = pytest.mark.component

SCRIPT = {
    "schema_version": 1,
    "model": "m",
    "cells": [
        {
            "match": {"task": "slow"},
            "sessions": [
                {"turns": [{"text": "late", "fault": {"delay_s": 1.0}, "usage": {"output_tokens": 7}}]}
            ],
        }
    ],
}


def _send(provider: ScriptedProvider, key: str) -> socket.socket:
    url = urlsplit(provider.base_url)
    body = json.dumps({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
    conn = socket.create_connection((url.hostname, url.port))
    conn.sendall(
        (
            f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
    )
    return conn


def _read_reply(conn: socket.socket) -> bytes:
    """The whole response: headers and body can arrive in separate segments (seen under load)."""
    reply = b""
    while b"\r\n\r\n" not in reply or len(reply.partition(b"\r\n\r\n")[2]) < _length(reply):
        chunk = conn.recv(65536)
        if not chunk:
            break
        reply += chunk
    return reply


def _length(reply: bytes) -> int:
    for line in reply.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_hung_up_delayed_request_is_not_in_the_ledger():
    with ScriptedProvider(parse_script(SCRIPT, source="inline")) as provider:
        key = provider.mint_key(task="slow", arm="a", run=0)
        conn = _send(provider, key)
        time.sleep(0.2)
        conn.close()  # the cell was cancelled: its relay connection is gone
        time.sleep(1.5)
        assert provider.ledger(key) == ()
        assert provider.all_ledger() == ()


def test_delayed_request_that_is_waited_for_is_served_and_logged():
    with ScriptedProvider(parse_script(SCRIPT, source="inline")) as provider:
        key = provider.mint_key(task="slow", arm="a", run=0)
        conn = _send(provider, key)
        conn.settimeout(10)
        reply = _read_reply(conn)
        conn.close()
        assert reply.startswith(b"HTTP/1.") and b"late" in reply
        (entry,) = provider.ledger(key)
        assert entry.usage.output_tokens == 7 and entry.fault and "delay" in entry.fault
