"""Three small real projects, one per test framework, with a defect, its fix and a hidden oracle.

Shared by the framework tests (tests/component/test_frameworks.py judges them file by file;
tests/e2e/test_framework_tasks.py turns each into a task). Every command is written with the
framework's stock options only: no adapter file and no plugin in the repository.

- ``PYTHON`` (pytest, ``--junitxml``): ``slugify`` keeps punctuation and runs of separators.
- ``TYPESCRIPT`` (vitest + tsc): ``range`` ignores negative steps; the oracle command is shaped
  exactly like the reference corpus's (``./node_modules/.bin/vitest run --config
  "$ORACLE_ROOT/vitest.config.mts" "$ORACLE_ROOT/<id>.oracle.test.ts"``) plus the junit flags.
- ``NODE`` (``node --test``, ``--test-reporter=junit``): ``wrap`` splits on single spaces only.

Each authored suite holds a test that is always skipped (a platform or a feature this sandbox
lacks), as real suites do: the expected-tests lock must let it be skipped.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Project:
    task_id: str
    prompt: str
    verify: str
    oracle_command: str
    base: dict[str, str]
    fix: dict[str, str]
    oracle: dict[str, str]
    dependencies: tuple[str, ...] = ()
    """Working-tree directories the task mounts (``sandbox_dependencies``): filled by the test."""
    passing_oracle_tests: int = 0
    verify_skipped: tuple[str, ...] = field(default=())


SLUG_TESTS = """import sys

import pytest

from slug import slugify


def test_lowercases():
    assert slugify("Hello") == "hello"


def test_joins_words():
    assert slugify("two words") == "two-words"


@pytest.mark.skipif(sys.platform != "win32", reason="reserved device names exist on Windows only")
def test_windows_reserved_names():
    assert slugify("CON") == "con-"
"""
DROPS_PUNCTUATION = '\n\ndef test_drops_punctuation():\n    assert slugify("Hello, World!") == "hello-world"'
PYTEST = "PYTHONPATH=.wfbench-deps/site-packages python3 -B -m pytest -q -p no:cacheprovider"
PYTHON = Project(
    task_id="py-slugify-punctuation",
    prompt="`slug.slugify` must drop punctuation and collapse runs of separators. Add a test.",
    verify=f'{PYTEST} --junitxml="$WORKFLOW_BENCH_JUNIT" tests',
    oracle_command=f'{PYTEST} --junitxml="$WORKFLOW_BENCH_JUNIT" '
    '"$WORKFLOW_BENCH_ORACLE_ROOT/test_slug_oracle.py"',
    base={
        "slug/__init__.py": '''"""Slugs for titles."""


def slugify(text):
    """Lower-case words joined by single dashes."""
    return text.lower().replace(" ", "-")
''',
        "tests/__init__.py": "",
        "tests/test_slug.py": SLUG_TESTS,
    },
    fix={
        "slug/__init__.py": '''"""Slugs for titles."""

import re


def slugify(text):
    """Lower-case words (letters and digits) joined by single dashes."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))
''',
        "tests/test_slug.py": SLUG_TESTS.replace(
            "\n\n@pytest.mark.skipif", DROPS_PUNCTUATION + "\n\n\n@pytest.mark.skipif"
        ),
    },
    oracle={
        "test_slug_oracle.py": """from slug import slugify


def test_punctuation_is_dropped():
    assert slugify("a.b,c!") == "a-b-c"


def test_runs_of_separators_collapse():
    assert slugify("a  -  b") == "a-b"


def test_plain_words_are_unchanged():
    assert slugify("plain") == "plain"
""",
    },
    dependencies=(".wfbench-deps",),
    passing_oracle_tests=3,
    verify_skipped=("pytest::tests.test_slug::test_windows_reserved_names",),
)

TS_ORACLE = "range-negative-step"
RANGE_TESTS = """import { describe, expect, it } from 'vitest';
import { range } from '../src/range';

describe('range', () => {
  it('counts up', () => expect(range(0, 3)).toEqual([0, 1, 2]));
  it('takes steps', () => expect(range(0, 10, 5)).toEqual([0, 5]));
  it.skip('streams huge ranges lazily (needs the iterator API)', () => {});
});
"""
COUNTS_DOWN = "it('counts down with a negative step', () => expect(range(3, 0, -1)).toEqual([3, 2, 1]));"
TYPESCRIPT = Project(
    task_id="ts-range-negative-step",
    prompt="`range(start, end, step)` in src/range.ts must count down for a negative step. Add a test.",
    verify="./node_modules/.bin/tsc -p . && ./node_modules/.bin/vitest run --reporter=default "
    '--reporter=junit --outputFile.junit="$WORKFLOW_BENCH_JUNIT"',
    oracle_command='./node_modules/.bin/vitest run --config "$WORKFLOW_BENCH_ORACLE_ROOT/vitest.config.mts" '
    f'"$WORKFLOW_BENCH_ORACLE_ROOT/{TS_ORACLE}.oracle.test.ts" --reporter=junit '
    '--outputFile="$WORKFLOW_BENCH_JUNIT"',
    base={
        "package.json": '{"name": "range-demo", "private": true, "type": "module", '
        '"scripts": {"test": "vitest run"}}\n',
        "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", '
        '"module": "esnext", "moduleResolution": "bundler", "skipLibCheck": true, "types": []}, '
        '"include": ["src", "test"]}\n',
        "vitest.config.mts": "export default { test: { include: ['test/**/*.test.ts'] } };\n",
        "src/range.ts": """/** The numbers from `start` up to `end`, exclusive, `step` apart. */
export function range(start: number, end: number, step = 1): number[] {
  const out: number[] = [];
  for (let i = start; i < end; i += step) out.push(i);
  return out;
}
""",
        "test/range.test.ts": RANGE_TESTS,
    },
    fix={
        "src/range.ts": """/** The numbers from `start` towards `end`, exclusive, `step` apart (< 0: down). */
export function range(start: number, end: number, step = 1): number[] {
  if (step === 0) throw new RangeError('step must not be 0');
  const out: number[] = [];
  for (let i = start; step > 0 ? i < end : i > end; i += step) out.push(i);
  return out;
}
""",
        "test/range.test.ts": RANGE_TESTS.replace("  it.skip(", "  " + COUNTS_DOWN + "\n  it.skip("),
    },
    oracle={
        # No import: a config staged outside the project cannot resolve 'vitest/config'.
        "vitest.config.mts": """export default {
  resolve: { alias: { '@task': `${process.cwd()}/src` } },
  test: { include: ['**/*.oracle.test.ts'], root: process.cwd(), dir: import.meta.dirname },
};
""",
        f"{TS_ORACLE}.oracle.test.ts": """import { expect, it } from 'vitest';
import { range } from '@task/range';

it('counts down to just above the end', () => expect(range(5, 0, -2)).toEqual([5, 3, 1]));
it('skips values on the way down', () => expect(range(10, 0, -4)).toEqual([10, 6, 2]));
it('still counts up', () => expect(range(1, 4)).toEqual([1, 2, 3]));
""",
    },
    dependencies=("node_modules",),
    passing_oracle_tests=3,
    verify_skipped=("test/range.test.ts::range > streams huge ranges lazily (needs the iterator API)",),
)

NODE_TEST = "node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit"
WRAP = """/** Break `text` into lines of at most `width` characters, at spaces. */
export function wrap(text, width) {
  const lines = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && `${line} ${word}`.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}
"""
COLLAPSES = "test('collapses runs of spaces', () => assert.deepEqual(wrap('a  b', 10), ['a b']));"
WRAP_TESTS = """import test from 'node:test';
import assert from 'node:assert/strict';
import { wrap } from '../src/wrap.mjs';

test('short text stays on one line', () => assert.deepEqual(wrap('a b', 10), ['a b']));
test('breaks at the width', () => assert.deepEqual(wrap('aa bb cc', 5), ['aa bb', 'cc']));
test('hyphenates long words', { skip: 'hyphenation is not supported yet' }, () => {});
"""
NODE = Project(
    task_id="node-wrap-whitespace",
    prompt="`wrap(text, width)` in src/wrap.mjs must treat any run of whitespace as one space. Add a test.",
    verify=f'{NODE_TEST} --test-reporter-destination="$WORKFLOW_BENCH_JUNIT" test/wrap.test.mjs',
    oracle_command=f'{NODE_TEST} --test-reporter-destination="$WORKFLOW_BENCH_JUNIT" '
    '"$WORKFLOW_BENCH_ORACLE_ROOT/wrap.oracle.test.mjs"',
    base={
        "package.json": '{"name": "wrap-demo", "private": true, "type": "module"}\n',
        "src/wrap.mjs": WRAP,
        "test/wrap.test.mjs": WRAP_TESTS,
    },
    fix={
        "src/wrap.mjs": WRAP.replace("at spaces", "at whitespace").replace(
            "text.split(' ')", "text.split(/\\s+/).filter(Boolean)"
        ),
        "test/wrap.test.mjs": WRAP_TESTS.replace(
            "test('hyphenates",
            COLLAPSES + "\ntest('hyphenates",
        ),
    },
    oracle={
        "wrap.oracle.test.mjs": """import test from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// Loaded per test from the workspace (the working directory): an import error fails a test,
// it does not stop the file from reporting.
const load = () => import(pathToFileURL(join(process.cwd(), 'src/wrap.mjs')).href);

test('runs of spaces collapse', async () => {
  const { wrap } = await load();
  assert.deepEqual(wrap('one   two', 20), ['one two']);
});
test('newlines count as spaces', async () => {
  const { wrap } = await load();
  assert.deepEqual(wrap('one\\ntwo', 20), ['one two']);
});
test('plain wrapping is unchanged', async () => {
  const { wrap } = await load();
  assert.deepEqual(wrap('aa bb cc', 5), ['aa bb', 'cc']);
});
""",
    },
    passing_oracle_tests=3,
    verify_skipped=("test::hyphenates long words",),
)

PROJECTS = (PYTHON, TYPESCRIPT, NODE)


def write_files(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def git(repo: Path, *args: str) -> str:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)
    return done.stdout.decode()


def make_repo(root: Path, project: Project) -> tuple[Path, str]:
    """A git repository holding ``project``'s base (one commit; dependency dirs ignored) and its
    reference patch (the fix as a diff), without the fix applied."""
    repo = root / project.task_id
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write_files(repo, {**project.base, ".gitignore": "".join(f"/{d}/\n" for d in project.dependencies)})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    write_files(repo, project.fix)
    patch = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    return repo, patch
