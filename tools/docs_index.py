"""docs/index.md, the documentation site's front page: README.md with its links made site-relative
(generated: `python tools/docs_index.py`; edit README.md, never the page).

The README is the front door on the code host and the site's first page both; one text, so the two
cannot drift. ``docs/X`` links become ``X``, links to files outside ``docs/`` point at nothing on the
site and are refused. `tests/unit/test_docs_site.py` fails when the committed page differs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGE = ROOT / "docs" / "index.md"
NOTE = "<!-- generated from README.md by tools/docs_index.py: edit README.md, then run it -->\n"
_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def render(readme: str) -> str:
    def site_link(match: re.Match[str]) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if "://" in target or target.startswith("mailto:"):
            return match.group(0)
        if not target.startswith("docs/"):
            raise ValueError(f"README.md links to {target!r}, which is not on the documentation site")
        return f"]({target.removeprefix('docs/')}{anchor})"

    return NOTE + _LINK.sub(site_link, readme)


def main() -> int:
    try:
        PAGE.write_text(render(README.read_text(encoding="utf-8")), encoding="utf-8")
    except ValueError as exc:
        print(f"docs_index: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
