"""`./dev mutation`'s own rules: what counts as prose or an equivalent, and a broken harness reports no kill.

The command decides the score the project is judged by, so its predicates get controls too:
a survivor that is not prose or a listed equivalent is scored, and a fork-server pool whose
unmutated tests fail refuses to report verdicts instead of calling every mutant killed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

import mutation  # noqa: E402
from mutation_pool import run_pool  # noqa: E402

pytestmark = pytest.mark.component


def _diff(before: str, after: str) -> str:
    return f"--- a\n+++ b\n@@ -1 +1 @@\n-{before}\n+{after}\n"


@pytest.mark.parametrize(
    ("before", "after", "prose"),
    [
        ('raise ValueError("no such task")', 'raise ValueError("XXno such taskXX")', True),
        ('raise ValueError("no such task")', 'raise ValueError("NO SUCH TASK")', True),
        ('raise ValueError("no such task")', "raise ValueError(None)", False),  # None is scored
        ('kind = "oracle-timeout"', 'kind = "XXoracle-timeoutXX"', False),  # a key, no space
        ('x = f("a b", 1)', 'x = f("XXa bXX", 2)', False),  # two edits
        ("x = 1", "x = 2", False),
    ],
)
def test_only_a_cosmetic_edit_of_a_spaced_string_is_prose(before, after, prose):
    assert mutation._prose_only(before, after) is prose


def test_a_listed_equivalent_is_excluded_and_anything_else_is_a_survivor():
    listed = [{"module": "m.py", "original": "a = b", "mutant": "a = c", "reason": "why"}]
    tally = mutation.Tally()
    mutation._record(tally, "m.py", "k1", _diff("a = b", "a = c"), "survived", listed)
    mutation._record(tally, "other.py", "k2", _diff("a = b", "a = c"), "survived", listed)  # other module
    mutation._record(tally, "m.py", "k3", _diff("a = b", "a = d"), "survived", listed)  # other edit
    mutation._record(tally, "m.py", "k4", _diff("a = b", "a = d"), "timeout", listed)
    assert [reason for _, reason in tally.equivalent] == ["why"]
    assert [key for key, _ in tally.survivors] == ["k2", "k3"]
    assert tally.killed == 1 and tally.total == 3 and tally.score == pytest.approx(33.3)


def test_mutmut_keys_name_their_function():
    assert mutation._function_of("workflow_bench.x.x_total__mutmut_3") == "total"
    assert mutation._function_of("workflow_bench.x.xǁArmǁscore__mutmut_12") == "score"


def test_mutmut_status_line_is_read_for_progress():
    found = mutation._MUTMUT_COUNT.findall("\r⠋ 12/5780  🎉 10 🫥 0\r⠙ 13/5780  🎉 11 🫥 0")
    assert found[-1] == ("13", "5780")


def _tree(tmp_path: Path, *, passing: bool) -> Path:
    tree = tmp_path / ("good" if passing else "bad")
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "rule.py").write_text("def limit():\n    return 3\n")
    (tree / "test_rule.py").write_text(
        f"from pkg.rule import limit\n\ndef test_limit():\n    assert limit() == {3 if passing else 4}\n"
    )
    return tree


def test_the_pool_kills_a_real_mutant_and_lets_the_original_survive(tmp_path):
    tree = _tree(tmp_path, passing=True)
    mutant = {"path": "pkg/rule.py", "source": "def limit():\n    return 4\n", "tests": ["test_rule.py"]}
    same = {"path": "pkg/rule.py", "source": "def limit():\n    return 3\n", "tests": ["test_rule.py"]}
    assert run_pool(tree, [mutant, same], jobs=1, label="test") == ["killed", "survived"]
    assert (tree / "pkg" / "rule.py").read_text() == "def limit():\n    return 3\n"  # restored


def test_a_harness_whose_unmutated_tests_fail_reports_no_kill(tmp_path):
    tree = _tree(tmp_path, passing=False)
    mutant = {"path": "pkg/rule.py", "source": "def limit():\n    return 5\n", "tests": ["test_rule.py"]}
    with pytest.raises(SystemExit, match="the unmutated tests fail"):
        run_pool(tree, [mutant] * 3, jobs=2, label="test")
