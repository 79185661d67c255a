"""The cell viewer at scale: a synthetic sweep of N cells (default 2,000), its sizes and open times.

Builds the directory from a real sweep's cells (``--from DIR``; without it, the README's demo sweep
is run first: real CLI, real bwrap, scripted model), repeating each cell's row, transcripts, wire
record and patch under new task ids until there are N cells, so every cell carries a real
trajectory. Then renders every report with ``python -m workflow_bench.report`` (timed) and opens
``viewer.html`` from ``file://`` in headless Chromium REPEAT times, timing navigation to the
rendered cell list (every row in the table) and then opening one cell (its data file loaded and
drawn). Prints sizes (page, per-cell data files, whole viewer), the medians, the load average
before and after, and checks them against the budgets below (exit 1 if one is missed).

    uv run --locked --extra dev python benchmarks/viewer_scale.py --cells 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The budgets the README states for a 2,000-cell sweep on the 2-core reference machine.
OPEN_BUDGET_S = 3.0
PAGE_BYTES_PER_CELL = 400  # the embedded index; the page itself adds ~30 KiB of script and style
CELL_FILE_MAX_BYTES = 512 * 1024
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--proxy-server=127.0.0.1:9",
]


def demo_sweep(tmp: Path) -> Path:
    out = tmp / "demo"
    argv = [sys.executable, "-m", "workflow_bench.runner", "--tasks", "tasks.scenarios.yaml"]
    subprocess.run([*argv, "--provider", "scripted", "--out", str(out)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return out


def synthesize(source: Path, dest: Path, cells: int) -> None:
    """``cells`` cells cycled from ``source``'s, each under a new task id, with its own files."""
    rows = [json.loads(line) for line in (source / "results.jsonl").read_text().splitlines() if line.strip()]
    record = json.loads((source / "sweep.json").read_text())
    bindings = {t["id"]: t for t in record["tasks"]}
    (dest / "transcripts").mkdir(parents=True)
    (dest / "wire").mkdir()
    out_rows, tasks = [], {}
    for i in range(cells):
        template = rows[i % len(rows)]
        task = f"{template['task']}-{i // len(rows):04d}"
        old_slug = f"{template['task']}-{template['arm']}-run{template['run']}"
        new_slug = f"{task}-{template['arm']}-run{template['run']}"
        row = {**template, "task": task}

        def copy(relative: str, old_slug: str = old_slug, new_slug: str = new_slug) -> str:
            new = relative.replace(old_slug, new_slug, 1)
            shutil.copyfile(source / relative, dest / new)
            return new

        transcripts = template["transcript_artifacts"]
        row["transcript_artifacts"] = [{**a, "path": copy(a["path"])} for a in transcripts]
        row["wire_artifacts"] = [copy(p) for p in template["wire_artifacts"]]
        row["patch_artifact"] = copy(template["patch_artifact"]) if template["patch_artifact"] else None
        out_rows.append(row)
        tasks.setdefault(task, {**bindings[template["task"]], "id": task})
    (dest / "results.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in out_rows))
    (dest / "sweep.json").write_text(json.dumps({**record, "tasks": list(tasks.values())}, indent=2))


def sizes(out: Path) -> dict[str, float]:
    files = sorted((out / "viewer").iterdir())
    data = [f.stat().st_size for f in files]
    return {
        "page_bytes": (out / "viewer.html").stat().st_size,
        "cell_files": len(data),
        "cell_file_median_bytes": statistics.median(data),
        "cell_file_max_bytes": max(data),
        "viewer_total_bytes": sum(data) + (out / "viewer.html").stat().st_size,
        "transcripts_total_bytes": sum(p.stat().st_size for p in (out / "transcripts").iterdir()),
    }


def open_times(out: Path, cells: int, repeat: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    url = (out / "viewer.html").resolve().as_uri()
    index_s, cell_s = [], []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            start = time.perf_counter()
            page.goto(url)
            page.wait_for_selector("body[data-state=index]", state="attached")
            index_s.append(time.perf_counter() - start)
            assert page.locator("tr.cell-row").count() == cells, "the list must show every cell"
            start = time.perf_counter()
            page.locator("tr.cell-row").nth(cells // 2).click()
            page.wait_for_selector(".pane[data-loaded='1']", state="attached")
            cell_s.append(time.perf_counter() - start)
            page.close()
        browser.close()
    return index_s, cell_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--from", dest="source", type=Path, help="a finished sweep to take cells from")
    parser.add_argument("--keep", type=Path, help="build the synthetic sweep here and keep it")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="wfbench-viewer-") as tmp:
        source = args.source or demo_sweep(Path(tmp))
        out = args.keep or Path(tmp) / "synthetic"
        synthesize(source, out, args.cells)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "workflow_bench.report", str(out)], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        render_s = time.perf_counter() - start
        measured = sizes(out)
        index_s, cell_s = open_times(out, args.cells, args.repeat)
    load_after = os.getloadavg()
    result = {
        "cells": args.cells,
        "render_s": round(render_s, 2),
        "open_index_s_median": round(statistics.median(index_s), 3),
        "open_index_s_max": round(max(index_s), 3),
        "open_cell_s_median": round(statistics.median(cell_s), 3),
        **measured,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }
    budgets = {
        "open under 3 s": result["open_index_s_max"] < OPEN_BUDGET_S,
        "page within budget": measured["page_bytes"] <= 64 * 1024 + PAGE_BYTES_PER_CELL * args.cells,
        "every cell file within budget": measured["cell_file_max_bytes"] <= CELL_FILE_MAX_BYTES,
    }
    print(json.dumps({**result, "budgets": budgets}, indent=2))
    return 0 if all(budgets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
