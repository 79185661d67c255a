"""The plain-text journal format.

    2024-03-01 Groceries
      expenses:food      12.50
      assets:cash       -12.50

A header line starts with an ISO date and a description; indented lines are
its postings (account, amount). Blank lines and ``;`` comments are ignored.
"""

import datetime as dt
from dataclasses import dataclass

from .accounts import Ledger
from .money import parse_amount


class JournalError(ValueError):
    def __init__(self, line_no: int, message: str) -> None:
        super().__init__(f"line {line_no}: {message}")
        self.line_no = line_no


@dataclass(frozen=True)
class Entry:
    date: dt.date
    description: str
    postings: tuple[tuple[str, int], ...]


def parse_journal(text: str) -> list[Entry]:
    entries: list[Entry] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            continue
        if not line[0].isspace():
            date_text, _, description = stripped.partition(" ")
            try:
                date = dt.date.fromisoformat(date_text)
            except ValueError:
                raise JournalError(line_no, f"bad date {date_text!r}") from None
            entries.append(Entry(date, description.strip(), ()))
            continue
        if not entries:
            raise JournalError(line_no, "posting before any transaction header")
        fields = stripped.split()
        if len(fields) != 2:
            raise JournalError(line_no, f"want 'account amount', got {stripped!r}")
        try:
            amount = parse_amount(fields[1])
        except ValueError as err:
            raise JournalError(line_no, str(err)) from None
        last = entries[-1]
        entries[-1] = Entry(last.date, last.description, (*last.postings, (fields[0], amount)))
    return entries


def load_journal(ledger: Ledger, text: str) -> int:
    """Post every journal entry into ``ledger`` (opening accounts on first use); return the count."""
    entries = parse_journal(text)
    for entry in entries:
        for account, _ in entry.postings:
            if account not in ledger.accounts():
                ledger.open(account)
        ledger.post(entry.description, entry.postings)
    return len(entries)
