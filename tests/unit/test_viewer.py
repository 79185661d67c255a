"""The cell viewer's pure parts: untrusted text, bounded reads, the diff, the trajectory, the page.

Pinned: hiding/reordering characters are shown, not kept; every string is cut at its field limit
and at the cell's byte budget, with a structural marker; a read never follows a link or blocks on
a FIFO; a patch's paths (quoted, with spaces) and counts; a session's turns in stream order with
results on their calls, subagents nested under the spawning call, tokens from the wire when it
served the message, calls the wire never saw marked, exchanges only the wire saw listed; the
embedded JSON cannot end its script element; the CSP hashes match the inline code; a re-render
is byte-identical; a cell's data file stays within its budget whatever its transcript holds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from tests.builders import sweep_record, sweep_row
from workflow_bench.output.directory import OutputDir, OutputWriteError
from workflow_bench.reports.viewer import DirectoryFiles, render_viewer
from workflow_bench.reports.viewer.cell import TRAJECTORY_BYTES, cell_document
from workflow_bench.reports.viewer.diff import parse_patch, unquote
from workflow_bench.reports.viewer.index import data_file
from workflow_bench.reports.viewer.page import asset, data_script, safe_json
from workflow_bench.reports.viewer.text import Budget, cut, visible
from workflow_bench.reports.viewer.trajectory import session_trajectory

pytestmark = pytest.mark.unit


# ── text ────────────────────────────────────────────────────────────────────


def test_hiding_and_reordering_characters_are_shown() -> None:
    assert visible("a\u202eb\u2028c\x00d\x1b[31m\ufeff\u200b") == (
        "a⟦U+202E⟧b⟦U+2028⟧c⟦U+0000⟧d⟦U+001B⟧[31m⟦U+FEFF⟧⟦U+200B⟧"
    )
    assert visible("tab\tnew\nline <b>&amp;") == "tab\tnew\nline <b>&amp;"  # markup is the page's to escape
    assert visible("\ud800") == "\ufffd"


def test_cut_keeps_head_and_tail_and_counts_what_it_left_out() -> None:
    piece = cut("".join(str(i % 10) for i in range(100)), 20)
    assert piece.omitted == 80 and piece.text.startswith("012345678901234") and piece.text.endswith("56789")
    assert cut("short", 20).omitted == 0 and cut("abc", 0).text == ""


def test_the_budget_runs_out_and_says_so() -> None:
    budget = Budget(10)
    assert budget.take("x" * 6, 100).text == "x" * 6 and not budget.spent_out
    second = budget.take("y" * 50, 100)
    assert len(second.text.replace("\n…\n", "")) < 10 and second.omitted > 40 and budget.spent_out
    assert budget.take("z", 100).text == ""  # nothing left
    capped = Budget(1000)
    assert capped.take("w" * 50, 10).omitted == 40 and not capped.spent_out  # a field limit is not the budget


# ── reading the directory ───────────────────────────────────────────────────


def test_reads_are_plain_relative_paths_never_through_a_link(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    (root / "transcripts").mkdir(parents=True)
    (root / "transcripts" / "a.jsonl").write_bytes(b"0123456789")
    (tmp_path / "secret").write_text("outside")
    os.symlink(tmp_path / "secret", root / "link.patch")
    os.symlink(root / "transcripts", root / "linked-dir")
    os.mkfifo(root / "fifo.patch")
    files = DirectoryFiles(root)
    read = files.read("transcripts/a.jsonl", limit=4)
    assert read is not None and read.data == b"0123" and read.size == 10 and read.truncated
    for refused in (
        "link.patch",
        "linked-dir/a.jsonl",
        "fifo.patch",
        "../secret",
        "/etc/passwd",
        "transcripts/../transcripts/a.jsonl",
        ".wfbench.lock",
        "transcripts",
        "",
    ):
        assert files.read(refused, limit=100) is None, refused


# ── the diff ────────────────────────────────────────────────────────────────

PATCH = """diff --git a/ledger/money.py b/ledger/money.py
index c5dfc0b..235dcb1 100644
--- a/ledger/money.py
+++ b/ledger/money.py
@@ -1,3 +1,3 @@
 keep
-old
+new
+added
\\ No newline at end of file
diff --git a/docs/a b.md b/docs/a b.md
new file mode 100644
--- /dev/null
+++ b/docs/a b.md
@@ -0,0 +1 @@
+hello
diff --git "a/odd\\tname\\303\\251" "b/odd\\tname\\303\\251"
deleted file mode 100644
--- "a/odd\\tname\\303\\251"
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


def test_a_patch_becomes_files_with_paths_statuses_counts_and_line_kinds() -> None:
    parsed = parse_patch(PATCH, Budget(10_000))
    files = parsed["files"]
    assert [(f["path"], f["status"], f["added"], f["removed"]) for f in files] == [
        ("ledger/money.py", "modified", 2, 1),
        ("docs/a b.md", "added", 1, 0),
        ("odd\tnameé", "deleted", 0, 1),
    ]
    kinds = [k for k, _ in files[0]["lines"]]
    assert kinds == ["meta", "meta", "meta", "meta", "hunk", "ctx", "del", "add", "add", "meta"]
    assert parsed["omitted_lines"] == 0
    assert unquote('"a\\"b\\\\c"') == 'a"b\\c'


def test_a_long_patch_is_cut_at_its_budget() -> None:
    long_patch = "diff --git a/x b/x\n@@ -1 +1,5000 @@\n" + "".join(f"+line {i}\n" for i in range(5000))
    parsed = parse_patch(long_patch, Budget(2_000))
    assert parsed["files"][0]["added"] == 5000  # counted, shown or not
    assert 0 < len(parsed["files"][0]["lines"]) < 200 and parsed["omitted_lines"] > 4800


# ── the trajectory ──────────────────────────────────────────────────────────


def _jsonl(*events: dict) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in events).encode()


def _assistant(mid: str, block: dict, parent: str | None = None, usage: dict | None = None) -> dict:
    message = {"id": mid, "content": [block], **({"usage": usage} if usage else {})}
    return {"type": "assistant", "message": message, "parent_tool_use_id": parent}


def _result(tool_id: str, text: str, parent: str | None = None, error: bool = False) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": text, "is_error": error}
    return {"type": "user", "message": {"content": [block]}, "parent_tool_use_id": parent}


USAGE = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 2,
}
STREAM = _jsonl(
    {"type": "system", "subtype": "init", "model": "m", "tools": ["Read", "Skill"]},
    _assistant("m1", {"type": "text", "text": "planning"}, usage={**USAGE, "input_tokens": 999}),
    _assistant("m1", {"type": "tool_use", "id": "s1", "name": "Skill", "input": {"skill": "plugin:plan"}}),
    _result("s1", "Launching skill: plan"),
    {"type": "user", "isSynthetic": True, "message": {"content": [{"type": "text", "text": "# Plan skill"}]}},
    _assistant("m2", {"type": "tool_use", "id": "a1", "name": "Agent", "input": {"prompt": "look"}}),
    _assistant("sub1", {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "x"}}, "a1"),
    _result("r1", "file body", parent="a1"),
    _result("a1", "subagent report"),
    _assistant("m3", {"type": "tool_use", "id": "forged", "name": "Bash", "input": {"command": "ls"}}),
    _result("forged", "oops", error=True),
    {"type": "result", "subtype": "success", "num_turns": 3, "total_cost_usd": 0.5, "result": "done"},
)
WIRE = [
    {"request": 0, "message_id": "m1", "status": 200, "usage": USAGE, "tool_uses": [["s1", "Skill"]]},
    {
        "request": 1,
        "message_id": "m2",
        "status": 200,
        "usage": {**USAGE, "output_tokens": 8},
        "tool_uses": [["a1", "Agent"]],
    },
    {
        "request": 2,
        "message_id": "sub1",
        "agent_id": "ag",
        "status": 200,
        "usage": USAGE,
        "tool_uses": [["r1", "Read"]],
    },
    {"request": 3, "message_id": "m3", "status": 200, "usage": USAGE, "tool_uses": []},
    {"request": 4, "message_id": "retry", "status": 529, "completed": False, "usage": USAGE, "tool_uses": []},
]


def test_a_session_reads_in_stream_order_with_the_wire_beside_it() -> None:
    session = session_trajectory(STREAM, WIRE, Budget(100_000))
    turns = session["items"]
    assert [t["kind"] for t in turns] == ["turn", "user", "turn", "turn"]
    first, injected, agent_turn, last = turns
    assert [b["kind"] for b in first["blocks"]] == ["text", "tool"]
    skill = first["blocks"][1]
    assert (skill["name"], skill["skill"], skill["result"], skill["on_wire"]) == (
        "Skill",
        "plan",
        "Launching skill: plan",
        True,
    )
    assert first["usage"] == USAGE and first["usage_source"] == "wire"  # the wire's, not the stream's 999
    assert injected["synthetic"] is True and injected["text"] == "# Plan skill"
    agent = agent_turn["blocks"][0]
    assert agent["result"] == "subagent report" and agent["subagent"] is True
    (sub,) = agent["children"]
    assert sub["subagent_of"] == "a1" and sub["blocks"][0]["name"] == "Read"
    assert sub["blocks"][0]["result"] == "file body"
    forged = last["blocks"][0]
    assert forged["on_wire"] is False and forged["is_error"] is True and last["on_wire"] is True
    assert [w["request"] for w in session["wire_only"]] == [4] and session["wire_only"][0]["status"] == 529
    assert session["result"]["cost_usd"] == 0.5 and session["init"]["tools"] == ["Read", "Skill"]
    costs = [first["cost_usd"], agent_turn["cost_usd"], sub["cost_usd"], last["cost_usd"]]
    assert sum(costs) == pytest.approx(0.5, abs=1e-5) and costs[1] > costs[0]  # more output, more cost


def test_without_a_wire_record_nothing_is_claimed_about_it() -> None:
    session = session_trajectory(STREAM, [], Budget(100_000))
    first = session["items"][0]
    assert first["on_wire"] is None and first["usage_source"] == "stream"
    assert first["usage"]["input_tokens"] == 999  # the stream's own claim, labelled as such
    assert session["wire_only"] == []


def test_unreadable_lines_are_counted_and_a_huge_session_is_cut_at_its_budget() -> None:
    big = _jsonl(
        *(
            _assistant(
                f"m{i}", {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "x" * 9000}}
            )
            for i in range(400)
        )
    )
    session = session_trajectory(big + b"not json\n[1]\n", [], Budget(50_000))
    assert session["stream_lines_unreadable"] == 2
    assert session["omitted_items"] > 300 and len(session["items"]) < 100
    assert len(json.dumps(session)) < 80_000


# ── the page and its data files ─────────────────────────────────────────────


def test_embedded_json_cannot_end_its_element_or_a_string() -> None:
    hostile = "</script><!--<script>\u2028\u2029&"
    text = safe_json({"k": hostile})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"k": hostile}
    script = data_script("viewer/" + "0" * 20 + ".js", {"k": hostile, "__proto__": 1}).decode("ascii")
    call = re.fullmatch(r'wfbViewer\.receive\("viewer/0{20}\.js",("(?:[^"\\]|\\.)*")\);\n', script)
    assert call is not None  # one call, one string literal: nothing else runs
    assert json.loads(json.loads(call.group(1))) == {"k": hostile, "__proto__": 1}


def _sweep(tmp_path: Path, rows) -> Path:
    out = tmp_path / "out"
    (out / "transcripts").mkdir(parents=True)
    (out / "wire").mkdir()
    for r in rows:
        slug = f"{r.task}-{r.arm}-run{r.run}"
        (out / f"transcripts/{slug}-s0-sid.jsonl").write_bytes(STREAM)
        (out / f"wire/{slug}-s0.jsonl").write_text("".join(json.dumps(w) + "\n" for w in WIRE))
        (out / f"{slug}.patch").write_text(PATCH)
    return out


def _with_files(r):
    slug = f"{r.task}-{r.arm}-run{r.run}"
    transcript = {"path": f"transcripts/{slug}-s0-sid.jsonl", "sha256": "0" * 64, "bytes": 1, "source": "s"}
    return r.replace(
        transcript_artifacts=[transcript],
        wire_artifacts=[f"wire/{slug}-s0.jsonl"],
        patch_artifact=f"{slug}.patch",
        sessions=1,
    )


def test_the_page_and_data_files_are_deterministic_with_matching_csp_hashes(tmp_path: Path) -> None:
    rows = [_with_files(sweep_row("t1", arm, 0)) for arm in ("workflow", "baseline")]
    out = _sweep(tmp_path, rows)
    provenance = sweep_record(arms=("workflow", "baseline")).provenance()
    first = render_viewer(provenance, rows, DirectoryFiles(out))
    assert render_viewer(provenance, rows, DirectoryFiles(out)) == first
    assert set(first.data) == {data_file("t1/workflow/0"), data_file("t1/baseline/0")}
    for source in (asset("viewer.js"), asset("viewer.css")):
        digest = base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in first.policy and source in first.page
    assert f'content="{first.policy}"' in first.page
    assert "require-trusted-types-for 'script'" in first.policy and "unsafe" not in first.policy
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", first.page)  # nothing from the network


def test_a_duplicated_row_stays_reachable_under_its_own_key(tmp_path: Path) -> None:
    row = sweep_row("t1", "workflow", 0)
    viewer = render_viewer(sweep_record().provenance(), [row, row], DirectoryFiles(tmp_path))
    index = json.loads(
        re.search(r"<script id='viewer-data' type='application/json'>(.*?)</script>", viewer.page).group(1)
    )
    assert [c["key"] for c in index["cells"]] == ["t1/workflow/0", "t1/workflow/0#2"]
    assert len(viewer.data) == 2


def test_a_cell_with_a_huge_transcript_stays_within_its_budget(tmp_path: Path) -> None:
    row = _with_files(sweep_row("t1", "workflow", 0))
    out = _sweep(tmp_path, [row])
    huge = _jsonl(
        *(
            event
            for i in range(3000)
            for event in (
                _assistant(
                    f"m{i}",
                    {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "c" * 5000}},
                ),
                _result(f"t{i}", "o" * 20_000),
            )
        )
    )
    (out / "transcripts/t1-workflow-run0-s0-sid.jsonl").write_bytes(huge)
    document = cell_document(row, DirectoryFiles(out))
    size = len(data_script(data_file("t1/workflow/0"), document))
    assert len(huge) > 70_000_000 // 3 and size < 2 * TRAJECTORY_BYTES
    assert document["truncated"] is True and document["sessions"][0]["omitted_items"] > 1000


def test_a_row_pointing_outside_the_directory_links_nothing(tmp_path: Path) -> None:
    (tmp_path / "secret.patch").write_text(PATCH)
    out = tmp_path / "out"
    out.mkdir()
    row = sweep_row("t1", "workflow", 0, patch_artifact="../secret.patch", wire_artifacts=["/etc/passwd"])
    document = cell_document(row, DirectoryFiles(out))
    assert document["files"] == [] and document["patch"] is None


# ── writing the viewer folder ───────────────────────────────────────────────


def test_the_viewer_folder_is_replaced_whole_and_owner_only(tmp_path: Path) -> None:
    output = OutputDir(tmp_path)
    output.replace_folder("viewer", {"viewer/a.js": b"1", "viewer/b.js": b"2"})
    output.replace_folder("viewer", {"viewer/a.js": b"3"})
    assert sorted(p.name for p in (tmp_path / "viewer").iterdir()) == ["a.js"]
    assert (tmp_path / "viewer" / "a.js").read_bytes() == b"3"
    assert (tmp_path / "viewer").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "viewer" / "a.js").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["viewer"]  # no temporary folder left
    for bad in ("viewer/../x.js", "other/a.js", "viewer/.hidden", "viewer/sub/a.js"):
        with pytest.raises((OutputWriteError, ValueError)):
            output.replace_folder("viewer", {bad: b"x"})
    assert (tmp_path / "viewer" / "a.js").read_bytes() == b"3"  # a refused write changed nothing
