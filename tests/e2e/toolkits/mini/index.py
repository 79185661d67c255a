"""The ``mini`` toolkit's index step: a symbol table of the workspace, written to ``.mini-index/``.

``python3 index.py`` builds it (run by the harness once per (repository, SHA), inside the sandbox);
``symbols.json`` is reproducible, ``built.json`` is not (a build time and a random build id, like
real indexers' metadata), which is why the toolkit declares it volatile. ``python3 index.py --dump``
is the digest command: the symbols one per line, in a random order (the harness sorts the lines).
"""

import json
import os
import random
import sys
import time
from pathlib import Path

WORKSPACE = Path("/workspace")
OUTPUT = WORKSPACE / ".mini-index"


def symbols() -> list[str]:
    found = []
    for path in sorted(WORKSPACE.rglob("*.py")):
        if OUTPUT in path.parents:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            stripped = line.lstrip()
            if stripped.startswith(("def ", "class ")):
                name = stripped.split()[1].split("(")[0].split(":")[0]
                found.append(f"{name} {path.relative_to(WORKSPACE)}:{number}")
    return found


if __name__ == "__main__":
    if sys.argv[1:] == ["--dump"]:
        table = json.loads((OUTPUT / "symbols.json").read_text())
        random.shuffle(table)
        print("\n".join(table))
    else:
        OUTPUT.mkdir()
        (OUTPUT / "symbols.json").write_text(json.dumps(symbols(), indent=1))
        (OUTPUT / "built.json").write_text(json.dumps({"at": time.time(), "id": os.urandom(8).hex()}))
        print(f"mini-index: {len(symbols())} symbols")
