"""The documentation site is generated where it can be, and builds without a broken link.

- docs/reference/cli.md is every command's ``--help`` (tools/cli_reference.py): a flag added,
  renamed or re-described without regenerating the page fails here;
- ``mkdocs build --strict`` (mkdocs.yml: every page in the navigation, every link and anchor
  found) passes; a page left out of the navigation or a broken anchor fails it (negative
  controls below, on a copy of the site).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_page_matches_every_commands_help():
    page = ROOT / "docs" / "reference" / "cli.md"
    assert page.read_text(encoding="utf-8") == _tool("cli_reference").render(), (
        "docs/reference/cli.md is stale: run `uv run --locked python tools/cli_reference.py`"
    )


def test_the_site_front_page_is_the_readme():
    page = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert page == _tool("docs_index").render((ROOT / "README.md").read_text(encoding="utf-8")), (
        "docs/index.md is stale: run `uv run --locked python tools/docs_index.py`"
    )


def test_a_readme_link_off_the_site_is_refused():
    docs_index = _tool("docs_index")
    assert docs_index.render("see [tasks](docs/tasks.md#keys)").endswith("see [tasks](tasks.md#keys)")
    with pytest.raises(ValueError, match=r"tools/mutation\.py"):
        docs_index.render("see [the tool](tools/mutation.py)")


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    return subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(site / "_site")],
        cwd=site,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(site)},
    )


def _copy_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", site / "docs")
    return site


def test_docs_build_strict(tmp_path):
    done = _build(_copy_site(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_strict_build_fails_on_a_page_left_out_of_the_navigation(tmp_path):
    site = _copy_site(tmp_path)
    (site / "docs" / "orphan.md").write_text("# Orphan\n")
    done = _build(site)
    assert done.returncode != 0 and "orphan.md" in done.stdout + done.stderr


def test_strict_build_fails_on_a_broken_anchor(tmp_path):
    site = _copy_site(tmp_path)
    with (site / "docs" / "tutorial.md").open("a") as page:
        page.write("\nSee [output](sweeps.md#no-such-section).\n")
    done = _build(site)
    assert done.returncode != 0 and "no-such-section" in done.stdout + done.stderr
