"""A new report column is one entry in ``reports/columns.py``: report.md, report.html and the viewer show it.

The package is copied, ``COLUMNS`` gets one entry for a Row field no column shows today
(``sessions``, the number of sessions a cell ran), and a sweep is rendered by the copy and by the
package as it is, each in a fresh interpreter (the renderers build their tables at import time).
The copy's report.md table and report.html table show the column with the reduced value and the
viewer's cell list data names it with each row's value; with the column's cells taken out, every
document is what the package renders today. The unchanged package shows it nowhere (and draws no
report.html table: no column is declared for report.html yet).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.builders import rows_text, sweep_record, sweep_runs
from workflow_bench.reports.aggregate import REVIEW_METRICS
from workflow_bench.reports.columns import COLUMNS, EVERYWHERE, REVIEW_COLUMNS, Column
from workflow_bench.reports.sweep_record import SWEEP_RECORD_FILE
from workflow_bench.rows.model import Row

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ENTRY = '    Column("sessions", "sessions", 0),\n'
LAST = "    *CHURN_COLUMNS,\n"  # COLUMNS' last entry


def documents(sweep_dir: str) -> dict[str, Any]:
    """The sweep's report.md, report.html and viewer page data as the imported package renders them."""
    import re  # imported here: RENDER runs this function alone in a fresh interpreter
    from pathlib import Path

    import workflow_bench
    from workflow_bench.report.render import render_reports
    from workflow_bench.reports.sweep_record import read_sweep_record

    sweep = Path(sweep_dir)
    rendered = render_reports(read_sweep_record(sweep), (sweep / "results.jsonl").read_text(), promotion=None)
    page = rendered.viewer.page
    found = re.search(r"<script id='viewer-data' type='application/json'>(.*?)</script>", page, re.S)
    assert found is not None
    return {
        "package": workflow_bench.__file__,
        "md": rendered.files["report.md"],
        "html": rendered.files["report.html"],
        "viewer": json.loads(found.group(1)),
        "viewer_page": page.replace(found.group(1), ""),
    }


# ``documents`` in a fresh interpreter: the renderers build their tables when imported.
RENDER = f"import json, sys\nfrom typing import Any\n\n{inspect.getsource(documents)}\n" + (
    "json.dump(documents(sys.argv[1]), sys.stdout)\n"
)


def sweep(out: Path) -> Path:
    """A finished sweep of two arms whose rows ran 2 (baseline) and 3 (workflow) sessions each."""
    rows = [*sweep_runs(3, "t1", "baseline", sessions=2), *sweep_runs(3, "t1", "workflow", sessions=3)]
    out.mkdir()
    (out / "results.jsonl").write_text(rows_text(rows), encoding="utf-8")
    (out / SWEEP_RECORD_FILE).write_text(
        sweep_record(arms=("baseline", "workflow")).to_text(), encoding="utf-8"
    )
    return out


def render_copy(package_root: Path, sweep_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", RENDER, str(sweep_dir)],
        cwd=package_root,
        env={**os.environ, "PYTHONPATH": str(package_root)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    assert Path(out["package"]).is_relative_to(package_root), out["package"]
    return out


def with_column(tmp: Path) -> Path:
    # __pycache__ too: copy2 keeps the mtimes, so only the edited module is compiled again
    shutil.copytree(ROOT / "workflow_bench", tmp / "workflow_bench")
    columns = tmp / "workflow_bench" / "reports" / "columns.py"
    text = columns.read_text(encoding="utf-8")
    assert text.count(LAST) == 1
    columns.write_text(text.replace(LAST, LAST + ENTRY), encoding="utf-8")
    return tmp


def without_cell(line: str, index: int) -> str:
    cells = line.split(" | ")
    return " | ".join(cells[:index] + cells[index + 1 :])


def test_the_new_field_is_unshown_today() -> None:
    # The premise: a numeric Row field, in no column yet; the entry added shows everywhere by default.
    assert Row.model_fields["sessions"].annotation == (int | None)
    assert "sessions" not in {column.field for column in COLUMNS}
    assert Column("sessions", "sessions", 0).shown_in == EVERYWHERE


def test_one_column_entry_shows_in_report_md_report_html_and_the_viewer(tmp_path: Path) -> None:
    rows = sweep(tmp_path / "sweep")
    today, added = documents(str(rows)), render_copy(with_column(tmp_path / "copy"), rows)
    assert Path(today["package"]).is_relative_to(ROOT)

    # report.md: after turns, before churn, the median of each arm's runs; nothing else moved.
    md_today, md_added = today["md"].splitlines(), added["md"].splitlines()
    start = md_added.index("## Per task and arm") + 2
    table = md_added[start : md_added.index("", start)]
    headers = table[0].split(" | ")
    at = headers.index("sessions")
    assert headers[at - 1 : at + 2] == ["turns", "sessions", "churn"]
    cells = {line.split(" | ")[2]: line.split(" | ")[at] for line in table[2:]}
    assert cells == {"baseline": "2", "workflow": "3", "**workflow savings %**": "—"}
    assert len(md_today) == len(md_added)
    changed = [(a, b) for a, b in zip(md_today, md_added, strict=True) if a != b]
    assert len(changed) == 5  # header, separator, two arms, one savings row
    assert all(without_cell(b, at) == a for a, b in changed)

    # report.html: a per task×arm table of the columns declared for it, here just this one.
    assert "Per task and arm" not in today["html"]
    table = re.search(r"<h2>Per task and arm</h2><table>.*?</table>", added["html"])
    assert table is not None
    assert "<th>sessions</th>" in table.group(0)
    assert "<tr><td>t1</td><td>workflow</td><td>3</td></tr>" in table.group(0)
    assert "<tr><td>t1</td><td>baseline</td><td>2</td></tr>" in table.group(0)
    assert added["html"].replace(table.group(0), "") == today["html"]

    # The viewer: the cell list's columns (drawn by viewer.js from this data) and every cell's value.
    assert added["viewer"]["columns"][-1] == {"field": "sessions", "header": "sessions", "digits": 0}
    assert added["viewer"]["columns"][:-1] == today["viewer"]["columns"]
    assert [c["sessions"] for c in added["viewer"]["cells"]] == [2, 3, 2, 3, 2, 3]
    assert all("sessions" not in c for c in today["viewer"]["cells"])
    for cell in added["viewer"]["cells"]:
        del cell["sessions"]
    del added["viewer"]["columns"][-1]
    assert added["viewer"] == today["viewer"]
    assert added["viewer_page"] == today["viewer_page"]  # the page script and its policy: unchanged


def test_every_column_is_a_numeric_row_field_declared_once() -> None:
    numeric = {Row.model_fields["num_turns"].annotation, Row.model_fields["cost_usd"].annotation}
    assert all(Row.model_fields[column.field].annotation in numeric for column in COLUMNS)
    assert len({column.field for column in COLUMNS}) == len(COLUMNS)
    assert len({column.header for column in COLUMNS}) == len(COLUMNS)
    assert {column.metric for column in REVIEW_COLUMNS} <= set(REVIEW_METRICS)
