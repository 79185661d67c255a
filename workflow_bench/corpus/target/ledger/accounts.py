"""Accounts and balanced transactions (double-entry bookkeeping)."""

from collections.abc import Iterable
from dataclasses import dataclass


class LedgerError(ValueError):
    """An operation that would corrupt the books."""


@dataclass(frozen=True)
class Posting:
    account: str
    amount: int  # cents; positive is a debit


@dataclass(frozen=True)
class Transaction:
    description: str
    postings: tuple[Posting, ...]


class Ledger:
    """Open accounts and the transactions posted between them.

    Balances are derived from the transactions on demand, so they can never
    disagree with the history.
    """

    def __init__(self) -> None:
        self._accounts: set[str] = set()
        self.transactions: list[Transaction] = []

    def open(self, name: str) -> None:
        if not name or name != name.strip() or " " in name:
            raise LedgerError(f"bad account name: {name!r}")
        if name in self._accounts:
            raise LedgerError(f"account already open: {name}")
        self._accounts.add(name)

    def accounts(self) -> list[str]:
        return sorted(self._accounts)

    def post(self, description: str, postings: Iterable[tuple[str, int]]) -> Transaction:
        """Record a transaction; its postings must name open accounts and sum to zero."""
        legs = tuple(Posting(account, amount) for account, amount in postings)
        if len(legs) < 2:
            raise LedgerError(f"{description!r}: a transaction needs at least two postings")
        unknown = sorted({leg.account for leg in legs} - self._accounts)
        if unknown:
            raise LedgerError(f"{description!r}: unknown account(s): {', '.join(unknown)}")
        imbalance = sum(leg.amount for leg in legs)
        if imbalance:
            raise LedgerError(f"{description!r}: unbalanced by {imbalance} cents")
        transaction = Transaction(description, legs)
        self.transactions.append(transaction)
        return transaction

    def balance(self, name: str) -> int:
        if name not in self._accounts:
            raise LedgerError(f"unknown account: {name}")
        return sum(leg.amount for t in self.transactions for leg in t.postings if leg.account == name)
