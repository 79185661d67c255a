"""Tasks in languages whose toolchain the harness provisions: ``tasks new`` alone, end to end.

A standard-library Go module with an upstream-style fix commit (the fix's code and a new
``_test.go`` beside it): ``tasks new`` with no option beyond where to write (and the prompt)
detects ``go test``, gives the task the ``go`` runtime (Debian's golang package, fetched once into
the cache: nothing installed on the host), self-checks it (base oracle fails, reference passes,
sentinels as planned) and locks it; the oracle agent then resolves the task and the no-op agent
does not, and every row records the go runtime.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fix_tasks import sanity_rows, task_from_fix

pytestmark = pytest.mark.e2e
PROMPT = "Clamp returns the lower bound for values above the range; it should return the upper bound.\n"
GO_BASE = {
    "go.mod": "module example.com/calc\n\ngo 1.19\n",
    "calc/calc.go": (
        "package calc\n\n// Clamp limits v to [lo, hi].\nfunc Clamp(v, lo, hi int) int {\n"
        "\tif v < lo {\n\t\treturn lo\n\t}\n\tif v > hi {\n\t\treturn lo\n\t}\n\treturn v\n}\n"
    ),
    "calc/calc_test.go": (
        'package calc\n\nimport "testing"\n\nfunc TestClampLow(t *testing.T) {\n'
        '\tif got := Clamp(-5, 0, 10); got != 0 {\n\t\tt.Fatalf("got %d", got)\n\t}\n}\n'
    ),
}
GO_FIX = {
    "calc/calc.go": GO_BASE["calc/calc.go"].replace("v > hi {\n\t\treturn lo", "v > hi {\n\t\treturn hi"),
    "calc/clamp_high_test.go": (
        'package calc\n\nimport "testing"\n\nfunc TestClampHigh(t *testing.T) {\n'
        '\tif got := Clamp(50, 0, 10); got != 10 {\n\t\tt.Fatalf("got %d, want 10", got)\n\t}\n}\n'
    ),
}


RUST_BASE = {
    "Cargo.toml": '[package]\nname = "clampy"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    "src/lib.rs": "pub mod clamp;\n",
    "src/clamp.rs": (
        "/// Limits v to [lo, hi].\npub fn clamp(v: i32, lo: i32, hi: i32) -> i32 {\n"
        "    if v < lo {\n        lo\n    } else if v > hi {\n        lo\n    } else {\n        v\n    }\n}\n"
    ),
    "tests/clamp.rs": (
        "use clampy::clamp::clamp;\n\n#[test]\nfn low() {\n    assert_eq!(clamp(-5, 0, 10), 0);\n}\n"
    ),
}
RUST_FIX = {
    "src/clamp.rs": RUST_BASE["src/clamp.rs"].replace("v > hi {\n        lo", "v > hi {\n        hi"),
    "tests/clamp_high.rs": (
        "use clampy::clamp::clamp;\n\n#[test]\nfn high() {\n    assert_eq!(clamp(50, 0, 10), 10);\n}\n"
    ),
}


@pytest.fixture(scope="module")
def go_task(tmp_path_factory, bwrap_bin) -> Path:
    return task_from_fix(
        tmp_path_factory.mktemp("go"), "calc-clamp", "calc-clamp", GO_BASE, GO_FIX, prompt=PROMPT
    )


@pytest.fixture(scope="module")
def rust_task(tmp_path_factory, bwrap_bin) -> Path:
    root = tmp_path_factory.mktemp("rust")
    return task_from_fix(root, "clampy-clamp", "clampy-clamp", RUST_BASE, RUST_FIX, prompt=PROMPT)


def test_tasks_new_writes_a_go_task_with_its_runtime_and_sealed_lock(go_task) -> None:
    (task,) = yaml.safe_load(go_task.read_text())["tasks"]
    assert task["runtimes"] == {"go": "1.19"}
    assert "$WORKFLOW_BENCH_GO_TEST" in task["verify"] and task["verify"].endswith(" ./calc")
    assert [f["target"] for f in task["oracle"]["files"]] == ["calc/clamp_high_test.go"]
    entry = json.loads(go_task.with_name("tasks.lock.json").read_text())["tasks"]["calc-clamp"]
    assert entry["oracle"]["passed"] == [
        "example.com/calc/calc::TestClampHigh",
        "example.com/calc/calc::TestClampLow",
    ]
    assert entry["oracle_sealed"] == ["calc/clamp_high_test.go"]
    (runtime,) = entry["subject"]["runtimes"]
    assert runtime["name"] == "go" and runtime["version"] == "1.19" and len(runtime["digest"]) == 64


def test_the_oracle_agent_resolves_the_go_task_and_the_noop_agent_does_not(
    go_task, tmp_path, claude_bin, private_tmpdir, capsys
) -> None:
    solved, untouched = sanity_rows(go_task, tmp_path, capsys)
    assert solved["oracle_sealed"] == "sealed" and solved["oracle_tests_passed"] == 2
    assert "example.com/calc/calc::TestClampHigh" in untouched["oracle_output"]
    assert (
        [r["name"] for r in solved["task_runtimes"]]
        == [r["name"] for r in untouched["task_runtimes"]]
        == ["go"]
    )


def test_tasks_new_writes_a_rust_task_with_its_runtime_and_sealed_lock(rust_task) -> None:
    (task,) = yaml.safe_load(rust_task.read_text())["tasks"]
    assert task["runtimes"] == {"rust": "1.63"}
    assert "$WORKFLOW_BENCH_CARGO_TEST" in task["verify"] and task["verify"].endswith(" clamp")
    assert task["oracle"]["command"].endswith('"$WORKFLOW_BENCH_CARGO_TEST" clamp_high')
    entry = json.loads(rust_task.with_name("tasks.lock.json").read_text())["tasks"]["clampy-clamp"]
    assert entry["oracle"]["passed"] == ["clamp_high::high"] and entry["verify"]["passed"] == ["clamp::low"]
    assert entry["oracle_sealed"] == ["tests/clamp_high.rs"]
    assert [r["name"] for r in entry["subject"]["runtimes"]] == ["rust"]


def test_the_oracle_agent_resolves_the_rust_task_and_the_noop_agent_does_not(
    rust_task, tmp_path, claude_bin, private_tmpdir, capsys
) -> None:
    solved, untouched = sanity_rows(rust_task, tmp_path, capsys)
    assert solved["oracle_sealed"] == "sealed" and [r["name"] for r in solved["task_runtimes"]] == ["rust"]
    assert "clamp_high::high" in untouched["oracle_output"]
