"""The cell viewer in real headless Chromium on real sweeps (real CLI, real bwrap, scripted model).

On the README's demo sweep: the index lists every cell; filtering to a failed cell and opening it
shows its tool calls in the order the transcript has them, its patch's first changed path and its
failing test id; two arms of a task open side by side; a cell's URL opens it directly; sorting
works; the loopback server serves the same viewer; ``python -m workflow_bench.report`` renders it
byte-identically. On a hostile sweep (tests/e2e/scripts/hostile-markup.yaml: markup in model
text, tool input and output, a tool name, a subagent's prompt and reply), nothing the agent wrote
runs: negative controls show the same payloads do run once the page inserts them as HTML and has
no CSP, and that the CSP alone still stops them.

A screenshot of every view is kept in the test's private directory
(``<pytest basetemp>/viewer-screenshots*/``); each test prints where (pytest -s).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.builders import result_dicts
from workflow_bench import runner
from workflow_bench.report.cli import main as rerender_main
from workflow_bench.reports.viewer.page import asset, content_security_policy
from workflow_bench.view.server import serve

from .conftest import DEMO_TASKS

pytestmark = pytest.mark.e2e
HOSTILE_SCRIPT = Path(__file__).parent / "scripts" / "hostile-markup.yaml"
LOADED = ".pane[data-loaded='1']"


def _sweep(tmp_path_factory, name: str, *extra: str) -> Path:
    out = tmp_path_factory.mktemp(name) / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("tmp")))
        code = runner.main(
            ["--tasks", str(DEMO_TASKS), "--runs", "1", "--provider", "scripted", "--out", str(out), *extra]
        )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory, bwrap_bin, claude_bin) -> Path:
    return _sweep(tmp_path_factory, "viewer-demo")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, bwrap_bin, claude_bin) -> Path:
    return _sweep(tmp_path_factory, "viewer-hostile", "--script", str(HOSTILE_SCRIPT), "--arms", "baseline")


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("viewer-screenshots")


@pytest.fixture
def page(chromium_browser) -> Iterator:
    context = chromium_browser.new_context(viewport={"width": 1500, "height": 1100})
    tab = context.new_page()
    tab.console_lines = []
    tab.on("console", lambda message: tab.console_lines.append(message.text))
    tab.on("pageerror", lambda error: tab.console_lines.append(f"pageerror: {error}"))
    yield tab
    context.close()


def _shot(tab, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    tab.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    print(f"viewer screenshot: {path}")


def _open(tab, out: Path, fragment: str = "") -> None:
    tab.goto((out / "viewer.html").resolve().as_uri() + fragment)
    tab.wait_for_selector("body[data-state]:not([data-state='loading'])", state="attached")


def _clean(tab) -> None:
    assert tab.locator("#page-errors").text_content() == ""
    assert not tab.console_lines, tab.console_lines


def _tool_names_in_order(out: Path, row: dict) -> list[str]:
    """Every tool call of the cell's raw transcripts, in session and stream order."""
    names = []
    for artifact in row["transcript_artifacts"]:
        for line in (out / artifact["path"]).read_text().splitlines():
            event = json.loads(line)
            if event.get("type") == "assistant":
                names += [b["name"] for b in event["message"]["content"] if b.get("type") == "tool_use"]
    return names


def _failing_tests(row: dict) -> list[str]:
    listed = [*(row["oracle_tests"] or {}).get("tests", []), *(row["verify_tests"] or {}).get("tests", [])]
    return [t["id"] for t in listed if t["outcome"] in ("failed", "error")]


def test_index_filter_open_a_failed_cell_its_tools_patch_and_failing_test(demo, page, shots):
    rows = result_dicts(demo)
    _open(page, demo)
    keys = page.locator("tr.cell-row").evaluate_all("rows => rows.map(r => r.dataset.key)")
    assert sorted(keys) == sorted(f"{r['task']}/{r['arm']}/{r['run']}" for r in rows)
    _shot(page, shots, "index")

    page.select_option("select[name=resolved]", "no")
    failed = [r for r in rows if not r["resolved"]]
    assert failed, "the demo corpus has cells that fail the hidden oracle"
    assert page.locator("tr.cell-row").count() == len(failed)
    assert "#resolved=no" in page.url
    _shot(page, shots, "index-failed")

    first = page.locator("tr.cell-row").first
    key = first.get_attribute("data-key")
    row = next(r for r in failed if f"{r['task']}/{r['arm']}/{r['run']}" == key)
    first.click()
    page.wait_for_selector(LOADED)
    assert page.url.endswith(f"#cell={key}")
    pane = page.locator(LOADED)
    assert pane.locator(".tool-name").all_text_contents() == _tool_names_in_order(demo, row)
    assert len(_tool_names_in_order(demo, row)) >= 3
    patch = (demo / row["patch_artifact"]).read_text()
    first_path = re.search(r"^diff --git a/(\S+) b/", patch, re.M).group(1)
    assert pane.locator(".diff-path").first.text_content() == first_path
    failing = _failing_tests(row)
    assert failing, row["oracle_output"]
    shown = pane.locator(".test-row[data-outcome=failed] .test-id, .test-row[data-outcome=error] .test-id")
    assert failing[0] in shown.all_text_contents()
    # The oracle's verdict comes first: above verify's section and every one of its test rows.
    order = pane.locator(".judge").evaluate_all("ss => ss.map(s => s.className)")
    assert order == ["judge judge-oracle", "judge judge-verify"], order
    oracle_top = pane.locator(".judge-oracle h3").bounding_box()["y"]
    verify_rows = pane.locator(".judge-verify .test-row")
    assert all(oracle_top < verify_rows.nth(i).bounding_box()["y"] for i in range(verify_rows.count()))
    _shot(page, shots, "cell-failed")
    _clean(page)


def test_two_arms_of_a_task_side_by_side(demo, page, shots):
    rows = result_dicts(demo)
    failed = next(r for r in rows if not r["resolved"])
    other = next(r for r in rows if r["task"] == failed["task"] and r["resolved"])
    key, other_key = (f"{r['task']}/{r['arm']}/{r['run']}" for r in (failed, other))
    _open(page, demo, f"#cell={key}")
    page.wait_for_selector(LOADED)
    page.select_option("select.compare", other_key)
    expect(page.locator(LOADED)).to_have_count(2)
    panes = page.locator(LOADED).evaluate_all("ps => ps.map(p => [p.dataset.side, p.dataset.key])")
    assert panes == [["main", key], ["compare", other_key]]
    assert f"compare={other_key}" in page.url
    boxes = [page.locator(LOADED).nth(i).bounding_box() for i in (0, 1)]
    assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"], "the panes are side by side"
    _shot(page, shots, "side-by-side")
    page.go_back()
    expect(page.locator(".pane")).to_have_count(1)
    _clean(page)


def test_sorting_by_cost(demo, page):
    _open(page, demo)
    page.click("th[data-column=cost_usd]")
    costs = [float(t) for t in page.locator("tr.cell-row td:nth-child(6)").all_text_contents()]
    assert costs == sorted(costs) and len(costs) == len(result_dicts(demo))
    page.click("th[data-column=cost_usd]")
    again = [float(t) for t in page.locator("tr.cell-row td:nth-child(6)").all_text_contents()]
    assert again == sorted(costs, reverse=True)
    _clean(page)


def test_an_unknown_cell_url_says_so(demo, page):
    _open(page, demo, "#cell=no-such-task/baseline/0")
    page.wait_for_selector(".pane[data-loaded='missing']")
    assert "no cell no-such-task/baseline/0" in page.locator(".pane").text_content()


def test_the_loopback_server_serves_the_same_viewer(demo, page, shots):
    server = serve(demo, port=0, render=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        row = next(r for r in result_dicts(demo) if r["arm"] == "workflow")
        page.goto(f"{url}#cell={row['task']}/{row['arm']}/{row['run']}")
        page.wait_for_selector(LOADED)
        assert page.locator(LOADED).locator(".skill-tag").all_text_contents() == [
            "skill: plan",
            "skill: work",
        ]
        link = page.locator(LOADED).locator("a", has_text="transcript s0")
        response = page.request.get(url + link.get_attribute("href"))
        assert response.status == 200 and response.headers["content-type"].startswith("text/plain")
        assert response.body() == (demo / row["transcript_artifacts"][0]["path"]).read_bytes()
        _shot(page, shots, "served-cell")
        _clean(page)
    finally:
        server.shutdown()
        server.server_close()


def test_rerender_writes_the_viewer_byte_identically(demo):
    def snapshot() -> dict[str, bytes]:
        files = [demo / "viewer.html", *sorted((demo / "viewer").iterdir())]
        return {p.relative_to(demo).as_posix(): p.read_bytes() for p in files}

    before = snapshot()
    assert len(before) == len(result_dicts(demo)) + 1
    (demo / "viewer" / "stale.js").write_text("stale")
    assert rerender_main([str(demo)]) == 0
    assert snapshot() == before  # the stale file is gone too


# ── injected markup ─────────────────────────────────────────────────────────

PAYLOAD_TEXTS = (
    "</script><script>window.__pwned='script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<a href=\"javascript:window.__pwned='link'\">click me</a>",
    "<style>body{display:none}</style>",
    "⟦U+2028⟧⟦U+2029⟧",
    "⟦U+202E⟧gnp.exe",
)


def _hostile_cell(tab, out: Path) -> None:
    row = next(r for r in result_dicts(out) if r["task"] == "trivial-amount-grouping")
    _open(tab, out, f"#cell={row['task']}/{row['arm']}/{row['run']}")
    tab.wait_for_selector(LOADED, state="attached")
    tab.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    tab.wait_for_timeout(300)  # time for any handler that slipped through to fire


def test_injected_markup_renders_inert(hostile, page, shots):
    _hostile_cell(page, hostile)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img, iframe, svg, object, embed, b").count() == 0
    assert page.locator("style").count() == 1 and page.locator("script[src]").count() == 1
    hrefs = page.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert all(h == "#" or re.fullmatch(r"[A-Za-z0-9._+/-]+", h) for h in hrefs), hrefs
    text = page.locator(LOADED).text_content()
    for payload in PAYLOAD_TEXTS:
        assert payload in text, payload  # shown, as text
    assert (
        page.locator(".tool-name").all_text_contents()[1] == "<img src=x onerror=\"window.__pwned='tool'\">"
    )
    assert page.locator(".subagent .tool-name").all_text_contents() == ["Read"]
    assert page.locator("body").is_visible()
    _shot(page, shots, "hostile-cell")
    _clean(page)


def _unsafe_copy(out: Path, *, keep_csp: bool) -> None:
    """viewer.html with a renderer that inserts strings as HTML (and, unless kept, no CSP)."""
    page_text = (out / "viewer.html").read_text()
    script, style = asset("viewer.js"), asset("viewer.css")
    as_text = 'node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));'
    as_html = (
        'if (typeof child === "object") node.appendChild(child);'
        ' else node.insertAdjacentHTML("beforeend", String(child));'
    )
    assert script.count(as_text) == 1
    unsafe = script.replace(as_text, as_html)
    page_text = page_text.replace(script, unsafe)
    policy = content_security_policy(script, style)
    assert policy in page_text
    page_text = page_text.replace(policy, content_security_policy(unsafe, style) if keep_csp else "")
    (out / "viewer.html").write_text(page_text)


def test_negative_control_html_insertion_without_csp_runs_the_payloads(hostile, page, tmp_path):
    copy = tmp_path / "out"
    _copy_sweep(hostile, copy)
    _unsafe_copy(copy, keep_csp=False)
    _hostile_cell(page, copy)
    assert page.evaluate("window.__pwned") is not None  # the detection above can see a payload run


def test_negative_control_the_csp_alone_stops_html_insertion(hostile, page, tmp_path):
    copy = tmp_path / "out"
    _copy_sweep(hostile, copy)
    _unsafe_copy(copy, keep_csp=True)
    row = next(r for r in result_dicts(copy) if r["task"] == "trivial-amount-grouping")
    _open(page, copy, f"#cell={row['task']}/{row['arm']}/{row['run']}")
    page.wait_for_timeout(1000)
    assert page.evaluate("window.__pwned") is None
    assert "TrustedHTML" in page.locator("#page-errors").text_content() + " ".join(page.console_lines)


def _copy_sweep(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest, symlinks=True)
