"""Rust: ``cargo test`` of the root package's integration tests through the harness's adapter,
which reads libtest's per-test lines; the toolchain is the ``rust`` runtime (Debian's rustc and
cargo, provisioned into the cache). Standard-library crates only: crates.io is not reachable.

Test files are ``tests/<name>.rs`` and ``tests/<name>/main.rs`` (cargo's integration test
targets); the command names the targets; test ids are ``<target>::<test path>``. Sentinels are
``#[test]`` functions appended to the staged file (``#[ignore]`` for the must-skip one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from ._model import Ecosystem, Framework, project_at_root

TARGET = re.compile(r"^tests/(?:[^/]+\.rs|[^/]+/main\.rs)$")


def _runs(path: str, _: bytes) -> bool:
    return bool(TARGET.match(path))


def _targets(files: Sequence[str]) -> list[str]:
    names = {PurePosixPath(f).parent.name if f.endswith("/main.rs") else PurePosixPath(f).stem for f in files}
    return sorted(names)


_DETECT = project_at_root(
    "cargo-test", manifest="Cargo.toml", project="cargo package", language="Rust", runnable=TARGET,
    not_runnable="none of the fix's Rust test files is an integration test target (tests/<name>.rs): "
    "tests inside src/ are the reference patch's; give --test-command",
    reason="the test files are integration tests (tests/*.rs) and Cargo.toml is at the root",
)  # fmt: skip


def sentinels(data: bytes, names: Sequence[str]) -> bytes | None:
    """Four ``#[test]`` functions (names[1:]) appended to the file."""
    _, fail_library, fail_plain, passes, skips = names
    block = (
        f'\n#[test]\nfn t_{fail_library}() {{\n    assert_eq!("{fail_library}", "{fail_library}-");\n}}\n'
        f'\n#[test]\nfn t_{fail_plain}() {{\n    panic!("{fail_plain}");\n}}\n'
        f"\n#[test]\nfn t_{passes}() {{}}\n"
        f"\n#[test]\n#[ignore]\nfn t_{skips}() {{}}\n"
    )
    return data + (b"" if data.endswith(b"\n") or not data else b"\n") + block.encode()


CARGO_TEST = Framework(
    "cargo-test",
    "rust",
    _runs,
    'python3 -I -B "$WORKFLOW_BENCH_CARGO_TEST" {files}',
    "cargo test --offline --test <target> through the harness's adapter ($WORKFLOW_BENCH_CARGO_TEST), "
    "reading libtest's per-test lines; ids <target>::<test>; the rust runtime is Debian's rustc/cargo",
    kit={"WORKFLOW_BENCH_CARGO_TEST": "cargo_test.py"},
    runtime=("rust", "1.63"),
    targets=_targets,
)
FRAMEWORKS = (CARGO_TEST,)
RUST = Ecosystem(
    name="rust",
    label="Rust",
    source=re.compile(r"\.rs$"),
    detect=_DETECT,
    test_config=(
        ("Cargo.toml", "profiles, features and [patch] sections choose what the tests build"),
        ("Cargo.lock", "which versions the tests build against"),
        (".cargo", "cargo configuration (runner, rustflags, target-applies-to-host)"),
        ("build.rs", "a build script runs before the tests are compiled"),
        ("rust-toolchain", "toolchain selection"),
        ("rust-toolchain.toml", "toolchain selection"),
    ),
    sentinel_file=re.compile(r"[^/]*\.rs"),
    sentinel_writer=sentinels,
)
