"""What ``rackbook run`` and ``rackbook list`` print under each verdict: the numbers behind it
(headline values with units) and, for ``run``, what changed since the last run in the folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackbook.book import report, runner
from rackbook.core import fsio

CLAIM = "single-user.throughput"


def _doc(value: float | None, verdict: str = "untested", extra: bool = False) -> dict:
    """A headline JSON of single-user: one measured value and the claim's three readings."""
    heads = [
        {"name": "stream_tok_s", "value": value, "unit": "tok/s", "claim_id": CLAIM,
         "kind": "measured", "verdict": verdict, "reason": "r"},
        {"name": "gap_p50_ms", "value": 5.5, "unit": "ms", "claim_id": None,
         "kind": "measured", "verdict": "not comparable", "reason": "r"},
    ]  # fmt: skip
    if extra:
        heads.append({"name": "ratio", "value": 0.5, "unit": "1", "claim_id": None,
                      "kind": "modelled", "verdict": "not comparable", "reason": "r"})  # fmt: skip
    readings = [
        {"claim_id": CLAIM, "reading": "physics", "verdict": "possible", "reason": "r"},
        {"claim_id": CLAIM, "reading": "published", "verdict": "above", "reason": "r"},
        {"claim_id": CLAIM, "reading": "this run", "verdict": verdict, "reason": "r"},
    ]
    return {"result": "single-user", "headlines": heads, "readings": readings}


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (180.16, "tok/s", "180.2 tok/s"),
        (12345.0, "tok/s", "12,345 tok/s"),
        (3, "GPUs", "3 GPUs"),
        (0.5, "1", "0.5"),
        (None, "ms", "not recorded"),
        (float("nan"), "ms", "not recorded"),
        ("fp4", "", "fp4"),
    ],
)
def test_values_read_with_their_units(value, unit, text):
    assert report.value_text(value, unit) == text


def test_numbers_name_each_value_its_unit_and_verdict():
    lines = report.block(_doc(180.16), compare=False)
    assert lines == [
        f"  stream_tok_s = 180.2 tok/s ({CLAIM}: untested)",
        "  gap_p50_ms = 5.5 ms (no claim)",
    ]


def test_changes_list_every_moved_verdict_and_value_and_nothing_else():
    old, new = _doc(180.16), _doc(224.8, "consistent", extra=True)
    assert report.changes(old, new) == [
        f"{CLAIM} this run: untested -> consistent",
        "stream_tok_s: 180.2 tok/s -> 224.8 tok/s",
        "stream_tok_s verdict: untested -> consistent",
        "ratio: new",
    ]
    assert report.changes(new, old)[-1] == "ratio: gone"
    assert report.changes(old, _doc(180.1600001)) == []  # rounding noise is no change
    assert report.block(old, None, compare=True)[-1] == "  first run in this folder"
    assert report.block(_doc(180.16), old, compare=True)[-1] == "  unchanged since the last run"
    assert report.block(_doc(None), old, compare=True)[-1] == (
        "  changed since the last run: stream_tok_s: 180.2 tok/s -> not recorded"
    )


def test_run_prints_the_numbers_and_what_changed_since_the_last_run(tmp_path, run_cli, monkeypatch):
    out = tmp_path / "out"
    runs = iter([_doc(180.16), _doc(224.8, "consistent"), _doc(224.8, "consistent")])

    def fake_execute(result, source, params, out_arg, progress=None, force=False):
        """Stands in for executing the notebook: writes the next headline JSON and lists it in
        the folder's manifest, as :func:`runner.execute_result` does."""
        path = Path(out_arg) / f"{result}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(next(runs)))
        fsio.update_manifest(path.parent, record=[path.name])
        return path, False

    monkeypatch.setattr(runner, "execute_result", fake_execute)
    code, stdout, err = run_cli("run", "single-user", "--out", str(out))
    assert code == 0, err
    assert f"  stream_tok_s = 180.2 tok/s ({CLAIM}: untested)" in stdout.splitlines()
    assert stdout.splitlines()[-1] == "  first run in this folder"
    code, stdout, err = run_cli("run", "single-user", "--out", str(out))
    assert code == 0, err
    assert stdout.splitlines()[-1] == (
        f"  changed since the last run: {CLAIM} this run: untested -> consistent; "
        "stream_tok_s: 180.2 tok/s -> 224.8 tok/s; stream_tok_s verdict: untested -> consistent"
    )
    code, stdout, _ = run_cli("run", "single-user", "--out", str(out))
    assert stdout.splitlines()[-1] == "  unchanged since the last run"


def test_list_prints_the_numbers_behind_each_verdict(tmp_path, run_cli):
    out = tmp_path / "out"
    out.mkdir()
    (out / "single-user.json").write_text(json.dumps(_doc(224.8, "consistent")))
    code, stdout, err = run_cli("list", "--out", str(out))
    assert code == 0, err
    lines = stdout.splitlines()
    at = lines.index(next(x for x in lines if x.startswith("single-user: ")))
    assert "this run consistent" in lines[at]
    assert f"  stream_tok_s = 224.8 tok/s ({CLAIM}: consistent)" in lines[at:]
    assert "decode-parity: not run" in lines
