"""A Java/Maven task from ``tasks new`` alone, end to end (the ``java`` runtime: nothing on the host).

A small Maven project (JUnit 4, no plugin pinned) with an upstream-style fix commit (the fix's
code and a new test class beside the existing one): ``tasks new`` with no option beyond where to
write (and the prompt) detects Maven Surefire, gives the task the ``java`` runtime (Debian's
OpenJDK, maven and Maven repository, fetched once into the cache), self-checks it (base oracle
fails, reference passes, sentinels as planned) and locks it; the oracle agent then resolves the
task and the no-op agent does not, and every row records the java runtime.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fix_tasks import sanity_rows, task_from_fix

pytestmark = pytest.mark.e2e
PROMPT = "Clamp.clamp returns the lower bound for values above the range; it should return the upper bound.\n"
POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>clamp</artifactId>
  <version>0.1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>4.13.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
</project>
"""
CLAMP = """package com.example.clamp;

/** Limits values to a range. */
public final class Clamp {
    private Clamp() {}

    public static int clamp(int v, int lo, int hi) {
        if (v < lo) {
            return lo;
        }
        if (v > hi) {
            return lo;
        }
        return v;
    }
}
"""
BASE = {
    "pom.xml": POM,
    "src/main/java/com/example/clamp/Clamp.java": CLAMP,
    "src/test/java/com/example/clamp/ClampTest.java": """package com.example.clamp;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class ClampTest {
    @Test
    public void low() {
        assertEquals(0, Clamp.clamp(-5, 0, 10));
    }
}
""",
}
FIX = {
    "src/main/java/com/example/clamp/Clamp.java": CLAMP.replace(
        "(v > hi) {\n            return lo;", "(v > hi) {\n            return hi;"
    ),
    "src/test/java/com/example/clamp/ClampHighTest.java": """package com.example.clamp;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class ClampHighTest {
    @Test
    public void high() {
        assertEquals(10, Clamp.clamp(50, 0, 10));
    }
}
""",
}


@pytest.fixture(scope="module")
def java_task(tmp_path_factory, bwrap_bin) -> Path:
    return task_from_fix(tmp_path_factory.mktemp("java"), "clamp", "java-clamp", BASE, FIX, prompt=PROMPT)


def test_tasks_new_writes_a_maven_task_with_the_java_runtime_and_a_sealed_lock(java_task) -> None:
    (task,) = yaml.safe_load(java_task.read_text())["tasks"]
    assert task["runtimes"] == {"java": "17"}
    assert task["verify"].endswith('"$WORKFLOW_BENCH_MAVEN" com.example.clamp.ClampTest')
    assert task["oracle"]["command"].endswith('"$WORKFLOW_BENCH_MAVEN" com.example.clamp.ClampHighTest')
    assert [f["target"] for f in task["oracle"]["files"]] == [
        "src/test/java/com/example/clamp/ClampHighTest.java"
    ]
    entry = json.loads(java_task.with_name("tasks.lock.json").read_text())["tasks"]["java-clamp"]
    assert entry["oracle"]["passed"] == ["com.example.clamp.ClampHighTest::high"]
    assert entry["verify"]["passed"] == ["com.example.clamp.ClampTest::low"]
    assert entry["oracle_sealed"] == ["src/test/java/com/example/clamp/ClampHighTest.java"]
    (runtime,) = entry["subject"]["runtimes"]
    assert runtime["name"] == "java" and runtime["version"] == "17" and len(runtime["digest"]) == 64


def test_the_oracle_agent_resolves_the_maven_task_and_the_noop_agent_does_not(
    java_task, tmp_path, claude_bin, private_tmpdir, capsys
) -> None:
    solved, untouched = sanity_rows(java_task, tmp_path, capsys)
    assert solved["oracle_sealed"] == "sealed" and solved["oracle_tests_passed"] == 1
    assert [r["name"] for r in solved["task_runtimes"]] == ["java"]
    assert "com.example.clamp.ClampHighTest::high" in untouched["oracle_output"]
    assert [r["name"] for r in untouched["task_runtimes"]] == ["java"]
