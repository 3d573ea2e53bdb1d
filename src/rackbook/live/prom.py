"""A vLLM server's Prometheus ``/metrics`` around each point (trace table ``server_metrics``)."""

from __future__ import annotations

import contextlib
import http.client
import math
import re
from dataclasses import dataclass

from rackbook.live.envfile import urlopen

#: Metric families kept (prefix match after ``vllm:``; histogram buckets dropped).
KEEP = tuple(
    """prompt_tokens generation_tokens prefix_cache_queries prefix_cache_hits request_success
    num_preemptions num_requests_running num_requests_waiting kv_cache_usage_perc
    time_to_first_token_seconds e2e_request_latency_seconds inter_token_latency_seconds
    request_prefill_time_seconds request_decode_time_seconds iteration_tokens_total""".split()
)

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\d+)?$")


@dataclass(frozen=True)
class Sample:
    """One sample: metric name, labels as text (``{a="b",...}`` or ""), value."""

    metric: str
    labels: str
    value: float


def parse(text: str, keep: tuple[str, ...] | None = KEEP) -> list[Sample]:
    """Samples ``vllm:<kept family>`` of ``text`` (``keep=None``: all), no ``_created`` or
    ``_bucket``; malformed lines and NaN skipped, never an error."""
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if not m or line.startswith("#"):
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        short = name.removeprefix("vllm:")
        if name.endswith(("_created", "_bucket")) or (
            keep is not None and (short == name or not short.startswith(keep))
        ):
            continue
        with contextlib.suppress(ValueError):
            if not math.isnan(v := float(value)):
                out.append(Sample(name, labels, v))
    return out


def scrape(base_url: str, key: str | None = None, timeout_s: float = 10.0) -> list[Sample]:
    """GET ``base_url/metrics``, parsed; a broken answer raises :class:`ConnectionError`."""
    try:
        with urlopen(f"{base_url}/metrics", key, timeout_s) as r:
            return parse(r.read().decode("utf-8", "replace"))
    except http.client.HTTPException as exc:
        raise ConnectionError(f"broken /metrics answer ({type(exc).__name__})") from None


def rows(samples: list[Sample], point_id: str, server: str, phase: str) -> list[dict]:
    at = {"point_id": point_id, "server": server, "phase": phase}
    return [{**at, "metric": s.metric, "labels": s.labels, "value": s.value} for s in samples]


def delta(before: list[Sample], after: list[Sample], metric: str) -> float:
    """Sum over label sets of ``after - before`` for ``metric`` (a counter's increase)."""
    b = {(s.metric, s.labels): s.value for s in before}
    return sum(s.value - b.get((s.metric, s.labels), 0.0) for s in after if s.metric == metric)
