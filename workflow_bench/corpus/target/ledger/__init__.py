"""A tiny double-entry ledger: amounts in integer cents, accounts, journals and reports."""

from .accounts import Ledger, LedgerError, Posting, Transaction
from .journal import JournalError, load_journal, parse_journal
from .money import format_amount, parse_amount
from .report import balance_report

__all__ = [
    "JournalError",
    "Ledger",
    "LedgerError",
    "Posting",
    "Transaction",
    "balance_report",
    "format_amount",
    "load_journal",
    "parse_amount",
    "parse_journal",
]
