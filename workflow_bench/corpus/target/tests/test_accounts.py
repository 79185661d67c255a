import unittest

from ledger.accounts import Ledger, LedgerError


def make_ledger():
    ledger = Ledger()
    for name in ("assets:cash", "expenses:food", "income:salary"):
        ledger.open(name)
    return ledger


class LedgerTest(unittest.TestCase):
    def test_balances_follow_postings(self):
        ledger = make_ledger()
        ledger.post("salary", [("assets:cash", 5000), ("income:salary", -5000)])
        ledger.post("lunch", [("expenses:food", 1250), ("assets:cash", -1250)])
        self.assertEqual(ledger.balance("assets:cash"), 3750)
        self.assertEqual(ledger.balance("expenses:food"), 1250)

    def test_unbalanced_transaction_is_rejected(self):
        ledger = make_ledger()
        with self.assertRaises(LedgerError):
            ledger.post("typo", [("expenses:food", 1250), ("assets:cash", -125)])
        self.assertEqual(ledger.transactions, [])

    def test_unknown_account_is_rejected(self):
        with self.assertRaises(LedgerError):
            make_ledger().post("x", [("expenses:rent", 100), ("assets:cash", -100)])

    def test_accounts_are_sorted_and_unique(self):
        ledger = make_ledger()
        self.assertEqual(ledger.accounts(), ["assets:cash", "expenses:food", "income:salary"])
        with self.assertRaises(LedgerError):
            ledger.open("assets:cash")


if __name__ == "__main__":
    unittest.main()
