"""Hidden oracle for task bug-negative-amounts (never shown to the agent).

The reported symptom is "-12.50"; the root cause also breaks every amount
between -1 and 0 ("-0.50" parses as +0.50), which a fix aimed only at the
report does not cover. Run as a script from the workspace root, read-only.
"""

import os
import sys
import unittest

# Appended, never prepended: the workspace is candidate code and must not
# shadow the standard library this oracle relies on.
WORKSPACE = os.path.realpath(os.getcwd())
sys.path.append(WORKSPACE)

from ledger import money  # noqa: E402
from ledger.accounts import Ledger  # noqa: E402
from ledger.journal import load_journal  # noqa: E402


class OracleTarget(unittest.TestCase):
    def test_ledger_is_imported_from_the_workspace(self):
        self.assertTrue(os.path.realpath(money.__file__).startswith(WORKSPACE + os.sep))


class NegativeAmountOracle(unittest.TestCase):
    def test_negative_amounts_keep_their_cents(self):
        cases = {"-12.50": -1250, "-12.5": -1250, "-7": -700, "-1,234.56": -123456, "-100.01": -10001}
        for text, cents in cases.items():
            with self.subTest(text=text):
                self.assertEqual(money.parse_amount(text), cents)

    def test_amounts_between_minus_one_and_zero(self):
        cases = {"-0.50": -50, "-0.05": -5, "-0.5": -50, "-0.99": -99, "-0.00": 0}
        for text, cents in cases.items():
            with self.subTest(text=text):
                self.assertEqual(money.parse_amount(text), cents)

    def test_positive_amounts_are_unchanged(self):
        cases = {"+3.25": 325, "0.50": 50, " 12.50 ": 1250, "1,000": 100000}
        for text, cents in cases.items():
            with self.subTest(text=text):
                self.assertEqual(money.parse_amount(text), cents)

    def test_garbage_is_still_rejected(self):
        for text in ("-", "+", "-.5", "--1.00", "+-1", "- 1", "1.-5", "-1.234", "-x"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                money.parse_amount(text)

    def test_format_then_parse_round_trips(self):
        for cents in range(-1050, 1051, 7):
            with self.subTest(cents=cents):
                self.assertEqual(money.parse_amount(money.format_amount(cents)), cents)

    def test_journal_with_a_small_refund_balances(self):
        ledger = Ledger()
        load_journal(
            ledger,
            "2024-05-01 Fee refund\n  assets:bank  0.50\n  expenses:fees  -0.50\n"
            "2024-05-02 Deposit return\n  assets:bank  -12.50\n  assets:deposit  12.50\n",
        )
        self.assertEqual(ledger.balance("assets:bank"), -1200)
        self.assertEqual(ledger.balance("expenses:fees"), -50)


if __name__ == "__main__":
    unittest.main()
