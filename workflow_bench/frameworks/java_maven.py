"""Java: Maven Surefire through the harness's adapter, which runs ``mvn -o test`` on the named test
classes and hands Surefire's JUnit XML to the harness's reader (``judging.junit``); the toolchain
is the ``java`` runtime (Debian's OpenJDK, maven and its packaged Maven repository, provisioned
into the cache). Offline: the pom may name only what that repository holds (JUnit 4.13.2 / 5.9,
the core plugins at Debian's versions or unpinned).

Test files are Surefire's default includes (``Test*.java``, ``*Test.java``, ``*Tests.java``,
``*TestCase.java``) under the root module's ``src/test/java``; the command names their classes
(``calc.ClampTest``); test ids are ``<class>::<method>``. Sentinels are test methods ``t_<token>``
written before the class's closing brace, JUnit 5's in a file that imports ``org.junit.jupiter``,
else JUnit 4's (fully qualified annotations, so the file's other imports do not matter).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._model import Ecosystem, Framework, project_at_root

TEST_ROOT = "src/test/java/"
TEST_CLASS = re.compile(r"^src/test/java/(?:[^/]+/)*(?:Test[^/]*|[^/]*(?:Test|Tests|TestCase))\.java$")
_JUNIT4 = re.compile(
    rb"^\s*import\s+(?:static\s+)?org\.junit\.(?!jupiter\.)|@org\.junit\.Test\b", re.MULTILINE
)
_JUPITER = re.compile(
    rb"^\s*import\s+(?:static\s+)?org\.junit\.jupiter\.|@org\.junit\.jupiter\.api\.Test\b", re.MULTILINE
)
_LAST_BRACE = re.compile(rb"\}\s*\Z")


def _runs(path: str, _: bytes) -> bool:
    return bool(TEST_CLASS.match(path))


def _classes(files: Sequence[str]) -> list[str]:
    return sorted({f[len(TEST_ROOT) : -len(".java")].replace("/", ".") for f in files})


_DETECT = project_at_root(
    "maven-surefire", manifest="pom.xml", project="Maven project", language="Java", runnable=TEST_CLASS,
    not_runnable="none of the fix's Java files is a Surefire test class of the root module "
    "(src/test/java/**/*Test.java, Test*.java, *Tests.java, *TestCase.java): give --test-command",
    reason="the test files are Surefire test classes (src/test/java) and pom.xml is at the root",
)  # fmt: skip


def sentinels(data: bytes, names: Sequence[str]) -> bytes | None:
    """Four test methods (names[1:]) before the file's last closing brace, JUnit 5's when the file
    imports ``org.junit.jupiter``, else JUnit 4's; None when it is neither (no ``org.junit``
    import) or does not end with its class."""
    end = _LAST_BRACE.search(data)
    jupiter = bool(_JUPITER.search(data))
    if end is None or not (jupiter or _JUNIT4.search(data)):
        return None
    api, modifier, equal, skip = (
        ("org.junit.jupiter.api", "", "Assertions.assertEquals", "Disabled")
        if jupiter
        else ("org.junit", "public ", "Assert.assertEquals", "Ignore")
    )
    _, fail_library, fail_plain, passes, skips = names
    block = (
        f"\n    @{api}.Test\n    {modifier}void t_{fail_library}() {{\n"
        f'        {api}.{equal}("{fail_library}", "{fail_library}-");\n    }}\n'
        f"\n    @{api}.Test\n    {modifier}void t_{fail_plain}() {{\n"
        f'        throw new AssertionError("{fail_plain}");\n    }}\n'
        f"\n    @{api}.Test\n    {modifier}void t_{passes}() {{\n    }}\n"
        f'\n    @{api}.Test\n    @{api}.{skip}("{skips}")\n    {modifier}void t_{skips}() {{\n    }}\n'
    )
    return data[: end.start()] + block.encode() + data[end.start() :]


SUREFIRE = Framework(
    "maven-surefire",
    "java",
    _runs,
    'python3 -I -B "$WORKFLOW_BENCH_MAVEN" {files}',
    "mvn -o test -Dtest=<classes> through the harness's adapter ($WORKFLOW_BENCH_MAVEN), in a fresh "
    "copy of the tree; Surefire's JUnit XML read by the harness; ids <class>::<method>; the java "
    "runtime is Debian's OpenJDK, maven and Maven repository",
    kit={"WORKFLOW_BENCH_MAVEN": "maven_surefire.py"},
    runtime=("java", "17"),
    targets=_classes,
)
FRAMEWORKS = (SUREFIRE,)
JAVA = Ecosystem(
    name="java",
    label="Java",
    source=re.compile(r"\.java$"),
    detect=_DETECT,
    test_config=(
        ("pom.xml", "plugins, profiles, dependencies and Surefire's configuration choose what runs"),
        (".mvn", "jvm.config and maven.config add JVM and Maven options; extensions.xml loads code"),
    ),
    sentinel_file=re.compile(r"[^/]*\.java"),
    sentinel_writer=sentinels,
)
