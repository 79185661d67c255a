"""A non-root runner's overlay clones (issue 33): its own user and mount namespaces, for real.

Each case runs a child Python as a non-root uid (this user, or uid 65534 through ``setpriv`` when
the suite is root) that enters its namespaces (``sandbox.enter_private_mounts``, as the front
doors do), opens a real ``CellResources`` and asks for the clone, as ``cells.run`` does. Pinned:

- the clone is an overlay (``clone.kind``), says why, and the template is never written;
- the upper-layer-only scan equals a full walk of the merged tree after edits, deletes, a
  replaced directory (its ``user.overlay.opaque`` attribute: unread, the hidden file's deletion
  is missed) and a file turned directory (the full walk is the control);
- renaming a template directory is EXDEV (the kernel's rule for a user namespace's overlay,
  stated in the row's reason), while a new directory renames;
- the watchdog's disk walk counts the upper layer, never the template below the mount;
- negative control: with the namespace refused (``WORKFLOW_BENCH_NO_PRIVATE_MOUNTS=1``) the
  same child gets ``copy``, the refusal as its reason, and ``mount_clone`` returns False; and a
  process that never entered (this test process) is refused with its own reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.builders import missing_tool
from tests.conftest import SESSION_TMPDIR
from workflow_bench.sandbox import private_mounts_refusal

pytestmark = pytest.mark.component
REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534

CHILD = r"""
import errno, json, os, sys
from pathlib import Path
from workflow_bench.sandbox import CellLimits, CellResources, enter_private_mounts
from workflow_bench.sandbox._watchdog import allocated_bytes
from workflow_bench.workspace.snapshot import scan_overlay, scan_workspace

enter_private_mounts()
root = Path(sys.argv[1])
template = root / "template"
for d in ("src/deep", "pkg/sub"):
    (template / d).mkdir(parents=True)
(template / "src" / "a.txt").write_text("one\n")
(template / "src" / "deep" / "b.txt").write_text("bee\n")
(template / "pkg" / "sub" / "m.py").write_text("x = 1\n")
(template / "big.bin").write_bytes(b"z" * 4_000_000)
(template / "file_then_dir").write_text("a file\n")
before = {p.relative_to(template).as_posix(): p.read_bytes() for p in template.rglob("*") if p.is_file()}
cell = root / "cell"
resources = CellResources(CellLimits(), cell)
resources.open(clone_source=template, overlay=True)
out = {"kind": resources.clone.kind, "reason": resources.clone.reason}
ws = cell / "workspace"
out["mounted"] = resources.mount_clone(template, ws)
if out["mounted"]:
    base = scan_workspace(template).state
    (ws / "src" / "a.txt").write_text("one\n2\n")
    (ws / "src" / "new").mkdir()
    (ws / "src" / "new" / "c.txt").write_text("sea\n")
    for p in sorted((ws / "pkg").rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    (ws / "pkg").rmdir()
    (ws / "file_then_dir").unlink()
    (ws / "file_then_dir").mkdir()
    (ws / "file_then_dir" / "inside.txt").write_text("in\n")
    try:
        os.rename(ws / "src" / "deep", ws / "src" / "moved")
        out["rename_template_dir"] = "ok"
    except OSError as exc:
        out["rename_template_dir"] = errno.errorcode[exc.errno]
    os.rename(ws / "src" / "new", ws / "src" / "renamed")
    (ws / "src" / "deep" / "b.txt").unlink()  # a replaced directory: opaque (user.overlay.opaque)
    (ws / "src" / "deep").rmdir()
    (ws / "src" / "deep").mkdir()
    (ws / "src" / "deep" / "fresh.txt").write_text("fresh\n")
    full = scan_workspace(ws, previous=base)
    scan, _ = scan_overlay(ws, upper=resources.clone_upper, previous=base, seen=frozenset())
    out["scan_equal"] = dict(scan.state.entries) == dict(full.state.entries) and scan.changed == full.changed
    out["changed"] = sorted(scan.changed)
    out["owner"] = (ws / "src" / "a.txt").stat().st_uid
    out["cell_disk"] = allocated_bytes(cell)
out["close"] = resources.close()
after = {p.relative_to(template).as_posix(): p.read_bytes() for p in template.rglob("*") if p.is_file()}
out["template_untouched"] = before == after
print(json.dumps(out))
"""


def _child(env_extra: dict[str, str]) -> dict:
    """Run ``CHILD`` as a non-root uid in a scratch directory it owns; its JSON report."""
    if not os.access(SESSION_TMPDIR, os.X_OK) or not all(
        os.stat(p).st_mode & 0o001 for p in [SESSION_TMPDIR, *map(str, Path(SESSION_TMPDIR).parents)]
    ):
        missing_tool(f"a TMPDIR uid {NOBODY} can reach (every ancestor of {SESSION_TMPDIR} searchable)")
    scratch = Path(tempfile.mkdtemp(prefix="wfbnr-", dir=SESSION_TMPDIR))
    scratch.chmod(0o755)
    site = [str(p) for p in sys.path if p.endswith("site-packages")]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": os.pathsep.join([str(REPO), *site])}
    argv = [sys.executable, "-c", CHILD, str(scratch)]
    if os.geteuid() == 0:
        os.chown(scratch, NOBODY, NOBODY)
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, *argv[1:]]
    try:
        done = subprocess.run(
            argv, env={**env, **env_extra}, cwd="/", capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"child exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(scratch)], check=False, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_non_root_cell_gets_an_overlay_scanned_through_its_upper_layer():
    out = _child({})
    if out["kind"] != "overlay" and "unshare" in out["reason"]:
        missing_tool(f"unprivileged user namespaces with overlay mounts ({out['reason']})")
    assert out["kind"] == "overlay", out
    assert out["reason"].startswith("non-root: an overlay in the runner's user namespace"), out
    assert out["mounted"] is True
    assert out["scan_equal"] is True, out
    expected = {"src/a.txt", "src/renamed/c.txt", "pkg", "pkg/sub/m.py", "file_then_dir/inside.txt"}
    assert expected | {"src/deep/b.txt", "src/deep/fresh.txt"} <= set(out["changed"]), out["changed"]
    assert out["rename_template_dir"] == "EXDEV"  # the row's reason says so
    assert out["owner"] == (os.geteuid() if os.geteuid() else NOBODY)
    # The upper layer only: the 4 MB template file below the mount is never counted.
    assert out["cell_disk"] < 1_000_000, out["cell_disk"]
    assert out["close"] is None
    assert out["template_untouched"] is True


def test_a_refused_namespace_copies_and_says_why():
    out = _child({"WORKFLOW_BENCH_NO_PRIVATE_MOUNTS": "1"})
    assert out["kind"] == "copy"
    assert "WORKFLOW_BENCH_NO_PRIVATE_MOUNTS=1" in out["reason"], out
    assert out["mounted"] is False  # cells.run then copies the template
    assert out["template_untouched"] is True


def test_a_process_that_never_entered_is_refused_with_its_reason():
    # This test process (an in-process caller, like a test calling runner.main) never entered.
    assert "did not enter a private mount namespace" in (private_mounts_refusal() or "")


def test_a_runner_that_already_has_threads_is_refused_and_says_so():
    """unshare(CLONE_NEWUSER) needs a single-threaded process: a front door that enters after a
    thread started (an import's BLAS pool) must get the refusal, never a half-entered namespace."""
    script = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "from workflow_bench.sandbox import enter_private_mounts, private_mounts_refusal\n"
        "enter_private_mounts()\n"
        "import os; print(private_mounts_refusal()); print(os.readlink('/proc/self/ns/user'))\n"
    )
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join([str(REPO), *site])}
    argv = [sys.executable, "-c", script]
    if os.geteuid() == 0:
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-c", script]
    done = subprocess.run(argv, env=env, cwd="/", capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    refusal, namespace = done.stdout.strip().splitlines()
    assert refusal == "the runner had 2 threads when it tried (a user namespace needs one)"
    assert namespace == os.readlink("/proc/self/ns/user")  # still the host's user namespace
