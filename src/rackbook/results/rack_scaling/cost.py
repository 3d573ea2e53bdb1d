"""The dollar figure per GPU-hour: read as a cost (US dollars per million tokens) against the
catalog's reference price, and as token revenue at a cost calculator's token prices
(``token_prices`` in data/hardware.yaml, loaded here: InferenceX's by default); its physics
reading (a price is not a physics quantity)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.core.units import percent, ratio_text
from rackbook.errors import InputError
from rackbook.inputs import catalogs
from rackbook.results import chapter_common as common
from rackbook.results import headline

#: The token prices the dollar figure is read at as revenue (data/hardware.yaml
#: ``token_prices``): InferenceX's cost calculator's.
TOKEN_PRICES = "inferencex-tco-calculator"


def token_prices(id: str = TOKEN_PRICES) -> catalogs.TokenPriceSpec:
    """Token prices from the hardware catalog: US dollars per million tokens, uncached (input
    and output) and cached input, with their source and the date they were read."""
    return catalogs.token_price(id)


def prices_source(prices: catalogs.TokenPriceSpec) -> str:
    """Where the token prices come from, and what they are, in one line."""
    return (
        f"{prices.sources[0]} (uncached input and output ${prices.usd_per_m_uncached:g}/M "
        f"tokens, cached input ${prices.usd_per_m_cached:.2f}/M; read {prices.read})"
    )


COST_CLAIM = "rack-scaling.cost"
#: The catalog price the dollar figure is set against by default: InferenceX's GB300 hourly
#: rate, an ownership-cost model's (labelled so in data/hardware.yaml).
DEFAULT_PRICE = "gb300-tco-hyperscaler"
#: GPUs of one cloud instance of a GB300 NVL72 (a 4-GPU compute tray): the dollar figure read
#: as the price of one instance-hour is figure / 4 per GPU-hour.
INSTANCE_GPUS = 4


@dataclass(frozen=True)
class CostReadings:
    """Dollar readings of a per-GPU-hour figure: ``cost`` per (throughput reading, price
    basis), ``revenue`` per throughput reading, ``ratio_to_rental`` = figure / rental."""

    cost: pd.DataFrame
    revenue: pd.DataFrame
    ratio_to_rental: float
    formula: str


def cost_readings(
    price_per_gpu_hour: float,
    tokens_per_s_per_gpu: dict[str, float],
    rental_usd_per_gpu_hour: float | None = None,
    usd_per_m_uncached: float | None = None,
    usd_per_m_cached: float | None = None,
    cached_share: float | None = None,
) -> CostReadings:
    """Read ``price_per_gpu_hour`` (USD per GPU-hour) at each of ``tokens_per_s_per_gpu``
    (reading -> tokens/s per GPU) as a cost, USD per million tokens = price / (tokens/s x 3600
    / 1e6), against the reference rental (default :data:`DEFAULT_PRICE`), and as token revenue
    at prices p_u, p_c (USD per million tokens, default :data:`TOKEN_PRICES`): revenue = Mtok
    per hour x (p_u (1 - s) + p_c s) at cached share s, solved for the s that earns the price.
    """
    prices = token_prices()
    source = prices_source(prices)
    if usd_per_m_uncached is None and usd_per_m_cached is None:
        usd_per_m_uncached, usd_per_m_cached = prices.usd_per_m_uncached, prices.usd_per_m_cached
    elif usd_per_m_uncached is None or usd_per_m_cached is None:
        raise InputError("-", "usd_per_m_cached", "give both token prices, or neither")
    else:
        source = f"given (uncached ${usd_per_m_uncached:g}/M, cached ${usd_per_m_cached:g}/M)"
    if rental_usd_per_gpu_hour is None:
        rent = catalogs.price(DEFAULT_PRICE)
        rental_usd_per_gpu_hour = rent.usd_per_gpu_hour
        rent_label, rent_source = f"{rent.kind} ({rent.id})", rent.sources[0]
    else:
        rent_label, rent_source = "reference (given)", "argument rental_usd_per_gpu_hour"
    if not price_per_gpu_hour > 0 or not rental_usd_per_gpu_hour > 0:
        raise InputError("-", "price_per_gpu_hour", "prices must be > 0")
    if cached_share is not None and not 0 <= cached_share <= 1:
        raise InputError("-", "cached_share", f"must be in [0, 1], got {cached_share}")
    if not usd_per_m_uncached > usd_per_m_cached >= 0:
        raise InputError("-", "usd_per_m_cached", "must be >= 0 and below the uncached token price")
    bases = {
        "claim as cost": (price_per_gpu_hour, f"data/claims.yaml {COST_CLAIM}"),
        rent_label: (rental_usd_per_gpu_hour, rent_source),
    }
    cost, revenue = [], []
    for name, tps in tokens_per_s_per_gpu.items():
        if not tps > 0:
            raise InputError("-", f"tokens_per_s_per_gpu[{name}]", f"must be > 0, got {tps}")
        mtok_h = tps * 3600 / 1e6
        for basis, (usd, source) in bases.items():
            per_m = usd / mtok_h
            cost.append(
                {
                    "reading": name,
                    "basis": basis,
                    "tok_s_per_gpu": tps,
                    "mtok_per_gpu_hour": mtok_h,
                    "usd_per_gpu_hour": usd,
                    "usd_per_m_tokens": per_m,
                    "source": source,
                    "formula": f"${usd:g} / ({tps:,.0f} tok/s x 3600 / 1e6 = {mtok_h:,.4g} M) "
                    f"= ${per_m:.4g}/M tokens",
                }
            )
        revenue.append(
            _revenue_row(
                name, tps, price_per_gpu_hour, usd_per_m_uncached, usd_per_m_cached, cached_share
            )
        )
    ratio = price_per_gpu_hour / rental_usd_per_gpu_hour
    formula = (
        f"${price_per_gpu_hour:g} / ${rental_usd_per_gpu_hour:g} reference price = "
        f"{ratio_text(ratio)}; "
        f"token prices: {source}"
    )
    return CostReadings(pd.DataFrame(cost), pd.DataFrame(revenue), ratio, formula)


def _revenue_row(
    name: str,
    tps: float,
    price_per_gpu_hour: float,
    usd_per_m_uncached: float,
    usd_per_m_cached: float,
    cached_share: float | None,
) -> dict[str, Any]:
    """The revenue row of reading ``name`` at ``tps`` tokens/s per GPU (USD per GPU-hour)."""
    mtok_h = tps * 3600 / 1e6
    rev_u, rev_c = mtok_h * usd_per_m_uncached, mtok_h * usd_per_m_cached
    share = (usd_per_m_uncached - price_per_gpu_hour / mtok_h) / (
        usd_per_m_uncached - usd_per_m_cached
    )
    share = share if 0 <= share <= 1 else np.nan
    at_share = (
        np.nan
        if cached_share is None
        else mtok_h * (usd_per_m_uncached * (1 - cached_share) + usd_per_m_cached * cached_share)
    )
    return {
        "reading": name,
        "tok_s_per_gpu": tps,
        "mtok_per_gpu_hour": mtok_h,
        "revenue_all_uncached": rev_u,
        "revenue_all_cached": rev_c,
        "cached_share_matching": share,
        "revenue_at_share": at_share,
        "formula": f"{mtok_h:,.4g} M tok/h x ${usd_per_m_uncached:g}/M = ${rev_u:,.4g}"
        f" (all uncached) .. x ${usd_per_m_cached:g}/M = ${rev_c:,.4g} (all cached); "
        + (
            f"${price_per_gpu_hour:g} needs {percent(share)} cached"
            if np.isfinite(share)
            else f"${price_per_gpu_hour:g} is outside that range"
        ),
    }


def cost_physics(cost: CostReadings, price_per_gpu_hour: float) -> headline.ClaimReading:
    """The physics reading of a price: ``undetermined`` (no ceiling bounds a price)."""
    ratio = cost.ratio_to_rental
    inst = price_per_gpu_hour / INSTANCE_GPUS
    clauses = [
        f"${price_per_gpu_hour:g} per GPU-hour is a price ({ratio_text(ratio)} the catalog's "
        f"reference price, a cost model's rate; read as one {INSTANCE_GPUS}-GPU instance-hour, "
        f"${inst:.2f} per GPU-hour), and no ceiling bounds a price: physics reads throughputs, "
        "not dollars",
        "the published reading compares it with list prices, per GPU-hour and per "
        "instance-hour, and with modelled rental and ownership rates",
        "its cost and revenue tables read it on both throughput bases (per GPU as stated, and "
        "the rack total)",
    ]
    margin = "not a physics quantity"
    return common.reading(COST_CLAIM, "physics", "undetermined", margin, clauses)


REVENUE_FORMULA = (
    r"\text{revenue} = \frac{\text{tok/s per GPU} \times 3600}{10^6}\,"
    r"\bigl(p_u\,(1 - s) + p_c\,s\bigr)\ \text{USD per GPU-hour}"
)


def token_revenue(
    row: pd.Series,
    prices: catalogs.TokenPriceSpec | None = None,
) -> float:
    """Token revenue (USD per GPU-hour) of a :func:`token_accounting` row: (computed tok/s per
    GPU x p_u + cached input tok/s per GPU x p_c) x 3600 / 1e6; NaN with the cached count
    unknown."""
    p = prices or token_prices()
    uncached, cached = row["computed_tok_s_per_gpu"], row["cached_input_tok_s_per_gpu"]
    return float((uncached * p.usd_per_m_uncached + cached * p.usd_per_m_cached) * 3600 / 1e6)
