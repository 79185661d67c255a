"""Every served token is in the cost, and a fork of the CLI's conversation is tampering.

Real CLI, real bubblewrap, the scripted provider, each cell through ``run_cell`` with its own
relay (the canary's cell runner, ``attacks_limits.run_limit_cells``):

- the CLI's own retries (a 529, then a stream cut after ``message_start``, each once): never
  flagged, no fork counted, and ``cost_usd`` is every served exchange priced, the cut reply's
  ``message_start`` usage included — which is exactly the CLI's own ``total_cost_usd`` here;
- ``relay-main-thread-fork`` (``canary/attacks_fork.py``: 20 forks with the CLI's bytes and key):
  ``evidence-tampered``, every fork counted, every served token priced.

Negative controls, each a defence removed: without the fork rule the forks pass as replies nobody
continued; with the cost back to the CLI's own total they are left out of it.
"""

from __future__ import annotations

import json

import pytest

from workflow_bench.canary import attacks_fork
from workflow_bench.canary._suite import CANARY_MODEL, TURN_USAGE
from workflow_bench.canary.attacks_limits import LimitAttack, LimitCell, LimitEvidence, run_limit_cells
from workflow_bench.canary.attacks_relay import cost_covers_usage_wire
from workflow_bench.cells import evidence
from workflow_bench.claude_cli import claude_version
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.providers.scripted import parse_script

pytestmark = pytest.mark.e2e
CUT_USAGE = {**TURN_USAGE, "input_tokens": 700, "output_tokens": 300}


def _cli_total(transcripts: str) -> float:
    for line in transcripts.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "result":
            return float(event["total_cost_usd"])
    raise AssertionError("no result event in the transcript")


def _retried(ev: LimitEvidence) -> tuple[bool, str]:
    row = ev.row
    if row.error_kind == ErrorKind.EVIDENCE_TAMPERED or row.relay_forked_requests != 0:
        return False, f"the CLI's own retries flagged: {row.error_kind} {row.error_detail}"
    if problem := cost_covers_usage_wire(row):
        return False, problem
    cli = _cli_total(ev.transcripts)
    # Measured: CLI 2.1.332 prices a reply from its message_start on, so its own total holds the cut
    # reply too; with nothing forked, every served exchange is exactly what the CLI priced.
    if abs((row.cost_usd or 0.0) - cli) > 1e-6 or (row.usage_wire and row.usage_wire.input_tokens) != 1420:
        return False, f"cost_usd {row.cost_usd} is not the CLI's {cli}, or usage_wire {row.usage_wire}"
    return True, f"not flagged; cost_usd {row.cost_usd} = the CLI's own total, cut reply included"


def _retry_script(attacks, _plant):
    turns = [
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo one"}}], "usage": TURN_USAGE,
         "fault": {"http_status": 529, "times": 1}},
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo two"}}], "usage": CUT_USAGE,
         "fault": {"cut_after_events": 1, "times": 1}},
        {"text": "Done.", "usage": TURN_USAGE},
    ]  # fmt: skip
    return parse_script(
        {"schema_version": 1, "model": CANARY_MODEL, "cells": [{"sessions": [{"turns": turns}]}]},
        source="<retries>",
    )


RETRY_CELL = LimitCell(
    "cli-retries",
    (
        LimitAttack(
            "cli-own-retries", "a 529 and a cut stream", "not flagged", "Bash", lambda _p: {}, _retried
        ),
    ),
    script=_retry_script,
)


@pytest.fixture
def cli(claude_bin, bwrap_bin):
    return {"claude_bin": claude_bin, "claude_version": claude_version(claude_bin), "bwrap_bin": bwrap_bin}


def test_the_clis_own_retries_are_priced_and_never_flagged(cli):
    (verdict,) = run_limit_cells(**cli, progress=lambda _line: None, cells=(RETRY_CELL,))
    assert verdict.blocked, verdict.observed


def test_forks_of_the_main_thread_are_tampering_and_priced(cli):
    (verdict,) = attacks_fork.run_fork_cell(**cli, progress=lambda _line: None)
    assert verdict.blocked, verdict.observed


def test_negative_control_without_the_fork_rule_the_forks_pass(cli, monkeypatch):
    monkeypatch.setattr(evidence, "_forks", lambda *_args: [])
    (verdict,) = attacks_fork.run_fork_cell(**cli, progress=lambda _line: None)
    assert not verdict.blocked and "accepted" in verdict.observed, verdict.observed


def test_negative_control_with_the_clis_own_total_the_forks_cost_nothing(cli, monkeypatch):
    def clis_total(_served, events, *, overflow):
        del overflow
        return next(float(e["total_cost_usd"]) for e in events if e.get("type") == "result")

    monkeypatch.setattr(evidence, "served_cost", clis_total)
    (verdict,) = attacks_fork.run_fork_cell(**cli, progress=lambda _line: None)
    assert not verdict.blocked and "the served tokens cost" in verdict.observed, verdict.observed
