"""Per-cell harness cost against repository size, side by side in one run (README, Benchmarks).

Builds a ladder of one-commit repositories (real sdists fetched from PyPI with pip, pinned by
sha256 and cached under the workflow-bench cache; synthetic trees generated from a fixed seed;
nothing vendored), runs a real sweep on each (the real CLI in real bubblewrap, driven by the
no-op scripted agent, ``--arms baseline``) and prints per size: template build time, the
harness's overhead per cell (``cell_wall_s − duration_s``, median over the cells after the
first), peak runner RSS, disk per cell, the outcomes, and the overhead's ratio to the smallest
repository's. With ``--baseline-rev REV`` the same ladder also runs on a worktree of REV,
interleaved with the current checkout rung by rung, and the table gains the ratio to it.

    sudo ./dev setup   # once: the pinned CLI, bubblewrap, the locked venv
    .venv/bin/python benchmarks/repo_scale.py                       # the whole ladder
    .venv/bin/python benchmarks/repo_scale.py --baseline-rev HEAD~1 --sizes demo requests django

Run it as root (the cells' volumes, overlays and cgroups need it). The machine's load average is
printed with the table: a figure measured under other jobs' load says so.

Root and non-root side by side (issue 33): ``--nonroot-user USER --nonroot-checkout DIR`` also
runs every rung as USER (``setpriv``, its own HOME, cache and TMPDIR) from DIR, a clone USER owns
with its own ``./dev setup``; the rung's repository, task file and script are copied to a
directory USER owns. Its rows are labelled ``non-root (USER)`` and the ``× first`` column is their
overhead over the first revision's (root's); ``--nonroot-control`` adds USER's runner with its
namespace refused (``WORKFLOW_BENCH_NO_PRIVATE_MOUNTS=1``: every cell copies, the old cost):

    .venv/bin/python benchmarks/repo_scale.py --sizes django synthetic-50k \
        --nonroot-user bench --nonroot-checkout /home/bench/wfb

Rungs: ``demo`` (the embedded corpus, its own scripted model, 3 tasks), ``requests`` (the
requests 2.32.3 sdist, 86 files / 0.5 MB), ``django`` (Django 5.1.4, 6,811 files / 58 MB),
``synthetic-50k`` (50,002 files / 105 MB), ``synthetic-1g`` (2,002 files / 1,000 MB) and
``synthetic-200k`` (199,902 entries / 1.1 GiB: past the snapshot caps before issue 26, just under
the 200,000-entry task cap now).
``--quick`` runs ``demo``, ``requests`` and ``synthetic-5k`` (5,002 files / 10 MB) with 3 cells.

Besides the sweeps, each rung's tree is copied and handed to another uid once (``cp -a`` then
``chown -R``): the ``copy+chown s`` column is that O(files + bytes) cost measured alone — what
each cell paid before its clone became an overlay of the template, and what a cell still pays
without one (a non-root runner, no loop devices, no idmapped overlay layers).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import pwd
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from workflow_bench.process import spawn_group

ROOT = Path(__file__).resolve().parents[1]
CACHE = (
    Path(os.environ.get("WORKFLOW_BENCH_CACHE") or Path.home() / ".cache" / "workflow-bench")
    / "bench-repo-scale"
)
CONTROL_ENV = ("WORKFLOW_BENCH_NO_PRIVATE_MOUNTS", "1")  # --nonroot-control: the runner's cells copy
GENERATOR_VERSION = 1  # bump when a synthetic tree's recipe changes: cached repositories rebuild

# The files every rung's repository gets on top of its tree: a verify test and a hidden oracle
# that pass in well under a second, so the judges cost what the harness costs, not a test suite.
VERIFY_MODULE = "wfb_scale_test"
VERIFY_TEST = (
    "import unittest\n\n\nclass ScaleTest(unittest.TestCase):\n"
    "    def test_present(self):\n        self.assertTrue(True)\n"
)
ORACLE_FILE = "wfb_scale_oracle_test.py"
ORACLE_TEST = (
    "import unittest\n\n\nclass ScaleOracle(unittest.TestCase):\n"
    "    def test_untouched(self):\n        self.assertTrue(True)\n"
)
BENCH_FILES = {f"{VERIFY_MODULE}.py": VERIFY_TEST, "wfb_scale_readme.txt": "workflow-bench scale rung\n"}


@dataclass(frozen=True)
class Sdist:
    requirement: str
    filename: str
    sha256: str


@dataclass(frozen=True)
class Synthetic:
    files: int
    total_bytes: int
    top_dirs: int
    sub_dirs: int


@dataclass(frozen=True)
class Rung:
    name: str
    source: Sdist | Synthetic | None  # None: the embedded demo corpus
    note: str


RUNGS = (
    Rung("demo", None, "embedded demo corpus, 3 tasks, its scripted model"),
    Rung(
        "requests",
        Sdist(
            "requests==2.32.3",
            "requests-2.32.3.tar.gz",
            "55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760",
        ),
        "requests 2.32.3 sdist",
    ),
    Rung(
        "django",
        Sdist(
            "django==5.1.4",
            "Django-5.1.4.tar.gz",
            "de450c09e91879fa5a307f696e57c851955c910a438a35e6b4c895e86bedc82a",
        ),
        "Django 5.1.4 sdist",
    ),
    Rung("synthetic-5k", Synthetic(5_000, 10_000_000, 10, 20), "5k small files (quick ladder)"),
    Rung("synthetic-50k", Synthetic(50_000, 105_000_000, 50, 20), "50k small files"),
    Rung("synthetic-1g", Synthetic(2_000, 1_000_000_000, 20, 10), "2k files of ~0.5 MB"),
    # 195,700 files in 4,200 directories plus the bench files: 199,902 entries, just under the
    # 200,000 a task may have (workspace.snapshot.MAX_TASK_ENTRIES); 195,800 files were refused.
    Rung("synthetic-200k", Synthetic(195_700, 1_180_000_000, 200, 20), "~200k entries, 1.1 GiB"),
)
DEFAULT_SIZES = ("demo", "requests", "django", "synthetic-50k", "synthetic-1g")
QUICK_SIZES = ("demo", "requests", "synthetic-5k")  # --quick: minutes, to validate the script


def log(message: str) -> None:
    print(f"[repo-scale] {message}", file=sys.stderr, flush=True)


# ── the ladder's repositories ───────────────────────────────────────────────────────────────


def fetch_sdist(sdist: Sdist) -> Path:
    """The sdist from the package index (pip, the ordinary client), checked against its pin."""
    directory = CACHE / "sdists"
    path = directory / sdist.filename
    if not path.is_file():
        directory.mkdir(parents=True, exist_ok=True)
        log(f"downloading {sdist.requirement} (pip download)")
        subprocess.run(
            ["python3", "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--dest", str(directory), sdist.requirement],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sdist.sha256:
        path.unlink()
        raise SystemExit(f"{sdist.filename}: sha256 {digest} is not the pinned {sdist.sha256}")
    return path


def extract_sdist(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            parts = member.name.split("/", 1)
            if len(parts) < 2 or not parts[1] or not (member.isfile() or member.isdir()):
                continue
            member.name = parts[1]
            members.append(member)
        tar.extractall(dest, members=members, filter="data")


def generate_synthetic(spec: Synthetic, dest: Path) -> None:
    """A deterministic tree: ``files`` text files of varied size under top/sub directories."""
    rng = random.Random(26)
    mean = spec.total_bytes // spec.files
    leaves = spec.top_dirs * spec.sub_dirs
    written = 0
    for index in range(spec.files):
        leaf = index % leaves
        directory = dest / f"pkg{leaf // spec.sub_dirs:03d}" / f"mod{leaf % spec.sub_dirs:02d}"
        directory.mkdir(parents=True, exist_ok=True)
        remaining = spec.files - index
        size = max(1, int((spec.total_bytes - written) / remaining * (0.5 + rng.random())))
        if remaining == 1:
            size = max(1, spec.total_bytes - written)
        size = min(size, 4 * mean)
        (directory / f"f{index:06d}.py").write_bytes(rng.randbytes(size // 2 + 1).hex().encode()[:size])
        written += size


def git(*args: str, cwd: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "LC_ALL": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@invalid",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
           "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}  # fmt: skip
    subprocess.run(["git", "-c", "gc.auto=0", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)


def rung_repo(rung: Rung) -> tuple[Path, int, int]:
    """(the rung's one-commit repository, files, bytes of its tree); built once, then cached."""
    assert rung.source is not None
    recipe = json.dumps([GENERATOR_VERSION, rung.name, repr(rung.source), BENCH_FILES], sort_keys=True)
    repo = CACHE / "repos" / rung.name
    marker = repo / ".git" / "wfb-bench-recipe.json"
    if marker.is_file():
        stored = json.loads(marker.read_text())
        if stored["recipe"] == recipe:
            return repo, stored["files"], stored["bytes"]
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    started = time.monotonic()
    log(f"building the {rung.name} repository ({rung.note})")
    if isinstance(rung.source, Sdist):
        extract_sdist(fetch_sdist(rung.source), repo)
    else:
        generate_synthetic(rung.source, repo)
    for name, text in BENCH_FILES.items():
        (repo / name).write_text(text)
    files = total = 0
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if not (dirpath == str(repo) and d == ".git")]
        for name in filenames:
            files += 1
            total += os.lstat(os.path.join(dirpath, name)).st_size
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", "-f", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", f"{rung.name} scale rung", cwd=repo)
    git("repack", "-a", "-d", "-q", cwd=repo)
    git("prune", cwd=repo)
    marker.write_text(json.dumps({"recipe": recipe, "files": files, "bytes": total}))
    log(f"{rung.name}: {files} files, {total / 1e6:.0f} MB in {time.monotonic() - started:.0f} s")
    return repo, files, total


def write_task_file(rung: Rung, repo: Path, directory: Path) -> Path:
    return write_task_file_for(rung.name, repo, directory)


def write_task_file_for(name: str, repo: Path, directory: Path) -> Path:
    (directory / ORACLE_FILE).write_text(ORACLE_TEST)
    task = {
        "id": f"scale-{name}",
        "class": "scale",
        "repo": str(repo),
        "ref": "HEAD",
        "prompt": "Leave the repository exactly as it is.",
        "verify": f'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" {VERIFY_MODULE}',
        "oracle": {
            "command": f'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" "$WORKFLOW_BENCH_ORACLE_ROOT/{ORACLE_FILE}"',  # noqa: E501
            "files": [{"source": ORACLE_FILE, "target": ORACLE_FILE}],
        },
    }
    path = directory / "tasks.yaml"
    path.write_text(json.dumps({"tasks": [task]}, indent=2))  # JSON is YAML
    return path


# ── one sweep, watched ──────────────────────────────────────────────────────────────────────


@dataclass
class Sweep:
    exit_code: int
    template_s: float | None
    overheads: list[float]
    outcomes: dict[str, int]
    peak_rss_mb: float | None
    disk_mb: float | None
    load: float
    wall_s: float


@dataclass
class Watcher:
    """Samples the runner's peak RSS and each cell's disk (its volume's used blocks, ext4's own
    metadata included, or its directory without a volume; plus its patch view)."""

    pid: int
    tmpdir: Path
    peak_rss_kb: int = 0
    disk: dict[str, int] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        last_load = 0.0
        while not self.stop.wait(0.2):
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_rss_kb = max(self.peak_rss_kb, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            for root in self.tmpdir.glob("wfb-*"):
                self._sample_cells(root)
            if time.monotonic() - last_load > 5:
                self.loads.append(os.getloadavg()[0])
                last_load = time.monotonic()

    def _sample_cells(self, root: Path) -> None:
        sizes: dict[str, int] = {}
        try:
            entries = list(os.scandir(root))
        except OSError:
            return
        for entry in entries:
            cell, _, suffix = entry.name.partition(".")
            if not re.fullmatch(r"[0-9a-f]{8}", cell):
                continue
            try:
                if not suffix and os.path.ismount(entry.path):
                    # The cell's volume: what its filesystem has in use (written-back or not).
                    st = os.statvfs(entry.path)
                    sizes[cell] = sizes.get(cell, 0) + (st.f_blocks - st.f_bfree) * st.f_frsize
                elif not suffix or suffix == "view":  # no volume (not root), or the patch view
                    sizes[cell] = sizes.get(cell, 0) + _tree_blocks(Path(entry.path))
            except OSError:
                continue
        for cell, size in sizes.items():
            self.disk[cell] = max(self.disk.get(cell, 0), size)


def _tree_blocks(root: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


@dataclass(frozen=True)
class NonRoot:
    """The account a side-by-side non-root runner runs as, its checkout and a directory it owns."""

    user: pwd.struct_passwd
    checkout: Path
    scratch: Path
    env_extra: tuple[tuple[str, str], ...] = ()

    def own(self, path: Path) -> None:
        subprocess.run(["chown", "-R", f"{self.user.pw_uid}:{self.user.pw_gid}", "--", str(path)], check=True)

    def argv(self, argv: list[str], tmpdir: Path) -> tuple[list[str], dict[str, str]]:
        home = self.user.pw_dir
        env = {"HOME": home, "PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(tmpdir),
               "PYTHONPATH": str(self.checkout), "LANG": "C.UTF-8", **dict(self.env_extra)}  # fmt: skip
        python = str(self.checkout / ".venv" / "bin" / "python")
        setpriv = ["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups"]
        return [*setpriv, python, *argv[1:]], env

    def stage(
        self, rung: str, repo: Path, task_file: Path | None, script: Path | None
    ) -> tuple[Path, Path | None]:
        """The rung's repository, task file and script in a directory the user owns."""
        directory = self.scratch / rung
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        subprocess.run(["cp", "-a", "--", str(repo), str(directory / "repo")], check=True)
        staged_tasks = write_task_file_for(rung, directory / "repo", directory)
        staged_script = None
        if script is not None:
            staged_script = directory / script.name
            shutil.copy2(script, staged_script)
        self.own(directory)
        return staged_tasks, staged_script


def run_sweep(
    code: Path,
    task_file: Path,
    script: Path | None,
    *,
    runs: int,
    extra: list[str],
    nonroot: NonRoot | None = None,
) -> Sweep:
    scratch = os.environ.get("REPO_SCALE_TMP") or tempfile.gettempdir()  # short: cell paths must fit
    if nonroot is not None:
        scratch = str(nonroot.scratch)
    with tempfile.TemporaryDirectory(prefix="rs-", dir=scratch) as tmp:
        tmpdir = Path(tmp)
        out = tmpdir / "out"
        argv = [sys.executable, "-m", "workflow_bench.runner", "--tasks", str(task_file),
                "--provider", "scripted", "--arms", "baseline", "--runs", str(runs),
                "--out", str(out), *extra]  # fmt: skip
        if script is not None:
            argv += ["--script", str(script)]
        env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(code)}
        if nonroot is not None:
            nonroot.own(tmpdir)
            argv, env = nonroot.argv(argv, tmpdir)
            code = nonroot.checkout
        log_path = tmpdir / "runner.log"
        started = time.monotonic()
        proc = spawn_group(argv, env=env, cwd=code, log_path=log_path)
        watcher = Watcher(proc.pid, tmpdir)
        thread = threading.Thread(target=watcher.run, daemon=True)
        thread.start()
        plan_at = template_at = built_s = None
        tail: list[str] = []
        pending = b""
        with open(log_path, "rb") as log:
            while True:
                exited = proc.poll() is not None
                pending += log.read()
                *lines, pending = pending.split(b"\n")
                now = time.monotonic()
                for raw in lines:
                    line = raw.decode("utf-8", "replace").rstrip()
                    tail = [*tail[-30:], line]
                    if plan_at is None and re.search(r"^\d+ cells:", line):
                        plan_at = now
                    if template_at is None and "sanitized snapshot" in line:
                        template_at = now
                        found = re.search(r"built in ([0-9.]+) s", line)
                        built_s = float(found.group(1)) if found else None
                if exited:
                    break
                time.sleep(0.1)
        exit_code = proc.wait(60)
        code_ = -1 if exit_code is None else exit_code
        wall = time.monotonic() - started
        watcher.stop.set()
        thread.join()
        rows = []
        results = out / "results.jsonl"
        if results.is_file():
            rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
        if not rows:
            log("no rows; the runner's last lines:\n" + "\n".join(tail))
        outcomes: dict[str, int] = {}
        for row in rows:
            kind = row.get("error_kind") or "none"
            outcomes[kind] = outcomes.get(kind, 0) + 1
        overheads = [
            row["cell_wall_s"] - row["duration_s"]
            for row in rows[1:]
            if row.get("cell_wall_s") is not None and row.get("duration_s") is not None
        ]
        if built_s is None and plan_at is not None and template_at is not None:
            built_s = template_at - plan_at
        disks = sorted(watcher.disk.values())
        return Sweep(
            exit_code=code_,
            template_s=built_s,
            overheads=overheads,
            outcomes=outcomes,
            peak_rss_mb=watcher.peak_rss_kb / 1024 if watcher.peak_rss_kb else None,
            disk_mb=statistics.median(disks) / 1e6 if disks else None,
            load=statistics.mean(watcher.loads) if watcher.loads else os.getloadavg()[0],
            wall_s=wall,
        )


def noop_script(code: Path, task_file: Path, directory: Path) -> Path:
    script = directory / "noop.json"
    subprocess.run(
        [sys.executable, "-m", "workflow_bench.tasks", "agent-script", "--tasks", str(task_file),
         "--agent", "noop", "--out", str(script)],
        cwd=code, env={**os.environ, "PYTHONPATH": str(code)}, check=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return script


# ── the table ───────────────────────────────────────────────────────────────────────────────


def fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", choices=[r.name for r in RUNGS], default=None)
    parser.add_argument("--quick", action="store_true", help=f"the small ladder {QUICK_SIZES}, 3 cells each")
    parser.add_argument(
        "--runs", type=int, default=None, help="cells per sweep; the first is not measured (4)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="sweeps per rung and revision, interleaved (1)")
    parser.add_argument("--baseline-rev", help="also run a worktree of this commit, interleaved rung by rung")
    parser.add_argument("--runner-arg", action="append", default=[], help="extra runner flag (repeatable)")
    parser.add_argument("--nonroot-user", help="also run every rung as this account (root only; see above)")
    parser.add_argument(
        "--nonroot-checkout", type=Path, help="that account's own clone, after its ./dev setup"
    )
    parser.add_argument(
        "--nonroot-control",
        action="store_true",
        help="with --nonroot-user: also run it with its namespace refused (its cells copy: the control)",
    )
    args = parser.parse_args()
    nonroot = None
    if (args.nonroot_user is None) != (args.nonroot_checkout is None):
        parser.error("--nonroot-user and --nonroot-checkout go together")
    if args.nonroot_user is not None:
        if os.geteuid() != 0:
            parser.error("--nonroot-user needs root (it runs the other account with setpriv)")
        try:
            account = pwd.getpwnam(args.nonroot_user)
        except KeyError:
            parser.error(f"--nonroot-user: no account {args.nonroot_user!r}")
        checkout = args.nonroot_checkout.resolve()
        if not (checkout / ".venv" / "bin" / "python").exists():
            parser.error(
                f"--nonroot-checkout {checkout}: no .venv (run ./dev setup there as {account.pw_name})"
            )
        scratch = Path(
            tempfile.mkdtemp(prefix="rs-nr-", dir=os.environ.get("REPO_SCALE_NONROOT_TMP") or "/tmp")
        )
        scratch.chmod(0o755)
        nonroot = NonRoot(account, checkout, scratch)
        nonroot.own(scratch)
    if args.sizes is None:
        args.sizes = list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    if args.runs is None:
        args.runs = 3 if args.quick else 4
    if args.runs < 2:
        parser.error("--runs must be at least 2 (the first cell is not measured)")
    revisions: list[tuple[str, Path]] = [("current", ROOT)]
    nonroot_label = f"non-root ({args.nonroot_user})"
    control_label = f"non-root ({args.nonroot_user}), copy control"
    as_users: dict[str, NonRoot] = {}
    if nonroot is not None:
        revisions.append((nonroot_label, nonroot.checkout))
        as_users[nonroot_label] = nonroot
        if args.nonroot_control:
            revisions.append((control_label, nonroot.checkout))
            as_users[control_label] = dataclasses.replace(nonroot, env_extra=(CONTROL_ENV,))
    worktree: Path | None = None
    if args.baseline_rev:
        worktree = Path(tempfile.mkdtemp(prefix="rs-base-"))
        worktree.rmdir()
        add = ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(worktree), args.baseline_rev]
        subprocess.run(add, check=True)
        revisions.insert(0, (args.baseline_rev, worktree))
    started_load = os.getloadavg()
    results: dict[tuple[str, str], list[Sweep]] = {}
    sizes: dict[str, tuple[int | None, int | None]] = {}
    handovers: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="rs-tasks-") as scratch:
            for rung in (r for r in RUNGS if r.name in args.sizes):
                directory = Path(scratch) / rung.name
                directory.mkdir()
                if rung.source is None:
                    task_file, script, sizes[rung.name] = None, None, (None, None)
                else:
                    repo, files, total = rung_repo(rung)
                    sizes[rung.name] = (files, total)
                    handovers[rung.name] = copy_and_chown_s(repo, directory)
                    task_file = write_task_file(rung, repo, directory)
                    try:
                        script = noop_script(ROOT, task_file, directory)
                    except subprocess.CalledProcessError as exc:  # e.g. over a task cap: exit 2
                        said = (exc.stderr or "").strip().splitlines()
                        log(f"  {rung.name} refused before any cell (exit {exc.returncode}): {said[-1:]}")
                        continue
                staged: tuple[Path, Path | None] | None = None
                if nonroot is not None and rung.source is not None and task_file is not None:
                    staged = nonroot.stage(rung.name, repo, task_file, script)
                for _ in range(args.repeat):
                    for label, code in revisions:
                        tasks = task_file or code / "tasks.scenarios.yaml"
                        as_user = as_users.get(label)
                        run_script = script
                        if as_user is not None and staged is not None:
                            tasks, run_script = staged
                        log(f"{rung.name} on {label}: {args.runs} cells")
                        sweep = run_sweep(
                            code, tasks, run_script, runs=args.runs, extra=args.runner_arg, nonroot=as_user
                        )
                        results.setdefault((rung.name, label), []).append(sweep)
                        log(
                            f"  exit {sweep.exit_code}, overhead/cell {fmt(_median(sweep.overheads), 2)} s, "
                            f"outcomes {sweep.outcomes}, wall {sweep.wall_s:.0f} s, load {sweep.load:.1f}"
                        )
    finally:
        if nonroot is not None:
            shutil.rmtree(nonroot.scratch, ignore_errors=True)
        if worktree is not None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False
            )
    print_table(args, revisions, results, sizes, handovers, started_load)
    return 0


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def copy_and_chown_s(repo: Path, directory: Path) -> float:
    """Seconds to copy ``repo`` (``cp -a``) and hand the copy to another uid (``chown -R``)."""
    copy = directory / "handover"
    started = time.monotonic()
    subprocess.run(["cp", "-a", "--reflink=auto", "--", str(repo), str(copy)], check=True)
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "--no-dereference", "123456:123456", "--", str(copy)], check=True)
    elapsed = time.monotonic() - started
    shutil.rmtree(copy)
    return elapsed


def print_table(args, revisions, results, sizes, handovers, started_load) -> None:
    ended = os.getloadavg()
    sampled = [s.load for sweeps in results.values() for s in sweeps]
    print(
        f"\nrepo_scale: {args.runs} cells per sweep (the first not measured), "
        f"{args.repeat} sweep(s) per rung and revision, {os.cpu_count()} cores; "
        f"load average (1 min) {started_load[0]:.1f} at start, "
        f"{ended[0]:.1f} at end, {statistics.mean(sampled) if sampled else 0:.1f} mean during the sweeps"
    )
    headers = ["rung", "files", "MB", "copy+chown s", "revision", "template build s", "overhead/cell s"]
    headers.append("× smallest")
    if len(revisions) > 1:
        headers.append("× first")
    headers += ["peak runner RSS MB", "disk/cell MB", "outcomes (all cells)"]
    print("| " + " | ".join(headers) + " |")
    print(
        "| "
        + " | ".join("---" if h in ("rung", "revision", "outcomes (all cells)") else "---:" for h in headers)
        + " |"
    )
    smallest: dict[str, float] = {}
    for rung in (r for r in RUNGS if r.name in args.sizes and r.source is not None):
        for label, _ in revisions:
            value = _median([o for s in results.get((rung.name, label), []) for o in s.overheads])
            if value is not None and label not in smallest:
                smallest[label] = value
    for rung in (r for r in RUNGS if r.name in args.sizes):
        files, total = sizes[rung.name]
        base_value = None
        for label, _ in revisions:
            sweeps = results.get((rung.name, label), [])
            overhead = _median([o for s in sweeps for o in s.overheads])
            if label == revisions[0][0]:
                base_value = overhead
            outcomes: dict[str, int] = {}
            for sweep in sweeps:
                for kind, count in sweep.outcomes.items():
                    outcomes[kind] = outcomes.get(kind, 0) + count
            ratio = (
                overhead / smallest[label]
                if overhead is not None and smallest.get(label) and rung.source is not None
                else None
            )
            cells = [
                rung.name,
                "—" if files is None else f"{files:,}",
                "—" if total is None else f"{total / 1e6:,.0f}",
                fmt(handovers.get(rung.name), 2),
                label,
                fmt(_median([s.template_s for s in sweeps if s.template_s is not None])),
                f"{fmt(overhead, 2)} (n={sum(len(s.overheads) for s in sweeps)})",
                fmt(ratio, 2) + ("×" if ratio is not None else ""),
            ]
            if len(revisions) > 1:
                vs = overhead / base_value if overhead is not None and base_value else None
                cells.append(fmt(vs, 2) + ("×" if vs is not None else ""))
            exits = [s.exit_code for s in sweeps]
            cells += [
                fmt(max((s.peak_rss_mb for s in sweeps if s.peak_rss_mb), default=None), 0),
                fmt(_median([s.disk_mb for s in sweeps if s.disk_mb is not None]), 1),
                ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
                + ("" if all(code in (0, 1) for code in exits) else f" (exit {exits})"),
            ]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
