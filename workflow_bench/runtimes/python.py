"""A Python of the version a task names, found on this machine and copied into the cache.

uv cannot download interpreters here (``UV_PYTHON_DOWNLOADS=never``), and a user's machine has
its Pythons wherever their tools put them, so ``find_python`` looks where those tools do, in this
order: pyenv (``$PYENV_ROOT/versions``, default ``~/.pyenv``), uv's managed Pythons
(``$UV_PYTHON_INSTALL_DIR``, default ``~/.local/share/uv/python``), ``/usr/local/bin`` and
``/usr/bin`` (``pythonX.Y``), then ``pythonX.Y`` on ``PATH`` (pyenv's shims skipped: what they
run depends on the directory). Each candidate reports its own version and prefix; the highest
release matching ``X.Y`` (or exactly ``X.Y.Z``) wins.

The installation (``sys.base_prefix``) is copied without ``site-packages`` (the sandbox must see
the interpreter, not whatever was pip-installed into it) into ``<cache>/runtimes/python-<version>-
<prefix hash>``, and mounted read-only at its original prefix: a CPython build names its prefix
(pyenv's ``--enable-shared`` builds find ``libpython`` through an rpath). One under ``/usr`` is
already visible in the sandbox and is used in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from workflow_bench.process import run_process

from ._store import Provisioned, RuntimeProvisionError, install, version_problem

PROBE = "import json, sys; print(json.dumps([list(sys.version_info[:3]), sys.base_prefix, sys.executable]))"
PROBE_TIMEOUT_S = 30
COPY_IGNORED = ("site-packages", "__pycache__")


def _candidates(minor: str) -> list[Path]:
    home = Path.home()
    found: list[Path] = []
    pyenv = Path(os.environ.get("PYENV_ROOT") or home / ".pyenv") / "versions"
    uv = Path(os.environ.get("UV_PYTHON_INSTALL_DIR") or home / ".local" / "share" / "uv" / "python")
    for root, pattern in ((pyenv, f"{minor}*"), (uv, f"cpython-{minor}*")):
        if root.is_dir():
            found += sorted(root.glob(f"{pattern}/bin/python{minor}"))
    found += [Path(d) / f"python{minor}" for d in ("/usr/local/bin", "/usr/bin")]
    on_path = shutil.which(f"python{minor}")
    if on_path and "/shims/" not in on_path:
        found.append(Path(on_path))
    return [p for p in found if p.is_file() and os.access(p, os.X_OK)]


def find_python(version: str) -> tuple[Path, tuple[int, int, int], Path]:
    """(executable, version, base prefix) of the best interpreter for ``version``; or the error."""
    if problem := version_problem("python", version):
        raise RuntimeProvisionError(problem)
    wanted = tuple(int(x) for x in version.split("."))
    minor = ".".join(version.split(".")[:2])
    best: tuple[tuple[int, int, int], Path, Path] | None = None
    seen: set[str] = set()
    for candidate in _candidates(minor):
        result = run_process([str(candidate), "-I", "-S", "-c", PROBE], timeout_s=PROBE_TIMEOUT_S)
        try:
            found, prefix, executable = json.loads(result.stdout) if result.ok else (None, None, None)
        except ValueError:
            continue
        if not found or not isinstance(executable, str) or not isinstance(prefix, str):
            continue
        if tuple(found[: len(wanted)]) != wanted or executable in seen:
            continue
        seen.add(executable)
        key = (int(found[0]), int(found[1]), int(found[2]))
        if best is None or key > best[0]:
            best = (key, Path(executable), Path(prefix))
    if best is None:
        raise RuntimeProvisionError(
            f"python {version}: no such interpreter on this machine (looked in pyenv, uv's managed "
            f"Pythons, /usr/local/bin, /usr/bin and PATH for python{minor}); install one, e.g. "
            f"`pyenv install {version}`"
        )
    return best[1], best[0], best[2]


def provision_python(version: str, *, cache: Path) -> Provisioned:
    executable, exact, prefix = find_python(version)
    full = ".".join(map(str, exact))
    binary_name = f"python{exact[0]}.{exact[1]}"
    target = f"{prefix}/bin/{binary_name}"
    if not (prefix / "bin" / binary_name).exists():
        target = str(executable)
    links = tuple((name, target) for name in ("python", "python3", binary_name))
    if re.match(r"/usr(/|$)", str(prefix)):
        # Already in the sandbox (/usr is bound read-only): only its executable is hashed.
        digest = hashlib.sha256(Path(target).read_bytes()).hexdigest()
        return Provisioned("python", full, digest, prefix, str(prefix), links, mounted=False)
    tag = hashlib.sha256(str(prefix).encode()).hexdigest()[:12]
    final = cache / "runtimes" / f"python-{full}-{tag}"

    def build(staging: Path) -> dict[str, str]:
        shutil.rmtree(staging)
        shutil.copytree(prefix, staging, symlinks=True, ignore=shutil.ignore_patterns(*COPY_IGNORED))
        return {"name": "python", "version": full, "prefix": str(prefix)}

    record = install(final, build)
    return Provisioned("python", full, record["digest"], final, str(prefix), links)
