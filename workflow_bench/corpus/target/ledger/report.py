"""Text reports over a ledger."""

from .accounts import Ledger
from .money import format_amount


def balance_report(ledger: Ledger) -> str:
    """One line per account (name, balance), then a ``total`` line."""
    names = ledger.accounts()
    width = max([len("total"), *(len(name) for name in names)])
    lines = [_line(name, ledger.balance(name), width) for name in names]
    lines.append(_line("total", _grand_total(ledger), width))
    return "\n".join(lines)


def _grand_total(ledger: Ledger) -> int:
    # Balanced transactions sum to zero, so over the whole ledger this is a
    # bookkeeping check: anything but 0.00 means a posting bypassed Ledger.post.
    return sum(ledger.balance(name) for name in ledger.accounts())


def _line(label: str, cents: int, width: int) -> str:
    return f"{label:<{width}}  {format_amount(cents):>12}"
