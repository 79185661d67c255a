"""Reading user-supplied input: bounded bytes, bounded YAML, one declarative model; bounded walks.
Over 400 lines on purpose: every harness read of untrusted input (a file, a tree) starts here.

Owns the one YAML loader every input goes through (task files, scripted-provider scripts) and
the bounded read in front of it. A new user's typo must cost an exit 2, never the machine:

- ``read_bounded`` opens without blocking (a FIFO or ``/dev/zero`` is refused by type, never
  read), refuses anything but a regular file, and never reads more than its cap plus one byte.
- ``load_yaml`` is PyYAML's safe loader with two changes. Duplicate mapping keys are an error
  (PyYAML keeps the last one silently; a script or task file with two ``verify`` keys would run
  the one the author did not mean). Alias expansion is bounded: aliases are kept (the demo
  scripts share file contents through anchors), but before any Python object is built the
  composed node graph is weighed as if every alias were expanded (one unit per node plus the
  length of each scalar), memoized per node so the weighing itself costs only the graph's size.
  A "billion laughs" document is refused in milliseconds, and a recursive alias is refused too.
  Error messages carry line and column marks only, never the document's values, so a bomb is
  never expanded by printing it.

- ``InputModel`` is the base of every input file's declarative model (task file, toolkit.yaml,
  scripted-provider script): frozen, unknown keys refused, no coercion. ``problems`` turns a
  pydantic ``ValidationError`` into ``(key, message)`` pairs, the key dotted the way the files are
  written (``oracle.files[0].target``), the message in the project's words (``want a string, got
  int``), so every caller can name the file, the task and the key.

- ``bounded_walk`` is the one walker over directory trees the harness did not write (a clone
  after the agent ran, a proposer's overlay, a task repository's template, a plugin, an index):
  iterative, sorted, never following a link, and stopped at ``max_entries`` entries or
  ``max_depth`` levels with ``TreeLimitError`` (a ``ValueError`` naming the bound); ``OSError``
  when a directory cannot be read. ``os.walk`` recurses: a 1,100-deep directory chain a proposer
  left in its overlay raised ``RecursionError`` out of the evolve driver (a traceback, the
  generation never recorded), as ``shutil.rmtree`` did on a 3,000-deep chain in a cell.
  ``name_problem`` says why one entry name may not be taken as a file name (control characters,
  lone surrogates, non-UTF-8 bytes, reserved names); such names are refused with the reason and
  printed escaped, never raw.

Must never: follow a value into memory before it is weighed, construct arbitrary objects, or
recurse over a tree.
Callers: ``taskspec.schema`` (task files), ``toolkit.manifest`` (toolkit.yaml),
``providers.scripted`` (scripts); walks: workspace (snapshots), cells (index digests), sandbox
(template sizes, host handover), toolkit (overlays, comparator snapshots, manifests), evolve
(proposer clones, frozen overlays).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, get_args, get_origin

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

# Expanded weight of a YAML document: nodes + scalar characters as if every alias were copied.
# demo.yaml (74 KB, anchors shared between arms) weighs about 0.2 M; a 600-byte alias bomb
# weighs 10^9. 4 M keeps two orders of magnitude of room for real scripts.
MAX_YAML_EXPANDED_WEIGHT = 4_000_000


class InputFileError(ValueError):
    """An input file cannot be read or parsed within its bounds; the message names the problem."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None) -> None:
        where = f"line {line}, column {column}: " if line is not None and column is not None else ""
        super().__init__(f"{where}{message}")
        self.message = message
        self.line = line
        self.column = column


def read_bounded(path: str | Path, *, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path``; ``InputFileError`` if it is not one or is too big.

    ``FileNotFoundError`` propagates (callers word "no such file" themselves).
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; the type check then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise InputFileError(f"cannot open: {err.strerror or err}") from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError("not a regular file (a device, FIFO, socket or directory is refused)")
        if info.st_size > max_bytes:
            raise InputFileError(f"is {info.st_size} bytes; the limit is {max_bytes}")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise InputFileError(f"grew past the limit of {max_bytes} bytes while being read")
        return b"".join(chunks)
    except OSError as err:
        raise InputFileError(f"cannot read: {err.strerror or err}") from err
    finally:
        os.close(fd)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys instead of keeping the last one silently."""


def _construct_mapping(loader: _BoundedLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # merge keys may legitimately be overridden by explicit ones
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool):
            continue  # unhashable keys are rejected by construct_mapping itself
        if key in seen:
            shown = key if not isinstance(key, str) or len(key) <= 80 else f"{key[:80]}…"
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"duplicate key {shown!r}",
                key_node.start_mark,
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_BoundedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def expanded_weight(root: yaml.Node, *, limit: int = MAX_YAML_EXPANDED_WEIGHT) -> int:
    """The node graph's weight with every alias expanded; ``InputFileError`` past ``limit`` or on a cycle.

    Iterative (a deeply nested document must not hit Python's recursion limit) and memoized per
    node, so it visits each composed node once whatever the expansion would be.
    """
    weights: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            children = _children(node)
            weight = 1 + sum(weights[id(child)] for child in children)
            if isinstance(node, yaml.ScalarNode):
                weight += len(node.value)
            if weight > limit:
                mark = node.start_mark
                raise InputFileError(
                    f"YAML aliases expand this document past {limit} nodes and characters "
                    "(an alias bomb?); share less through anchors",
                    line=mark.line + 1,
                    column=mark.column + 1,
                )
            weights[key] = weight
            continue
        if key in weights:
            continue
        if key in on_path:
            mark = node.start_mark
            raise InputFileError(
                "a YAML alias refers to its own anchor (recursive)",
                line=mark.line + 1,
                column=mark.column + 1,
            )
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                mark = child.start_mark
                raise InputFileError(
                    "a YAML alias refers to its own anchor (recursive)",
                    line=mark.line + 1,
                    column=mark.column + 1,
                )
            if id(child) not in weights:
                stack.append((child, False))
    return weights[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text: str, *, limit: int = MAX_YAML_EXPANDED_WEIGHT) -> Any:
    """Parse one YAML document safely: duplicate keys and oversized alias expansion are errors.

    Raises ``InputFileError`` with the line and column of the problem (never its value), also for
    a character YAML does not allow (a NUL byte, say), which PyYAML's reader refuses as soon as the
    loader is built.
    """
    try:
        loader = _BoundedLoader(text)
    except yaml.reader.ReaderError as err:
        raise _refused_character(text, err) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_weight(node, limit=limit)
        return loader.construct_document(node)
    except yaml.reader.ReaderError as err:
        raise _refused_character(text, err) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or type(err).__name__
        if mark is None:
            raise InputFileError(f"YAML: {problem}") from None
        raise InputFileError(f"YAML: {problem}", line=mark.line + 1, column=mark.column + 1) from None
    except RecursionError:
        raise InputFileError("YAML nesting is too deep") from None
    finally:
        loader.dispose()


def _refused_character(text: str, err: yaml.reader.ReaderError) -> InputFileError:
    """A character YAML does not allow (PyYAML's reader checks at construction and while reading)."""
    line, column = _position(text, err.position)
    return InputFileError(
        f"YAML: character {err.character:#06x} is not allowed in a YAML document", line=line, column=column
    )


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset into ``text``."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


class InputModel(BaseModel):
    """Base of every input file's model: frozen, unknown keys refused, values taken as written.

    ``NOT_KEYS`` names the fields a loader fills in (the file a model came from) that are never a
    key of the file: they are left out of an unknown key's "known keys".
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    NOT_KEYS: ClassVar[frozenset[str]] = frozenset()


MAX_TEXT_BYTES = 4 * 1024  # any string of an input file without a limit of its own


def text_check(limit: int = MAX_TEXT_BYTES) -> Callable[[object], str]:
    """The rule for one string of an input file: a non-blank string without NUL, at most ``limit``
    bytes in UTF-8. For ``BeforeValidator``; the message is the key's (``want a string, got int``)."""

    def check(value: object) -> str:
        if not isinstance(value, str):
            raise ValueError(f"want a string, got {type(value).__name__}")
        if not value.strip():
            raise ValueError("must not be blank")
        if "\0" in value:
            raise ValueError("must not contain NUL")
        size = len(value.encode("utf-8", errors="surrogatepass"))
        if size > limit:
            raise ValueError(f"is {size} bytes; the limit is {limit}")
        return value

    return check


Text = Annotated[str, BeforeValidator(text_check())]
"""A string of an input file: non-blank, no NUL, at most ``MAX_TEXT_BYTES``."""


_TYPE_WORDS = {
    "string_type": "want a string",
    "int_type": "want an integer",
    "int_from_float": "want an integer",
    "bool_type": "want true or false",
    "float_type": "want a number",
    "list_type": "want a list",
    "tuple_type": "want a list",
    "dict_type": "want a mapping",
    "model_type": "want a mapping",
    "model_attributes_type": "want a mapping",
    "missing": "missing required key",
}


# A rule that judges several keys at once names the one at fault first: "read_only_tools: ...".
_RELATIVE_KEY = re.compile(r"^([A-Za-z_]\w*(?:\[\d+\])?(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): (.+)$", re.DOTALL)


def problems(exc: ValidationError, model: type[BaseModel] | None = None) -> list[tuple[str, str]]:
    """Every defect of one validation as ``(dotted key, message)``, in document order.

    ``model`` (the model that was validated) lets an unknown key's message list the known ones. A
    rule's message that starts with a key relative to where the rule sits (``read_only_tools:
    ...``, ``when: ...``) is reported at that key.
    """
    found = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        key = _dotted(loc)
        kind = error["type"]
        given = error.get("input")
        if kind == "extra_forbidden":
            known = _known_keys(model, loc[:-1]) if model is not None else ()
            message = "unknown key" + (f"; known keys: {', '.join(known)}" if known else "")
        elif kind in _TYPE_WORDS:
            message = _TYPE_WORDS[kind]
            if kind != "missing":
                message += f", got {_shown(given)}"
        elif kind in ("value_error", "assertion_error"):
            message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
            relative = _RELATIVE_KEY.match(message)
            if relative:
                inner, message = relative.groups()
                key = f"{key}.{inner}" if key else inner
        else:
            message = f"{error['msg']}, got {_shown(given)}"
        found.append((key or "(document)", message))
    return found


def problem_line(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One validation as one line: the first defect's key and message, and how many more there are."""
    found = problems(exc, model)
    key, message = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{key}: {message}{more}"


def _dotted(loc: tuple[int | str, ...]) -> str:
    key = ""
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key


def _shown(value: object) -> str:
    """A value for an error message: its type for containers (never a document's bulk), else repr."""
    if isinstance(value, Mapping | list | tuple):
        return type(value).__name__
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


def _known_keys(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[str, ...]:
    """The keys the (sub)model at ``loc`` declares, by the names files use."""
    current: Any = model
    for part in loc:
        current = _inner_model(current, part)
        if current is None:
            return ()
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return ()
    skipped = current.NOT_KEYS if issubclass(current, InputModel) else frozenset()
    return tuple(info.alias or name for name, info in current.model_fields.items() if name not in skipped)


def _inner_model(annotation: Any, part: int | str) -> Any:
    """The annotation one step inside ``annotation`` (a model's field, a list's item)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if isinstance(part, int):
            return None
        for name, info in annotation.model_fields.items():
            if part in (name, info.alias):
                return _unwrap(info.annotation)
        return None
    if isinstance(part, int):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return _unwrap(args[0]) if args else None
    return None


def _unwrap(annotation: Any) -> Any:
    """``X | None`` → ``X``; ``list[X]``/``tuple[X, ...]`` stay (an index steps inside)."""
    if get_origin(annotation) is Annotated:
        return _unwrap(get_args(annotation)[0])
    if get_origin(annotation) in (list, tuple):
        return annotation
    args = [a for a in get_args(annotation) if a is not type(None)]
    if len(args) == 1 and get_origin(annotation) is not None and get_origin(annotation) not in (list, tuple):
        return _unwrap(args[0])
    return annotation


# ── trees ──────────────────────────────────────────────────────────────────

# Bytes a name may have (NAME_MAX on Linux).
MAX_NAME_BYTES = 255
# C0/C1 controls, DEL, line separators and bidi overrides: they move a terminal's cursor or
# reorder what a reader sees (keep in sync with redaction._CONTROL, which escapes the same set).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Device names Windows reserves (with any extension), and names Windows cannot hold: a toolkit
# or overlay is meant to be checked out anywhere, and these break a checkout there.
_RESERVED = re.compile(r"(?i)^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$")


class TreeLimitError(ValueError):
    """The tree is past a bound of the walk (entries or depth); the message names it."""


def name_problem(name: str) -> str | None:
    """Why ``name`` (one path component, as ``os`` returns it) is refused; None when it is fine.

    ``os`` decodes names that are not UTF-8 with ``surrogateescape``, so a lone surrogate here
    is either non-UTF-8 bytes on disk or a surrogate written as such: both are refused.
    """
    if name in ("", ".", ".."):
        return "an empty, '.' or '..' name"
    if _SURROGATE.search(name):
        return "a name that is not valid UTF-8 (or holds a lone surrogate)"
    if _CONTROL.search(name):
        return "a name with a control, line-separator or bidi character"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"a name longer than {MAX_NAME_BYTES} bytes"
    if "/" in name or "\\" in name or ":" in name:
        return "a name with '/', '\\' or ':'"
    if _RESERVED.match(name) or name[-1] in " .":
        return "a reserved name (a device name, or ending in a space or dot)"
    return None


def bounded_walk(
    root: Path,
    *,
    max_entries: int,
    max_depth: int,
    skip_top: frozenset[str] = frozenset(),
) -> Iterator[tuple[str, str, os.stat_result]]:
    """(relative path, absolute path, lstat) of every entry under ``root``, depth first, sorted.

    Never follows a symlink (a link is yielded, its target never read). ``skip_top``: names at
    the top level to leave out (e.g. ``.git``). Raises ``TreeLimitError`` past ``max_entries``
    entries or ``max_depth`` levels below ``root``, ``OSError`` when a directory cannot be read.
    """
    stack: list[tuple[str, int]] = [("", 0)]
    count = 0
    while stack:
        rel_dir, depth = stack.pop()
        with os.scandir(os.path.join(root, rel_dir)) as entries:
            names = sorted(entry.name for entry in entries)
        subdirs = []
        for name in names:
            if not rel_dir and name in skip_top:
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = os.path.join(root, rel)
            st = os.lstat(full)
            count += 1
            if count > max_entries:
                raise TreeLimitError(f"over {max_entries} entries")
            yield rel, full, st
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 > max_depth:
                    raise TreeLimitError(f"nested deeper than {max_depth} levels")
                subdirs.append((rel, depth + 1))
        stack.extend(reversed(subdirs))


def replace_text(path: Path, text: str) -> None:
    """Write an input file the tools write back for the user (a task file, an expected-tests lock)
    atomically: a temporary file beside it, fsynced, renamed over it; nothing left on failure."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
