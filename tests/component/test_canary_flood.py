"""The canary's relay-flood attack under load: a relay that refuses slowly is still judged right.

The attack's own program (``attacks_evidence._FLOOD``) runs on the host against a real
``ModelRelay`` whose refusals are slowed to 80 ms each, as a relay thread starved by a loaded
machine is. The old program counted only refusals that arrived within a fixed window and read
the late ones as served (one flaky 42/43 of ``runner --canary``); this one waits for the relay.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from workflow_bench.canary import attacks_evidence
from workflow_bench.canary.attacks import Evidence
from workflow_bench.canary.attacks_evidence import _FLOOD, _FLOOD_COUNT, MODEL_SOCKET, _flood
from workflow_bench.providers.access import CellCredentials
from workflow_bench.relay.server import MAX_CONNECTIONS, ModelRelay

pytestmark = pytest.mark.component


def _program(socket_path) -> str:
    source = _FLOOD.split("<<'PY'\n", 1)[1].rsplit("\nPY", 1)[0]
    assert repr(MODEL_SOCKET) in source
    return source.replace(repr(MODEL_SOCKET), repr(str(socket_path)))


def test_a_slow_relay_still_counts_every_refusal(short_tmpdir, monkeypatch):
    real = ModelRelay._refuse

    def slow(self, client, status, reason):
        time.sleep(0.08)
        real(self, client, status, reason)

    monkeypatch.setattr(ModelRelay, "_refuse", slow)
    credentials = CellCredentials(api_key="k", auth_token=None)
    socket_path = short_tmpdir / "api.sock"
    with ModelRelay(
        socket_path, upstream="http://127.0.0.1:9", credentials=credentials, client_key="k"
    ) as relay:
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-c", _program(relay.socket_path)], capture_output=True, text=True, timeout=120
        )
        took = time.monotonic() - started
    output = result.stdout + result.stderr
    assert f"{_FLOOD_COUNT - MAX_CONNECTIONS} refused" in output, output
    evidence = Evidence(
        output=output,
        row={},
        patch="",
        transcripts="",
        listener_hits=0,
        sentinel_alive=True,
        background_survivors=0,
        host_paths_created=(),
    )
    blocked, observed = _flood(evidence, None)
    assert blocked, observed
    assert took < attacks_evidence._FLOOD_WAIT_S  # it stopped on the answers, not on its deadline
