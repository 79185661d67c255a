"""Hidden oracle for task trivial-amount-grouping (never shown to the agent).

Beyond the authored tests: negative and boundary values, grouping being
keyword-only and off by default, and grouped text parsing back to the same
cents. Run as a script from the workspace root, with the workspace read-only.
"""

import os
import sys
import unittest

# Appended, never prepended: the workspace is candidate code and must not
# shadow the standard library this oracle relies on.
WORKSPACE = os.path.realpath(os.getcwd())
sys.path.append(WORKSPACE)

from ledger import money  # noqa: E402


class OracleTarget(unittest.TestCase):
    def test_ledger_is_imported_from_the_workspace(self):
        self.assertTrue(os.path.realpath(money.__file__).startswith(WORKSPACE + os.sep))


class GroupingOracle(unittest.TestCase):
    def test_grouped_positive_amounts(self):
        cases = {
            0: "0.00",
            5: "0.05",
            99999: "999.99",
            100000: "1,000.00",
            123456789: "1,234,567.89",
            100000000000: "1,000,000,000.00",
        }
        for cents, text in cases.items():
            with self.subTest(cents=cents):
                self.assertEqual(money.format_amount(cents, grouping=True), text)

    def test_grouped_negative_amounts(self):
        cases = {-5: "-0.05", -99999: "-999.99", -100000: "-1,000.00", -123456789: "-1,234,567.89"}
        for cents, text in cases.items():
            with self.subTest(cents=cents):
                self.assertEqual(money.format_amount(cents, grouping=True), text)

    def test_default_and_explicit_false_are_ungrouped(self):
        self.assertEqual(money.format_amount(123456789), "1234567.89")
        self.assertEqual(money.format_amount(-123456789, grouping=False), "-1234567.89")

    def test_grouping_is_keyword_only(self):
        with self.assertRaises(TypeError):
            money.format_amount(100000, True)

    def test_grouped_text_parses_back(self):
        for cents in (100000, 123456789, 100000000000):
            with self.subTest(cents=cents):
                self.assertEqual(money.parse_amount(money.format_amount(cents, grouping=True)), cents)


if __name__ == "__main__":
    unittest.main()
