"""Money amounts as integer cents.

Floats cannot hold 0.10 exactly, so the ledger keeps every amount as an int
number of cents and converts to text only at the edges (journals, reports).
"""


def parse_amount(text: str) -> int:
    """Parse ``"12.5"``, ``"-3.25"`` or ``"1,234.50"`` into cents."""
    cleaned = text.strip().replace(",", "")
    whole, _, frac = cleaned.partition(".")
    if not whole.lstrip("+-").isdigit() or len(frac) > 2 or (frac and not frac.isdigit()):
        raise ValueError(f"not an amount: {text!r}")
    cents = int(frac.ljust(2, "0")) if frac else 0
    return int(whole) * 100 + cents


def format_amount(cents: int) -> str:
    """Format cents as ``"-12.50"``: two decimals, a minus sign, no grouping."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole}.{frac:02d}"
