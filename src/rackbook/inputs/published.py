"""The registry of published figures found only in posts, PRs and price lists,
``data/published/figures.yaml``: value, unit, conditions, source (URL, date, quote), whether read
first-hand (``verified``), the claim it bears on and its ``role`` there; and sources rejected."""

from __future__ import annotations

import contextlib
import datetime as _dt
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field, PrivateAttr, model_validator

from rackbook.core import basis as basis_mod
from rackbook.errors import InputError
from rackbook.inputs import claims, loader
from rackbook.inputs.catalogs import PriceKind, Text, Url

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
        return basis_mod.make(
            own | {k: own[k] or basis_mod.NA for k in ("hardware", "engine")} | self.basis
        )


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


def load_figures(
    path: str | Path | None = None, registry: claims.Registry | None = None
) -> FigureRegistry:
    """Read and validate the figure registry (default :data:`REGISTRY`); every ``claim`` must be
    an id of the claims registry (``registry``, default ``data/claims.yaml``)."""
    reg = loader.load(FigureRegistry, path or REGISTRY)
    known = set((registry or claims.load_claims()).ids)
    bad = [(f"figures[{f.id or i}]", f.claim) for i, f in enumerate(reg.figures)]
    bad += [(f"rejected[{i}]", r.claim) for i, r in enumerate(reg.rejected)]
    for where, claim in bad:
        if claim not in known:
            raise InputError(reg._file, f"{where}.claim", f"unknown claim id {claim!r}")
    return reg
