import datetime as dt
import unittest

from ledger.accounts import Ledger
from ledger.journal import JournalError, load_journal, parse_journal

JOURNAL = """\
; March
2024-03-01 Salary
  assets:cash      2,000
  income:salary   -2,000

2024-03-02 Groceries
  expenses:food     12
  assets:cash      -12
"""


class JournalTest(unittest.TestCase):
    def test_parse_entries(self):
        entries = parse_journal(JOURNAL)
        self.assertEqual([e.description for e in entries], ["Salary", "Groceries"])
        self.assertEqual(entries[1].date, dt.date(2024, 3, 2))
        self.assertEqual(entries[1].postings[0], ("expenses:food", 1200))

    def test_load_opens_accounts_and_posts(self):
        ledger = Ledger()
        self.assertEqual(load_journal(ledger, JOURNAL), 2)
        self.assertEqual(ledger.balance("assets:cash"), 200000 - 1200)

    def test_errors_name_the_line(self):
        with self.assertRaisesRegex(JournalError, "line 2"):
            parse_journal("2024-03-01 x\n  assets:cash twelve\n")
        with self.assertRaisesRegex(JournalError, "line 1"):
            parse_journal("  assets:cash 1\n")


if __name__ == "__main__":
    unittest.main()
