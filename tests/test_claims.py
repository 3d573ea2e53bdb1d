"""The claims registry: the shipped file, its look-ups and formatting, and every bad-input case."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from rackbook import paths
from rackbook.errors import InputError
from rackbook.inputs.claims import Registry, load_claims, parse_claims

SHIPPED = paths.DATA / "claims.yaml"

#: The French write-up the registry quotes: the reference folder beside the checkout (as CI
#: lays it out); the check skips, saying so, where it is absent.
SOURCE_TEXT_CANDIDATES = [
    paths.ROOT.parent / "shared" / "reference" / "000_3688c5eff9900976.txt",
]

#: Published figures, typed in by hand from the write-up (not read from the registry).
EXPECTED_VALUES: dict[str, tuple[float | tuple[float, float], str, str]] = {
    "decode-parity.gap": (6, "%", "bound"),
    "rack-scaling.throughput": (954_000, "tok/s", "equal"),
    "rack-scaling.speedup": (7.9, "x", "ratio"),
    "rack-scaling.cost": (38.96, "$/GPU-hour", "equal"),
    "prefill-gain.gain": ((35, 44), "%", "range"),
    "eplb-balance.before": (0.35, "1", "equal"),
    "eplb-balance.after": (0.94, "1", "equal"),
    "eplb-balance.recovered": (97, "%", "ratio"),
    "context-latency.kv-bytes": (890, "B/token", "equal"),
    "context-latency.delta": (0.6, "ms", "equal"),
    "context-latency.delta-pct": (7, "%", "ratio"),
    "single-user.throughput": (826, "tok/s", "equal"),
}


def _norm(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_claims()


@pytest.fixture()
def raw() -> dict[str, Any]:
    return yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))


def _claim(raw: dict[str, Any], claim_id: str) -> dict[str, Any]:
    return next(c for c in raw["claims"] if c["id"] == claim_id)


def _write(tmp_path: Path, data: Any, name: str = "claims.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_claims(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: "), message  # names the file
    return message


# ------------------------------------------------------------------------------------------------
# The shipped registry


def test_shipped_registry_has_exactly_the_published_numbers(registry: Registry) -> None:
    assert registry.ids == list(EXPECTED_VALUES)
    for claim_id, (value, unit, comparison) in EXPECTED_VALUES.items():
        claim = registry.get(claim_id)
        assert claim.unit == unit, claim_id
        assert claim.comparison == comparison, claim_id
        if isinstance(value, tuple):
            assert claim.value is None and claim.values is not None
            assert (claim.values.low, claim.values.high) == value
        else:
            assert claim.value == pytest.approx(value), claim_id


def test_every_result_has_a_claim(registry: Registry) -> None:
    counts = {name: len(registry.for_result(name)) for name in paths.RESULTS}
    assert counts == {
        "decode-parity": 1,
        "rack-scaling": 3,
        "prefill-gain": 1,
        "eplb-balance": 3,
        "context-latency": 3,
        "single-user": 1,
    }
    assert all(c.result == "rack-scaling" for c in registry.for_result("rack-scaling"))


def test_french_quotes_are_verbatim(registry: Registry) -> None:
    source = next((p for p in SOURCE_TEXT_CANDIDATES if p.exists()), None)
    if source is None:
        pytest.skip("the French source text is not available on this machine")
    text = _norm(source.read_text(encoding="utf-8"))
    missing = [c.id for c in registry.claims if _norm(c.original) not in text]
    assert missing == []


def test_quotes_carry_their_number(registry: Registry) -> None:
    # French number formatting of each value, as it appears in the quoted sentence.
    expected = {
        "decode-parity.gap": "6 %",
        "rack-scaling.throughput": "954 000 tokens",
        "rack-scaling.speedup": "7,9 fois",
        "rack-scaling.cost": "38,96 dollars",
        "prefill-gain.gain": "35 à 44 %",
        "eplb-balance.before": "0,35",
        "eplb-balance.after": "0,94",
        "eplb-balance.recovered": "97 %",
        "context-latency.kv-bytes": "890 octets",
        "context-latency.delta": "0,6 milliseconde",
        "context-latency.delta-pct": "7 %",
        "single-user.throughput": "826 tokens",
    }
    for claim_id, figure in expected.items():
        assert figure in _norm(registry.get(claim_id).original), claim_id


def test_scopes_as_published(registry: Registry) -> None:
    rack = registry.get("rack-scaling.throughput").scope
    assert (rack.hardware, rack.gpu_count) == ("GB300 NVL72", 72)
    single = registry.get("single-user.throughput").scope
    assert (single.hardware, single.gpu_count) == ("B300", 4)
    batch = registry.get("decode-parity.gap").scope.batch_sizes
    assert batch is not None and (batch.low, batch.high) == (8, 256)
    ctx = registry.get("context-latency.delta").scope.context_tokens
    assert ctx is not None and (ctx.low, ctx.high) == (128_000, 855_000)
    cached = registry.get("prefill-gain.gain").scope.context_tokens
    assert cached is not None and (cached.low, cached.high) == (128_000, 128_000)
    assert registry.get("decode-parity.gap").direction == "upper"


def test_only_kv_bytes_is_located(registry: Registry) -> None:
    located = {c.id: c.source.primary for c in registry.claims if c.source.status != "not-located"}
    assert located == {"context-latency.kv-bytes": "https://huggingface.co/papers/2609.19969"}
    assert all(c.source.seen_in == "alphasignal-fr" for c in registry.claims)
    assert registry.source("vllm-post").status == "not-located"
    assert registry.source("vllm-post").url is None
    page = registry.source("vllm-prefill-ttft-page").url
    assert page == "https://vllm.ai/blog-assets/interactive_pages/dsv41-prefill-ttft.html"
    assert "vllm-prefill-ttft-page" in registry.get("prefill-gain.gain").source.refs


def test_write_up_cautions_are_recorded(registry: Registry) -> None:
    def cautions(claim_id: str) -> str:
        return " ".join(registry.get(claim_id).cautions)

    assert "7.9x" in cautions("decode-parity.gap")
    assert "6 %" in cautions("rack-scaling.speedup")
    assert "per-GPU" in cautions("single-user.throughput")
    assert "price per answer" in cautions("rack-scaling.cost")
    assert "not model throughput" in cautions("eplb-balance.recovered")
    assert "agentic" in cautions("rack-scaling.throughput")


def test_format_value(registry: Registry) -> None:
    shown = {c.id: c.value_text for c in registry.claims}
    assert shown == {
        "decode-parity.gap": "< 6 %",
        "rack-scaling.throughput": "954,000 tok/s",
        "rack-scaling.speedup": "7.9x",
        "rack-scaling.cost": "$38.96/GPU-hour",
        "prefill-gain.gain": "+35 to +44 %",
        "eplb-balance.before": "0.35",
        "eplb-balance.after": "0.94",
        "eplb-balance.recovered": "97 %",
        "context-latency.kv-bytes": "890 B/token",
        "context-latency.delta": "+0.6 ms",
        "context-latency.delta-pct": "+7 %",
        "single-user.throughput": "826 tok/s",
    }


def test_scope_summaries(registry: Registry) -> None:
    assert registry.get("single-user.throughput").scope.summary() == (
        "DeepSeek-V4.1-Flash · B300 · 4 GPUs · batch 1"
    )
    assert registry.get("decode-parity.gap").scope.summary() == "DeepSeek-V4.1-Flash · batch 8-256"
    assert [c.id for c in registry.for_result("eplb-balance")] == [
        "eplb-balance.before",
        "eplb-balance.after",
        "eplb-balance.recovered",
    ]


def test_unknown_lookups_raise_input_error(registry: Registry) -> None:
    with pytest.raises(InputError, match=r"claims: no claim with id 'rack-scaling\.nope'"):
        registry.get("rack-scaling.nope")
    with pytest.raises(InputError, match=r"result: unknown result 'rack'"):
        registry.for_result("rack")


def test_path_inside_root_is_shown_relative(
    tmp_path: Path, raw: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    _claim(raw, "rack-scaling.cost").pop("unit")
    (tmp_path / "data").mkdir()
    path = _write(tmp_path / "data", raw)
    with pytest.raises(InputError) as info:
        load_claims(path)
    assert str(info.value) == "data/claims.yaml: claims[rack-scaling.cost].unit: field required"


def test_parse_claims_names_the_given_file(raw: dict[str, Any]) -> None:
    _claim(raw, "rack-scaling.cost")["comparison"] = "about"
    with pytest.raises(InputError) as info:
        parse_claims(raw, "inline")
    assert str(info.value).startswith(
        "inline: claims[rack-scaling.cost].comparison: input should be"
    )


# ------------------------------------------------------------------------------------------------
# Bad registries: each names the file, the entry and the field


def test_missing_field(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "rack-scaling.cost").pop("unit")
    message = _error(_write(tmp_path, raw))
    assert message.endswith(": claims[rack-scaling.cost].unit: field required")


def test_missing_field_without_id_uses_index(tmp_path: Path, raw: dict[str, Any]) -> None:
    raw["claims"][3].pop("id")
    assert _error(_write(tmp_path, raw)).endswith(": claims[3].id: field required")


def test_wrong_type(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "rack-scaling.throughput")["value"] = "lots"
    message = _error(_write(tmp_path, raw))
    assert ": claims[rack-scaling.throughput].value: input should be a valid number" in message
    assert "'lots'" in message


def test_wrong_type_nested(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "single-user.throughput")["scope"]["gpu_count"] = "four"
    message = _error(_write(tmp_path, raw))
    assert ": claims[single-user.throughput].scope.gpu_count: input should be a valid integer" in (
        message
    )


def test_unknown_field(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "decode-parity.gap")["colour"] = "red"
    message = _error(_write(tmp_path, raw))
    assert ": claims[decode-parity.gap].colour: unknown field" in message


def test_duplicate_id(tmp_path: Path, raw: dict[str, Any]) -> None:
    raw["claims"].append(copy.deepcopy(_claim(raw, "decode-parity.gap")))
    message = _error(_write(tmp_path, raw))
    assert message.endswith(": claims[decode-parity.gap].id: duplicate id (entries 0 and 12)")


def test_duplicate_source_id(tmp_path: Path, raw: dict[str, Any]) -> None:
    raw["sources"].append(copy.deepcopy(raw["sources"][1]))
    message = _error(_write(tmp_path, raw))
    assert message.endswith(": sources[vllm-post].id: duplicate id (entries 1 and 7)")


def test_unknown_result(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "decode-parity.gap")["result"] = "decode-speed"
    message = _error(_write(tmp_path, raw))
    assert ": claims[decode-parity.gap].result: unknown result 'decode-speed'" in message


def test_id_must_start_with_result(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "decode-parity.gap")["result"] = "single-user"
    message = _error(_write(tmp_path, raw))
    assert ": claims[decode-parity.gap].id: must start with the result name 'single-user.'" in (
        message
    )


def test_unknown_source_id(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "eplb-balance.after")["source"]["seen_in"] = "alphasignal-en"
    message = _error(_write(tmp_path, raw))
    assert ": claims[eplb-balance.after].source.seen_in: unknown source id 'alphasignal-en'" in (
        message
    )


def test_unknown_source_ref(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "eplb-balance.after")["source"]["refs"].append("nope")
    message = _error(_write(tmp_path, raw))
    assert ": claims[eplb-balance.after].source.refs[1]: unknown source id 'nope'" in message


@pytest.mark.parametrize(("low", "high"), [(44, 35), (35, 35)])
def test_range_low_not_below_high(tmp_path: Path, raw: dict[str, Any], low: int, high: int) -> None:
    _claim(raw, "prefill-gain.gain")["values"] = {"low": low, "high": high}
    message = _error(_write(tmp_path, raw))
    assert message.endswith(
        f": claims[prefill-gain.gain].values.high: high ({high}) must be above low ({low})"
    )


def test_range_needs_values_not_value(tmp_path: Path, raw: dict[str, Any]) -> None:
    entry = _claim(raw, "prefill-gain.gain")
    entry["value"] = 40
    message = _error(_write(tmp_path, raw, "a.yaml"))
    assert ": claims[prefill-gain.gain].value: not allowed when comparison is range" in message
    entry.pop("value")
    entry.pop("values")
    message = _error(_write(tmp_path, raw, "b.yaml"))
    assert ": claims[prefill-gain.gain].values: required (low/high)" in message


def test_point_comparison_needs_value(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "rack-scaling.speedup").pop("value")
    message = _error(_write(tmp_path, raw))
    assert ": claims[rack-scaling.speedup].value: required when comparison is ratio" in message


def test_bound_needs_direction(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "decode-parity.gap").pop("direction")
    message = _error(_write(tmp_path, raw))
    assert ": claims[decode-parity.gap].direction: required (upper or lower)" in message


def test_ratio_needs_reference(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "rack-scaling.speedup")["reference"] = None
    message = _error(_write(tmp_path, raw))
    assert ": claims[rack-scaling.speedup].reference: required when comparison is ratio" in message


def test_status_and_primary_agree(tmp_path: Path, raw: dict[str, Any]) -> None:
    _claim(raw, "rack-scaling.cost")["source"]["primary"] = "https://example.org/post"
    message = _error(_write(tmp_path, raw, "a.yaml"))
    assert (
        ": claims[rack-scaling.cost].source.primary: must be null when status is not-located"
        in (message)
    )
    _claim(raw, "rack-scaling.cost")["source"]["status"] = "located"
    message = _error(_write(tmp_path, raw, "b.yaml"))
    assert message.endswith(
        ": claims[rack-scaling.cost].source.primary: must be the url of a source named in "
        "seen_in or refs"
    )


def test_yaml_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text("sources: []\nclaims:\n  - id: x\n    unit: [tok/s\n", encoding="utf-8")
    message = _error(path)
    assert ": line 5, column 1: YAML syntax error:" in message


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text("sources: []\nclaims:\n  - id: x\n    id: y\n", encoding="utf-8")
    assert _error(path).endswith(": line 4, column 5: YAML syntax error: duplicate key 'id'")


@pytest.mark.parametrize(
    ("text", "kind"), [("- a\n- b\n", "list"), ("", "empty file"), ("42\n", "int")]
)
def test_top_level_not_a_mapping(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text(text, encoding="utf-8")
    assert _error(path).endswith(f": (top level): expected a mapping, got {kind}")


def test_entry_not_a_mapping(tmp_path: Path, raw: dict[str, Any]) -> None:
    raw["claims"].append("954,000 tok/s")
    message = _error(_write(tmp_path, raw))
    assert ": claims[12]: input should be a valid dictionary" in message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert _error(path) == f"{path}: -: file not found"


@pytest.mark.parametrize(
    ("claim_id", "parent"),
    [
        ("rack-scaling.cost", "single-user.throughput"),  # another result's claim
        ("rack-scaling.cost", "rack-scaling.nothing"),  # no such claim
        ("eplb-balance.before", "eplb-balance.after"),  # a derived claim (and a cycle)
    ],
)
def test_derived_from_must_name_a_claim_of_its_result_stated_on_its_own(
    tmp_path: Path, raw: dict[str, Any], claim_id: str, parent: str
) -> None:
    _claim(raw, claim_id)["derived_from"] = parent
    message = _error(_write(tmp_path, raw))
    assert f".derived_from: '{parent}' is not a claim of" in message


def test_derived_figures_name_the_claim_they_are_stated_about(registry: Registry) -> None:
    assert {c.id: c.derived_from for c in registry.claims if c.derived_from} == {
        "rack-scaling.speedup": "rack-scaling.throughput",
        "rack-scaling.cost": "rack-scaling.throughput",
        "eplb-balance.after": "eplb-balance.before",
        "eplb-balance.recovered": "eplb-balance.before",
        "context-latency.delta-pct": "context-latency.delta",
    }
