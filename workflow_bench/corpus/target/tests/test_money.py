import unittest

from ledger.money import format_amount, parse_amount


class ParseAmountTest(unittest.TestCase):
    def test_whole_and_fractional_amounts(self):
        self.assertEqual(parse_amount("12"), 1200)
        self.assertEqual(parse_amount("12.5"), 1250)
        self.assertEqual(parse_amount("0.07"), 7)

    def test_thousands_separators_are_ignored(self):
        self.assertEqual(parse_amount("1,234.50"), 123450)

    def test_negative_whole_amount(self):
        self.assertEqual(parse_amount("-3"), -300)

    def test_rejects_garbage(self):
        for text in ("", "abc", "1.234", "1.2.3", "--5"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                parse_amount(text)


class FormatAmountTest(unittest.TestCase):
    def test_two_decimals(self):
        self.assertEqual(format_amount(1250), "12.50")
        self.assertEqual(format_amount(7), "0.07")

    def test_negative(self):
        self.assertEqual(format_amount(-1250), "-12.50")
        self.assertEqual(format_amount(-5), "-0.05")


if __name__ == "__main__":
    unittest.main()
