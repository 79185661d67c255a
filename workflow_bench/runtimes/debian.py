"""Toolchains from the distribution's packages: Debian's ``golang-X.Y-go``, Rust's and Java's.

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
- **java** ``17`` (a release the archive has as ``openjdk-N-jdk-headless``): that JDK, Debian's
  ``maven`` and its packaged Maven repository (``/usr/share/maven-repo``: the ``-java`` packages
  Maven, its core plugins (resources, compiler, surefire) and JUnit 4/5 need, found by
  ``apt-cache depends --recurse``), so a project whose pom names what that repository holds builds
  offline (``mvn -o``). Debian's Java packages link into ``/etc`` and ``/usr/share/java`` by
  absolute paths: each such link is made relative to the tree, so nothing resolves to the host.
  ``mvn`` on PATH is a wrapper naming the JDK (``JAVA_HOME``) and the repository
  (``-Dmaven.repo.local``, read-only: Maven resolves from it without writing).

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
    wrappers: Callable[[str, str], dict[str, str]] = lambda _root, _version: {}
    """Scripts written into the tree (path inside it → text) given its sandbox path and version."""
    relative_links: bool = False
    """Rewrite the packages' absolute symlinks to point inside the tree (Debian's Java packages)."""


_MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}.get(platform.machine(), "")
_DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), "")
# ``apt-cache depends --recurse --no-recommends --no-suggests maven libmaven-resources-plugin-java
# libmaven-compiler-plugin-java libsurefire-java junit4 junit5``, its ``-java`` packages (Debian 12).
_MAVEN_REPO = (
    "aopalliance", "apache-pom", "apiguardian", "asm", "atinject-jsr330-api", "batik", "bsh",
    "cdi-api", "commons-beanutils", "commons-cli", "commons-codec", "commons-collections3",
    "commons-compress", "commons-configuration", "commons-digester", "commons-io", "commons-lang",
    "commons-lang3", "commons-logging", "commons-parent", "commons-text", "commons-validator",
    "dom4j", "doxia-core", "doxia", "doxia-sitetools", "error-prone", "fontbox2", "fop",
    "geronimo-annotation-1.3-spec", "geronimo-interceptor-3.0-spec", "guava", "guice", "hamcrest",
    "httpclient", "httpcore", "itext1", "jansi", "jaxen", "jaxp1.3", "jsoup", "jsr305", "jtidy",
    "maven-archiver", "maven-common-artifact-filters", "maven-compiler-plugin",
    "maven-file-management", "maven-filtering", "maven-jar-plugin", "maven-parent",
    "maven-plugin-tools", "maven-reporting-api", "maven-reporting-impl", "maven-resolver",
    "maven-resources-plugin", "maven-shared-incremental", "maven-shared-io", "maven-shared-utils",
    "maven3-core", "opentest4j", "opentest4j-reporting", "oro", "picocli", "plexus-ant-factory",
    "plexus-archiver", "plexus-bsh-factory", "plexus-build-api", "plexus-cipher",
    "plexus-classworlds", "plexus-compiler", "plexus-component-annotations",
    "plexus-container-default", "plexus-container-default1.5", "plexus-i18n",
    "plexus-interpolation", "plexus-io", "plexus-languages", "plexus-sec-dispatcher",
    "plexus-utils2", "plexus-velocity", "qdox", "qdox2", "sisu-inject", "sisu-plexus", "slf4j",
    "snappy", "surefire", "univocity-parsers", "velocity-tools", "wagon-file", "wagon-http-shaded",
    "wagon-provider-api", "xalan2", "xbean-reflect", "xerces2", "xml-commons-external",
    "xml-commons-resolver1.1", "xmlgraphics-commons", "xz",
)  # fmt: skip


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


def _java_wrappers(root: str, version: str) -> dict[str, str]:
    jdk = f"{root}/usr/lib/jvm/java-{version}-openjdk-{_DEB_ARCH}"
    return {
        "wfbench-bin/mvn": (
            f"#!/bin/sh\nJAVA_HOME={jdk}; export JAVA_HOME\n"
            f'exec {root}/usr/share/maven/bin/mvn -Dmaven.repo.local={root}/usr/share/maven-repo "$@"\n'
        )
    }


def _java_links(version: str) -> tuple[tuple[str, str], ...]:
    jdk = f"usr/lib/jvm/java-{version}-openjdk-{_DEB_ARCH}"
    return (("java", f"{jdk}/bin/java"), ("javac", f"{jdk}/bin/javac"), ("mvn", "wfbench-bin/mvn"))


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
        wrappers=lambda root, _v: _rust_wrappers(root),
    ),
    "java": DebianToolchain(
        "java",
        lambda v: (
            f"openjdk-{v}-jdk-headless",
            f"openjdk-{v}-jre-headless",
            "maven",
            "velocity",
            "junit4",
            "junit5",
            *(f"lib{name}-java" for name in _MAVEN_REPO),
        ),
        _java_links,
        wrappers=_java_wrappers,
        relative_links=True,
    ),
}


def _relink(tree: Path) -> None:
    """Every absolute symlink under ``tree`` made relative, pointing to the same path inside it."""
    for current, dirs, files in os.walk(tree):
        for name in (*dirs, *files):
            link = Path(current) / name
            if link.is_symlink() and (target := os.readlink(link)).startswith("/"):
                link.unlink()
                link.symlink_to(os.path.relpath(tree / target.lstrip("/"), current))


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
        if toolchain.relative_links:
            _relink(staging)
        for inside, text in toolchain.wrappers(sandbox_path, version).items():
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
