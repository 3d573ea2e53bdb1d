"""The params schema: each notebook parameter kind (:data:`KINDS`, named by the ``# type:``
comment of its ``parameters`` cell) and numeric CLI flag (:class:`Spec`, in ``cli.VERBS``) with
its range or choices and unit, and the one rule reading a value. Standard library only."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackbook import paths
from rackbook.errors import InputError
from rackbook.limits import BOUNDS, MAX_LIST_ENTRIES

#: Longest text read as a number (characters): longer is refused before conversion.
MAX_NUMBER_CHARS = 40
#: Longest text value of a notebook parameter (characters).
MAX_TEXT_CHARS = 10_000


@dataclass(frozen=True)
class Spec:
    """One value's declaration: ``kind`` (int, number, choice, text, path, url, list of ``item``,
    a catalog id), inclusive range ``lo``..``hi`` (``*_open``: that end excluded)."""

    kind: str
    lo: float = -math.inf
    hi: float = math.inf
    unit: str = ""
    choices: tuple[str, ...] = ()
    nullable: bool = False
    lo_open: bool = False
    hi_open: bool = False
    item: Spec | None = None
    min_items: int = 1

    def range_text(self) -> str:
        """The range in words: ``an integer from 1 to 100,000 (GPUs)`` (numbers have both ends)."""
        what = "an integer" if self.kind == "int" else "a number"
        unit = f" ({self.unit})" if self.unit else ""
        low = f"over {_fmt(self.lo)} and" if self.lo_open else f"from {_fmt(self.lo)} to"
        high = "under " if self.hi_open else ("at most " if self.lo_open else "")
        return f"{what} {low} {high}{_fmt(self.hi)}{unit}"

    def __call__(self, text: str) -> Any:
        """argparse ``type`` of a number flag: ``text`` read by :func:`to_number`."""
        if text.strip().lower() in self.choices:  # a word a number flag also takes (unknown)
            return text.strip().lower()
        try:
            return to_number(text, self)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def _fmt(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: A number's text as YAML 1.2's core schema writes one (no leading zero).
_INT_TEXT = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$")
_FLOAT_TEXT = re.compile(
    r"^[-+]?(?:(?:\.[0-9]+|(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|\.?(?:inf|infinity|nan))$",
    re.IGNORECASE,
)


def _not_a_number(text: str) -> str:
    """Why ``text`` in another reader's notation (YAML 1.1, Python) is no number; else ""."""
    bare = text.lstrip("+-")
    if re.fullmatch(r"0[xX][0-9a-fA-F_]+", bare):
        return " (hexadecimal is not read as a number: write it in decimal)"
    if re.fullmatch(r"0[oObB]?[0-9_]+(?:\.[0-9_]*)?", bare) and bare not in ("0",):
        return " (a leading zero is not read as a number: YAML 1.1 reads 010 as octal 8)"
    if re.fullmatch(r"[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?", bare):
        return " (base 60 is not read as a number: YAML 1.1 reads 1:00 as 60)"
    if re.fullmatch(r"[0-9._eE+-]*_[0-9._eE+-]*", bare) and any(c.isdigit() for c in bare):
        return " (digit separators are not read as a number: write 1000, not 1_000)"
    return ""


def to_number(value: Any, spec: Spec, text: bool = True) -> int | float:
    """``value`` (parsed YAML/JSON; text too unless not ``text``) as ``spec``'s number in range;
    else ValueError."""
    integer, number = spec.kind == "int", value
    if isinstance(value, str) and text:
        digits = value.strip()
        if len(digits) > MAX_NUMBER_CHARS:
            raise ValueError(f"{len(digits):,} characters: a number has at most {MAX_NUMBER_CHARS}")
        if (_INT_TEXT if integer else _FLOAT_TEXT).match(digits):  # also other scripts' digits
            number = int(digits, 10) if integer else float(digits)
    if isinstance(number, bool) or not isinstance(number, int if integer else (int, float)):
        why = _not_a_number(value.strip()) if isinstance(value, str) else ""
        raise ValueError(f"expected {spec.range_text()}, got {_show(value)}{why}")
    if isinstance(value, int) and value.bit_length() > 128:  # a YAML integer of many digits
        raise ValueError(f"an integer of {value.bit_length()} bits is out of range")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"must be a finite number, got {_show(value)}")
    if 0 < abs(number) < sys.float_info.min:
        raise ValueError(f"{number!r} is a subnormal (denormal) float: not {spec.range_text()}")
    low = number <= spec.lo if spec.lo_open else number < spec.lo
    high = number >= spec.hi if spec.hi_open else number > spec.hi
    if low or high:
        shown = _show(value) if isinstance(value, str) else _fmt(number)
        raise ValueError(f"must be {spec.range_text()}, got {shown}")
    return number


def check_value(value: Any, spec: Spec, where: str, field: str) -> Any:
    """``value`` read from YAML (text is never a number) checked against ``spec``; else one
    InputError naming ``field`` (a list's entry: ``field[i]``)."""
    try:
        if spec.kind == "list" and isinstance(value, list):
            if len(value) > MAX_LIST_ENTRIES:
                raise ValueError(f"{len(value):,} entries: must be at most {MAX_LIST_ENTRIES:,}")
            if len(value) < spec.min_items:
                raise ValueError(f"must hold at least {spec.min_items} entry, got {_show(value)}")
            assert spec.item is not None
            return [check_value(v, spec.item, where, f"{field}[{i}]") for i, v in enumerate(value)]
        if value is None:
            if spec.nullable:
                return None
            raise ValueError("must not be null (None)")
        if spec.kind in ("int", "number"):  # text read from YAML is never a number
            return to_number(value, spec, text=False)
        if spec.kind == "list":
            raise ValueError(f"expected a list, got {_show(value)}")
        return _check_text(value, spec)
    except ValueError as exc:
        raise InputError(where, field, str(exc)) from None


def _check_text(value: Any, spec: Spec) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {_show(value)}")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"{len(value):,} characters: must be at most {MAX_TEXT_CHARS:,}")
    if spec.kind == "choice" and value not in spec.choices:
        raise ValueError(f"{_show(value)} is not one of {', '.join(spec.choices)}")
    if spec.kind in ("path", "text", "model") and ("\0" in value or not value):
        raise ValueError(f"expected a non-empty {spec.kind} without NUL bytes, got {_show(value)}")
    if spec.kind == "url" and not value.startswith(("http://", "https://")):
        raise ValueError(f"expected an http:// or https:// URL, got {_show(value)}")
    if spec.kind in CATALOG:
        from rackbook.inputs import catalogs

        (catalogs.load_model if spec.kind == "model" else getattr(catalogs, spec.kind))(value)
    return value


#: Kinds whose values are catalog ids (:mod:`rackbook.inputs.catalogs`).
CATALOG = ("model", "gpu", "system", "price")

#: Integer and number :class:`Spec` of ``(lo, hi, unit, ...)``.
INT, NUM = functools.partial(Spec, "int"), functools.partial(Spec, "number")
KV_DTYPES = ("fp4", "fp8", "bf16")
TOKENS = BOUNDS["context"]

#: The kinds a parameter's type comment names (``x = 1  # type: gpus  meaning``): ``KIND?``
#: allows None, ``KIND+`` is a list of one or more, ``KIND*`` a list that may be empty.
KINDS: dict[str, Spec] = {
    **{k: Spec(k) for k in ("path", "text", "url", *CATALOG)},
    "source": Spec("choice", choices=("trace", "live")),
    "metric": Spec(
        "choice", choices=("total", "output", "input", "new_input", "cached_input", "computed")
    ),
    "stat": Spec("choice", choices=("median", "mean", "pooled")),
    "kv_dtype": Spec("choice", choices=KV_DTYPES),
    "tokens": INT(1, TOKENS, "tokens"),
    "context": INT(0, TOKENS, "tokens"),
    "gpus": INT(1, BOUNDS["gpus"], "GPUs"),
    "replicas": INT(1, BOUNDS["gpus"], "replicas"),
    "decode_ranks": INT(1, BOUNDS["decode_ranks"], "ranks"),
    "ep_size": INT(1, BOUNDS["ep_size"], "ranks"),
    "redundant": INT(0, BOUNDS["redundant"], "experts"),
    "concurrency": INT(1, BOUNDS["concurrency"], "requests"),
    "requests": INT(1, BOUNDS["requests"], "requests"),
    "groups": INT(1, BOUNDS["groups"], "groups"),
    "nodes": INT(1, BOUNDS["nodes"], "nodes"),
    "windows": INT(1, BOUNDS["layers"], "windows"),
    "layer": INT(0, BOUNDS["layers"] - 1, "layer"),
    "batch_size": INT(1, BOUNDS["batch_size"], "sequences per decode rank"),
    "batch": INT(1, BOUNDS["batch"], "sequences per GPU"),
    "skew": NUM(0, 10, "Zipf exponent"),
    "fraction": NUM(0, 1, "fraction"),
    "utilization": NUM(0, 1, "fraction", lo_open=True),
    "percent": NUM(0, 1000, "%", lo_open=True),
    "tok_s": NUM(0, 1e12, "tokens/s", lo_open=True),
    "bytes": NUM(0, 1e15, "bytes", lo_open=True),
    "acceptance": NUM(1, 64, "tokens per step"),
}
_TYPE = re.compile(r"(\w+)([+*]?)(\??)")


def kind_spec(type_name: str) -> Spec:
    """The :class:`Spec` a type comment names (:data:`KINDS`, with ``?``, ``+``, ``*``)."""
    m = _TYPE.fullmatch(type_name)
    if m is None or m[1] not in KINDS:
        raise ValueError(f"type {type_name!r} is not one of {', '.join(KINDS)} (+, *, ?)")
    spec = KINDS[m[1]]
    if m[2]:
        spec = Spec("list", item=spec, min_items=1 if m[2] == "+" else 0)
    return dataclasses.replace(spec, nullable=True) if m[3] else spec


@functools.cache
def _cell(result: str) -> dict[str, tuple[Any, str]]:
    """``result``'s ``parameters`` cell: name -> (literal default or None, type comment)."""
    if result not in paths.RESULTS:
        return {}
    nb = json.loads((paths.NOTEBOOKS / f"{result}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    source = "".join(cell["source"])
    lines = source.splitlines()
    out: dict[str, tuple[Any, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                default = ast.literal_eval(node.value)
            except ValueError:
                default = None
            typed = re.search(r"#\s*type:\s*(\S+)", lines[(node.end_lineno or 1) - 1])
            out[node.targets[0].id] = (default, typed[1] if typed else "")
    return out


def cell_defaults(result: str) -> dict[str, Any]:
    """``result``'s ``parameters`` cell defaults by name, in cell order."""
    return {name: default for name, (default, _) in _cell(result).items()}


def declared(result: str) -> dict[str, Spec]:
    """``result``'s notebook parameters by name, each its type comment's :class:`Spec`."""
    return {name: kind_spec(typed) for name, (_, typed) in _cell(result).items()}


#: Longest ``-p`` value read as YAML (characters); a longer one is refused.
MAX_PARAMETER_CHARS = 100_000


def read_pairs(pairs: list[list[str]] | list[tuple[str, str]]) -> dict[str, Any]:
    """``-p NAME VALUE`` pairs, values read as YAML 1.2 (else kept as text)."""
    import yaml

    from rackbook.inputs.loader import parse_yaml12

    out: dict[str, Any] = {}
    for name, value in pairs:
        if not name.isidentifier():
            raise InputError("-", "-p", f"{name[:60]!r} is not a parameter name")
        if len(value) > MAX_PARAMETER_CHARS:
            problem = f"{len(value):,} characters: at most {MAX_PARAMETER_CHARS:,}"
            raise InputError("-", f"parameter {name}", problem)
        try:
            out[name] = parse_yaml12(value) if value != "" else ""
        except (yaml.YAMLError, ValueError, RecursionError):
            out[name] = value
    return out


def check_given(
    result: str, values: Mapping[str, Any], where: str, defaults: Mapping[str, Any] | None = None
) -> None:
    """The one check of ``result``'s notebook parameters given against their declarations
    (catalog ids looked up), then the rules between them over ``defaults``."""
    if result not in paths.RESULTS or not (paths.NOTEBOOKS / f"{result}.ipynb").is_file():
        return  # "all" or an unknown result (its own check says), or no checkout
    specs = declared(result)
    for name, value in values.items():
        field_name, spec = f"parameter {name}", specs.get(name)
        if spec is None:
            known = ", ".join(specs)
            raise InputError(where, field_name, f"not a parameter of this notebook; known: {known}")
        if name != "trace":  # the runner checks the folder
            check_value(value, spec, where, field_name)
    p = {**(defaults or {}), **values}  # the rules between them

    def ints(*names: str) -> bool:
        return all(type(p.get(n)) is int for n in names)  # bool is no int here

    if result == "context-latency" and ints("lo", "hi") and p["lo"] >= p["hi"]:
        problem = f"must be longer than lo ({p['lo']:,}), got {p['hi']:,}"
        raise InputError(where, "parameter hi", problem)
    if result == "rack-scaling" and ints("prefix_len", "input_len"):
        if p["prefix_len"] > p["input_len"]:
            problem = f"{p['prefix_len']:,} shared tokens exceed the prompt's {p['input_len']:,}"
            raise InputError(where, "parameter prefix_len", problem)
    if result == "eplb-balance" and ints("nodes", "ep_size"):
        _check_nodes(p["nodes"], p["ep_size"], "ep_size", where, "parameter nodes")


def expert_extent(trace: Path) -> dict[str, int] | None:
    """Largest ``window``, ``layer``, ``expert`` of a trace's expert loads; None if unreadable."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        t = pq.read_table(trace / "expert_load.parquet", columns=["window", "layer", "expert"])
        return None if t.num_rows == 0 else {c: int(pc.max(t[c]).as_py()) for c in t.column_names}
    except (OSError, ValueError, TypeError, ArithmeticError, KeyError):
        return None


def check_extent(top: Mapping[str, int], p: Mapping[str, Any], where: str) -> None:
    """``show_layer`` exists and ``fit_windows`` leaves a window to score in ``top``."""
    layers, windows = top["layer"] + 1, top["window"] + 1
    show, fit = p.get("show_layer"), p.get("fit_windows")
    if isinstance(show, int) and not 0 <= show < layers:
        problem = f"must be a layer from 0 to {layers - 1}, got {show}"
        raise InputError(where, "parameter show_layer", problem)
    if isinstance(fit, int) and not 1 <= fit < windows:
        problem = f"must be 1 to {windows - 1} ({windows} windows, one left to score), got {fit}"
        raise InputError(where, "parameter fit_windows", problem)


def _check_nodes(nodes: int, ep_size: int, ep_name: str, where: str, field: str) -> None:
    """Each node holds a whole number of ranks: ``nodes`` divides ``ep_size``."""
    if nodes > ep_size or ep_size % nodes:
        problem = f"{nodes:,} nodes cannot share {ep_size:,} ranks ({ep_name}): it must divide them"
        raise InputError(where, field, problem)


#: ``import --label KEY=VALUE``: the keys stored as integer columns and their ranges.
LABELS: dict[str, Spec] = {k: KINDS[k] for k in ("batch_size", "concurrency", "decode_ranks")}
LABELS |= {"context_tokens": KINDS["context"], "num_gpus": KINDS["gpus"]}


def label(text: str) -> tuple[str, str]:
    """argparse ``type`` of ``--label KEY=VALUE`` (:data:`LABELS` keys read as integers)."""
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"label {text[:60]!r} is not KEY=VALUE")
    key, value = text.split("=", 1)
    if key in LABELS:
        try:
            value = str(to_number(value, LABELS[key]))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"label {key}: {exc}") from None
    return key, value


#: Options that name a file or folder (argparse dests).
PATH_OPTIONS = "output out html traces reuse save_json from_json topology params_file input"


def check_args(args: argparse.Namespace) -> None:
    """The rules between one verb's flags; no path option empty."""
    for dest in PATH_OPTIONS.split():
        if isinstance(value := getattr(args, dest, None), str) and not value.strip():
            flag = {"output": "-o", "input": "input"}.get(dest, "--" + dest.replace("_", "-"))
            raise InputError("''", flag, "an empty path: name a file or folder")
    if args.verb == "eplb":
        _check_nodes(args.nodes, args.ep_size, "--ep-size", "-", "--nodes")
    if args.verb == "check" and args.batch is not None and args.concurrency is not None:
        raise InputError("-", "--concurrency", "give --concurrency or --batch, not both")
    if args.verb == "import" and (args.gpu is None) != (args.gpus is None):
        given, missing = ("--gpu", "--gpus N") if args.gpus is None else ("--gpus", "--gpu ID")
        raise InputError("-", given, f"needs {missing} too: declare the GPU and how many")
