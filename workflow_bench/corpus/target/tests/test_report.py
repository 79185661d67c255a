import unittest

from ledger.accounts import Ledger
from ledger.report import balance_report


class BalanceReportTest(unittest.TestCase):
    def test_lists_every_account_then_the_total(self):
        ledger = Ledger()
        ledger.open("assets:cash")
        ledger.open("expenses:food")
        ledger.post("lunch", [("expenses:food", 1250), ("assets:cash", -1250)])
        lines = balance_report(ledger).splitlines()
        self.assertEqual([line.split()[0] for line in lines], ["assets:cash", "expenses:food", "total"])
        self.assertEqual(lines[0].split()[1], "-12.50")
        self.assertEqual(lines[-1].split()[1], "0.00")

    def test_empty_ledger(self):
        self.assertEqual(balance_report(Ledger()).split(), ["total", "0.00"])


if __name__ == "__main__":
    unittest.main()
