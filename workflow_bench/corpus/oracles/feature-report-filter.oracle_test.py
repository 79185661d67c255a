"""Hidden oracle for task feature-report-filter (never shown to the agent).

The investigation part: the report's total line is computed separately from
the account lines, so filtering the lines alone leaves a total over every
account (always 0.00). Run as a script from the workspace root, read-only.
"""

import os
import sys
import unittest

# Appended, never prepended: the workspace is candidate code and must not
# shadow the standard library this oracle relies on.
WORKSPACE = os.path.realpath(os.getcwd())
sys.path.append(WORKSPACE)

from ledger import report  # noqa: E402
from ledger.accounts import Ledger  # noqa: E402


def sample_ledger():
    ledger = Ledger()
    for name in ("assets:bank", "assets:cash", "expenses:food", "expenses:rent", "income:salary"):
        ledger.open(name)
    ledger.post("salary", [("assets:bank", 400000), ("income:salary", -400000)])
    ledger.post("withdrawal", [("assets:cash", 20000), ("assets:bank", -20000)])
    ledger.post("rent", [("expenses:rent", 150000), ("assets:bank", -150000)])
    ledger.post("groceries", [("expenses:food", 4599), ("assets:cash", -4599)])
    return ledger


def rows(text):
    return [tuple(line.split()) for line in text.splitlines()]


class OracleTarget(unittest.TestCase):
    def test_ledger_is_imported_from_the_workspace(self):
        self.assertTrue(os.path.realpath(report.__file__).startswith(WORKSPACE + os.sep))


class PrefixFilterOracle(unittest.TestCase):
    def test_total_sums_only_the_shown_accounts(self):
        self.assertEqual(
            rows(report.balance_report(sample_ledger(), prefix="assets:")),
            [("assets:bank", "2300.00"), ("assets:cash", "154.01"), ("total", "2454.01")],
        )

    def test_prefix_is_case_insensitive(self):
        self.assertEqual(
            rows(report.balance_report(sample_ledger(), prefix="EXPENSES:")),
            [("expenses:food", "45.99"), ("expenses:rent", "1500.00"), ("total", "1545.99")],
        )

    def test_prefix_matches_the_start_of_the_name_only(self):
        self.assertEqual(rows(report.balance_report(sample_ledger(), prefix="cash")), [("total", "0.00")])

    def test_no_match_gives_only_a_zero_total(self):
        self.assertEqual(
            rows(report.balance_report(sample_ledger(), prefix="liabilities:")), [("total", "0.00")]
        )

    def test_without_prefix_the_report_is_unchanged(self):
        ledger = sample_ledger()
        full = report.balance_report(ledger)
        self.assertEqual(report.balance_report(ledger, prefix=None), full)
        self.assertEqual(rows(full)[-1], ("total", "0.00"))
        self.assertEqual(len(rows(full)), 6)

    def test_prefix_is_keyword_only(self):
        with self.assertRaises(TypeError):
            report.balance_report(sample_ledger(), "assets:")


if __name__ == "__main__":
    unittest.main()
