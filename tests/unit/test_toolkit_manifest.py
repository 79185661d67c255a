"""toolkit.yaml loading: the demo toolkit, the digest, every refusal naming file and key; MCP grants."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workflow_bench.arms import ARMS
from workflow_bench.toolkit.manifest import CORPUS_TOOLKIT, MANIFEST, MAX_MANIFEST_BYTES, load_toolkit
from workflow_bench.toolkit.mcp import EMPTY_MCP_CONFIG, JAIL_TARGET, session_mcp
from workflow_bench.toolkit.spec import ToolkitError

pytestmark = pytest.mark.unit

SERVER = {
    "name": "graph",
    "command": "/usr/bin/python3",
    "args": ["/opt/graph/server.py"],
    "env": {"GRAPH_MODE": "ro"},
    "read_only_tools": ["lookup", "impact"],
    "mutating_tools": ["rename"],
}


def _toolkit(tmp_path: Path, manifest: str | None = None, **changes) -> Path:
    root = tmp_path / "tk"
    shutil.copytree(CORPUS_TOOLKIT, root)
    if manifest is None and not changes:
        return root
    if manifest is None:
        import yaml

        data = yaml.safe_load((root / MANIFEST).read_text())
        data.update(changes)
        data = {k: v for k, v in data.items() if v is not None}
        manifest = yaml.safe_dump(data, sort_keys=False)
    (root / MANIFEST).write_text(manifest)
    return root


def test_demo_toolkit_by_name_and_by_directory():
    by_name, by_dir = load_toolkit("demo"), load_toolkit(CORPUS_TOOLKIT)
    assert by_name == by_dir
    assert (by_name.name, by_name.version) == ("demo", "1.0")
    assert dict(by_name.roles) == {"plan": "plan", "work": "work", "review": "review"}
    assert by_name.skills_path == CORPUS_TOOLKIT / "skills"
    assert by_name.mcp_servers == () and by_name.index is None
    assert by_name.digest is not None and by_name.digest.startswith("sha256:")


def test_digest_covers_the_role_skills_and_the_manifest(tmp_path):
    root = _toolkit(tmp_path)
    first = load_toolkit(root).digest
    assert first == load_toolkit(CORPUS_TOOLKIT).digest
    (root / "skills" / "work" / "SKILL.md").write_text("changed\n")
    second = load_toolkit(root).digest
    assert second != first
    (root / MANIFEST).write_text((root / MANIFEST).read_text().replace('"1.0"', '"1.1"'))
    assert load_toolkit(root).digest not in (first, second)


def test_roles_can_name_any_skill(tmp_path):
    root = _toolkit(tmp_path, roles={"plan": "my-plan", "work": "work", "review": "review"})
    shutil.copytree(root / "skills" / "plan", root / "skills" / "my-plan")
    assert load_toolkit(root).skill_for("plan") == "my-plan"


BAD = {
    "unknown-top-key": ({"colour": "blue"}, "colour"),
    "bad-name": ({"name": "Has Spaces"}, "name"),
    "missing-version": ({"version": None}, "version"),
    "missing-role": ({"roles": {"plan": "plan", "work": "work"}}, "roles.review"),  # the role missing
    "role-without-skill": ({"roles": {"plan": "plan", "work": "nope", "review": "review"}}, "roles.work"),
    "skills-root-missing": ({"skills_root": "nowhere"}, "skills_root"),
    "server-relative-command": (
        {"mcp_servers": [{**SERVER, "command": "python3"}]},
        "mcp_servers[0].command",
    ),
    "server-unknown-key": ({"mcp_servers": [{**SERVER, "network": True}]}, "mcp_servers[0].network"),
    "mutating-granted": (
        {"mcp_servers": [{**SERVER, "read_only_tools": ["lookup", "rename"]}]},
        "mcp_servers[0].read_only_tools",
    ),
    "no-read-only-tool": (
        {"mcp_servers": [{**SERVER, "read_only_tools": []}]},
        "mcp_servers[0].read_only_tools",
    ),
    "server-name-with-dunder": ({"mcp_servers": [{**SERVER, "name": "a__b"}]}, "mcp_servers[0].name"),
    "duplicate-server": ({"mcp_servers": [SERVER, SERVER]}, "mcp_servers[1].name"),
    "env-lowercase": ({"mcp_servers": [{**SERVER, "env": {"path": "x"}}]}, "mcp_servers[0].env"),
    "index-into-git": ({"index": {"command": ["x"], "output": ".git/idx"}}, "index.output"),
    "index-escapes": ({"index": {"command": ["x"], "output": "../idx"}}, "index.output"),
    "index-extra-key": ({"index": {"command": ["x"], "output": "idx", "reads": []}}, "index.reads"),
    "index-env-lowercase": ({"index": {"command": ["x"], "output": "idx", "env": {"a": "b"}}}, "index.env"),
    "mount-over-workspace": (
        {"runtime_mounts": [{"source": "skills", "target": "/workspace/x"}]},
        "runtime_mounts[0].target",
    ),
    "mount-over-claude": (
        {"runtime_mounts": [{"source": "skills", "target": "/opt"}]},
        "runtime_mounts[0].target",
    ),
    "mount-source-missing": (
        {"runtime_mounts": [{"source": "nope", "target": "/opt/x"}]},
        "runtime_mounts[0].source",
    ),
}


def test_every_defect_of_the_file_is_named_at_once(tmp_path):
    root = _toolkit(tmp_path, name="Bad Name", version=3, colour="blue")
    with pytest.raises(ToolkitError) as err:
        load_toolkit(root)
    lines = str(err.value).splitlines()
    assert [line.split(": ")[1] for line in lines] == ["name", "version", "colour"]
    assert lines[1].endswith("version: want a string, got 3")
    assert "known keys: name, version, skills_root, roles, mcp_servers, index, runtime_mounts" in lines[2]


@pytest.mark.parametrize("case", sorted(BAD))
def test_invalid_toolkit_names_file_and_key(case, tmp_path):
    changes, key = BAD[case]
    root = _toolkit(tmp_path, **changes)
    with pytest.raises(ToolkitError) as err:
        load_toolkit(root)
    assert f"{root / MANIFEST}: {key}:" in str(err.value)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("name: a\nname: b\n", "(yaml)"),  # duplicate keys are refused, not last-wins
        ("name: [unclosed\n", "(yaml)"),
        ("- a list\n", "(document)"),
        ("x: " + "y" * MAX_MANIFEST_BYTES + "\n", "(file)"),
    ],
    ids=["duplicate-key", "syntax", "not-a-mapping", "oversize"],
)
def test_unreadable_manifest(text, key, tmp_path):
    root = _toolkit(tmp_path, manifest=text)
    with pytest.raises(ToolkitError) as err:
        load_toolkit(root)
    assert f"{root / MANIFEST}: {key}:" in str(err.value)


def test_missing_manifest_and_unknown_name(tmp_path):
    with pytest.raises(ToolkitError, match=r"toolkit\.yaml: \(file\): no such file"):
        load_toolkit(tmp_path)
    with pytest.raises(ToolkitError, match="not a directory and not a shipped toolkit"):
        load_toolkit("no-such-toolkit")


def test_session_mcp_grants_only_read_only_tools_and_scrubs_the_environment(tmp_path):
    root = _toolkit(
        tmp_path, mcp_servers=[SERVER], runtime_mounts=[{"source": "skills", "target": "/opt/graph"}]
    )
    toolkit = load_toolkit(root)
    with_mcp = session_mcp(toolkit, with_mcp=True, home="/home/agent")
    assert with_mcp.granted_tools == ("mcp__graph__lookup", "mcp__graph__impact")
    assert with_mcp.refused_tools == ("mcp__graph__rename",)
    assert with_mcp.server_names == ("graph",)
    server = json.loads(with_mcp.config_json)["mcpServers"]["graph"]
    assert server["command"] == "/usr/bin/env" and server["args"][0] == "-i"
    args = server["args"]
    assert args[-3:] == ["--", "/usr/bin/python3", "/opt/graph/server.py"]
    assert args[1:4] == [
        "PATH=/opt/graph/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME=/home/agent",
        "GRAPH_MODE=ro",
    ]
    jail = args[4:-3]
    assert jail == ["/usr/bin/python3", "-I", JAIL_TARGET, "--writable", "/tmp", "--writable", "/dev"]
    assert not any(a.startswith(("ANTHROPIC", "WORKFLOW_BENCH")) for a in args)
    without = session_mcp(toolkit, with_mcp=False, home="/home/agent")
    assert without.config_json == EMPTY_MCP_CONFIG and without.granted_tools == ()
    assert without.refused_tools == ("mcp__graph",) and without.server_names == ()


def test_only_baseline_nomcp_goes_without_mcp():
    assert [name for name, arm in ARMS.items() if not arm.mcp] == ["baseline_nomcp"]
