"""Property-based tests: mutated inputs give either a clean InputError or a valid result,
never a crash, and never a half-written output."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import numpy as np
from conftest import small_result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackbook.core import importers
from rackbook.core.traces import read_trace
from rackbook.errors import InputError
from rackbook.inputs.claims import load_claims
from rackbook.paths import DATA
from rackbook.physics import eplb

KEYS = list(small_result().keys())
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.floats(-1, 10), max_size=4),
    st.lists(st.lists(st.floats(-1, 1), max_size=3), max_size=4),
)


@st.composite
def mutated_results(draw):
    d = copy.deepcopy(small_result())
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(KEYS))
        action = draw(st.sampled_from(["drop", "replace", "truncate", "poke"]))
        if action == "drop":
            d.pop(key, None)
        elif action == "replace":
            d[key] = draw(VALUES)
        elif action == "truncate" and isinstance(d.get(key), list):
            d[key] = d[key][: draw(st.integers(0, 2))]
        elif action == "poke" and isinstance(d.get(key), list) and d[key]:
            i = draw(st.integers(0, len(d[key]) - 1))
            d[key][i] = draw(VALUES)
    return d


def _check_import(payload: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "r.json", Path(tmp) / "trace"
        src.write_bytes(payload)
        try:
            importers.write("vllm-bench", src, out)
            t = read_trace(out)
        except InputError as err:
            assert "\n" not in str(err) and str(src) in str(err)
            assert not out.exists()
            assert [p.name for p in Path(tmp).iterdir()] == ["r.json"]  # nothing half-written
            return
        again = read_trace(out)
        assert len(again.requests) == len(t.requests)
        assert (again.requests["e2el_s"] >= 0).all() and (again.itl["itl_s"] >= 0).all()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_results())
def test_importer_never_crashes_on_mutated_json(d):
    _check_import(json.dumps(d).encode())


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 400))
def test_importer_never_crashes_on_bytes(noise, cut):
    valid = json.dumps(small_result()).encode()
    _check_import(valid[:cut] + noise)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_claims_loader_never_crashes(data):
    text = (DATA / "claims.yaml").read_text(encoding="utf-8")
    lines = text.splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    action = data.draw(st.sampled_from(["delete", "dup", "garble", "cut"]))
    if action == "delete":
        del lines[i]
    elif action == "dup":
        lines.insert(i, lines[i])
    elif action == "garble":
        lines[i] = lines[i].replace(":", data.draw(st.sampled_from(["", " ::", ": [", ": 1e999"])))
    else:
        lines = lines[:i]
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "claims.yaml"
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            load_claims(f)
        except InputError as err:
            assert "\n" not in str(err) and str(f) in str(err)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.integers(-3, 50), st.floats(allow_nan=True)), min_size=0, max_size=9),
        min_size=0,
        max_size=4,
    ),
    st.integers(-1, 5),
    st.integers(-1, 4),
)
def test_eplb_evaluate_never_crashes(loads, ep_size, redundant):
    try:
        res = eplb.evaluate(loads, ep_size=ep_size, redundant=redundant)
    except InputError as err:
        assert "\n" not in str(err)
        return
    arr = np.asarray(loads, dtype=float)
    assert arr.ndim == 2 and (arr >= 0).all()
    assert 0 <= res["balancedness_static"] <= 1 and 0 <= res["balancedness_eplb"] <= 1
