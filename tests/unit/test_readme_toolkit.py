"""The README's ``toolkit.yaml`` example is a toolkit the loader accepts (with its files in place).

Negative control: the same example with its mutating tool also listed as read-only is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.spec import ToolkitError

pytestmark = pytest.mark.unit
README = Path(__file__).resolve().parents[2] / "docs" / "toolkits.md"  # the manual's toolkit page


def readme_example() -> str:
    section = README.read_text().split("## Your own toolkit\n", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match, "no yaml block under 'Your own toolkit'"
    return match.group(1)


def materialize(tmp_path: Path, text: str, monkeypatch) -> Path:
    """The toolkit directory the example describes: its role skills and its mount sources."""
    monkeypatch.setenv("WORKFLOW_BENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "mypack"
    data = yaml.safe_load(text)
    for skill in data["roles"].values():
        (root / data["skills_root"] / skill).mkdir(parents=True, exist_ok=True)
        (root / data["skills_root"] / skill / "SKILL.md").write_text(f"---\nname: {skill}\n---\n")
    for mount in data["runtime_mounts"]:
        source = mount["source"].replace("{cache}", str(tmp_path / "cache"))
        (root / source).mkdir(parents=True, exist_ok=True)
    (root / "toolkit.yaml").write_text(text)
    return root


def test_readme_toolkit_example_loads(tmp_path, monkeypatch):
    toolkit = load_toolkit(materialize(tmp_path, readme_example(), monkeypatch))
    assert toolkit.name == "mypack" and toolkit.granted_mcp_tools == (
        "mcp__graph__lookup",
        "mcp__graph__impact",
    )
    assert toolkit.index is not None and toolkit.index.digest_volatile == ("built.json",)
    assert toolkit.index.digest_command == ("/usr/bin/python3", "/opt/graph/index.py", "--dump")


def test_readme_example_with_a_mutating_tool_granted_is_refused(tmp_path, monkeypatch):
    text = readme_example().replace("read_only_tools: [lookup, impact]", "read_only_tools: [lookup, rename]")
    with pytest.raises(ToolkitError, match="read_only_tools"):
        load_toolkit(materialize(tmp_path, text, monkeypatch))
