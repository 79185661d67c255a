"""The four token-usage fields and the one unknown-aware sum every usage figure is built with.

Owns ``USAGE_FIELDS`` (ordinary input, cache writes, cache reads, output: the Anthropic names,
in the order rows and reports print them), ``unknown_usage`` and ``sum_usage``, and what usage
costs (``price``, at the rates ``rates_used`` finds the CLI priced with). Every layer that
reads, sums or prints usage (the stream parser, the session fold, the provider ledger, the
gateway's normalizer, aggregation, accounting, the report) imports these names from here.

Unknown is not zero: a field nobody reported is ``None``; a sum over records where any record
left a field unknown is unknown in that field, and a sum over no records is all unknown.
Must never: import another workflow_bench module (this is the bottom layer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def unknown_usage() -> dict[str, int | None]:
    """All four fields unknown."""
    return dict.fromkeys(USAGE_FIELDS)


def sum_usage(records: Iterable[Mapping[str, int | None]]) -> dict[str, int | None]:
    """Per-field sum; a field any record left unknown (or missing) is unknown; no records is all unknown."""
    records = list(records)
    total: dict[str, int | None] = {}
    for name in USAGE_FIELDS:
        values = [r.get(name) for r in records]
        known = [v for v in values if v is not None]
        total[name] = sum(known) if records and len(known) == len(values) else None
    return total


# ── prices ─────────────────────────────────────────────────────────────────
# The rate tables CLI 2.1.332 bundles (USD per million tokens: ordinary input, 5-minute cache
# write, cache read, output), read from its binary. Which one a model gets is the CLI's own
# decision (remote config, aliases, a default for unknown models), so it is never guessed from
# the name: ``rates_used`` finds the table the CLI's own result priced with (``modelUsage``).
CLI_RATE_TABLES: tuple[tuple[float, float, float, float], ...] = (
    (5.0, 6.25, 0.5, 25.0),  # the CLI's default: what it charges an unknown model
    (30.0, 37.5, 3.0, 150.0),
    (10.0, 12.5, 1.0, 50.0),
    (8.0, 10.0, 0.4, 40.0),
    (16.0, 20.0, 0.4, 80.0),
)
_CLI_MODEL_USAGE_KEYS = ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens", "outputTokens")
_REL_TOLERANCE = 1e-9  # the CLI sums floats; anything coarser would let two tables pass


def price(usage: Mapping[str, int | None], rates: tuple[float, float, float, float]) -> float | None:
    """What ``usage`` costs at ``rates`` (USD); None when a count is unknown."""
    counts = [usage.get(name) for name in USAGE_FIELDS]
    if any(c is None for c in counts):
        return None
    return sum(c * r for c, r in zip(counts, rates, strict=True) if c is not None) / 1_000_000


def rates_used(model_usage: object) -> tuple[float, float, float, float] | None:
    """The one bundled table that prices the CLI's per-model token counts at its ``costUSD``.

    ``model_usage`` is one entry of the result event's ``modelUsage``. None when no table, or more
    than one, fits (nothing billed, web searches or 1-hour cache writes, which the wire cannot
    tell apart, or a CLI whose tables changed): the caller then cannot price.
    """
    if not isinstance(model_usage, Mapping):
        return None
    counts = [model_usage.get(key) for key in _CLI_MODEL_USAGE_KEYS]
    cost = model_usage.get("costUSD")
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
        return None
    if not isinstance(cost, int | float) or isinstance(cost, bool) or not cost > 0:
        return None
    if model_usage.get("webSearchRequests") or model_usage.get("cacheCreationEphemeral1hInputTokens"):
        return None
    usage = dict(zip(USAGE_FIELDS, counts, strict=True))
    fits = [r for r in CLI_RATE_TABLES if abs((price(usage, r) or 0.0) - cost) <= _REL_TOLERANCE * cost]
    return fits[0] if len(fits) == 1 else None
