"""The dollar figure per GPU-hour: read as a cost (US dollars per million tokens) against the
catalog's reference price, and as token revenue at a cost calculator's token prices
(``token_prices`` in data/hardware.yaml, loaded here: InferenceX's by default); its physics
reading (a price is not a physics quantity)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rackbook.errors import InputError
from rackbook.inputs import catalogs
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
    """Dollar readings of a per-GPU-hour figure.

    ``cost``: one row per (throughput reading, price basis): tokens/s per GPU, million tokens
    per GPU-hour, USD per GPU-hour, USD per million tokens = USD per GPU-hour / (tokens/s x
    3600 / 1e6). ``revenue``: per throughput reading, token revenue per GPU-hour at the
    InferenceX prices if every token were uncached / cached, and the cached share that makes
    the revenue equal the figure (NaN if none in [0, 1]). ``ratio_to_rental`` = figure / rental.
    """

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
    """Read ``price_per_gpu_hour`` (US dollars per GPU-hour) as a cost and as token revenue.

    ``tokens_per_s_per_gpu``: reading name -> tokens/s per GPU (the chapter passes the claim as
    stated and its rack-total reading, figure / GPUs of the rack). ``rental_usd_per_gpu_hour``:
    the reference price; default the catalog's ``gb300-tco-hyperscaler`` (about $2.65, the
    hourly rate of InferenceX's ownership-cost model, labelled with its kind). Token prices in
    US dollars per million tokens, default the catalog's :data:`TOKEN_PRICES` (InferenceX's
    $1/M uncached input and output, $0.10/M cached input: :func:`token_prices`).

    - cost reading: USD per million tokens = price / (tokens/s x 3600 / 1e6);
    - revenue reading: USD per GPU-hour = tokens/s x 3600 / 1e6 x (p_u x (1 - s) + p_c x s) for
      cached share s; solved for s: s = (p_u - price / Mtok per hour) / (p_u - p_c). With a
      known ``cached_share`` the revenue at that share is ``revenue_at_share`` (else NaN).

    $/GPU-hour is not a price per answer: an answer costs its GPU-seconds (set by its tokens,
    context and batch) times the price per GPU-second, which this figure alone does not give.
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
        f"${price_per_gpu_hour:g} / ${rental_usd_per_gpu_hour:g} reference price = {ratio:.3g}x; "
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
    """The revenue row of reading ``name`` at ``tps`` tokens/s per GPU: USD per GPU-hour all
    uncached and all cached at the token prices (USD per million tokens), the cached share
    that earns ``price_per_gpu_hour`` (NaN outside [0, 1]) and the revenue at a known share."""
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
            f"${price_per_gpu_hour:g} needs {share:.1%} cached"
            if np.isfinite(share)
            else f"${price_per_gpu_hour:g} is outside that range"
        ),
    }


def cost_physics(cost: CostReadings, price_per_gpu_hour: float) -> headline.ClaimReading:
    """A price is never a physics reading: no ceiling bounds what a GPU-hour costs or earns
    (token prices are a business's choice, not a property of the hardware), so the physics
    verdict is ``undetermined`` for any dollar figure, with the reason saying why. The cost
    and token-revenue tables stay beside it as arithmetic; the published reading judges the
    figure against rental, list and ownership prices."""
    ratio = cost.ratio_to_rental
    inst = price_per_gpu_hour / INSTANCE_GPUS
    return headline.ClaimReading(
        COST_CLAIM,
        "physics",
        "undetermined",
        "not a physics quantity",
        f"${price_per_gpu_hour:g} per GPU-hour is a price ({ratio:.3g}x the catalog's reference "
        f"price, a cost model's rate; read as one {INSTANCE_GPUS}-GPU instance-hour, "
        f"${inst:.2f} per GPU-hour), and no ceiling bounds a price: physics reads throughputs, "
        "not dollars; the published reading compares it with list prices, per GPU-hour and "
        "per instance-hour, and with modelled rental and ownership rates; its cost and revenue "
        "tables read it on both throughput bases (per GPU as stated, and the rack total)",
    )


REVENUE_FORMULA = (
    r"\text{revenue} = \frac{\text{tok/s per GPU} \times 3600}{10^6}\,"
    r"\bigl(p_u\,(1 - s) + p_c\,s\bigr)\ \text{USD per GPU-hour}"
)
#: The cost reading of the throughput figure as stated (per GPU).


def token_revenue(
    row: pd.Series,
    prices: catalogs.TokenPriceSpec | None = None,
) -> float:
    """Token revenue per GPU-hour (US dollars) of a
    :func:`rackbook.results.rack_scaling.tokens.token_accounting` row at the token prices
    (default :func:`token_prices`): (computed tok/s per GPU x p_u + cached input tok/s per GPU x
    p_c) x 3600 / 1e6. NaN when the cached count (hence the computed one) is unknown."""
    prices = prices or token_prices()
    usd_per_m_uncached, usd_per_m_cached = prices.usd_per_m_uncached, prices.usd_per_m_cached
    uncached, cached = row["computed_tok_s_per_gpu"], row["cached_input_tok_s_per_gpu"]
    return float((uncached * usd_per_m_uncached + cached * usd_per_m_cached) * 3600 / 1e6)
