"""Hidden oracle for task cross-module-report-cutoff (never shown to the agent).

The change spans three modules: transactions must carry dates (accounts),
journals must hand their dates over (journal), and the report must cut off
at a date, inclusively (report). A journal-loaded ledger exercises all three
at once. Amounts are whole units on purpose: negative cents are the subject
of another task and must not decide this one. Run as a script from the
workspace root, read-only.
"""

import datetime as dt
import os
import sys
import unittest

# Appended, never prepended: the workspace is candidate code and must not
# shadow the standard library this oracle relies on.
WORKSPACE = os.path.realpath(os.getcwd())
sys.path.append(WORKSPACE)

from ledger import report  # noqa: E402
from ledger.accounts import Ledger  # noqa: E402
from ledger.journal import load_journal  # noqa: E402

JOURNAL = """\
2024-01-31 Salary
  assets:bank      4,000
  income:salary   -4,000

2024-02-01 Rent
  expenses:rent    1,500
  assets:bank     -1,500

2024-02-29 Groceries
  expenses:food      80
  assets:bank       -80
"""


def journal_ledger():
    ledger = Ledger()
    load_journal(ledger, JOURNAL)
    return ledger


def balances(text):
    return {name: amount for name, amount in (line.split() for line in text.splitlines())}


class OracleTarget(unittest.TestCase):
    def test_ledger_is_imported_from_the_workspace(self):
        self.assertTrue(os.path.realpath(report.__file__).startswith(WORKSPACE + os.sep))


class CutoffOracle(unittest.TestCase):
    def test_journal_dates_reach_the_report(self):
        got = balances(report.balance_report(journal_ledger(), until=dt.date(2024, 1, 31)))
        self.assertEqual(got["assets:bank"], "4000.00")
        self.assertEqual(got["expenses:rent"], "0.00")
        self.assertEqual(got["total"], "0.00")

    def test_cutoff_day_itself_is_included(self):
        got = balances(report.balance_report(journal_ledger(), until=dt.date(2024, 2, 29)))
        self.assertEqual(got["expenses:food"], "80.00")
        self.assertEqual(got["assets:bank"], "2420.00")

    def test_before_the_first_transaction_everything_is_zero(self):
        got = balances(report.balance_report(journal_ledger(), until=dt.date(2023, 12, 31)))
        self.assertEqual(set(got.values()), {"0.00"})
        self.assertEqual(len(got), 5)

    def test_without_cutoff_the_report_is_unchanged(self):
        ledger = journal_ledger()
        self.assertEqual(report.balance_report(ledger, until=None), report.balance_report(ledger))
        self.assertEqual(balances(report.balance_report(ledger))["assets:bank"], "2420.00")

    def test_post_stores_the_date_on_the_transaction(self):
        ledger = journal_ledger()
        self.assertEqual([t.date for t in ledger.transactions][1], dt.date(2024, 2, 1))
        ledger.open("assets:cash")
        posted = ledger.post("atm", [("assets:cash", 100), ("assets:bank", -100)], date=dt.date(2024, 3, 1))
        self.assertEqual(posted.date, dt.date(2024, 3, 1))
        self.assertEqual(ledger.balance("assets:cash", until=dt.date(2024, 2, 29)), 0)
        self.assertEqual(ledger.balance("assets:cash", until=dt.date(2024, 3, 1)), 100)

    def test_undated_transactions_count_only_without_cutoff(self):
        ledger = journal_ledger()
        ledger.open("assets:cash")
        ledger.post("found", [("assets:cash", 700), ("income:salary", -700)])
        self.assertEqual(ledger.balance("assets:cash"), 700)
        self.assertEqual(ledger.balance("assets:cash", until=dt.date(2099, 1, 1)), 0)

    def test_until_is_keyword_only(self):
        with self.assertRaises(TypeError):
            report.balance_report(journal_ledger(), dt.date(2024, 1, 31))


if __name__ == "__main__":
    unittest.main()
