"""Every served exchange priced, forks of a conversation counted (``cells.wire_cost``, ``evidence._forks``).

The rates are those the CLI's own result priced with (one of its bundled tables, identified by
``usage.rates_used``); the fork rule tells the CLI's own retries (the same request again, or a
different continuation only after the first failed) from a tool continuing a reply a second way.
"""

from __future__ import annotations

import pytest

from tests.builders import (
    SKILL_CALL,
    USER,
    honest_exchanges,
    session_outcome,
    stream_events,
    tool_result_message,
    wire_exchange,
    wire_record,
    wire_reply,
)
from workflow_bench.cells.evidence import analyse, apply_wire
from workflow_bench.cells.wire_cost import served_cost
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.usage import CLI_RATE_TABLES, price, rates_used

pytestmark = pytest.mark.unit
DEFAULT = CLI_RATE_TABLES[0]
# Measured: CLI 2.1.332's result for a scripted model (tests/e2e/test_subagent_accounting's cell).
MEASURED = {
    "inputTokens": 3300,
    "cacheCreationInputTokens": 44,
    "cacheReadInputTokens": 66,
    "outputTokens": 330,
    "costUSD": 0.025057999999999997,
    "webSearchRequests": 0,
    "cacheCreationEphemeral1hInputTokens": 0,
}
USAGE = {
    "input_tokens": 100,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 10,
}


def test_the_table_the_cli_priced_with_is_found_from_its_own_result():
    assert rates_used(MEASURED) == DEFAULT
    expensive = {**MEASURED, "costUSD": price({"input_tokens": 3300, "cache_creation_input_tokens": 44,
                 "cache_read_input_tokens": 66, "output_tokens": 330}, CLI_RATE_TABLES[1])}  # fmt: skip
    assert rates_used(expensive) == CLI_RATE_TABLES[1]


@pytest.mark.parametrize(
    "entry",
    [
        {**MEASURED, "costUSD": 0.0251},  # no table prices the counts at this cost
        {**MEASURED, "costUSD": 0},  # nothing billed: any table fits
        {**MEASURED, "webSearchRequests": 1},  # billed beyond the four counts
        {**MEASURED, "cacheCreationEphemeral1hInputTokens": 4},  # a rate the wire cannot tell apart
        {**MEASURED, "inputTokens": None},
        {**MEASURED, "costUSD": True},
        "not a mapping",
    ],
)
def test_no_rates_when_no_single_table_fits(entry):
    assert rates_used(entry) is None


def _result(model="m", entry=MEASURED):
    return [{"type": "result", "modelUsage": {model: entry}}]


def test_every_served_exchange_is_priced_and_unknown_is_never_zero():
    served = [("m", USAGE), ("m", {**USAGE, "output_tokens": 5000})]
    assert served_cost(served, _result(), overflow=False) == round(
        (100 * 5 + 10 * 25 + 100 * 5 + 5000 * 25) / 1e6, 6
    )
    # a cache count the provider left off is priced as the CLI prices it: none billed
    bare = {"input_tokens": 100, "cache_creation_input_tokens": None, "cache_read_input_tokens": None,
            "output_tokens": 10}  # fmt: skip
    assert served_cost([("m", bare)], _result(), overflow=False) == served_cost(
        [("m", USAGE)], _result(), overflow=False
    )
    assert served_cost([("m", {**USAGE, "output_tokens": None})], _result(), overflow=False) is None
    assert served_cost([("other", USAGE)], _result(), overflow=False) is None  # a model the CLI never priced
    assert served_cost(served, [], overflow=False) is None  # no result: no rates
    assert served_cost(served, _result(), overflow=True) is None  # the record is incomplete
    assert served_cost([], _result(), overflow=False) is None  # nothing served: nothing measured


def _fork(index, text, *, delivered=True, reply=None):
    """A request continuing the first reply (m1) with its own last message."""
    messages = [USER, {"role": "assistant", "content": SKILL_CALL}, tool_result_message("t1")]
    messages[-1] = {**messages[-1], "content": [*messages[-1]["content"], {"type": "text", "text": text}]}
    answer = reply or wire_reply(f"f{index}", [{"type": "text", "text": "x"}], 5)
    return wire_exchange(index, messages, answer, delivered=delivered)


def test_a_reply_continued_a_second_way_after_an_answered_continuation_is_a_fork():
    first, second = honest_exchanges()
    second = wire_exchange(1, _messages(second), _raw_reply("m2"), delivered=True)
    wire = analyse(wire_record([first, second, _fork(2, "fork 0"), _fork(3, "fork 1")]))
    assert wire.forks == 2
    assert any("request 2 forks the conversation at reply 0" in t for t in wire.tampering)


def test_the_clis_own_retries_are_no_fork():
    first, second = honest_exchanges()
    failed = wire_exchange(1, _messages(second), b"HTTP/1.1 529 x\r\nContent-Length: 0\r\n\r\n")
    retry = wire_exchange(2, _messages(second), _raw_reply("m2"), delivered=True)
    assert analyse(wire_record([first, failed, retry])).forks == 0  # the very request again
    # a different continuation only after the first got no reply whole (e.g. a 400, then compaction)
    refused = wire_exchange(1, _messages(second), b"HTTP/1.1 400 x\r\nContent-Length: 0\r\n\r\n")
    assert analyse(wire_record([first, refused, _fork(2, "compact")])).forks == 0
    undelivered = wire_exchange(1, _messages(second), _raw_reply("m2"), delivered=False)
    assert analyse(wire_record([first, undelivered, _fork(2, "again")])).forks == 0


def test_a_fork_makes_the_session_tampered_and_its_spend_is_in_the_cost():
    first, second = honest_exchanges()
    second = wire_exchange(1, _messages(second), _raw_reply("m2"), delivered=True)
    forked = _fork(2, "fork", reply=wire_reply("f2", [{"type": "text", "text": "x"}], 5000))
    events = [*stream_events()[:-1], {**stream_events()[-1], "modelUsage": {"m": MEASURED}}]
    outcome = apply_wire(session_outcome(events), wire_record([first, second, forked]), expected_skill=None)
    assert outcome.error_kind == ErrorKind.EVIDENCE_TAMPERED and outcome.relay_forked == 1
    served = [(10, 1), (20, 1), (5000, 1)]  # (input, output) per served reply, wire_usage's shape
    assert outcome.cost_usd == round(sum(i * 5 + o * 25 for i, o in served) / 1e6, 6)
    honest = apply_wire(session_outcome(events), wire_record([first, second]), expected_skill=None)
    assert honest.error_kind is None and honest.relay_forked == 0
    assert honest.cost_usd == round((10 * 5 + 25 + 20 * 5 + 25) / 1e6, 6)


def _messages(_exchange):
    """The messages of the CLI's own continuation of m1 (``honest_exchanges``' second request)."""
    return [USER, {"role": "assistant", "content": SKILL_CALL}, tool_result_message("t1")]


def _raw_reply(msg_id):
    return wire_reply(msg_id, [{"type": "text", "text": "done"}], 20)
