"""The framework registry: every framework is one module's declaration, and the places that used
to branch on a framework's name read it from there (detection, test configuration, sentinels,
the judge's kit, runtimes)."""

from __future__ import annotations

import importlib

import pytest

from workflow_bench import frameworks
from workflow_bench.judging import sentinels
from workflow_bench.runtimes import KNOWN, version_problem
from workflow_bench.tasks.fixdiff import is_test_path
from workflow_bench.tasks.frameworks import FrameworkError, detect_framework
from workflow_bench.taskspec.oracles import OracleFile, OracleSnapshot

pytestmark = pytest.mark.unit
GO_TEST = b'package calc\n\nimport "testing"\n\nfunc TestX(t *testing.T) {}\n'
JAVA_TEST = (
    b"package calc;\n\nimport static org.junit.Assert.assertEquals;\n\nimport org.junit.Test;\n\n"
    b"public class ClampTest {\n    @Test\n    public void low() {\n        assertEquals(0, 0);\n    }\n}\n"
)


class Base:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    @property
    def paths(self) -> list[str]:
        return list(self.files)

    def has(self, path: str) -> bool:
        return path in self.files

    def text(self, path: str) -> str:
        return self.files.get(path, "")

    def read(self, path: str) -> bytes | None:
        return self.files[path].encode() if path in self.files else None


def test_every_framework_names_a_registered_ecosystem_its_kit_files_and_a_known_runtime() -> None:
    assert set(frameworks.FRAMEWORKS) >= {
        "pytest",
        "unittest",
        "vitest",
        "jest",
        "node-test",
        "tape",
        "node-tap",
        "prove",
        "go-test",
        "cargo-test",
        "maven-surefire",
    }
    for framework in frameworks.FRAMEWORKS.values():
        assert framework.ecosystem in frameworks.ECOSYSTEMS, framework.name
        for name in framework.kit.values():
            assert (frameworks.KIT / name).is_file(), name
        if framework.runtime is not None:
            assert framework.runtime[0] in KNOWN and version_problem(*framework.runtime) is None


@pytest.mark.parametrize(
    ("files", "tests", "expected"),
    [
        ({"go.mod": "module m\n"}, [("calc/x_test.go", GO_TEST)], "go-test"),
        ({"Cargo.toml": "[package]\n"}, [("tests/clamp.rs", b"#[test] fn a() {}")], "cargo-test"),
        ({"pom.xml": "<project/>"}, [("src/test/java/calc/ClampTest.java", JAVA_TEST)], "maven-surefire"),
        (
            {"pyproject.toml": "[tool.pytest.ini_options]\n"},
            [("tests/test_a.py", b"def test_a(): pass")],
            "pytest",
        ),
    ],
)
def test_detection_is_the_ecosystems_own(files, tests, expected) -> None:
    assert detect_framework(Base(files), tests).framework.name == expected


def test_go_without_a_module_and_rust_without_an_integration_target_are_refused_with_why() -> None:
    with pytest.raises(FrameworkError, match=r"go\.mod"):
        detect_framework(Base({}), [("x_test.go", GO_TEST)])
    with pytest.raises(FrameworkError, match="integration test target"):
        detect_framework(Base({"Cargo.toml": ""}), [("src/tests/a.rs", b"")])


@pytest.mark.parametrize(
    ("test", "refusal"),
    [
        (("x_test.go", GO_TEST), "the fix's Go test files are not in a Go module (no go.mod at"),
        (("tests/a.rs", b""), "the fix's Rust test files are not in a cargo package (no Cargo.toml at"),
        (("src/test/java/ATest.java", JAVA_TEST), "the fix's Java test files are not in a Maven project (no"),
    ],
)
def test_a_project_without_its_root_manifest_is_refused_in_words(test, refusal) -> None:
    with pytest.raises(FrameworkError) as refused:
        detect_framework(Base({}), [test])
    assert str(refused.value).startswith(refusal)
    assert str(refused.value).endswith(" the repository root): give --test-command")


def test_a_detection_says_why() -> None:
    found = detect_framework(Base({"go.mod": "module m\n"}), [("x_test.go", GO_TEST)])
    assert found.reasons == ("the test files are *_test.go and go.mod is at the root",)


def test_java_outside_a_maven_project_or_without_a_surefire_test_class_is_refused_with_why() -> None:
    with pytest.raises(FrameworkError, match=r"no pom\.xml"):
        detect_framework(Base({"build.gradle": ""}), [("src/test/java/calc/ClampTest.java", JAVA_TEST)])
    # Surefire's default includes: a helper class, or a test class of another module, is not one.
    for path in ("src/test/java/calc/Helpers.java", "core/src/test/java/calc/ClampTest.java"):
        with pytest.raises(FrameworkError, match="Surefire test class"):
            detect_framework(Base({"pom.xml": ""}), [(path, JAVA_TEST)])


def test_the_maven_command_names_the_test_classes() -> None:
    files = [
        "src/test/java/com/x/ClampTest.java",
        "src/test/java/TestTop.java",
        "src/test/java/a/BTests.java",
    ]
    assert frameworks.FRAMEWORKS["maven-surefire"].command(files) == (
        'python3 -I -B "$WORKFLOW_BENCH_MAVEN" TestTop a.BTests com.x.ClampTest'
    )
    assert version_problem("java", "17") is None and version_problem("java", "17.0.2") is not None


def test_the_commands_name_go_packages_and_cargo_targets() -> None:
    go = frameworks.FRAMEWORKS["go-test"].command(["a/b/x_test.go", "a/b/y_test.go", "z_test.go"])
    assert go == 'python3 -I -B "$WORKFLOW_BENCH_GO_TEST" . ./a/b'
    cargo = frameworks.FRAMEWORKS["cargo-test"].command(["tests/one.rs", "tests/two/main.rs"])
    assert cargo == 'python3 -I -B "$WORKFLOW_BENCH_CARGO_TEST" one two'


def test_the_oracle_restores_go_and_rust_configuration_with_python_and_node_s() -> None:
    # judging.test_config's table, reached without importing a module named test_* (a hygiene rule)
    is_test_config = importlib.import_module("workflow_bench.judging.test_config").is_test_config
    for path in (
        "go.mod",
        "sub/go.work",
        "Cargo.toml",
        ".cargo/config.toml",
        "build.rs",
        "pom.xml",
        "core/pom.xml",
        ".mvn/jvm.config",
        "conftest.py",
        "jest.config.js",
    ):
        assert is_test_config(path), path
    assert not is_test_config("calc/calc.go") and not is_test_config("src/lib.rs")
    assert not is_test_config("src/main/java/calc/Clamp.java")


def _sealed(target: str, data: bytes) -> tuple[OracleSnapshot, sentinels.SentinelPlan]:
    counter = iter(range(100))
    snapshot = OracleSnapshot(command="true", files=(OracleFile.of(target, data),))
    return sentinels.add_sentinels(snapshot, token=lambda _n: f"{next(counter):016x}")


@pytest.mark.parametrize(
    ("target", "data", "marks"),
    [
        ("calc/x_test.go", GO_TEST, (b"t.Errorf(", b"t.Fatal(", b"t.Skip(")),
        ("tests/clamp.rs", b"#[test]\nfn a() {}\n", (b"assert_eq!(", b"panic!(", b"#[ignore]")),
        (
            "src/test/java/calc/ClampTest.java",
            JAVA_TEST,
            (b"org.junit.Assert.assertEquals(", b"throw new AssertionError(", b"@org.junit.Ignore("),
        ),
    ],
)
def test_go_rust_and_java_oracle_files_carry_the_planned_sentinels(target, data, marks) -> None:
    snapshot, plan = _sealed(target, data)
    assert [s.must for s in plan.sentinels] == list(sentinels.MUST) and plan.targets == (target,)
    sealed = snapshot.files[0].data
    assert all(m in sealed for m in marks) and all(s.token.encode() in sealed for s in plan.sentinels)
    if target.endswith(".java"):  # inside the class: before its closing brace
        assert sealed.startswith(data[: data.rindex(b"}")]) and sealed.endswith(b"    }\n}\n")
        assert sealed.count(b"@org.junit.Test") == 4
    else:
        assert sealed.startswith(data)


def test_a_jupiter_file_gets_junit5_sentinels_and_a_file_of_neither_none() -> None:
    jupiter = JAVA_TEST.replace(b"import org.junit.Test;", b"import org.junit.jupiter.api.Test;").replace(
        b"import static org.junit.Assert", b"import static org.junit.jupiter.api.Assertions"
    )
    snapshot, plan = _sealed("src/test/java/calc/ClampTest.java", jupiter)
    sealed = snapshot.files[0].data
    assert len(plan.sentinels) == 4 and sealed.count(b"@org.junit.jupiter.api.Test") == 4
    assert b"@org.junit.jupiter.api.Disabled(" in sealed and b"@org.junit.Test" not in sealed
    # Negative control of the writer's guard: TestNG (no org.junit import) would not run the
    # methods, and a file that does not end with its class has no place for them.
    testng = JAVA_TEST.replace(b"org.junit.Assert", b"org.testng.Assert").replace(
        b"org.junit.Test", b"org.testng.annotations.Test"
    )
    for data in (testng, JAVA_TEST + b"// trailing\n"):
        snapshot, plan = _sealed("src/test/java/calc/ClampTest.java", data)
        assert plan.sentinels == () and snapshot.files[0].data == data


def test_a_go_file_without_the_testing_import_is_left_unsealed() -> None:
    # Negative control of the writer's guard: the block would not compile there.
    snapshot, plan = _sealed("x_test.go", b"package x\n")
    assert plan.sentinels == () and snapshot.files[0].data == b"package x\n"


TAPE_TEST = b"const test = require('tape');\ntest('high', (t) => { t.equal(1, 1); t.end(); });\n"
TAPE_PACKAGE = '{"devDependencies": {"tape": "5.10.2"}, "scripts": {"test": "tape test/*.js"}}'


@pytest.mark.parametrize(
    ("files", "tests"),
    [
        ({}, [("test/high.js", TAPE_TEST)]),  # the test file loads tape
        ({}, [("test/esm.mjs", b"import test from 'tape';\n")]),
        ({"package.json": TAPE_PACKAGE}, [("test/high.js", b"require('./harness')('high', 1);\n")]),
    ],
)
def test_tape_is_detected_from_its_test_files_or_package_json(files, tests) -> None:
    found = detect_framework(Base(files), tests)
    assert found.framework.name == "tape", found.reasons


def test_tape_runs_each_file_that_loads_it_through_the_tap_adapter() -> None:
    tape = frameworks.FRAMEWORKS["tape"]
    assert (
        tape.command(["test/a.js", "test/b.mjs"])
        == 'python3 -I -B "$WORKFLOW_BENCH_TAP" tape test/a.js test/b.mjs'
    )
    assert tape.needs_tree == "node_modules" and tape.kit == {"WORKFLOW_BENCH_TAP": "tap.py"}
    assert tape.runs("test/high.js", TAPE_TEST) and tape.runs("test.js", TAPE_TEST)
    assert is_test_path("test.js") and is_test_path("test/high.js")  # test-side: the oracle's
    assert not is_test_path("lib/contest.js")
    # A helper or fixture beside the tests loads no tape: run as a test it would print no TAP.
    assert not tape.runs("test/helpers.js", b"module.exports = {};\n")
    assert not tape.runs("lib/clamp.js", TAPE_TEST)  # not where tests live
    # jest and vitest files are not tape's, whatever package.json says.
    jest = detect_framework(Base({"package.json": '{"devDependencies": {"jest": "30.0.0"}}'}),
                            [("a.test.js", b"test('x', () => {});\n")])  # fmt: skip
    assert jest.framework.name == "jest"


@pytest.mark.parametrize("target", ["test/high.js", "high.test.js"])
def test_a_tape_file_gets_tape_sentinels_never_the_javascript_block(target) -> None:
    """The JavaScript writer's tests never call t.end(): under tape its must-pass would fail."""
    snapshot, plan = _sealed(target, TAPE_TEST)
    assert [s.must for s in plan.sentinels] == list(sentinels.MUST) and plan.targets == (target,)
    sealed = snapshot.files[0].data
    assert sealed.startswith(TAPE_TEST) and sealed.count(b"t.end()") == 5
    assert b'require("tape")' in sealed and b"{ skip: true }" in sealed
    # Negative control: a file that does not load tape gets no tape block.
    other, _ = _sealed("high.test.js", b"test('x', () => { expect(1).toBe(1); });\n")
    assert b'require("tape")' not in other.files[0].data


NODE_TAP_TEST = b"import t from 'tap';\nt.test('high', (t) => { t.equal(1, 1); t.end(); });\n"


def test_node_tap_is_detected_and_runs_each_file_that_loads_tap() -> None:
    assert detect_framework(Base({}), [("test/high.mjs", NODE_TAP_TEST)]).framework.name == "node-tap"
    package = '{"devDependencies": {"tap": "21.8.0"}, "scripts": {"test": "tap"}}'
    found = detect_framework(Base({"package.json": package}), [("test/a.js", b"require('./h')(1);\n")])
    assert found.framework.name == "node-tap"
    node_tap = frameworks.FRAMEWORKS["node-tap"]
    assert node_tap.command(["test/a.js"]) == 'python3 -I -B "$WORKFLOW_BENCH_TAP" node-tap test/a.js'
    assert node_tap.runs("test/high.mjs", NODE_TAP_TEST) and not node_tap.runs("test/high.js", TAPE_TEST)
    assert not frameworks.FRAMEWORKS["tape"].runs("test/high.mjs", NODE_TAP_TEST)  # "tap" is not "tape"
    snapshot, plan = _sealed("test/high.mjs", NODE_TAP_TEST)
    sealed = snapshot.files[0].data
    assert [s.must for s in plan.sentinels] == list(sentinels.MUST)
    assert b'from "tap";' in sealed and sealed.count(b'.test("t_') == 4 and b'"tape"' not in sealed


def test_a_failed_run_that_ends_in_frames_shows_its_error_line() -> None:
    from workflow_bench.tasks.output_tail import output_tail

    jest = [
        "● Validation Error:",
        "  Could not resolve a module for a custom reporter.",
        "  Module name: src/decode.spec.ts",
        *(
            f"    at normalizeReporters (/workspace/node_modules/jest-config/build/index.js:{n}:20)"
            for n in range(12)
        ),
    ]
    shown = output_tail("\n".join(jest))
    assert "Could not resolve a module" in shown[0] and shown[1] == "…"
    assert shown[-1] == jest[-1]
    plain = ["line 1", "Error: boom", "done"]
    assert output_tail("\n".join(plain)) == plain  # a tail that is not only frames is as it was


def test_the_prompt_names_the_project_after_its_origin_or_manifest_never_a_directory(tmp_path) -> None:
    """Issue 32: a clone's directory (or a local remote's) is named after a ticket or a temporary
    path, so the prompt's ``{repo_name}`` is a hosted origin's name, else the manifest's, else
    "this repository"; never ``tmp-clone-4711``."""
    import subprocess

    from workflow_bench.tasks.project_name import UNNAMED, project_name, remote_name

    class Base:
        def __init__(self, files: dict[str, str]) -> None:
            self.files = files

        def read(self, path: str) -> bytes | None:
            return self.files[path].encode() if path in self.files else None

    clone = tmp_path / "tmp-clone-4711"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    assert project_name(clone, Base({})) == UNNAMED  # no remote, no manifest: not the directory
    assert project_name(clone, Base({"pyproject.toml": '[project]\nname = "calc"\n'})) == "calc"
    assert project_name(clone, Base({"package.json": '{"name": "@scope/decode"}'})) == "@scope/decode"
    assert project_name(clone, Base({"Cargo.toml": '[package]\nname = "clamp"\n'})) == "clamp"
    assert project_name(clone, Base({"go.mod": "module example.com/m/v2\n\ngo 1.22\n"})) == "example.com/m/v2"
    assert project_name(clone, Base({"package.json": "{not json"})) == UNNAMED
    subprocess.run(["git", "-C", str(clone), "remote", "add", "origin", "/srv/ticket-123"], check=True)
    assert project_name(clone, Base({})) == UNNAMED  # a local remote is a directory too
    subprocess.run(
        ["git", "-C", str(clone), "remote", "set-url", "origin", "https://github.com/r1chardj0n3s/parse.git"],
        check=True,
    )
    assert project_name(clone, Base({"pyproject.toml": '[project]\nname = "other"\n'})) == "parse"
    assert remote_name("git@github.com:r1chardj0n3s/parse.git") == "parse"
    assert remote_name("ssh://git@host:22/a/b/") == "b"
    assert remote_name("file:///srv/ticket-123") is None and remote_name("../ticket-123") is None


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ("2.1.9", "vitest-junit"),
        ("3.0.5", "vitest-junit"),
        ("3.1.4", "vitest-junit"),
        ("3.2.0", "vitest"),
        ("4.1.12", "vitest"),
        (None, "vitest"),
    ],
)
def test_vitest_streams_from_3_2_and_writes_junit_before(tmp_path, installed, expected) -> None:
    # Before 3.2 vitest loads no reporter from outside the project (the kit's place): JUnit XML.
    if installed is not None:
        (tmp_path / "node_modules" / "vitest").mkdir(parents=True)
        (tmp_path / "node_modules" / "vitest" / "package.json").write_text(f'{{"version": "{installed}"}}')
    node = frameworks.ECOSYSTEMS["node"]
    assert node.facts is not None
    facts = node.facts(tmp_path, ("node_modules",))
    tests = [("test/a.test.ts", b"import { test } from 'vitest';\n")]
    found = node.detect(frameworks.FRAMEWORKS, Base({"package.json": "{}"}), tests, facts)
    assert found.framework.name == expected


def test_debian_s_absolute_links_are_made_relative_to_the_java_tree(tmp_path) -> None:
    # Debian's Java packages link /usr/share/maven/conf -> /etc/maven and jars into /usr/share/java:
    # unpacked under the cache, those would resolve to the host's (or nothing) in the sandbox.
    from workflow_bench.runtimes import debian

    tree = tmp_path / "java"
    (tree / "etc" / "maven").mkdir(parents=True)
    (tree / "usr" / "share" / "maven").mkdir(parents=True)
    (tree / "usr" / "share" / "maven" / "conf").symlink_to("/etc/maven")
    (tree / "usr" / "share" / "maven" / "lib").symlink_to("../java")  # relative: kept as it is
    debian._relink(tree)
    conf = tree / "usr" / "share" / "maven" / "conf"
    assert not conf.readlink().is_absolute() and conf.resolve() == (tree / "etc" / "maven").resolve()
    assert str((tree / "usr" / "share" / "maven" / "lib").readlink()) == "../java"
    java = debian.TOOLCHAINS["java"]
    assert java.relative_links and not debian.TOOLCHAINS["go"].relative_links
    packages = java.packages("17")
    assert {"openjdk-17-jdk-headless", "maven", "junit4", "libsurefire-java"} <= set(packages)
    assert len(packages) == len(set(packages))
    assert [command for command, _ in java.links("17")] == ["java", "javac", "mvn"]
