"""The registry of published figures that exist only in posts, PRs and price lists,
``data/published/figures.yaml``: per figure its value and unit, what it measures and under which
conditions, where it was published (URL, date, quote), whether this project read it first-hand
(``verified``: second-hand figures never decide a verdict alone), the claim it bears on and its
``role`` there (``measurement``, ``analogue`` or ``context``). Loaded with the strict loader
(:mod:`rackbook.inputs.loader`): a problem is one line naming ``figures[<id>].field``.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import AfterValidator, Field, model_validator

from rackbook import paths
from rackbook.core import basis as basis_mod
from rackbook.errors import InputError
from rackbook.inputs import claims, loader
from rackbook.inputs.catalogs import PriceKind

Role = Literal["measurement", "analogue", "context"]
#: Price kinds (:data:`~rackbook.inputs.catalogs.PriceKind`) that come from a cost model, not a
#: provider's price list: shown and read, never "published like-for-like".
MODELLED_PRICES: tuple[str, ...] = ("ownership-cost model", "modelled rental")
#: Basis parts a figure takes from its own fields.
FROM_FIELDS = (
    "model",
    "hardware",
    "gpu_count",
    "engine",
    "engine_version",
    "isl",
    "osl",
    "concurrency",
    "spec_method",
)

#: Where the registry lives.
REGISTRY = "data/published/figures.yaml"


def _iso_date(v: str) -> str:
    """``v`` when it is a date written YYYY-MM-DD."""
    try:
        if len(v) == 10 and _dt.date.fromisoformat(v):
            return v
    except ValueError:
        pass
    raise ValueError(f"{v!r} is not a date YYYY-MM-DD")


IsoDate = Annotated[str, AfterValidator(_iso_date)]


class Figure(loader.Strict):
    """One published figure (value in ``unit``; ``None`` where the source does not say)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    claim: str = Field(description="id of the claim in data/claims.yaml it bears on")
    role: Role
    value: float
    unit: str = Field(min_length=1)
    definition: str = Field(min_length=1, description="what the number measures")
    model: str = Field(min_length=1)
    precision: str | None = None
    hardware: str | None = None
    gpus: int | None = Field(default=None, gt=0)
    engine: str | None = None
    engine_version: str | None = None
    isl: int | None = Field(default=None, gt=0)
    osl: int | None = Field(default=None, gt=0)
    concurrency: int | None = Field(default=None, gt=0)
    speculative: str | None = None
    tok_s_per_user: float | None = Field(
        default=None, gt=0, description="interactivity of the same point, as published"
    )
    submitter: str = Field(min_length=1, description="who published it")
    url: str = Field(pattern=r"^https?://\S+$")
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{7,40}$")
    date: IsoDate | None = Field(default=None, description="publication date, YYYY-MM-DD")
    read: IsoDate = Field(description="date this project read the source, YYYY-MM-DD")
    quote: str = Field(min_length=1, max_length=240, description="short excerpt with the figure")
    verified: bool
    secondary: bool = Field(
        default=False,
        description="read in an aggregator or report because no primary text was found",
    )
    price_kind: PriceKind | None = Field(
        default=None, description="for a price: what it is (list, rental, or a model's rate)"
    )
    basis: dict[str, Any] = Field(
        description="the figure's basis (rackbook.core.basis) from the source's own definitions; "
        "model, hardware, GPU count, engine, ISL/OSL, concurrency and speculative method come "
        "from the fields above; never 'unknown'"
    )
    superseded: str | None = Field(
        default=None,
        description="a later source reporting a change that supersedes this point: its date "
        "and what it reports (the point is shown, flagged by date)",
    )
    notes: str | None = None

    @model_validator(mode="after")
    def _basis(self) -> Figure:
        loader.check_basis_block(self, FROM_FIELDS, "the figure's own field")
        if self.unit.startswith("$/") and self.price_kind is None:
            raise ValueError(
                "price_kind: a price must say what it is (list price, rental "
                "contract, ownership-cost model or modelled rental)"
            )
        return self

    @property
    def modelled(self) -> bool:
        """True for a price that comes from a cost model, not a provider's price list."""
        return self.price_kind in MODELLED_PRICES

    @property
    def figure_basis(self) -> basis_mod.Basis:
        """The figure's full basis (:class:`rackbook.core.basis.Basis`)."""
        return basis_mod.make(
            {
                "model": self.model,
                "hardware": self.hardware or basis_mod.NA,
                "gpu_count": self.gpus,
                "engine": self.engine or basis_mod.NA,
                "engine_version": self.engine_version,
                "isl": self.isl,
                "osl": self.osl,
                "concurrency": self.concurrency,
                "spec_method": self.speculative,
                **self.basis,
            }
        )


class Rejected(loader.Strict):
    """A source looked at for a claim and not added as a figure, with why (read first-hand
    where ``read`` is given; what it holds in ``found``)."""

    source: str = Field(min_length=1, description="what was looked at")
    claim: str = Field(description="id of the claim in data/claims.yaml it was looked at for")
    url: str = Field(pattern=r"^https?://\S+$")
    read: IsoDate = Field(description="date this project read it, YYYY-MM-DD")
    found: str = Field(min_length=1, description="what the source holds, in short")
    why: str = Field(min_length=1, description="why it is not a figure of the book")


class FigureRegistry(loader.Strict):
    """All published figures; ids unique, each bearing on a known claim; and the sources
    looked at and rejected (``rejected``), each with why."""

    figures: list[Figure]
    rejected: list[Rejected] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> FigureRegistry:
        loader.check_unique_ids(self.figures, "figures")
        return self

    def get(self, figure_id: str) -> Figure:
        """The figure with this id (KeyError when absent)."""
        return {f.id: f for f in self.figures}[figure_id]

    def table(self) -> pd.DataFrame:
        """One row per figure, the entries' fields as columns."""
        return pd.DataFrame([f.model_dump() for f in self.figures])


def load_figures(
    path: str | Path | None = None, registry: claims.Registry | None = None
) -> FigureRegistry:
    """Read and validate the figure registry (default :data:`REGISTRY`); every ``claim`` must be
    an id of the claims registry (``registry``, default ``data/claims.yaml``)."""
    p = paths.resolve(path or REGISTRY)
    shown = loader.display_path(p)
    raw = loader.read_yaml(p)
    reg = loader.validate(FigureRegistry, raw, shown)
    known = set((registry or claims.load_claims()).ids)
    for i, f in enumerate(reg.figures):
        if f.claim not in known:
            raise InputError(shown, f"figures[{f.id or i}].claim", f"unknown claim id {f.claim!r}")
    for i, r in enumerate(reg.rejected):
        if r.claim not in known:
            raise InputError(shown, f"rejected[{i}].claim", f"unknown claim id {r.claim!r}")
    return reg
