"""Reading a scripted-provider script: the bounded YAML loader in front, then the script's model.

The file's schema is the model in ``_script``; this module reads the one file it is given,
through the bounded loader of ``input_files`` (size cap, no FIFOs or devices, duplicate keys,
alias bombs and characters YAML refuses all refused), validates it once, and says where a defect
is: the file, the cell (``cells[i] match={...}``) and the dotted key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workflow_bench.input_files import InputFileError, load_yaml, problems, read_bounded
from workflow_bench.providers.scripted._script import Script, ScriptError

# Scripts carry whole file contents for the scripted tool calls; the demo script is 74 KB.
MAX_SCRIPT_BYTES = 8 * 1024 * 1024


def parse_script(data: object, *, source: str) -> Script:
    """Build a ``Script`` from already-parsed YAML; ``source`` names it in errors."""
    if not isinstance(data, Mapping):
        raise ScriptError(f"want a mapping, got {type(data).__name__}", source=source, where="top level")
    missing = [key for key in ("schema_version", "model", "cells") if key not in data]
    if missing:
        raise ScriptError("missing required key", key=missing[0], source=source, where="top level")
    if "source" in data:  # a field of the model, filled in here, never a key of the file
        raise ScriptError("unknown key; known keys: schema_version, model, cells", key="source",
                          source=source, where="top level")  # fmt: skip
    try:
        return Script.model_validate({**data, "source": source})
    except ValidationError as exc:
        raise _located(exc, data, source) from None


def _located(exc: ValidationError, data: Mapping[str, Any], source: str) -> ScriptError:
    """The first defect as a ``ScriptError``: the cell (``cells[i] match={...}``) split from the key."""
    loc = exc.errors(include_url=False)[0]["loc"]
    key, message = problems(exc, Script)[0]
    if len(loc) >= 2 and loc[0] == "cells" and isinstance(loc[1], int):
        where = f"cells[{loc[1]}]"
        cells = data.get("cells")
        raw = cells[loc[1]] if isinstance(cells, list) and loc[1] < len(cells) else None
        if isinstance(raw, Mapping) and isinstance(raw.get("match"), Mapping):
            pairs = ", ".join(f"{k}: {v!r}" for k, v in raw["match"].items())
            where += f" match={{{pairs}}}"
        key = key.removeprefix(f"cells[{loc[1]}]").lstrip(".")
        return ScriptError(message, key=key, source=source, where=where)
    return ScriptError(message, key="" if key == "(document)" else key, source=source, where="top level")


def load_script(path: str | Path) -> Script:
    """Read and validate a script file. Raises ``ScriptError`` (also for unreadable or non-YAML files)."""
    source = str(path)
    try:
        text = read_bounded(path, max_bytes=MAX_SCRIPT_BYTES).decode("utf-8")
        data = load_yaml(text)
    except (OSError, UnicodeDecodeError, InputFileError) as err:
        raise ScriptError(f"cannot load: {err}", source=source) from None
    return parse_script(data, source=source)
