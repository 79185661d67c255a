"""`./dev mutation [MODULE...]`: mutation score of the modules that compute what we report.

Contract: for every module in MODULES (or the ones named), mutate it and run the fast tests
mapped to it; print a per-module table, the diff of every surviving mutant, and as the LAST
line one JSON object `{"modules": {"<module path>": <score %>, ...}, "total": <score %>}`.
Score = killed / (mutants - listed equivalents). Exit 0 when every module is >= 95 %, else 1;
exit 2 on a bad module name or a red baseline.

Two mutators, because one alone has blind spots that would report false survivors:
- mutmut (pinned in the dev extra) mutates function and method bodies, runs each mutant in a
  worker forked after import, and runs only the mapped tests that reach the function;
- `mutation_ast` mutates what mutmut never touches (module-level tables, decorated functions).
  Every such mutant, and every mutmut survivor, is re-run in a FRESH interpreter, so a mutant
  that only acts at import time (a table built by a function at import) is not a false survivor.
Equivalent mutants are listed in tools/mutation-equivalents.toml with a one-line reason each
(matched by module, the changed lines before/after and optionally a nearby line);
they are excluded from the score and printed with their reasons.
Cosmetic mutants of prose are counted apart ("prose" column), not scored: mutmut's "XX"-wrapping
or upper/lower-casing of a string literal that contains a space (a message for a human, the
same rule `mutation_ast` uses). Replacing such a string with None, or any edit to a string
without a space (a key a rule compares against), stays scored.
All work happens in a private temporary copy of the tree; the checkout is never modified.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import mutation_ast
from mutation_pool import STARTED, Progress, run_pool

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS_FILE = ROOT / "tools" / "mutation-equivalents.toml"
THRESHOLD = 95.0

PROMOTION_TESTS = ("tests/unit/test_promotion_gate.py", "tests/unit/test_promotion_gate_rules.py")
WIRE_TESTS = (
    "tests/unit/test_wire.py",
    "tests/unit/test_wire_rules.py",
    "tests/unit/test_wire_sse.py",
    "tests/unit/test_wire_http.py",
    "tests/unit/test_wire_replies.py",
    "tests/unit/test_evidence.py",
    "tests/unit/test_evidence_outcomes.py",
    "tests/unit/test_evidence_threads.py",
    "tests/unit/test_evidence_skills.py",
    "tests/unit/test_evidence_edges.py",
    "tests/unit/test_evidence_compaction.py",
)
# module path -> the fast tests that pin it. Adding a module is one line. A module whose file
# does not exist (yet) is skipped with a note.
MODULES: dict[str, tuple[str, ...]] = {
    "workflow_bench/review/score.py": ("tests/unit/test_review.py", "tests/unit/test_aggregate.py"),
    "workflow_bench/review/contract.py": ("tests/unit/test_review.py", "tests/unit/test_review_contract.py"),
    "workflow_bench/review/labels.py": ("tests/unit/test_review.py", "tests/unit/test_review_labels.py"),
    "workflow_bench/reports/aggregate.py": ("tests/unit/test_aggregate.py", "tests/unit/test_report.py"),
    # (not test_report_columns.py: it renders from a copy of the package, which mutmut cannot trace)
    "workflow_bench/reports/columns.py": ("tests/unit/test_aggregate.py", "tests/unit/test_report.py"),
    "workflow_bench/usage.py": ("tests/unit/test_usage.py", "tests/unit/test_stream_usage.py"),
    "workflow_bench/reports/accounting.py": ("tests/unit/test_accounting.py",),
    "workflow_bench/cells/stream_usage.py": (
        "tests/unit/test_accounting.py",
        "tests/unit/test_stream_usage.py",
    ),
    "workflow_bench/providers/gateway/_usage.py": ("tests/unit/test_gateway_usage.py",),
    "workflow_bench/judging/judge.py": (
        "tests/unit/test_judge_expectations.py",
        "tests/component/test_judge.py",
        "tests/component/test_judge_verdicts.py",
    ),
    "workflow_bench/judging/outcomes.py": (
        "tests/unit/test_outcomes.py",
        "tests/unit/test_outcome_predicates.py",
    ),
    "workflow_bench/judging/verdict.py": ("tests/unit/test_verdict.py", "tests/unit/test_outcome_check.py"),
    "workflow_bench/judging/junit.py": ("tests/unit/test_junit.py", "tests/unit/test_outcome_check.py"),
    "workflow_bench/taskspec/expected_tests.py": ("tests/unit/test_expected_tests.py",),
    "workflow_bench/tasks/check_expected.py": ("tests/unit/test_check_expected.py",),
    "workflow_bench/judging/outcome_report.py": (
        "tests/unit/test_outcome_check.py",
        "tests/component/test_outcome_report.py",
        "tests/component/test_judge_verdicts.py",
    ),
    "workflow_bench/judging/attribution.py": (
        "tests/unit/test_attribution.py",
        "tests/unit/test_attribution_rules.py",
    ),
    "workflow_bench/workspace/patch.py": (
        "tests/component/test_patch_view_changes.py",
        "tests/component/test_patch_view.py",
        "tests/component/test_patch_view_host.py",
        "tests/component/test_patch_view_rules.py",
    ),
    "workflow_bench/workspace/snapshot.py": (
        "tests/component/test_overlay_clone.py",
        "tests/component/test_workspace.py",
        "tests/component/test_patch_view_changes.py",
    ),
    "workflow_bench/cells/evidence.py": WIRE_TESTS,
    "workflow_bench/relay/wire.py": WIRE_TESTS,
    "workflow_bench/reports/health.py": ("tests/unit/test_health.py", "tests/unit/test_health_lines.py"),
    "workflow_bench/promotion/policy.py": PROMOTION_TESTS,
    "workflow_bench/promotion/evidence.py": PROMOTION_TESTS,
    "workflow_bench/promotion/gate.py": PROMOTION_TESTS,
    "workflow_bench/reports/stats.py": (
        "tests/unit/test_stats_and_rerender.py",
        "tests/unit/test_stats_rules.py",
        "tests/unit/test_firing.py",
    ),
    # Issue 31: clean-room judging and regrade's input, verdict changes and their report.
    "workflow_bench/cells/cleanroom.py": ("tests/component/test_cleanroom.py",),
    "workflow_bench/regrade/source.py": ("tests/component/test_regrade_input.py",),
    "workflow_bench/regrade/write.py": ("tests/component/test_regrade_input.py",),
}


@dataclass
class Tally:
    killed: int = 0
    survivors: list[tuple[str, str]] = field(default_factory=list)  # (key, diff)
    equivalent: list[tuple[str, str]] = field(default_factory=list)  # (diff, reason)
    prose: int = 0  # cosmetic edits of a human-readable message; not scored

    @property
    def total(self) -> int:
        return self.killed + len(self.survivors)

    @property
    def score(self) -> float:
        return 100.0 if self.total == 0 else round(100.0 * self.killed / self.total, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "modules", nargs="*", metavar="MODULE", help="module paths (default: all in the table)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=2 * (os.cpu_count() or 1),
        help="parallel mutant runs (default: twice the cores; many mutants wait on a sandbox or a timeout)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary work tree")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        print(f"unknown module(s): {', '.join(unknown)}; known: {', '.join(MODULES)}", file=sys.stderr)
        return 2
    wanted = args.modules or list(MODULES)
    modules = {
        m: tuple(t for t in MODULES[m] if (ROOT / t).is_file()) for m in wanted if (ROOT / m).is_file()
    }
    for m in wanted:
        if m not in modules:
            print(f"note: {m} does not exist yet; skipped", file=sys.stderr)
    if not modules:
        return 2
    no_tests = [m for m, tests in modules.items() if not tests]
    equivalents = _load_equivalents()
    work = Path(tempfile.mkdtemp(prefix="wb-mutation-"))
    started = STARTED
    try:
        tallies = {m: Tally() for m in modules}
        for m in no_tests:
            print(f"note: {m} has no mapped test file: every mutant survives", file=sys.stderr)
        _copy_tree(work / "tree")
        _run_mutmut(work / "tree", modules, tallies, equivalents, jobs=args.jobs)
        print(f"[mutation] mutmut phase done at {(time.monotonic() - started) / 60:.1f} min", file=sys.stderr)
        _run_ast(work, modules, tallies, equivalents, jobs=args.jobs)
    finally:
        if args.keep:
            print(f"work tree kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return _report(tallies, elapsed=time.monotonic() - started)


# ---- the work tree -------------------------------------------------------------------------


def _copy_tree(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


# ---- mutmut: function bodies ---------------------------------------------------------------


def _run_mutmut(
    tree: Path, modules: dict[str, tuple[str, ...]], tallies: dict[str, Tally], equivalents, *, jobs: int
):
    tests = sorted({t for ts in modules.values() for t in ts})
    if not tests:
        return
    # mutmut hands each mutant its covering tests unordered; run them fastest first (-x).
    shutil.copy2(ROOT / "tools" / "mutation_order.py", tree / "mutation_order.py")
    config = {
        "source_paths": ["workflow_bench"],
        "only_mutate": list(modules),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "mutation_order", "--tb=line"],
        "pytest_add_cli_args_test_selection": tests,
        "also_copy": [p.name for p in tree.iterdir() if p.name not in ("workflow_bench", "tests", "mutants")],
        "use_git_change_detection": False,
    }
    pyproject = tree / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n[tool.mutmut]\n" + _toml(config))
    returncode, stdout, stderr = _mutmut_run(tree, jobs)
    if returncode != 0:
        print(stdout[-4000:], stderr[-4000:], sep="\n", file=sys.stderr)
        if "Failed to run clean test" in stdout:
            # mutmut's own unmutated run of every mapped test is the baseline: red means no score
            print(f"the mapped tests fail on the unmutated tree: {' '.join(tests)}", file=sys.stderr)
            raise SystemExit(2)
        raise SystemExit(f"mutmut run failed (exit {returncode})")
    # Collect every non-killed mutant and its diff in one process (mutmut's own API, in the tree).
    collect = subprocess.run(
        [sys.executable, "-c", _COLLECT, json.dumps(list(modules))], cwd=tree, capture_output=True, text=True
    )
    if collect.returncode != 0:
        raise SystemExit(f"reading mutmut results failed:\n{collect.stderr[-4000:]}")
    results = json.loads(collect.stdout)
    recheck: list[tuple[str, str, str]] = []
    for module, (killed, open_mutants) in results.items():
        tallies[module].killed += killed
        for key, diff in open_mutants:
            recheck.append((module, key, diff))

    # A survivor under fork may be a mutant that only acts at import time (the fork happened
    # after import): re-run, in a fresh import, every open mutant of a function that runs then.
    # Traced only for modules with open mutants: profiling every import costs a minute.
    open_modules = {m: modules[m] for m, _, _ in recheck}
    at_import = _import_time_functions(tree, open_modules) if open_modules else set()
    fresh = [item for item in recheck if (item[0], _function_of(item[1])) in at_import]
    requests = [{"env": {"MUTANT_UNDER_TEST": key}, "tests": list(modules[m])} for m, key, _ in fresh]
    if requests:
        _precompile(tree / "mutants")
    fresh_verdicts = run_pool(tree / "mutants", requests, jobs=jobs, label="fresh re-runs")
    verdicts = dict(zip((key for _, key, _ in fresh), fresh_verdicts, strict=True))
    for module, key, diff in recheck:
        _record(tallies[module], module, key, diff, verdicts.get(key, "survived"), equivalents)


def _precompile(tree: Path) -> None:
    """Hash-checked bytecode for the project and its tests, so each fresh child skips compiling.

    A checked-hash .pyc is used only while its source hashes to the recorded value: the file a
    mutant rewrites no longer does, so that one module is compiled from the mutated source (and,
    the worker writing no bytecode, never cached). Timestamps play no part (a mutant written in
    the same second as the original cannot reuse a stale .pyc)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "checked-hash",
         *(str(tree / d) for d in ("workflow_bench", "tests") if (tree / d).is_dir())],
        check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


_MUTMUT_COUNT = re.compile(r"(\d+)/(\d+)  ")  # mutmut's status line: "<done>/<total>  🎉 ..."


def _mutmut_run(tree: Path, jobs: int) -> tuple[int, str, str]:
    """`mutmut run`, its status line turned into a progress line on stderr once a minute."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs)],
        cwd=tree,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    errors: list[str] = []
    drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
    drain.start()
    out: list[str] = []
    progress: Progress | None = None
    while chunk := proc.stdout.read(4096):
        out.append(chunk)
        found = _MUTMUT_COUNT.findall(chunk)
        if found:
            done, total = map(int, found[-1])
            progress = progress or Progress("mutmut", total)
            progress.tick(done)
    proc.wait()
    drain.join()
    if progress is not None and progress.done != progress.total:
        progress.say()
    return proc.returncode, "".join(out), "".join(errors)


def _function_of(key: str) -> str:
    """`pkg.mod.x_name__mutmut_3` -> `name`; `pkg.mod.xǁClassǁname__mutmut_3` -> `name`."""
    mangled = key.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
    return mangled.split("ǁ")[2] if mangled.startswith("xǁ") else mangled[2:]


_TRACE = r"""
import json, sys
from pathlib import Path
import pytest
targets = {str(Path(m).resolve()): m for m in json.loads(sys.argv[1])}
called = set()
def profile(frame, event, arg):
    path = targets.get(frame.f_code.co_filename)
    if event == "call" and path is not None:
        called.add((path, frame.f_code.co_name))
sys.setprofile(profile)
pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *json.loads(sys.argv[2])])
sys.setprofile(None)
print(json.dumps(sorted(called)))
"""


def _import_time_functions(tree: Path, modules: dict[str, tuple[str, ...]]) -> set[tuple[str, str]]:
    """(module, function) pairs that run while the modules and their mapped tests are imported."""
    tests = sorted({t for ts in modules.values() for t in ts})
    traced = subprocess.run(
        [sys.executable, "-c", _TRACE, json.dumps(list(modules)), json.dumps(tests)],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    last = traced.stdout.strip().splitlines()[-1:] if traced.returncode == 0 else []
    if not last:
        raise SystemExit(f"tracing import-time calls failed:\n{traced.stdout[-2000:]}{traced.stderr[-2000:]}")
    return {(m, f) for m, f in json.loads(last[0])}


_COLLECT = r"""
import json, sys
from pathlib import Path
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.mutation.data import SourceFileMutationData
from mutmut.stats import status_by_exit_code
out = {}
for module in json.loads(sys.argv[1]):
    data = SourceFileMutationData(path=Path(module))
    data.load()
    killed, rest = 0, []
    for key, code in data.exit_code_by_key.items():
        if status_by_exit_code[code] in ("killed", "timeout", "segfault"):
            killed += 1
        else:
            rest.append((key, get_diff_for_mutant(key, path=Path(module))))
    out[module] = (killed, rest)
print(json.dumps(out))
"""


def _toml(config: dict) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items())


# ---- own AST mutator: module-level tables, decorated functions -------------------------------


def _run_ast(
    work: Path, modules: dict[str, tuple[str, ...]], tallies: dict[str, Tally], equivalents, *, jobs: int
):
    jobs_list: list[tuple[str, mutation_ast.Mutant]] = []
    for module in modules:
        source = (ROOT / module).read_text()
        jobs_list.extend((module, m) for m in mutation_ast.mutants(source))
    if not jobs_list:
        return
    # one private copy per worker: a mutant rewrites a file in place
    _precompile(work / "tree")  # the copies inherit it
    copies = []
    for i in range(jobs):
        copy = work / f"ast-{i}"
        shutil.copytree(work / "tree", copy, ignore=shutil.ignore_patterns("mutants"))
        copies.append(copy)
    # Two passes: first only the tests mutmut saw reach the module, fastest first (most mutants
    # die there in seconds); a mutant that survives them gets every mapped test file, so a test
    # that reads a table without calling the module's functions still counts.
    covering = _covering_tests(work / "tree", modules)
    requests = []
    for module, m in jobs_list:
        full = {"path": module, "source": m.source, "tests": list(modules[module])}
        requests.append({**full, "tests": covering.get(module, []), "then": full})
    verdicts = run_pool(work / "tree", requests, jobs=jobs, label="ast mutants", copies=copies)
    for (module, mutant), verdict in zip(jobs_list, verdicts, strict=True):
        original = (ROOT / module).read_text()
        diff = "".join(
            difflib.unified_diff(
                original.splitlines(keepends=True),
                mutant.source.splitlines(keepends=True),
                fromfile=module,
                tofile=module,
                n=1,
            )
        )
        _record(tallies[module], module, f"ast:{module}:{mutant.line}", diff, verdict, equivalents)


def _covering_tests(tree: Path, modules: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    """Per module, the test ids mutmut's stats run saw call into it, fastest first."""
    try:
        stats = json.loads((tree / "mutants" / "mutmut-stats.json").read_text())
    except (OSError, ValueError):
        return {}
    durations = stats.get("duration_by_test", {})
    out: dict[str, list[str]] = {}
    for module in modules:
        prefix = module.removesuffix(".py").replace("/", ".") + "."
        ids = {
            t
            for name, tests in stats.get("tests_by_mangled_function_name", {}).items()
            if name.startswith(prefix)
            for t in tests
        }
        out[module] = sorted(ids, key=lambda t: (durations.get(t, float("inf")), t))
    return out


# ---- equivalents, verdicts, report ---------------------------------------------------------


def _load_equivalents() -> list[dict[str, str]]:
    if not EQUIVALENTS_FILE.is_file():
        return []
    entries = tomllib.loads(EQUIVALENTS_FILE.read_text()).get("equivalent", [])
    for entry in entries:
        if not {"module", "original", "mutant", "reason"} <= entry.keys() or not entry["reason"].strip():
            raise SystemExit(f"{EQUIVALENTS_FILE}: every entry needs module, original, mutant and a reason")
    return entries


def _changed_lines(diff: str) -> tuple[str, str]:
    body = [ln for ln in diff.splitlines() if not ln.startswith(("---", "+++", "@@"))]
    removed = " ".join(ln[1:].strip() for ln in body if ln.startswith("-"))
    added = " ".join(ln[1:].strip() for ln in body if ln.startswith("+"))
    return removed, added


def _strings(text: str) -> list[tuple[int, str]] | None:
    try:
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def _prose_only(removed: str, added: str) -> bool:
    """True when the edit only wraps in "XX" or re-cases one string literal that contains a space."""
    before, after = _strings(removed), _strings(added)
    if before is None or after is None or len(before) != len(after):
        return False
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    if len(changed) != 1 or changed[0][0][0] != tokenize.STRING or changed[0][1][0] != tokenize.STRING:
        return False
    try:
        old, new = (ast.literal_eval(changed[0][0][1]), ast.literal_eval(changed[0][1][1]))
    except (ValueError, SyntaxError):
        return False
    return isinstance(old, str) and " " in old and new in ("XX" + old + "XX", old.upper(), old.lower())


def _record(tally: Tally, module: str, key: str, diff: str, verdict: str, equivalents) -> None:
    if verdict in ("killed", "timeout"):
        tally.killed += 1
        return
    removed, added = _changed_lines(diff)
    if _prose_only(removed, added):
        tally.prose += 1
        return
    for entry in equivalents:
        if (
            entry["module"] == module
            and entry["original"].strip() == removed
            and entry["mutant"].strip() == added
            and entry.get("near", "").strip() in diff  # a nearby line, when the edit alone is ambiguous
        ):
            tally.equivalent.append((diff, entry["reason"]))
            return
    tally.survivors.append((key, diff))


def _report(tallies: dict[str, Tally], *, elapsed: float) -> int:
    width = max(len(m) for m in tallies)
    print(f"\n{'module':<{width}}  mutants  killed  survived  equivalent  prose  score")
    for module, t in tallies.items():
        print(
            f"{module:<{width}}  {t.total:>7}  {t.killed:>6}  {len(t.survivors):>8}"
            f"  {len(t.equivalent):>10}  {t.prose:>5}  {t.score:>5.1f}%"
        )
    killed = sum(t.killed for t in tallies.values())
    total = sum(t.total for t in tallies.values())
    overall = 100.0 if total == 0 else round(100.0 * killed / total, 1)
    equivalent = sum(len(t.equivalent) for t in tallies.values())
    prose = sum(t.prose for t in tallies.values())
    print(
        f"{'total':<{width}}  {total:>7}  {killed:>6}  {total - killed:>8}  {equivalent:>10}  {prose:>5}"
        f"  {overall:>5.1f}%"
    )
    print(f"({elapsed / 60:.1f} min)")
    for module, t in tallies.items():
        for diff, reason in t.equivalent:
            removed, added = _changed_lines(diff)
            print(f"\nequivalent in {module}: {removed!r} -> {added!r}: {reason}")
    for t in tallies.values():
        for key, diff in t.survivors:
            print(f"\nSURVIVED {key}\n{diff.rstrip()}")
    print(json.dumps({"modules": {m: t.score for m, t in tallies.items()}, "total": overall}))
    return 0 if all(t.score >= THRESHOLD for t in tallies.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
