"""What one session cost: every exchange the relay served, priced at the rates the CLI priced with.

The CLI's ``total_cost_usd`` prices only what the CLI itself received and kept; a request a tool
sent with the CLI's own bytes (a fork of its conversation, a hidden thread) is served and billed
but never reaches it. So the row's cost is the relay's: the sum over every served exchange
(``evidence.WireEvidence.served``: each completed message once, cut streams included) of its
usage at its model's rates. The rates are not guessed from a model name: they are the one table
of the CLI's bundled ones (``usage.CLI_RATE_TABLES``) that prices the CLI's own per-model counts
(the result event's ``modelUsage``) at the cost it reported (``usage.rates_used``). Unknown is not
zero: an exchange whose ordinary input or output count, or whose model's rates, are unknown makes
the session's cost unknown. A cache count the provider left off a message it reported is priced
as none billed, as the CLI prices that very message (``usage_wire`` keeps it unknown).

Callers: ``evidence.apply_wire``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workflow_bench.usage import USAGE_FIELDS, price, rates_used

_CACHE_FIELDS = tuple(f for f in USAGE_FIELDS if f.startswith("cache_"))


def cli_rates(events: Sequence[Mapping[str, Any]]) -> dict[str, tuple[float, float, float, float]]:
    """Model -> the rates the CLI's result event priced it with (models it did not price: absent)."""
    results = [e for e in events if e.get("type") == "result"]
    if len(results) != 1 or not isinstance(results[0].get("modelUsage"), Mapping):
        return {}
    found = {}
    for model, entry in results[0]["modelUsage"].items():
        rates = rates_used(entry)
        if isinstance(model, str) and rates is not None:
            found[model] = rates
    return found


def served_cost(
    served: Sequence[tuple[str | None, Mapping[str, int | None]]],
    events: Sequence[Mapping[str, Any]],
    *,
    overflow: bool,
) -> float | None:
    """USD for every served exchange, to 6 digits; None when one cannot be priced."""
    if overflow or not served:
        # Past the record's cap some exchanges are not in it; with nothing served (an outage) the
        # session measured nothing, which is no zero-cost measurement.
        return None
    rates = cli_rates(events)
    total = 0.0
    for model, usage in served:
        table = rates.get(model) if model is not None else None
        billed = {**usage, **{f: usage.get(f) or 0 for f in _CACHE_FIELDS}}
        cost = price(billed, table) if table is not None else None
        if cost is None:
            return None
        total += cost
    return round(total, 6)
