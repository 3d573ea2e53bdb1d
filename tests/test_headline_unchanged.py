"""Every number the book prints, and every verdict, unchanged by a restructuring: the headline
JSON of each result on the shipped traces against the golden copy in ``tests/golden/headline/``.

The headline JSON is what a chapter's last cell writes: ``outcome(analyse(trace, params))`` of
its result with the notebook's default parameters (:meth:`Outcome.to_dict`). It is computed here
in-process from the same calls (no notebook is executed a second time); the slow test reads the
JSONs the suite's executed notebooks wrote (``make test`` runs them once, nbmake).

A golden file holds the JSON's leaves flattened to paths (a list of headlines keyed by
``name``, of readings by ``claim_id/reading``): every number (parameters, values, ratios,
margins of an attainable estimate) and every verdict word. A key only in the new output is
allowed (a new field such as ``certainty``); a key that vanishes, a number that moves by more
than one part in 1e9, or a verdict that changes fails.

After a change that moves a number on purpose, rewrite the golden files and say why in the
commit: ``.venv/bin/python tests/test_headline_unchanged.py --write``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rackbook import paths

GOLDEN = Path(__file__).parent / "golden" / "headline"
#: Relative tolerance on a number: float arithmetic reordered by a move (bytes / bandwidth in
#: one function instead of by hand) changes the last bits, never the ninth digit.
REL_TOL = 1e-9


def _key(item: dict[str, Any], i: int) -> str:
    if "claim_id" in item and "reading" in item:
        return f"{item['claim_id']}/{item['reading']}"
    if "name" in item:
        return str(item["name"])
    return str(i)


def flatten(doc: Any, path: str = "") -> dict[str, Any]:
    """The JSON's number leaves and verdict words, by path (``headlines[name].value``)."""
    out: dict[str, Any] = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            sub = f"{path}.{k}" if path else str(k)
            if k == "verdict" and isinstance(v, str):
                out[sub] = v
            else:
                out |= flatten(v, sub)
    elif isinstance(doc, (list, tuple)):  # asdict keeps tuples, JSON has lists
        for i, v in enumerate(doc):
            out |= flatten(v, f"{path}[{_key(v, i) if isinstance(v, dict) else i}]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        out[path] = doc
    return out


def headline(shipped_chapter: Callable[[str], tuple[Any, Any]], result: str) -> dict[str, Any]:
    """The headline JSON (as a dict, without its ``created`` time) that ``result``'s notebook
    writes on the shipped trace with its default parameters."""
    doc = shipped_chapter(result)[1].to_dict("trace")
    doc.pop("created")
    return doc


def differences(golden: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What changed from ``golden`` to ``new`` (both flattened); keys only in ``new`` pass."""
    bad = []
    for k, old in golden.items():
        if k not in new:
            bad.append(f"{k}: vanished (was {old!r})")
        elif isinstance(old, str) or isinstance(new[k], str):
            if new[k] != old:
                bad.append(f"{k}: {old!r} -> {new[k]!r}")
        elif not math.isclose(new[k], old, rel_tol=REL_TOL, abs_tol=0.0):
            bad.append(f"{k}: {old!r} -> {new[k]!r}")
    return bad


@pytest.mark.parametrize("result", paths.RESULTS)
def test_headline_numbers_and_verdicts_are_unchanged(shipped_chapter, result):
    golden = json.loads((GOLDEN / f"{result}.json").read_text(encoding="utf-8"))
    assert len(golden) > 20  # a golden file that holds nothing would pass anything
    assert differences(golden, flatten(headline(shipped_chapter, result))) == []


@pytest.mark.slow
@pytest.mark.parametrize("result", paths.RESULTS)
def test_the_executed_chapters_headline_jsons_are_unchanged(executed, result):
    """The headline JSONs the notebooks wrote (the suite's one executed set): what the book
    reads, the same numbers and verdicts."""
    from rackbook.results.headline import read_result

    golden = json.loads((GOLDEN / f"{result}.json").read_text(encoding="utf-8"))
    assert differences(golden, flatten(read_result(executed / f"{result}.json"))) == []


def test_a_moved_number_a_changed_verdict_and_a_vanished_key_fail():
    golden = {"headlines[a].value": 1.0, "readings[x/physics].verdict": "possible", "n": 3}
    same = {"headlines[a].value": 1.0 + 1e-12, "readings[x/physics].verdict": "possible", "n": 3}
    assert differences(golden, same | {"readings[x/physics].certainty": 0.5}) == []
    assert differences(golden, same | {"headlines[a].value": 1.001}) == [
        "headlines[a].value: 1.0 -> 1.001"
    ]
    assert differences(golden, same | {"readings[x/physics].verdict": "impossible"}) == [
        "readings[x/physics].verdict: 'possible' -> 'impossible'"
    ]
    del same["n"]
    assert differences(golden, same) == ["n: vanished (was 3)"]


def test_flatten_keys_lists_by_name_and_reading_and_keeps_numbers_and_verdicts():
    doc = {
        "headlines": [{"name": "x", "value": 2.5, "verdict": "untested", "reason": "r 3"}],
        "readings": [{"claim_id": "c", "reading": "physics", "verdict": "possible", "ok": True}],
        "parameters": {"batch_sizes": [1, 8]},
    }
    assert flatten(doc) == {
        "headlines[x].value": 2.5,
        "headlines[x].verdict": "untested",
        "readings[c/physics].verdict": "possible",
        "parameters.batch_sizes[0]": 1,
        "parameters.batch_sizes[1]": 8,
    }


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    from conftest import chapter_on_shipped_trace

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for r in paths.RESULTS:
        flat = flatten(headline(chapter_on_shipped_trace, r))
        text = json.dumps(flat, indent=0, sort_keys=True) + "\n"
        (GOLDEN / f"{r}.json").write_text(text, encoding="utf-8")
        print(f"{r}: {len(flat)} leaves")
