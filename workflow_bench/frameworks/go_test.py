"""Go: ``go test`` through the harness's adapter, which turns its built-in JSON event stream
(``go test -json``) into result lines; the toolchain is the ``go`` runtime (Debian's golang
package, provisioned into the cache). Standard-library modules only: the module proxy is off.

Test files are ``*_test.go``; the command names their package directories (``go test`` runs
packages, not files); test ids are ``<import path>::<TestName>``. Sentinels are ``Test_<token>``
functions appended to a staged ``_test.go`` file that imports ``testing`` under its own name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from ._model import Ecosystem, Framework, project_at_root

TEST_FILE = re.compile(r"_test\.go$")
_IMPORTS_TESTING = re.compile(rb'^\s*(import\s+)?"testing"\s*$', re.MULTILINE)


def _runs(path: str, _: bytes) -> bool:
    return bool(TEST_FILE.search(path))


def _packages(files: Sequence[str]) -> list[str]:
    parents = {str(PurePosixPath(f).parent) for f in files}
    return sorted("." if p == "." else f"./{p}" for p in parents)


_DETECT = project_at_root(
    "go-test", manifest="go.mod", project="Go module", language="Go",
    reason="the test files are *_test.go and go.mod is at the root",
)  # fmt: skip


def sentinels(data: bytes, names: Sequence[str]) -> bytes | None:
    """Five ``Test_`` functions (names[1:]), or None when the file does not import ``testing``
    under that name (the block could not compile)."""
    if not _IMPORTS_TESTING.search(data):
        return None
    _, fail_library, fail_plain, passes, skips = names
    block = (
        f'\nfunc Test_{fail_library}(t *testing.T) {{\n\tt.Errorf("%s", "{fail_library}-")\n}}\n'
        f'\nfunc Test_{fail_plain}(t *testing.T) {{\n\tt.Fatal("{fail_plain}")\n}}\n'
        f"\nfunc Test_{passes}(t *testing.T) {{\n}}\n"
        f'\nfunc Test_{skips}(t *testing.T) {{\n\tt.Skip("{skips}")\n}}\n'
    )
    return data + (b"" if data.endswith(b"\n") or not data else b"\n") + block.encode()


GO_TEST = Framework(
    "go-test",
    "go",
    _runs,
    'python3 -I -B "$WORKFLOW_BENCH_GO_TEST" {files}',
    "go test -json through the harness's adapter ($WORKFLOW_BENCH_GO_TEST): one result per test, "
    "ids <import path>::<TestName>; the go runtime is provisioned from Debian's golang package",
    kit={"WORKFLOW_BENCH_GO_TEST": "go_test.py"},
    runtime=("go", "1.19"),
    targets=_packages,
)
FRAMEWORKS = (GO_TEST,)
GO = Ecosystem(
    name="go",
    label="Go",
    source=re.compile(r"\.go$"),
    detect=_DETECT,
    test_config=(
        ("go.mod", "replace directives and the go version choose what the tests build against"),
        ("go.sum", "module checksums"),
        ("go.work", "a workspace file swaps modules for local directories"),
        ("go.work.sum", "workspace checksums"),
    ),
    sentinel_file=re.compile(r"[^/]*_test\.go"),
    sentinel_writer=sentinels,
)
