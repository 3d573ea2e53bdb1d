"""The claims registry, ``data/claims.yaml``: every published number of the book's results with
scope and source; and the figures bearing on them found in posts, PRs and price lists
(``data/published/figures.yaml``: value, unit, conditions, source URL, date and quote, whether
read first-hand, the claim and its ``role`` there; sources rejected). Both validated on load (a
problem is one InputError naming file, ``claims[<id>]`` and field); units are each entry's."""

from __future__ import annotations

import contextlib
import datetime as _dt
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.errors import InputError
from rackbook.inputs import loader
from rackbook.inputs.catalogs import PriceKind, Text, Url

Status = Literal["located", "not-located", "partly-located"]
#: Basis parts a claim takes from its scope (and the engine, always vLLM).
SCOPE_PARTS = ("model", "hardware", "gpu_count", "engine")
Comparison = Literal["bound", "range", "ratio", "equal"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Range(_Model):
    """A published interval, ``low < high``, in the claim's unit."""

    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.high < self.low or (self.high == self.low and type(self) is Range):
            word = "above" if type(self) is Range else "at least"
            problem = f"high ({_number(self.high)}) must be {word} low ({_number(self.low)})"
            raise loader.field_error("high", problem)
        return self


class Span(Range):
    """An integer span of a scope dimension (batch in requests, context in tokens)."""

    low: int = Field(ge=0)
    high: int = Field(ge=0)

    def text(self, sep: str = "-") -> str:
        """``8-256``, or ``8`` for a single value."""
        return f"{self.low:,}" if self.low == self.high else f"{self.low:,}{sep}{self.high:,}"


class Tolerance(_Model):
    """How far a reproduced number may sit from the published one, in the claim's unit."""

    absolute: float = Field(ge=0)
    basis: str = Field(min_length=1)


class Scope(_Model):
    """Conditions the number was published under; ``None`` where the source does not say."""

    model: str | None
    hardware: str | None
    gpu_count: int | None = Field(gt=0)
    batch_sizes: Span | None
    context_tokens: Span | None
    precision: str | None

    def summary(self) -> str:
        """One line such as ``DeepSeek-V4.1-Flash · GB300 NVL72 · 72 GPUs``."""
        n, batch, ctx = self.gpu_count, self.batch_sizes, self.context_tokens
        parts: list[Any] = [self.model, self.hardware, n and f"{n} GPU{'s' if n != 1 else ''}"]
        parts += [batch and f"batch {batch.text()}", ctx and f"context {ctx.text(' -> ')} tokens"]
        return " · ".join(p for p in [*parts, self.precision] if p) or "not stated"


class Metric(_Model):
    """What the number measures, which tokens it counts and over how many GPUs."""

    measured: str = Field(min_length=1)
    tokens_counted: str | None
    gpus: str | None


class ClaimSource(_Model):
    """Where a claim's number was seen (a source id) and its primary text's URL, if found."""

    status: Status
    seen_in: str = Field(min_length=1)
    primary: Url | None
    refs: list[str] = Field(default_factory=list)
    notes: str | None = None

    @model_validator(mode="after")
    def _status_matches_primary(self) -> ClaimSource:
        if (self.status == "not-located") != (self.primary is None):
            why = "must be null" if self.primary else "a URL is required"
            raise loader.field_error("primary", f"{why} when status is {self.status}")
        return self


class Source(_Model):
    """An entry of the book's sources page."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str = Field(min_length=1)
    url: Url | None
    status: Status
    notes: str | None = None


#: field -> the comparisons that need it (refused by the others) and what it holds.
_BY_COMPARISON: dict[str, tuple[tuple[str, ...], str]] = {
    "values": (("range",), " (low/high)"),
    "value": (("bound", "ratio", "equal"), ""),
    "direction": (("bound",), " (upper or lower)"),
}


class Claim(_Model):
    """One published number: its words (``original`` verbatim, ``statement`` in English),
    value, unit, scope, metric, cautions and source; ``basis`` as the write-up states it
    (model, hardware, GPU count from scope); ``derived_from``: the claim it is stated about."""

    id: str = Field(pattern=r"^[a-z0-9-]+\.[a-z0-9-]+$")
    result: str
    original: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    value: float | None = None
    values: Range | None = None
    unit: str = Field(min_length=1)
    comparison: Comparison
    direction: Literal["upper", "lower"] | None = None
    reference: str | None = None
    tolerance: Tolerance | None = None
    signed: bool = False
    scope: Scope
    metric: Metric
    cautions: list[str]
    source: ClaimSource
    basis: dict[str, Any]
    derived_from: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Claim:
        if self.result not in paths.RESULTS:
            problem = f"unknown result {self.result!r}; expected one of {', '.join(paths.RESULTS)}"
            raise loader.field_error("result", problem)
        if not self.id.startswith(self.result + "."):
            raise loader.field_error("id", f"must start with the result name {self.result + '.'!r}")
        for field, (needing, what) in _BY_COMPARISON.items():
            given, needed = getattr(self, field) is not None, self.comparison in needing
            if needed and not given:
                problem = f"required{what} when comparison is {self.comparison}"
                raise loader.field_error(field, problem)
            if given and not needed:
                only = " or ".join(needing)
                problem = f"not allowed when comparison is {self.comparison} (only {only})"
                raise loader.field_error(field, problem)
        if self.comparison == "ratio" and not self.reference:
            problem = "required when comparison is ratio (the denominator)"
            raise loader.field_error("reference", problem)
        loader.check_basis_block(self, SCOPE_PARTS, "scope")
        return self

    @property
    def figure_basis(self) -> basis_mod.Basis:
        """The claim's full basis: ``basis`` with model, hardware and GPU count from scope."""
        s, unknown = self.scope, basis_mod.UNKNOWN
        own: dict[str, Any] = {"model": s.model or unknown, "hardware": s.hardware or unknown}
        own |= {"gpu_count": s.gpu_count, "engine": "vLLM"}
        return basis_mod.make(own | self.basis, claim=True)

    @property
    def value_text(self) -> str:
        """The published figure as text: ``954,000 tok/s``, ``+35 to +44 %``, ``< 6 %``."""
        if self.values is not None:
            low, high = (_number(x, self.signed) for x in (self.values.low, self.values.high))
            if self.unit in ("1", "x") or self.unit.startswith("$/"):
                return f"{_with_unit(low, self.unit)} to {_with_unit(high, self.unit)}"
            return f"{low} to {high} {self.unit}"  # the spaced unit once, at the end
        text = _with_unit(_number(self.value or 0, self.signed), self.unit)
        if self.comparison == "bound":
            return ("< " if self.direction == "upper" else "> ") + text
        return text


class Registry(_Model):
    """All claims and sources; look-ups by result and by id."""

    sources: list[Source]
    claims: list[Claim]
    _file: str = PrivateAttr(default="claims registry")

    @model_validator(mode="after")
    def _cross_checks(self) -> Registry:
        loader.check_unique_ids(self.sources, "sources")
        loader.check_unique_ids(self.claims, "claims")
        known = {s.id for s in self.sources}
        for i, c in enumerate(self.claims):
            refs = {f"refs.{j}": r for j, r in enumerate(c.source.refs)}
            refs = {"seen_in": c.source.seen_in, **refs}
            for field, ref in refs.items():
                if ref not in known:
                    problem = f"unknown source id {ref!r}; known: {', '.join(sorted(known))}"
                    raise loader.field_error(f"claims.{i}.source.{field}", problem)
            if c.derived_from is not None:
                parent = next((p for p in self.claims if p.id == c.derived_from), None)
                if parent is None or parent.result != c.result or parent.derived_from:
                    problem = f"{c.derived_from!r} is not a claim of {c.result} stated on its own"
                    raise loader.field_error(f"claims.{i}.derived_from", problem)
            urls = {self.source(r).url for r in refs.values()}
            if c.source.primary is not None and c.source.primary not in urls:
                problem = "must be the url of a source named in seen_in or refs"
                raise loader.field_error(f"claims.{i}.source.primary", problem)
        return self

    @property
    def path(self) -> str:
        """The file the registry was read from (for messages)."""
        return self._file

    @property
    def ids(self) -> list[str]:
        """Claim ids in file order."""
        return [c.id for c in self.claims]

    def for_result(self, name: str) -> list[Claim]:
        """The claims of one result, in file order."""
        if name not in paths.RESULTS:
            problem = f"unknown result {name!r}; expected one of {', '.join(paths.RESULTS)}"
            raise InputError(self._file, "result", problem)
        return [c for c in self.claims if c.result == name]

    def get(self, claim_id: str) -> Claim:
        """The claim with this id."""
        if (c := next((c for c in self.claims if c.id == claim_id), None)) is not None:
            return c
        raise InputError(self._file, "claims", f"no claim with id {claim_id!r}")

    def value(self, claim_id: str) -> float:
        """The published figure of a single-valued claim, in its unit."""
        if (value := self.get(claim_id).value) is None:
            raise InputError(self._file, f"claims[{claim_id}].value", "is a range: use .range()")
        return value

    def range(self, claim_id: str) -> Range:
        """The published interval of a range claim, in its unit."""
        if (values := self.get(claim_id).values) is None:
            raise InputError(self._file, f"claims[{claim_id}].values", "is not a range claim")
        return values

    def tolerance(self, claim_id: str) -> float:
        """How far a reproduced number may sit from the published one (0 when none is set)."""
        return t.absolute if (t := self.get(claim_id).tolerance) is not None else 0.0

    def source(self, source_id: str) -> Source:
        """The source with this id."""
        if (s := next((s for s in self.sources if s.id == source_id), None)) is not None:
            return s
        raise InputError(self._file, "sources", f"no source with id {source_id!r}")


def parse_claims(raw: Any, file: str | Path = "claims registry") -> Registry:
    """Validate already-parsed YAML/JSON data; errors name ``file``, the entry and the field."""
    return loader.validate(Registry, raw, file)


def load_claims(path: str | Path | None = None) -> Registry:
    """Read and validate the claims registry (default ``data/claims.yaml``)."""
    return loader.load(Registry, paths.DATA / "claims.yaml" if path is None else path)


def _number(x: float, signed: bool = False) -> str:
    """``954000 -> '954,000'``, ``38.96 -> '38.96'``; ``signed`` adds ``+`` to positives."""
    text = f"{int(x):,}" if float(x).is_integer() else f"{x:,}"
    return f"+{text}" if signed and x > 0 else text


def _with_unit(number: str, unit: str) -> str:
    if unit == "1":
        return number
    if unit == "x":
        return f"{number}x"
    if unit.startswith("$/"):
        sign = number[0] if number[:1] in "+-" else ""
        return f"{sign}${number[len(sign) :]}/{unit[2:]}"
    return f"{number} {unit}"


Role = Literal["measurement", "analogue", "context"]
#: Price kinds that come from a cost model, not a provider's price list.
MODELLED_PRICES: tuple[str, ...] = ("ownership-cost model", "modelled rental")
#: Basis parts a figure takes from its own fields.
FROM_FIELDS = "model hardware gpu_count engine engine_version isl osl concurrency spec_method"
_FIELD = {"gpu_count": "gpus", "spec_method": "speculative"}
#: Where the registry lives.
REGISTRY = "data/published/figures.yaml"


def _iso_date(v: str) -> str:
    with contextlib.suppress(ValueError):
        if len(v) == 10 and _dt.date.fromisoformat(v):
            return v
    raise ValueError(f"{v!r} is not a date YYYY-MM-DD")


IsoDate = Annotated[str, AfterValidator(_iso_date)]
Positive = Annotated[int | None, Field(gt=0)]


class Figure(loader.Strict):
    """One published figure (``value`` in ``unit``; ``None`` where the source does not say):
    ``read`` the date this project read it, ``secondary`` read in an aggregator, ``superseded``
    a later change that supersedes it, ``basis`` from the source's own definitions."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    claim: str
    role: Role
    value: float
    unit: Text
    definition: Text
    model: Text
    precision: str | None = None
    hardware: str | None = None
    gpus: Positive = None
    engine: str | None = None
    engine_version: str | None = None
    isl: Positive = None
    osl: Positive = None
    concurrency: Positive = None
    speculative: str | None = None
    tok_s_per_user: Annotated[float | None, Field(gt=0)] = None
    submitter: Text
    url: Url
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{7,40}$")
    date: IsoDate | None = None
    read: IsoDate
    quote: str = Field(min_length=1, max_length=240)
    verified: bool
    secondary: bool = False
    price_kind: PriceKind | None = None
    basis: dict[str, Any]
    superseded: str | None = None
    notes: str | None = None

    @model_validator(mode="after")
    def _basis(self) -> Figure:
        loader.check_basis_block(self, FROM_FIELDS.split(), "the figure's own field")
        if self.unit.startswith("$/") and self.price_kind is None:
            kinds = ", ".join(get_args(PriceKind))
            raise loader.field_error("price_kind", f"a price must say what it is: one of {kinds}")
        return self

    @property
    def modelled(self) -> bool:
        """True for a price that comes from a cost model, not a provider's price list."""
        return self.price_kind in MODELLED_PRICES

    @property
    def figure_basis(self) -> basis_mod.Basis:
        """The figure's full basis (:class:`rackbook.core.basis.Basis`)."""
        own = {k: getattr(self, _FIELD.get(k, k)) for k in FROM_FIELDS.split()}
        na = {k: own[k] or basis_mod.NA for k in ("hardware", "engine")}
        return basis_mod.make(own | na | self.basis)


class Rejected(loader.Strict):
    """A source looked at for a claim and not added as a figure: what it holds and why not."""

    source: Text
    claim: str
    url: Url
    read: IsoDate
    found: Text
    why: Text


class FigureRegistry(loader.Strict):
    """All published figures (ids unique) and the sources rejected."""

    figures: list[Figure]
    rejected: list[Rejected] = Field(default_factory=list)
    _file: str = PrivateAttr(default="-")

    @model_validator(mode="after")
    def _unique(self) -> FigureRegistry:
        loader.check_unique_ids(self.figures, "figures")
        return self

    def get(self, figure_id: str) -> Figure:
        """The figure with this id (KeyError when absent)."""
        return {f.id: f for f in self.figures}[figure_id]


def load_figures(path: str | Path = REGISTRY, registry: Registry | None = None) -> FigureRegistry:
    """Read and validate the figure registry (default :data:`REGISTRY`); every ``claim`` must be
    an id of the claims registry (``registry``, default ``data/claims.yaml``)."""
    reg = loader.load(FigureRegistry, path)
    known = set((registry or load_claims()).ids)
    bad = [(f"figures[{f.id or i}]", f.claim) for i, f in enumerate(reg.figures)]
    bad += [(f"rejected[{i}]", r.claim) for i, r in enumerate(reg.rejected)]
    for where, claim in bad:
        if claim not in known:
            raise InputError(reg._file, f"{where}.claim", f"unknown claim id {claim!r}")
    return reg
