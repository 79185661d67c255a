"""docs/reference/cli.md: every command's ``--help``, generated (`python tools/cli_reference.py`).

Each subcommand of the front door (``workflow_bench.cli.COMMANDS``) and each of its own
subcommands (found in its usage line's ``{a,b,…}``) is asked for ``--help`` in this process, at a
fixed width, and the text is written verbatim. `tests/unit/test_docs_site.py` fails when the
committed page differs from what this prints: a flag added, renamed or re-described without
regenerating the page.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workflow_bench import argtypes  # noqa: E402
from workflow_bench.cli import COMMANDS, build_parser  # noqa: E402

PAGE = ROOT / "docs" / "reference" / "cli.md"
WIDTH = "100"
_CHOICES = re.compile(r"^usage: [^{\n]*?\{([a-z][a-z,-]*)\}", re.M)


def _help(argv: list[str]) -> str:
    name, rest = argv[0], argv[1:]
    out = io.StringIO()
    argtypes.invoked_as(name)
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            COMMANDS[name].load()([*rest, "--help"])
    finally:
        argtypes.invoked_as(None)
    return out.getvalue()


def _front_door_help() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args(["--help"])
    return out.getvalue()


def render() -> str:
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to the terminal: fix it so the page is stable
    lines = [
        "# Command reference",
        "",
        "Generated from the commands' own parsers (`python tools/cli_reference.py`); do not edit by",
        "hand. Each `workflow-bench SUBCOMMAND` is also `python -m workflow_bench.<module>`",
        "(the module is named in the list below).",
        "",
        "## workflow-bench",
        "",
        "```text",
        _front_door_help().rstrip(),
        "```",
    ]
    for name in COMMANDS:
        pending = [([name], _help([name]))]
        while pending:
            argv, text = pending.pop(0)
            lines += ["", f"## workflow-bench {' '.join(argv)}", "", "```text", text.rstrip(), "```"]
            match = _CHOICES.search(text)
            for choice in match.group(1).split(",") if match else ():
                child = _help([*argv, choice])
                if child != text:  # a subcommand of its own, not a positional choice
                    pending.append(([*argv, choice], child))
    return "\n".join(lines) + "\n"


def main() -> int:
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
