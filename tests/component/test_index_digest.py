"""The toolkit index digest is reproducible: two builds of one commit give one ``index_digest``.

Real bwrap, real git, the real index steps: the ``mini`` toolkit's (``tests/e2e/toolkits/mini/
index.py``, whose ``built.json`` changes every build) and the real GitNexus (``./dev setup
--gitnexus``; its meta files carry the build time and its database file's header differs between
builds). Negative controls: digesting the same two builds byte-for-byte (no volatile files, no
dump) gives two different digests, so the equality is the declaration's doing, not an accident;
a build whose graph differs (another commit, mini) gets another digest; leaving GitNexus's graph
dump out gives another digest (the dump is not empty).
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from workflow_bench.cells.index import build_index, index_digest
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.spec import IndexStep, RuntimeMount, Toolkit

pytestmark = pytest.mark.component
REPO_ROOT = Path(__file__).resolve().parents[2]
BUNDLE = REPO_ROOT / "workflow_bench" / "corpus" / "demo-target.bundle"
MINI = REPO_ROOT / "tests" / "e2e" / "toolkits" / "mini"
MINI_INDEX = IndexStep(
    command=("/usr/bin/python3", "/opt/mini/index.py"),
    output=".mini-index",
    digest_volatile=("built.json",),
    digest_command=("/usr/bin/python3", "/opt/mini/index.py", "--dump"),
)


def mini_toolkit(step: IndexStep = MINI_INDEX) -> Toolkit:
    return Toolkit(
        root=str(MINI),
        roles={"plan": "plan", "work": "work", "review": "review"},
        name="mini",
        index=step,
        runtime_mounts=(RuntimeMount(source=str(MINI), target="/opt/mini"),),
    )


def clone(tmp_path: Path, name: str, *, extra_commit: bool = False) -> Path:
    dest = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(dest)], check=True)
    if extra_commit:
        (dest / "ledger" / "extra.py").write_text("def extra_symbol():\n    return 1\n")
        git = ["git", "-C", str(dest), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "extra"], check=True)
    return dest


def build_twice(tmp_path: Path, toolkit: Toolkit, bwrap_bin: str) -> tuple[str, str, Path, Path]:
    first, second = clone(tmp_path, "a"), clone(tmp_path, "b")
    results = [build_index(d, toolkit=toolkit, bwrap_bin=bwrap_bin) for d in (first, second)]
    assert all(r is not None and r.error is None for r in results), results
    out = toolkit.index.output
    return results[0].digest, results[1].digest, first / out, second / out


def test_mini_index_digest_is_reproducible_and_tracks_content(tmp_path, bwrap_bin):
    one, two, first, second = build_twice(tmp_path, mini_toolkit(), bwrap_bin)
    assert one == two and one.startswith("sha256:")
    assert (first / "built.json").read_bytes() != (second / "built.json").read_bytes()
    assert index_digest(first) != index_digest(second)  # control: byte-for-byte they differ
    changed = build_index(
        clone(tmp_path, "c", extra_commit=True), toolkit=mini_toolkit(), bwrap_bin=bwrap_bin
    )
    assert changed.error is None and changed.digest != one
    # The dump's order is random each time; its sorted lines are what counts.
    assert index_digest(first, canonical=b"x\ny\n") == index_digest(first, canonical=b"y\nx\n")
    assert index_digest(first, canonical=b"x\n") != index_digest(first, canonical=b"x\nz\n")


def test_mini_index_digest_command_failure_is_a_build_failure(tmp_path, bwrap_bin):
    step = replace(MINI_INDEX, digest_command=("/usr/bin/python3", "/opt/mini/index.py", "--no-such-flag"))
    result = build_index(clone(tmp_path, "a"), toolkit=mini_toolkit(step), bwrap_bin=bwrap_bin)
    assert result.digest is None and "index digest command failed" in result.error


def test_gitnexus_index_digest_is_reproducible(tmp_path, bwrap_bin):
    toolkit = load_toolkit("gitnexus")  # fails (not skipped) when ./dev setup --gitnexus was not run
    one, two, first, second = build_twice(tmp_path, toolkit, bwrap_bin)
    assert one == two and one.startswith("sha256:")
    assert index_digest(first) != index_digest(second)  # control: meta timestamps, database header
    # The graph dump counts: without it (volatile files by name only) the digest is another one.
    assert index_digest(first, volatile=toolkit.index.digest_volatile) != one
