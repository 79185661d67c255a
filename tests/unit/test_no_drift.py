"""No drift between the places that must agree, and no pointer to something that is gone.

Some values must be spelled twice: the judge kit runs inside the sandbox as standalone scripts
(Python and JavaScript) that cannot import the package, and a few constants pair a module with a
file it cannot import. Every such pair is declared in ``SYNC`` below and compared here, read from
the source (module-level assignments, evaluated as constant expressions; ``const`` lines of the
JavaScript kit). Every "keep in sync" comment in the package must sit on a constant of ``SYNC`` or
name the test that compares its pair: a new pair without a check fails. And every path a comment or
docstring names (``judging/verdict.py``, ``kit/judge_runner.py``, ``tools/…``) must exist.
"""

from __future__ import annotations

import ast
import operator
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "workflow_bench"

# Each group: locations ("path::NAME", path from the package) whose values must be equal.
SYNC: tuple[tuple[str, ...], ...] = (
    (
        "judging/kit/judge_runner.py::DECOY_SUFFIX",
        "judging/kit/wfbench_result_channel.py::DECOY_SUFFIX",
        "judging/kit/wfbench_result_channel.cjs::DECOY_SUFFIX",
    ),
    (
        "judging/kit/judge_runner.py::MAX_ID_CHARS",
        "judging/verdict.py::MAX_ID_CHARS",
        "taskspec/expected_tests.py::MAX_ID_CHARS",
    ),
    ("judging/kit/judge_runner.py::_RANK", "judging/verdict.py::_RANK", "judging/junit.py::_RANK"),
    (
        "judging/kit/judge_runner.py::MAX_JUNIT_FILE_BYTES",
        "judging/outcome_report.py::MAX_JUNIT_FILE_BYTES",
        "frameworks/kit/maven_surefire.py::MAX_JUNIT_FILE_BYTES",
    ),
    ("judging/kit/judge_runner.py::MAX_TESTS", "judging/junit.py::MAX_TESTCASES"),
    ("judging/kit/judge_runner.py::MAX_TAMPERED", "judging/outcome_report.py::MAX_TAMPERED"),
    ("judging/kit/review_check.py::MAX_ARTIFACT_BYTES", "review/contract.py::MAX_ARTIFACT_BYTES"),
    ("tasks/check.py::SETUP_TIMEOUT_S", "cells/run.py::SETUP_TIMEOUT_S"),
    ("sandbox/_environment.py::RUNTIME_BIN", "runtimes/_store.py::BIN_DIR"),
    ("canary/attacks.py::HISTORY_CANARY", "corpus/build_target.py::HISTORY_CANARY"),
    ("input_files.py::_CONTROL", "redaction.py::_CONTROL"),
    ("sandbox/_bwrap.py::USERNS_FD", "sandbox/_limits.py::USERNS_FD"),
    ("sandbox/_userns.py::SANDBOX_UID", "sandbox/_environment.py::SANDBOX_UID"),
    ("tasks/fixdiff.py::MAX_PATCH_BYTES", "taskspec/schema.py::MAX_REFERENCE_PATCH_BYTES"),
    ("tasks/fixdiff.py::MAX_FILE_BYTES", "taskspec/oracles.py::MAX_ORACLE_FILE_BYTES"),
    ("canary/attacks_limits.py::RUN_LIMIT", "sandbox/_environment.py::RUN_SIZE_BYTES"),
    ("canary/attacks_limits.py::SHM_LIMIT", "sandbox/_environment.py::SHM_SIZE_BYTES"),
)
_BINOPS = {ast.Mult: operator.mul, ast.Add: operator.add, ast.Sub: operator.sub, ast.Pow: operator.pow}
_JS_CONST = r"^const {name} = (['\"])(.*?)\1;"
_SYNC_COMMENT = re.compile(r"keep in sync", re.I)
_NAMED_TEST = re.compile(r"tests/[\w/]+\.py")
_PATH = re.compile(r"(?<![\w./-])((?:[a-z_]+/)+[a-z_][\w-]*\.(?:py|cjs|mjs|json|yaml|toml))\b")


def _constant(node: ast.expr, names: dict[str, ast.expr]) -> object:
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_constant(node.left, names), _constant(node.right, names))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile":
        return ("re.compile", *(_constant(arg, names) for arg in node.args))
    if isinstance(node, ast.Name) and node.id in names:  # e.g. ``4 * MIB``
        return _constant(names[node.id], names)
    return ast.literal_eval(node)


def _assignments(path: Path) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    found.update(
                        {
                            t.id: v
                            for t, v in zip(target.elts, node.value.elts, strict=True)
                            if isinstance(t, ast.Name)
                        }
                    )
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
    return found


def value_at(location: str) -> object:
    relative, _, name = location.partition("::")
    path = PACKAGE / relative
    if path.suffix in (".cjs", ".mjs", ".js"):
        match = re.search(_JS_CONST.format(name=re.escape(name)), path.read_text(encoding="utf-8"), re.M)
        assert match, f"{location}: no `const {name} = '…';` line"
        return match.group(2)
    assignments = _assignments(path)
    assert name in assignments, f"{location}: no module-level assignment of {name}"
    return _constant(assignments[name], assignments)


@pytest.mark.parametrize("group", SYNC, ids=lambda group: group[0])
def test_every_synced_pair_agrees(group):
    values = {location: value_at(location) for location in group}
    assert len({repr(v) for v in values.values()}) == 1, values


def test_a_changed_copy_is_caught(tmp_path, monkeypatch):
    """Negative control: the comparison sees a copy that drifted."""
    (tmp_path / "judging" / "kit").mkdir(parents=True)
    (tmp_path / "judging" / "kit" / "a.py").write_text("MAX_ID_CHARS = 1000\n")
    (tmp_path / "judging" / "b.py").write_text("MAX_ID_CHARS = 999 + 0\n")
    (tmp_path / "judging" / "kit" / "c.cjs").write_text("const DECOY_SUFFIX = '.decoy2';\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert value_at("judging/kit/a.py::MAX_ID_CHARS") != value_at("judging/b.py::MAX_ID_CHARS")
    assert value_at("judging/kit/c.cjs::DECOY_SUFFIX") == ".decoy2"


def _sync_comments() -> list[tuple[Path, int, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".cjs", ".mjs") or "__pycache__" in path.parts:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        found += [(path, number, lines) for number, line in enumerate(lines) if _SYNC_COMMENT.search(line)]
    return found


def _constant_named_near(lines: list[str], number: int) -> str | None:
    """The name a comment at ``number`` is about: assigned on its line or on the next code line."""
    for line in lines[number : number + 4]:
        match = re.match(r"\s*(?:const\s+)?([A-Za-z_][\w, ]*?)\s*(?::[^=]+)?=", line)
        if match and not line.lstrip().startswith("#"):
            return match.group(1).split(",")[0].strip()
    return None


def test_every_keep_in_sync_comment_is_checked():
    declared = {location for group in SYNC for location in group}
    unchecked = []
    for path, number, lines in _sync_comments():
        near = " ".join(lines[max(0, number - 2) : number + 3])
        if any((ROOT / named).is_file() for named in _NAMED_TEST.findall(near)):
            continue  # it names the test that compares it
        name = _constant_named_near(lines, number)
        if f"{path.relative_to(PACKAGE)}::{name}" not in declared:
            unchecked.append(f"{path.relative_to(ROOT)}:{number + 1}: {lines[number].strip()}")
    assert not unchecked, (
        "a 'keep in sync' pair nothing compares (add it to SYNC or name its test):\n" + "\n".join(unchecked)
    )


def _named_paths() -> list[tuple[Path, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        for token in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(token, ast.Constant)
                and isinstance(token.value, str)
                and token.value.count("\n") > 0
            ):
                found += [(path, named) for named in _PATH.findall(token.value)]  # docstrings
        for line in path.read_text(encoding="utf-8").splitlines():
            if "#" in line:
                found += [(path, named) for named in _PATH.findall(line.split("#", 1)[1])]
    return found


# Paths of a task's repository (the demo corpus's ``ledger`` package) or examples, not of this one.
FOREIGN_PATHS = re.compile(r"^(ledger/|tests/test_x\.py$)")


def _exists(named: str, source: Path) -> bool:
    if FOREIGN_PATHS.match(named):
        return True
    bases = [ROOT, PACKAGE, *source.parents]
    return any((base / named).exists() for base in bases if ROOT in (base, *base.parents))


def test_no_comment_or_docstring_names_a_missing_file():
    missing = sorted(
        {f"{p.relative_to(ROOT)}: {named}" for p, named in _named_paths() if not _exists(named, p)}
    )
    assert not missing, "comments or docstrings name files that do not exist:\n" + "\n".join(missing)


# ── pairs checked by value where one side is not a Python constant ──────────────────────


def test_oracle_root_variable_is_the_one_the_task_files_use():
    from workflow_bench.judging.judge import ORACLE_ENV_VAR

    for tasks in ("tasks.scenarios.yaml", "tasks.review.yaml"):
        text = (ROOT / tasks).read_text(encoding="utf-8")
        named = set(re.findall(r"WORKFLOW_BENCH_ORACLE\w*", text))
        assert named <= {ORACLE_ENV_VAR}, (tasks, named)
    assert ORACLE_ENV_VAR in (ROOT / "tasks.scenarios.yaml").read_text(encoding="utf-8")


def test_review_output_path_is_the_one_the_review_tasks_read():
    from workflow_bench.review.contract import REVIEW_OUTPUT_DIR

    assert REVIEW_OUTPUT_DIR in (ROOT / "tasks.review.yaml").read_text(encoding="utf-8")


def test_row_usage_fields_are_usage_fields():
    from workflow_bench.rows.model import Usage
    from workflow_bench.usage import USAGE_FIELDS

    assert tuple(Usage.model_fields) == tuple(USAGE_FIELDS)


def test_host_backend_name_is_its_sandbox_kind():
    from workflow_bench.sandbox import SandboxKind
    from workflow_bench.sandbox._host import BACKEND_NAME

    assert SandboxKind.HOST_UNSAFE.value == BACKEND_NAME


def test_unsafe_host_docs_name_the_flag_and_every_arm():
    from workflow_bench.sandbox._host import UNSAFE_HOST_ARMS

    docs = "\n".join(
        p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    )
    start = docs.index("**Without bubblewrap (`--unsafe-no-bwrap`")
    section = docs[start : start + 2000]
    assert all(arm in section for arm in UNSAFE_HOST_ARMS), section[:300]


def test_relay_socket_name_is_the_sandbox_model_socket():
    from workflow_bench.sandbox._environment import MODEL_SOCKET
    from workflow_bench.workspace.paths import SOCKET_NAME

    assert Path(MODEL_SOCKET).name == SOCKET_NAME


def test_every_staging_name_is_masked_in_test_ids():
    """verdict._HARNESS_PATH must match each random staging directory judge and outcome_report mount."""
    from workflow_bench.judging.verdict import _HARNESS_PATH

    staged = set()
    for module in ("judging/judge.py", "judging/outcome_report.py"):
        staged |= set(re.findall(r"/\.(wfbench-[a-z]+)-\{", (PACKAGE / module).read_text(encoding="utf-8")))
    assert staged, "no staging names found"
    for name in staged:
        assert _HARNESS_PATH.fullmatch(f".{name}-0123456789abcdef"), name


_CONFLICT_MARKER = re.compile(r"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def conflict_markers(paths: list[Path]) -> list[str]:
    """``path:line`` of every merge-conflict marker left in ``paths`` (text files only)."""
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for match in _CONFLICT_MARKER.finditer(text):
            found.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}")
    return found


def _tracked_text_files() -> list[Path]:
    suffixes = {".py", ".md", ".yml", ".yaml", ".toml", ".json", ".cjs", ".mjs", ".js", ".css", ".txt"}
    tops = ("workflow_bench", "docs", "tests", "tools", "benchmarks", ".ci")
    files = [p for top in tops for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix in suffixes]
    return [*files, ROOT / "README.md", ROOT / "mkdocs.yml", ROOT / "dev"]


def test_no_merge_conflict_marker_is_left_in_the_tree():
    assert conflict_markers(_tracked_text_files()) == []


def test_a_left_conflict_marker_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("one\n<<<<<<< HEAD\ntwo\n=======\nthree\n>>>>>>> branch\n")
    assert conflict_markers([page]) == ["page.md:2", "page.md:4", "page.md:6"]


# --- the derived documents' JSON Schemas (tools/derived_schemas.py) -------------------------------


def _derived_schemas():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "tools" / "derived_schemas.py"
    spec = importlib.util.spec_from_file_location("derived_schemas", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_derived_document_schemas_are_current():
    generator = _derived_schemas()
    root = Path(__file__).resolve().parents[2]
    for relative, (model, schema_id) in generator.SCHEMAS.items():
        assert (root / relative).read_text(encoding="utf-8") == generator.schema_text(model, schema_id), (
            f"{relative} is stale: run python tools/derived_schemas.py"
        )


def test_every_derived_field_has_a_meaning():
    from pydantic import BaseModel

    def models(model: type[BaseModel]):
        yield model
        for info in model.model_fields.values():
            for arg in _nested(info.annotation):
                yield from models(arg)

    for model, _ in _derived_schemas().SCHEMAS.values():
        for each in models(model):
            assert each.model_config.get("frozen") and each.model_config.get("extra") == "forbid", each
            for name, info in each.model_fields.items():
                assert info.description, f"{each.__name__}.{name} has no description"


def _nested(annotation):
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _nested(arg)]
