"""The four token-usage fields and the one unknown-aware sum every usage figure is built with.

Owns ``USAGE_FIELDS`` (ordinary input, cache writes, cache reads, output: the Anthropic names,
in the order rows and reports print them), ``unknown_usage`` and ``sum_usage``. Every layer that
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
