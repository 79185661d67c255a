"""The plan-document rule: planning adds or modifies exactly one regular file
`docs/plans/<name>.md` and may create only the directories on its way (`docs`, `docs/plans`).

Snapshots here are `workspace_snapshot` values (`file:…`, `dir:…`, `link:…`); `changed` is
what `changed_paths` reports between the snapshots before and after the plan session.
"""

from __future__ import annotations

import pytest

from workflow_bench.cells.run import EvidenceError, _accepted_plan_doc

FILE = "file:644:0123"
DIR = "dir:755"


@pytest.mark.parametrize(
    ("changed", "after"),
    [
        (("docs/plans/fix.md",), {"docs": DIR, "docs/plans": DIR, "docs/plans/fix.md": FILE}),
        (  # the directories on the way may be created by the session
            ("docs", "docs/plans", "docs/plans/fix.md"),
            {"docs": DIR, "docs/plans": DIR, "docs/plans/fix.md": FILE},
        ),
    ],
    ids=["modified-plan", "new-dirs-on-the-way"],
)
def test_one_plan_document_is_accepted(changed, after):
    assert _accepted_plan_doc(changed, after) == "docs/plans/fix.md"


PLAN = {"docs": DIR, "docs/plans": DIR, "docs/plans/fix.md": FILE}


@pytest.mark.parametrize(
    ("changed", "after"),
    [
        ((), {}),  # no plan
        (("docs/plans/a.md", "docs/plans/b.md"), {**PLAN, "docs/plans/a.md": FILE, "docs/plans/b.md": FILE}),
        (("docs/plans/fix.md", "src/x.py"), {**PLAN, "src/x.py": FILE}),  # an implementation change
        (("docs/plans/fix.txt",), {**PLAN, "docs/plans/fix.txt": FILE}),  # not markdown
        (("docs/plans/.md",), {**PLAN, "docs/plans/.md": FILE}),  # no name
        (("docs/plans/sub/fix.md",), {**PLAN, "docs/plans/sub": DIR, "docs/plans/sub/fix.md": FILE}),
        (("docs/plansx/fix.md",), {**PLAN, "docs/plansx/fix.md": FILE}),
        (("docs/plans/fix.md",), {"docs": DIR, "docs/plans": DIR}),  # deleted
        (("docs/plans/fix.md",), {**PLAN, "docs/plans/fix.md": "link:/etc/passwd"}),  # a symlink
        (("docs/plans/fix.md",), {**PLAN, "docs/plans/fix.md": DIR}),  # a directory
        (("docs/plans/fix.md",), {**PLAN, "docs/plans/fix.md": "special:4096"}),  # a fifo
    ],
    ids=[
        "none",
        "two-plans",
        "plus-a-source-file",
        "not-md",
        "empty-name",
        "nested",
        "prefix-dir",
        "deleted",
        "symlink-plan",
        "dir-plan",
        "fifo-plan",
    ],
)
def test_anything_but_one_regular_plan_file_is_invalid(changed, after):
    with pytest.raises(EvidenceError) as raised:
        _accepted_plan_doc(changed, after)
    assert raised.value.kind == "plan-evidence-invalid"


@pytest.mark.parametrize("extra", ["d", "doc", "docs/p", "docs/plan", "do", "docs/plans/sub", "notes"])
@pytest.mark.parametrize("kind", [DIR, "link:docs"], ids=["empty-dir", "symlink"])
def test_no_extra_directory_or_symlink_beside_the_plan(extra, kind):
    # "d", "doc" and "docs/p" are prefixes of "docs/plans", not directories on its way
    changed = tuple(sorted(("docs/plans/fix.md", extra)))
    with pytest.raises(EvidenceError, match="other changes"):
        _accepted_plan_doc(changed, {**PLAN, extra: kind})


@pytest.mark.parametrize("ancestor", ["docs", "docs/plans"])
def test_an_ancestor_replaced_by_a_symlink_is_invalid(ancestor):
    with pytest.raises(EvidenceError):
        _accepted_plan_doc((ancestor, "docs/plans/fix.md"), {**PLAN, ancestor: "link:/tmp"})
