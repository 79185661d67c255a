"""Toolchains from the distribution's packages: Debian's ``golang-X.Y-go`` (and the Rust one).

``apt-get download`` fetches the named packages (the apt archive's signed indexes vouch for
their hashes), ``dpkg-deb -x`` unpacks each into ``<cache>/runtimes/<name>-<version>-<digest of
the package list>``, once; nothing is installed on the host and no maintainer script runs. The
sandbox mounts the tree read-only at ``/opt/wfbench/<name>``; ``/opt/wfbench/bin`` links the
toolchain's commands to it. The record names every package and its exact version.

- **go** ``1.19`` (a ``X.Y`` the archive has as ``golang-X.Y-go``): ``golang-X.Y-go`` and
  ``golang-X.Y-src``. ``go`` finds its GOROOT from its own path (``usr/lib/go-X.Y``).
- **rust** ``1.63`` (the archive's ``rustc``, which must be that release): ``rustc``, ``cargo``,
  the standard library and the shared libraries cargo and rustc load that a Debian host may lack
  (libgit2, http-parser, mbedtls, LLVM 14); ``cargo`` and ``rustc`` on PATH are small wrappers
  that put the tree's library directory on ``LD_LIBRARY_PATH``. The linker (``cc``) is the
  host's, under ``/usr``.

Layer: mechanisms (process, digests). Callers: ``runtimes.provision``.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.process import run_process

from ._store import Provisioned, RuntimeProvisionError, install, version_problem

FETCH_TIMEOUT_S = 900  # golang-1.19 is ~80 MB


@dataclass(frozen=True, slots=True)
class DebianToolchain:
    name: str
    packages: Callable[[str], tuple[str, ...]]
    """The packages for a version."""
    links: Callable[[str], tuple[tuple[str, str], ...]]
    """(command, path inside the unpacked tree) for a version."""
    versioned: str | None = None
    """The package whose Version must start with the runtime's (None: its name carries it)."""
    wrappers: Callable[[str], dict[str, str]] = lambda _root: {}
    """Scripts written into the tree (path inside it → text) given its sandbox path."""


_MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}.get(platform.machine(), "")


def _rust_wrappers(root: str) -> dict[str, str]:
    libs = f"{root}/usr/lib/{_MULTIARCH}"
    head = (
        f"#!/bin/sh\nLD_LIBRARY_PATH={libs}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}; export LD_LIBRARY_PATH\n"
    )
    return {
        "wfbench-bin/rustc": f'{head}exec {root}/usr/bin/rustc "$@"\n',
        "wfbench-bin/cargo": (
            f'{head}RUSTC={root}/wfbench-bin/rustc; export RUSTC\nexec {root}/usr/bin/cargo "$@"\n'
        ),
    }


TOOLCHAINS = {
    "go": DebianToolchain(
        "go",
        lambda v: (f"golang-{v}-go", f"golang-{v}-src"),
        lambda v: (("go", f"usr/lib/go-{v}/bin/go"), ("gofmt", f"usr/lib/go-{v}/bin/gofmt")),
    ),
    "rust": DebianToolchain(
        "rust",
        lambda v: (
            "rustc",
            "cargo",
            f"libstd-rust-{v}",
            "libstd-rust-dev",
            "libgit2-1.5",
            "libhttp-parser2.9",
            "libmbedtls14",
            "libmbedx509-1",
            "libmbedcrypto7",
            "libllvm14",
        ),
        lambda _v: (("cargo", "wfbench-bin/cargo"), ("rustc", "wfbench-bin/rustc")),
        versioned="rustc",
        wrappers=_rust_wrappers,
    ),
}


def provision_debian(name: str, version: str, *, cache: Path, apt_get: str = "apt-get") -> Provisioned:
    if problem := version_problem(name, version):
        raise RuntimeProvisionError(problem)
    toolchain = TOOLCHAINS[name]
    packages = toolchain.packages(version)
    sandbox_path = f"/opt/wfbench/{name}"
    tag = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:12]
    final = cache / "runtimes" / f"{name}-{version}-{tag}"

    def build(staging: Path) -> dict[str, str]:
        with tempfile.TemporaryDirectory(dir=staging.parent, prefix=f".{name}-fetch-") as scratch:
            # The caller's TMPDIR may be a work root of its own, gone by now: dpkg-deb's lives here.
            env = {**os.environ, "TMPDIR": scratch}
            result = run_process(
                [apt_get, "download", "-q", "-o", "APT::Sandbox::User=root", *packages],
                cwd=Path(scratch),
                env=env,
                timeout_s=FETCH_TIMEOUT_S,
            )
            debs = sorted(Path(scratch).glob("*.deb"))
            if not result.ok or len(debs) != len(packages):
                raise RuntimeProvisionError(
                    f"{name} {version}: {', '.join(packages)} cannot be fetched from the distribution's "
                    f"archive (apt-get download): {result.describe() if not result.ok else 'no .deb'}"
                )
            versions = []
            for deb in debs:
                field = run_process(["dpkg-deb", "-f", str(deb), "Package", "Version"], env=env, timeout_s=60)
                unpack = run_process(
                    ["dpkg-deb", "-x", str(deb), str(staging)], env=env, timeout_s=FETCH_TIMEOUT_S
                )
                if not field.ok or not unpack.ok:
                    why = (field if not field.ok else unpack).describe()
                    raise RuntimeProvisionError(f"{name} {version}: {deb.name} does not unpack: {why}")
                package_field, version_field = (
                    line.split(":", 1)[1].strip()
                    for line in field.stdout.decode("utf-8", "replace").splitlines()[:2]
                )
                versions.append(f"{package_field}={version_field}")
                if package_field == toolchain.versioned and not re.match(
                    rf"(\d+:)?{re.escape(version)}\.", version_field
                ):
                    raise RuntimeProvisionError(
                        f"{name} {version}: the distribution's {package_field} is {version_field}, "
                        "not that release"
                    )
        for inside, text in toolchain.wrappers(sandbox_path).items():
            (staging / inside).parent.mkdir(parents=True, exist_ok=True)
            (staging / inside).write_text(text, encoding="utf-8")
            (staging / inside).chmod(0o755)
        for command, inside in toolchain.links(version):
            if not (staging / inside).exists():
                raise RuntimeProvisionError(f"{name} {version}: the packages hold no {inside} ({command})")
        return {"name": name, "version": version, "packages": " ".join(versions)}

    record = install(final, build)
    return Provisioned(
        name=name,
        version=version,
        digest=record["digest"],
        host_path=final,
        sandbox_path=sandbox_path,
        links=tuple((command, f"{sandbox_path}/{inside}") for command, inside in toolchain.links(version)),
    )
