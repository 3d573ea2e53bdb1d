"""One loader for every declarative YAML input: the safe loader (duplicate keys and alias bombs
refused), then a strict pydantic model; a problem is one InputError naming file, field path
(``claims[<id>].unit``) and problem. Also the derived-value cache (:func:`derived`)."""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError

from rackbook import limits, paths
from rackbook.errors import InputError

M = TypeVar("M", bound=BaseModel)

FIELD_ERROR = "rackbook_field"


class Strict(BaseModel):
    """Base of every input model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


def field_error(field: str, problem: str) -> PydanticCustomError:
    """A model validator's error naming its field (dotted path relative to the model)."""
    return PydanticCustomError(FIELD_ERROR, "{problem}", {"problem": problem, "field": field})


def check_unique_ids(entries: Sequence[Any], section: str) -> None:
    """A pydantic field error at the first entry of ``section`` whose ``id`` repeats one."""
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry.id in seen:
            problem = f"duplicate id (entries {seen[entry.id]} and {i})"
            raise field_error(f"{section}.{i}.id", problem)
        seen[entry.id] = i


def check_basis_block(entry: Any, taken: Sequence[str], where: str) -> None:
    """An entry's ``basis`` sets no part ``taken`` from ``where`` and builds; else an error."""
    if clash := sorted(set(entry.basis) & set(taken)):
        raise field_error(f"basis.{clash[0]}", f"comes from {where}; not allowed here")
    try:
        entry.figure_basis  # noqa: B018 - validates
    except ValueError as exc:
        part, _, problem = str(exc).partition(": ")
        raise field_error(f"basis.{part}", problem) from None


def display_path(path: str | Path) -> str:
    """``path`` relative to the repository root when inside it, else as given."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(paths.ROOT.resolve()))
    except (ValueError, RuntimeError, OSError):  # outside the checkout; a symbolic-link loop
        return str(p)


#: Nodes aliases may add to a YAML document when expanded (refuses "billion laughs").
MAX_ALIAS_NODES = 10_000


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    key = id(node)
    if key not in memo:
        memo[key] = 0  # a recursive alias counts once
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(_expanded_size(n, memo) for n in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
        memo[key] = size
    return memo[key]


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader refusing duplicate keys (alias bombs: :func:`_load`)."""


class _FastUniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same on libyaml's C parser (10x faster), for documents at most :data:`_SHALLOW_DEPTH`
    deep (the Python parser's recursion limit refuses deeper ones)."""


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        problem = f"duplicate key {key!r}" if isinstance(key, Hashable) and key in seen else ""
        if not isinstance(key, Hashable):
            problem = f"a mapping key must be text or a number, not a {type(key).__name__}"
        if problem:
            raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


for _loader in (_UniqueKeyLoader, _FastUniqueKeyLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

#: The deepest nesting (brackets, or indentation / 2) a document may have to take the C parser.
_SHALLOW_DEPTH = 64
_INDENT = re.compile(r"^( *)\S", re.MULTILINE)
_BRACKETS = re.compile(r"[^\[\]{}]+")
#: What could be an alias: ``*name`` after a space, bracket, comma or line start.
_ALIAS = re.compile(r"(?:^|[\s\[\]{},])\*[^\s\[\]{},]", re.MULTILINE)


def _shallow(text: str) -> bool:
    depth = 0
    for c in _BRACKETS.sub("", text):
        depth += 1 if c in "[{" else -1
        if depth > _SHALLOW_DEPTH:
            return False
    indent = max((len(m) for m in _INDENT.findall(text)), default=0)
    return indent // 2 <= _SHALLOW_DEPTH


#: YAML 1.2 core schema's booleans, integers and floats: tag -> (pattern, first characters).
_CORE12 = {
    "tag:yaml.org,2002:bool": (r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    "tag:yaml.org,2002:int": (r"^[-+]?(?:0|[1-9][0-9]*)$", "-+0123456789"),
    "tag:yaml.org,2002:float": (
        r"^(?:[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
}


class Yaml12Loader(_UniqueKeyLoader):
    """Numbers and booleans as YAML 1.2's core schema reads them (for parameters): YAML 1.1's
    ``010``, ``1:00``, hex, ``1_000``, yes/no stay text."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _CORE12]
    for first, resolvers in _UniqueKeyLoader.yaml_implicit_resolvers.items()
}
for _tag, (_rx, _first) in _CORE12.items():
    Yaml12Loader.add_implicit_resolver(_tag, re.compile(_rx), list(_first))


def _load(loader: Any, may_alias: bool = True) -> Any:
    """The document ``loader`` reads; refused when its aliases expand past MAX_ALIAS_NODES."""
    try:
        node = loader.get_single_node()
        if node is not None and may_alias:
            memo: dict[int, int] = {}
            extra = _expanded_size(node, memo) - len(memo)
            if extra > MAX_ALIAS_NODES:
                problem = f"aliases add {extra:,} nodes, over the {MAX_ALIAS_NODES:,} allowed"
                raise yaml.composer.ComposerError(None, None, problem, node.start_mark)
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def parse_yaml12(text: str) -> Any:
    """``text`` parsed with :class:`Yaml12Loader`."""
    return _load(Yaml12Loader(text))


#: Parsed YAML documents by the hash of their bytes (claims.yaml is read 20 times a book).
_PARSED: dict[bytes, Any] = {}
_PARSED_MAX = 64


def read_yaml(path: str | Path, *, yaml12: bool = False) -> Any:
    """A YAML file parsed (``yaml12``: :class:`Yaml12Loader`), a new copy each call; the same
    bytes parsed once per process."""
    p = Path(path)
    shown = display_path(p)
    try:
        limits.input_file(p, what="YAML file", missing="file not found", cap_mb=limits.YAML_MAX_MB)
        data = p.read_bytes()
    except InputError as exc:
        raise InputError(shown, exc.field, exc.problem) from None
    except OSError as exc:
        raise InputError(shown, "-", f"cannot read: {exc.strerror or exc}") from None
    key = hashlib.blake2b(data + (b"\0yaml1.2" if yaml12 else b""), digest_size=20).digest()
    if key not in _PARSED:
        parsed = _parse_yaml(data, shown, Yaml12Loader if yaml12 else None)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = parsed
    try:
        return copy.deepcopy(_PARSED[key])  # the caller's own (callers may change it)
    except RecursionError:
        raise limits.nesting_error(shown) from None


def _parse_yaml(data: bytes, shown: str, loader: type[_UniqueKeyLoader] | None = None) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(shown, "-", limits.decode_problem(data, exc)) from None
    try:
        if loader is None and _shallow(text):
            return _load(_FastUniqueKeyLoader(text), bool(_ALIAS.search(text)))
        return _load((loader or _UniqueKeyLoader)(text))
    except RecursionError:
        raise limits.nesting_error(shown) from None
    except ValueError as exc:  # an integer of thousands of digits (Python's conversion limit)
        raise InputError(shown, "-", f"a value YAML cannot convert: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "-"
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(shown, where, f"YAML syntax error: {problem}") from None


def _field_path(raw: Any, err: Mapping[str, Any]) -> str:
    """A pydantic error's location as ``claims[<id>].source.seen_in``."""
    parts: list[str | int] = list(err.get("loc", ()))
    if err.get("type") == FIELD_ERROR:
        parts += [int(x) if x.isdigit() else x for x in str(err["ctx"]["field"]).split(".")]
    out = ""
    if len(parts) >= 2 and isinstance(parts[0], str) and isinstance(parts[1], int):
        section, index = parts[0], parts[1]
        items = raw.get(section)
        entry = items[index] if isinstance(items, list) and 0 <= index < len(items) else None
        key = entry.get("id") if isinstance(entry, dict) else None
        out = f"{section}[{key if isinstance(key, str) and key else index}]"
        parts = parts[2:]
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + p
    return out or "(top level)"


#: pydantic error types -> the project's words.
_WORDS = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "missing": "field required",
    "extra_forbidden": "unknown field",
}


def problem_text(err: Mapping[str, Any]) -> str:
    """One pydantic error as the project words it (``must be > 0``, ``unknown field``)."""
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind in _WORDS:
        return _WORDS[kind].format(**ctx)
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("value error, ")
    msg = msg[:1].lower() + msg[1:]
    if kind not in (FIELD_ERROR, "value_error") and "input" in err:
        shown = repr(err["input"])
        msg += f" (got {shown[:60] + '...' if len(shown) > 60 else shown})"
    return msg


def validate(model: type[M], raw: Any, file: str | Path) -> M:
    """``raw`` validated with ``model`` (its ``_file`` set to ``file``); the first problem one
    InputError (``(+N more)``)."""
    file = str(file)
    if not isinstance(raw, dict):
        kind = "empty file" if raw is None else type(raw).__name__
        raise InputError(file, "(top level)", f"expected a mapping, got {kind}")
    try:
        obj = model.model_validate(raw)
    except ValidationError as exc:
        first, *rest = exc.errors()
        more = f" (+{len(rest)} more)" if rest else ""
        raise InputError(file, _field_path(raw, first), problem_text(first) + more) from None
    if "_file" in model.__private_attributes__:  # what errors about the entry name
        setattr(obj, "_file", file)  # noqa: B010 - a private attribute mypy does not see
    return obj


def load(model: type[M], path: str | Path) -> M:
    """Read ``path`` and validate it with ``model``."""
    p = paths.resolve(path)
    return validate(model, read_yaml(p), display_path(p))


DERIVED = paths.ROOT / ".cache" / "derived"


@functools.cache
def _source_key() -> bytes:
    """A hash of the package's ``.py`` sources."""
    h = hashlib.blake2b(digest_size=20)
    root = Path(__file__).resolve().parents[1]
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.digest()


def derived(name: str, files: Sequence[Path], build: Callable[[], Any]) -> Any:
    """``build()``'s JSON value, cached in ``.cache/derived/`` keyed by ``files`` and sources."""
    h = hashlib.blake2b(name.encode() + _source_key(), digest_size=20)
    for f in sorted(files):
        h.update(str(f).encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(f.read_bytes())
    path = DERIVED / f"{name}-{h.hexdigest()}.json"
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text())
    value = build()
    with contextlib.suppress(OSError, ValueError):  # ValueError: NaN (not JSON)
        DERIVED.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value, allow_nan=False))
        os.replace(tmp, path)
    return value
