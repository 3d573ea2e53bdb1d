"""The importers' registry (rackbook.core.importers): every format behind one interface, the
option rules, the command line recorded, write() through the registry, and the trace core
reading published traces without the importers."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rackbook import cli, paths
from rackbook.core import importers, traces
from rackbook.errors import InputError

FIX = Path(__file__).parent / "fixtures"
URL = "https://github.com/o/r/blob/0123456789abcdef0123456789abcdef01234567/summary.csv"
#: One good input per format, with the options it needs.
GOOD = {
    "vllm-bench": (FIX / "vllm-bench-serve-b32.json", importers.Options(labels={"k": "v"})),
    "offline-engine": (FIX / "offline-engine" / "example.json", importers.Options()),
    "inferencex": (FIX / "published" / "inferencex-rows.json", importers.Options()),
    "mlperf": (
        FIX / "published" / "mlperf-summary.csv",
        importers.Options(model="deepseek-r1", source_url=URL, source_date="2026-12-03"),
    ),
    "sglang-cookbook": (
        FIX / "published" / "sglang-v4-cells.jsx",
        importers.Options(source_url=URL),
    ),
}


def test_every_format_is_registered_with_a_module_of_the_interface():
    assert list(importers.REGISTRY) == [
        "vllm-bench", "offline-engine", "inferencex", "mlperf", "sglang-cookbook",
    ]  # fmt: skip
    assert set(GOOD) == set(importers.REGISTRY)
    fields = set(importers.FLAGS)
    for name, f in importers.REGISTRY.items():
        mod = f.importer()
        assert mod.__name__ == f"rackbook.core.importers.{f.module}"
        assert mod.FORMAT == name
        assert callable(mod.read) and callable(mod.summary)
        assert set(f.options) <= fields and f.kind in (None, "published")
    # the command line offers exactly the registered formats
    choices = next(
        a.choices
        for a in cli.build_parser()._subparsers._group_actions[0].choices["import"]._actions
        if a.dest == "format"
    )
    assert list(choices) == list(importers.REGISTRY)


def test_the_registry_the_schema_and_the_command_line_load_no_pandas():
    """Parsing a command line, the registry and the trace format (imported by every verb through
    provenance) stay light: loading pandas there cost every ``rackbook run`` seconds."""
    code = (
        "import sys; from rackbook import cli; from rackbook.core import importers, schema; "
        "cli.parse(['import', 'mlperf', 'x.csv', '-o', 'y']); "
        "print([m for m in sys.modules if m.split('.')[0] in ('pandas', 'numpy', 'pyarrow')]"
        " + [m for m in sys.modules if m.startswith('rackbook.core.importers.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


FILE_SAYS = "not for offline-engine (the file says it)"
NOT_PUBLISHED = "only for inferencex, mlperf, sglang-cookbook, not vllm-bench"
DAY = "2026-01-01"


@pytest.mark.parametrize(
    ("fmt", "options", "flag", "problem"),
    [
        ("vllm-bench", {"engine": "e"}, "--engine", "only for offline-engine, not vllm-bench"),
        ("mlperf", {"engine": "e"}, "--engine", "only for offline-engine, not mlperf"),
        ("offline-engine", {"labels": {"a": "b"}}, "--label", FILE_SAYS),
        ("offline-engine", {"kind": "recorded"}, "--kind", FILE_SAYS),
        ("offline-engine", {"model": "m"}, "--model", FILE_SAYS),
        ("offline-engine", {"source_url": URL}, "--source-url", FILE_SAYS),
        ("offline-engine", {"source_date": DAY}, "--source-date", FILE_SAYS),
        ("vllm-bench", {"model": "m"}, "--model", "only for mlperf, not vllm-bench"),
        ("vllm-bench", {"source_url": URL}, "--source-url", NOT_PUBLISHED),
        ("vllm-bench", {"source_date": DAY}, "--source-date", NOT_PUBLISHED),
        ("inferencex", {"labels": {"a": "b"}}, "--label", "only for vllm-bench, not inferencex"),
        ("sglang-cookbook", {"kind": "recorded"}, "--kind",
         "only for vllm-bench, not sglang-cookbook"),
        ("inferencex", {"model": "m"}, "--model", "only for mlperf, not inferencex"),
        ("sglang-cookbook", {"model": "m"}, "--model", "only for mlperf, not sglang-cookbook"),
        ("mlperf", {"hardware": importers.DeclaredGpus("b300", "B300", "B300", 4, "h.yaml")},
         "--gpu", "only for vllm-bench, not mlperf"),
        ("offline-engine", {"hardware": importers.DeclaredGpus("b300", "B", "B", 4, "h.yaml")},
         "--gpu", "not for offline-engine (the file says it)"),
        ("nope", {}, "format", "unknown 'nope'; expected one of vllm-bench, offline-engine, "
         "inferencex, mlperf, sglang-cookbook"),
    ],
)  # fmt: skip
def test_options_that_do_not_fit_the_format_are_refused(fmt, options, flag, problem):
    with pytest.raises(InputError) as exc:
        importers.check_options(fmt, "IN", importers.Options(**options))
    assert str(exc.value) == f"IN: {flag}: {problem}"


@pytest.mark.parametrize("fmt", list(importers.REGISTRY))
def test_every_option_a_format_lists_is_accepted(fmt):
    given = {"labels": {"a": "b"}, "kind": "published", "engine": "e", "model": "m",
             "source_url": URL, "source_date": "2026-01-01",
             "hardware": importers.DeclaredGpus("b300", "B300", "B300", 4, "hw.yaml")}  # fmt: skip
    f = importers.REGISTRY[fmt]
    importers.check_options(fmt, "IN", importers.Options(**{o: given[o] for o in f.options}))


@pytest.mark.parametrize("fmt", list(importers.REGISTRY))
def test_write_through_the_registry_is_the_trace_read_back(fmt, tmp_path):
    src, options = GOOD[fmt]
    out = tmp_path / "t"
    t = importers.write(fmt, src, out, options)
    back = traces.read_trace(out)
    assert t.trace_id == back.trace_id and t.trace_id
    assert t.kind == back.kind == (importers.REGISTRY[fmt].kind or t.run["kind"])
    for a, b in [(t.requests, back.requests), (t.points, back.points)] + [
        (t.extra[k], back.extra[k]) for k in t.extra
    ]:
        assert len(a) == len(b) and set(a.columns) <= set(b.columns)
    # the line rackbook import prints is built from the written trace
    line = importers.summary(fmt, t)
    assert line == importers.summary(fmt, back) and f"trace_id {t.trace_id}" in line
    if importers.REGISTRY[fmt].kind == "published":
        assert back.run["engine"]["what"] == importers.REGISTRY[fmt].what


def test_the_command_line_recorded(tmp_path):
    src, options = GOOD["mlperf"]
    out = tmp_path / "ml"
    t = importers.write("mlperf", src, out, options)
    want = [  # the checkout's path is recorded as $REPO
        "rackbook", "import", "mlperf", "$REPO/tests/fixtures/published/mlperf-summary.csv",
        "-o", str(out), "--model", "deepseek-r1", "--source-url", URL,
        "--source-date", "2026-12-03",
    ]  # fmt: skip
    assert shlex.split(t.run["commands"][0]) == want
    assert t.run["parameters"]["model"] == "deepseek-r1"
    src, _ = GOOD["offline-engine"]
    t = importers.write("offline-engine", src, tmp_path / "b", importers.Options(engine="x"))
    assert shlex.split(t.run["commands"][0])[-2:] == ["--engine", "x"]
    assert set(t.points["engine"]) == {"x"}
    t = importers.write("inferencex", GOOD["inferencex"][0], tmp_path / "i",
                        importers.Options(command="as given"))  # fmt: skip
    assert t.run["commands"] == ["as given"]


def test_the_cli_import_goes_through_the_registry(tmp_path, run_cli, monkeypatch):
    seen = []
    real = importers.write

    def spy(fmt, path, output, options=None):
        seen.append((fmt, Path(path).name, options))
        return real(fmt, path, output, options)

    monkeypatch.setattr(importers, "write", spy)
    src = GOOD["sglang-cookbook"][0]
    code, out, err = run_cli("import", "sglang-cookbook", str(src), "-o", str(tmp_path / "s"),
                             "--source-url", URL)  # fmt: skip
    assert code == 0, err
    assert seen == [("sglang-cookbook", src.name, importers.Options(source_url=URL))]
    assert out.startswith(f"wrote {tmp_path / 's'}: 4 published points, trace_id ")


def test_reading_a_published_trace_needs_no_importer():
    """check_points lives in core.schema: validating a published trace loads no importer (it
    imported rackbook.core.published from inside traces.validate before)."""
    code = (
        "import sys; from rackbook.core import traces; "
        f"t = traces.read_trace({str(paths.DATA / 'published' / 'mlperf-v6.1-dsr1')!r}); "
        "print(len(t.extra['published_points']), json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('rackbook.core.importers', 'rackbook.core.published')))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True
    )
    n, loaded = out.stdout.split(" ", 1)
    assert int(n) > 0 and json.loads(loaded) == []


def test_check_points_refuses_a_bad_published_table():
    from rackbook.core import schema

    t = traces.read_trace(paths.DATA / "published" / "mlperf-v6.1-dsr1")
    pts = t.extra["published_points"]
    schema.check_points(pts, t.run, "T")  # the shipped table passes
    bad = pts.copy()
    bad.loc[0, "tok_s_per_gpu"] = -1.0
    with pytest.raises(
        InputError, match=r"^T: published_points.tok_s_per_gpu: must be > 0 .*, got -1 \(row 0\)"
    ):
        schema.check_points(bad, t.run, "T")
    with pytest.raises(InputError, match="only a trace of kind published"):
        schema.check_points(pts, {**t.run, "kind": "recorded"}, "T")
    assert isinstance(pts, pd.DataFrame)
