"""The scripted provider's listen backlog holds a burst of parallel connections (no overflow)."""

from __future__ import annotations

import socket

import pytest

from workflow_bench.providers.scripted import ScriptedProvider, parse_script

pytestmark = pytest.mark.component


def test_a_burst_of_connections_waits_in_the_accept_queue():
    # Negative control by hand: with socketserver's default backlog (5) the kernel's accept
    # queue overflows under parallel cells (TcpExtListenOverflows grew by 403 in 40 s of a
    # relay stress run; 0 with this backlog).
    script = parse_script({"schema_version": 1, "model": "m", "cells": []}, source="test")
    with ScriptedProvider(script) as provider:
        assert provider._httpd.request_queue_size >= 64
        host, port = provider._httpd.server_address[:2]
        burst = [socket.create_connection((host, port), timeout=10) for _ in range(40)]
        for conn in burst:
            conn.close()
