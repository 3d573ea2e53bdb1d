"""Headline results: the JSON each notebook's last cell writes (``DIR/RESULT.json``).

Each headline value carries its value and unit, its definition, the claim it speaks to, its
kind (how the number was obtained) and a verdict with a one-line reason.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rackbook.core.fsio import atomic_write_json
from rackbook.errors import InputError
from rackbook.paths import RESULTS

#: How a number was obtained.
KINDS = ("measured", "modelled", "published", "synthetic")
#: What a number says about its claim.
VERDICTS = ("consistent", "inconsistent", "not comparable", "not reproduced")


@dataclass
class Headline:
    """One headline value of a result."""

    name: str
    value: float | int | str | None
    unit: str
    definition: str
    claim_id: str | None
    kind: str
    verdict: str
    reason: str
    hardware: str | None = None  # for measured values: on what hardware
    trace_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"headline {self.name}: kind {self.kind!r} not in {KINDS}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"headline {self.name}: verdict {self.verdict!r} not in {VERDICTS}")
        if self.kind == "measured" and not self.hardware:
            raise ValueError(f"headline {self.name}: a measured value must say on what hardware")
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise ValueError(f"headline {self.name}: value is not finite")
        if "\n" in self.reason:
            raise ValueError(f"headline {self.name}: reason must be one line")


def write_result(
    result: str,
    headlines: list[Headline],
    *,
    out_dir: str | Path,
    source: str,
    verdict: str,
    reason: str,
    trace_ids: list[str] | None = None,
    parameters: dict[str, Any] | None = None,
) -> Path:
    """Write ``out_dir/RESULT.json`` atomically; returns its path."""
    if result not in RESULTS:
        raise ValueError(f"unknown result {result!r}")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r} not in {VERDICTS}")
    doc = {
        "result": result,
        "source": source,
        "verdict": verdict,
        "reason": reason,
        "trace_ids": sorted(set(trace_ids or [])),
        "parameters": parameters or {},
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "headlines": [asdict(h) for h in headlines],
    }
    return atomic_write_json(Path(out_dir) / f"{result}.json", doc)


@dataclass
class Outcome:
    """What a chapter concludes: its headlines, the result's verdict with a one-line reason,
    the traces it read and the parameters that shaped it; :meth:`write` writes the headline
    JSON the book and ``rackbook list`` read."""

    result: str
    headlines: list[Headline]
    verdict: str
    reason: str
    trace_ids: list[str] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)

    def write(self, out_dir: str | Path, source: str) -> Path:
        """``out_dir/RESULT.json`` (atomic); ``source`` is ``trace`` or ``live``."""
        return write_result(
            self.result,
            self.headlines,
            out_dir=out_dir,
            source=source,
            verdict=self.verdict,
            reason=self.reason,
            trace_ids=self.trace_ids,
            parameters=self.parameters,
        )

    def markdown(self) -> str:
        """The headline table shown at the end of the chapter."""
        return headline_markdown(self.headlines)


class Params:
    """Mixin of a result's parameter dataclass: build it from any mapping of names (such as a
    notebook's namespace after its ``parameters`` cell), taking only the fields it declares."""

    @classmethod
    def from_mapping(cls, names: Mapping[str, Any]) -> Any:
        fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in names.items() if k in fields})


def _fmt_value(v: float | int | str | None) -> str:
    if v is None:
        return "unknown"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def headline_markdown(headlines: list[Headline]) -> str:
    """The headline values as a Markdown table (value, unit, kind, claim, verdict, reason):
    what the chapter writes into its headline JSON, shown to the reader."""
    rows = [
        "| headline | value | kind | claim | verdict | reason |",
        "|---|---|---|---|---|---|",
    ]
    for h in headlines:
        unit = "" if h.unit in ("1", "") else f" {h.unit}"
        kind = h.kind + (f" on {h.hardware}" if h.hardware else "")
        cells = [h.name, _fmt_value(h.value) + unit, kind, h.claim_id or "-", h.verdict, h.reason]
        rows.append(
            "| " + " | ".join(str(c).replace("|", "\\|").replace("$", "\\$") for c in cells) + " |"
        )
    return "\n".join(rows) + "\n"


def read_result(path: str | Path) -> dict[str, Any]:
    """Read a headline JSON written by :func:`write_result`."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "-", "no headline JSON: run the result first") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, "-", f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(path, "-", f"must be a JSON object, got {type(doc).__name__}")
    for key, kind in (("headlines", list), ("verdict", str), ("reason", str)):
        if key not in doc:
            raise InputError(path, key, "missing")
        if not isinstance(doc[key], kind):
            raise InputError(path, key, f"must be a {kind.__name__}, got {type(doc[key]).__name__}")
    return doc
