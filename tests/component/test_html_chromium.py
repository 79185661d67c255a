"""report.html in real headless Chromium: renders offline, no console errors, every chart has data.

Builds a sweep directory through the real report pipeline (hand-built rows with candidate arms,
a baseline and error kinds), opens report.html with Debian's chromium (installed by ./dev setup)
with networking disabled, reads the DOM after the page script ran (`--dump-dom`) and saves a
screenshot under the test's tmp dir; the path is printed (pytest -s) for a human to look at.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.builders import (
    CHROMIUM_ARGS,
    make_toolkit,
    overlay_for,
    sweep_record,
    sweep_row,
    sweep_runs,
    write_sweep,
)

pytestmark = pytest.mark.component
# Flags per environment.md / the machine notes: no sandbox (root in CI), no GPU, no network.
CHROMIUM_FLAGS = (
    "--headless",
    *CHROMIUM_ARGS,  # the proxy is a dead port: any network fetch fails, the page must need none
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=5000",
)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing; ./dev setup installs it")
        pytest.skip("chromium not installed (./dev setup installs it)")
    return found


def _run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=False)


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Path:
    toolkit = make_toolkit(tmp_path / "toolkit")
    arms = ("workflow", "candidate_workflow", "baseline")
    rows = []
    for task in ("t1", "t2"):
        rows += sweep_runs(3, task, "workflow", cost_usd=1.0, usage_main_loop=None)
        rows += sweep_runs(3, task, "candidate_workflow", cost_usd=0.8)
        rows += sweep_runs(2, task, "baseline", cost_usd=0.5, skill_invoked=None)
        rows.append(
            sweep_row(task, "baseline", 2, resolved=False, error_kind="oracle-failed", skill_invoked=None)
        )
    usage = {"input_tokens": 100, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 500}
    rows = [
        r.replace(
            usage_main_loop={**usage, "output_tokens": 50},
            usage_transcripts={**usage, "output_tokens": 80},
            usage_provider={**usage, "output_tokens": 80},
        )
        for r in rows
    ]
    rec = sweep_record(arms=arms, tasks=("t1", "t2"), overlay=overlay_for(toolkit))
    return write_sweep(tmp_path / "out", rec, rows)


def test_report_html_renders_every_chart_without_errors(sweep_dir: Path, tmp_path: Path) -> None:
    chromium = _chromium()
    page = sweep_dir / "report.html"
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org", "") or "https://" not in text
    assert "<script src" not in text and "<link" not in text  # self-contained
    url = page.resolve().as_uri()
    dom = _run([chromium, *CHROMIUM_FLAGS, "--dump-dom", url], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    canvases = re.findall(r"<canvas id=\"(chart-[a-z-]+)\"[^>]*>", dom.stdout)
    assert sorted(canvases) == [
        "chart-errors",
        "chart-promotion",
        "chart-rate-cost",
        "chart-task-cost",
        "chart-tokens",
    ]
    points = dict(re.findall(r"<canvas id=\"(chart-[a-z-]+)\"[^>]*?data-points=\"(\d+)\"", dom.stdout))
    assert set(points) == set(canvases), "a chart was not drawn"
    assert all(int(n) > 0 for n in points.values()), points
    assert f'data-charts="{len(canvases)}"' in dom.stdout
    assert re.search(r'<pre id="page-errors"></pre>', dom.stdout), "the page reported an error"

    shot = tmp_path / "report.png"
    capture = _run(
        [chromium, *CHROMIUM_FLAGS, "--window-size=1400,2000", f"--screenshot={shot}", url], tmp_path
    )
    assert capture.returncode == 0 and shot.stat().st_size > 20_000, capture.stderr[-2000:]
    print(f"report.html screenshot: {shot}")


def test_a_broken_page_is_caught(sweep_dir: Path, tmp_path: Path) -> None:
    """Negative control: the same checks fail when the chart library is missing."""
    chromium = _chromium()
    page = sweep_dir / "report.html"
    text = page.read_text()
    start = text.index("<script>", text.index("report-data"))
    end = text.index("</script>", start)
    page.write_text(text[:start] + "<script>" + text[end:])
    dom = _run([chromium, *CHROMIUM_FLAGS, "--dump-dom", page.resolve().as_uri()], tmp_path)
    assert "data-points" not in dom.stdout
    assert "Chart is not defined" in dom.stdout + dom.stderr
