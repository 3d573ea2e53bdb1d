"""The recorder: runs one scenario's plan and keeps every raw artifact (command line and
layout: :mod:`rackbook.live.record`; the trace: :class:`~rackbook.live.conversion.Conversion`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from rackbook.core import fsio
from rackbook.core.fsio import atomic_write_json
from rackbook.core.provenance import scrub, scrub_files
from rackbook.errors import InputError
from rackbook.inputs.scenarios import DecodeParity, EplbBalance, Phase, PlanPoint, Scenario
from rackbook.live import cpus, prom
from rackbook.live import server as server_mod
from rackbook.live.conversion import Conversion, on_cpu, raw_file
from rackbook.live.envfile import Redactor, api_key, urlopen
from rackbook.live.server import ServerError, VllmServer, group_members
from rackbook.paths import ROOT, TINY_MODEL

TINY_MODEL_SCRIPT = ROOT / "env" / "live" / "tiny_model.py"
FAIL_TAIL = 20  # server log lines kept with a failed point
CPU_EPLB = (
    "vLLM on CPU refuses --enable-eplb (only supported on CUDA, ROCm or XPU): start a GPU "
    "server with --enable-eplb and attach it with --endpoint URL -p server_log PATH"
)
#: Attempts a point gets before a flagged point is refused (or accepted with --accept-invalid).
MAX_ATTEMPTS = 2
#: For tests: ``POINT_ID:FOLDER``: once POINT_ID is kept, write ``FOLDER/POINT_ID.kept`` and
#: wait for ``FOLDER/go`` (a test acts between two points on an event, not on timing).
HOLD_ENV = "RACKBOOK_RECORD_HOLD_AFTER"
#: The raw folder's entries, pending in its manifest until the recording ends.
RAW_PENDING = (
    "serve",
    "offline",
    "metrics",
    "failed",
    "rejected",
    "record.json",
    "*.log",
    "*.log.gz",
)
#: record.json's entries a recording fills in (and a resumed one takes over), in order.
RECORD_KEYS = (
    "points",
    "engines",
    "phases",
    "failures",
    "sessions",
    "validity",
    "accepted_invalid",
    "points_kept",
)
_LISTS = ("failures", "sessions", "accepted_invalid", "points_kept")


def duty_cycle(windows_s: float, t_up: float, t_wall0: float) -> dict[str, float]:
    """One engine's sweep ending now (``time.monotonic()`` readings): windows, wall after up,
    their ratio (duty cycle) and whole wall time, in s."""
    t_end = time.monotonic()
    return {
        "windows_s": windows_s,
        "wall_after_up_s": t_end - t_up,
        "duty_cycle": windows_s / max(t_end - t_up, 1e-9),
        "wall_s": t_end - t_wall0,
    }


def decide(reason: str | None, attempt: int, accept_invalid: bool) -> str:
    """After attempt ``attempt`` (1-based) with validity ``reason`` (None: passed): ``"keep"``,
    ``"rerun"``, ``"accept"`` (flagged, --accept-invalid) or ``"refuse"``."""
    if reason is None:
        return "keep"
    if attempt < MAX_ATTEMPTS:
        return "rerun"
    return "accept" if accept_invalid else "refuse"


def hold_after(point_id: str) -> None:
    """Wait as :data:`HOLD_ENV` asks after ``point_id`` was kept."""
    want, _, folder = os.environ.get(HOLD_ENV, "").partition(":")
    if not folder or want != point_id:
        return
    (Path(folder) / f"{point_id}.kept").touch()
    while not (Path(folder) / "go").exists():
        time.sleep(0.05)


def _say(msg: str) -> None:
    print(f"[record] {msg}", file=sys.stderr, flush=True)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _dead(servers: list[VllmServer]) -> list[VllmServer]:
    return [s for s in servers if s.proc is not None and s.proc.poll() is not None]


def _move(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    src.replace(dst)


def ensure_tiny_model(model: str) -> None:
    """Write the tiny model folder if ``model`` is the default one and it is missing."""
    if Path(model).resolve() == TINY_MODEL.resolve() and not (TINY_MODEL / "config.json").exists():
        _say(f"writing the tiny model: {TINY_MODEL_SCRIPT}")
        subprocess.run([sys.executable, str(TINY_MODEL_SCRIPT), "-o", str(TINY_MODEL)], check=True)
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


class Recorder(Conversion):
    """Runs one scenario's plan and keeps every raw artifact under ``raw``."""

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
        self.redact = Redactor([self.key])
        self.server: dict[str, Any] | None = None
        self.phases = sc.phases()
        self.info: dict[str, Any] = {"scenario": sc.name, "parameters": sc.parameters()}
        self.info |= {k: [] if k in _LISTS else {} for k in RECORD_KEYS}
        old = self.raw / "record.json"
        if resume and old.exists():
            prev = json.loads(old.read_text(encoding="utf-8"))
            if prev.get("parameters") != scrub(self.info["parameters"]):
                why = "differ from this run's: resume with the same -p values"
                raise InputError(old, "parameters", why)
            keys = (*RECORD_KEYS, "commands")  # what earlier sessions recorded
            self.info |= {k: prev[k] for k in keys if k in prev}
        self.commands: list[str] = list(self.info.get("commands", []))
        need = sum(p.servers for p in self.phases)
        if self.endpoints and len(self.endpoints) != need:
            labels = ", ".join(f"{p.label} x{p.servers}" for p in self.phases)
            why = f"{sc.name} uses {need} server(s) ({labels}); got {len(self.endpoints)} URLs"
            raise InputError("--endpoint", "-", why)
        self.cpu_layout = cpus.resolve(on_cpu(), attached=bool(self.endpoints))
        self.info["cpu_layout"] = self.cpu_layout.describe()
        session = {"started": _now(), "resume": resume, "accept_invalid": accept_invalid}
        self.info["sessions"].append(session | {"cpu_layout": self.cpu_layout.label()})

    def _bar(self, desc: str, total: int) -> Any:
        from tqdm import tqdm

        off = not self.progress
        return tqdm(
            total=total, desc=desc, unit="point", disable=off, file=sys.stderr, dynamic_ncols=True
        )

    def _save_info(self) -> None:
        self.info["commands"] = self.commands
        atomic_write_json(self.raw / "record.json", scrub(self.info))

    def _done(self, pt: PlanPoint) -> bool:
        return all(raw_file(self.raw / "serve" / n).exists() for n in pt.raw_names())

    def _log_name(self, phase: Phase, k: int) -> str:
        if len(self.phases) == 1 and phase.servers == 1:
            return "vllm-serve.log"
        return (
            f"vllm-serve.{phase.label}.log"
            if phase.servers == 1
            else f"vllm-serve.{phase.label}.{k}.log"
        )

    def _phase_endpoints(self, phase: Phase) -> list[str]:
        start = sum(p.servers for p in self.phases[: self.phases.index(phase)])
        return self.endpoints[start : start + phase.servers]

    def _bench_argv(self, pt: PlanPoint, url: str, k: int, name: str) -> list[str]:
        from rackbook.live.bench import BenchPoint

        shard = (("shard", str(k)),) if pt.shards > 1 else ()
        meta = (("point_id", pt.point_id), ("scenario", self.sc.name), ("config", pt.config))
        sc = self.sc
        bp = BenchPoint(
            pt.point_id,
            url,
            sc.model,
            sc.served_model_name,
            pt.input_len,
            pt.output_len,
            pt.num_prompts,
            pt.concurrency,
            pt.seed + k,
            (*meta, *pt.labels, *shard),
            pt.prefix_len,
        )
        return bp.argv(self.raw / "serve", name)

    def _engine_cpus(self, k: int, n: int) -> frozenset[int] | None:
        """Engine cores of replica ``k`` of ``n``: its share when each gets two, else all."""
        eng = self.cpu_layout.engine
        if eng is None or n == 1 or len(eng) < 2 * n:
            return eng
        per = len(eng) // n
        return frozenset(sorted(eng)[k * per : (k + 1) * per])

    def run_phase(self, phase: Phase) -> None:
        """All points of one server configuration (this process on the front cores)."""
        with cpus.pinned_self(self.cpu_layout.front if self.cpu_layout.active else None):
            self._run_phase(phase)

    def _run_phase(self, phase: Phase) -> None:
        from rackbook.live.bench import BenchClient, ShardPool

        sc = self.sc
        todo = [pt for pt in phase.points if not (self.resume and self._done(pt))]
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
        client = BenchClient(self.raw / "bench.log")
        pool = ShardPool(shards, self.raw) if shards > 1 else None
        servers: list[VllmServer] = []
        bar = None
        t_wall0 = time.monotonic()
        try:
            if urls:
                eng["servers"] = [{"url": u, "started_by_recorder": False} for u in urls]
                eng["import_s"] = client.preload()
                if pool is None:
                    eng["presample_s"] = self._presample(todo, urls, client)
            else:
                urls = self._start_servers(phase, todo, eng, servers, client, pool is None)
            if pool is not None:
                eng["shard_import_s"] = pool.wait_ready()
            t_up = time.monotonic()
            windows = 0.0
            if sc.warmup:
                self._warmup(phase, todo, urls, client, pool)
                eng["warmup_s"] = time.monotonic() - t_up
            bar = self._bar(f"{sc.name} {phase.label}", len(todo))
            for pt in todo:
                for attempt in range(1, MAX_ATTEMPTS + 1):
                    windows += self.run_point(phase, pt, urls, servers, client, pool)
                    reason = self.point_refusal(phase, pt)
                    if self.judge(pt.point_id, attempt, reason, pt.raw_names(), "serve"):
                        break
                bar.update(1)
            eng.update(duty_cycle(windows, t_up, t_wall0))
        finally:
            if bar is not None:  # on every way out, so that an error line starts a line
                bar.close()
            client.forget_samples()
            if pool is not None:
                pool.close()
            for i, srv in enumerate(servers):
                killed = srv.stop()
                if i < len(eng.get("servers", [])):
                    eng["servers"][i]["sigkill_needed"] = killed
                    eng["servers"][i]["survivors"] = group_members(srv.pgid or 0)
            self._save_info()

    def _start_servers(
        self,
        phase: Phase,
        todo: list[PlanPoint],
        eng: dict[str, Any],
        servers: list[VllmServer],
        client: Any,
        presample: bool,
    ) -> list[str]:
        """Start the phase's servers (into ``servers`` at once, for the caller to stop), preload
        the client meanwhile, wait until healthy; their URLs."""
        with server_mod.deferred_signals():
            for k in range(phase.servers):
                srv = VllmServer(
                    self.sc.model,
                    [*phase.serve_args, *self.serve_extra],
                    log_path=self.raw / self._log_name(phase, k),
                    cpus=self._engine_cpus(k, phase.servers),
                    front_cpus=self.cpu_layout.front,
                )
                servers.append(srv)
                srv.start()
                self.commands.append(srv.command)
            eng["import_s"] = client.preload()  # overlaps the servers' start-up
            if presample:  # the points' prompts too (sampling is client work)
                eng["presample_s"] = self._presample(todo, [s.base_url for s in servers], client)
            for srv in servers:
                srv.wait_healthy()
        eng["servers"] = [
            srv.info()
            | {"started_by_recorder": True, "processes_at_start": len(group_members(srv.pgid or 0))}
            for srv in servers
        ]
        self._save_info()  # the servers' pgids are on disk while they run
        return [srv.base_url for srv in servers]

    def _warmup(
        self, phase: Phase, todo: list[PlanPoint], urls: list[str], client: Any, pool: Any
    ) -> None:
        """One short unmeasured run per server before the phase's first point."""
        from rackbook.live.bench import BenchPoint

        sc, first = self.sc, todo[0]
        if isinstance(sc, DecodeParity):
            c = n = min(pt.concurrency or 1 for pt in todo)
            inp, out = sc.input_len, sc.output_len
        else:
            c = first.concurrency or 1
            n, inp, out = max(2, c), min(first.input_len, 256), min(first.output_len, 8)
        argvs = []
        for k, url in enumerate(urls):
            wp = BenchPoint(
                "warmup", url, sc.model, sc.served_model_name, inp, out, n, c, sc.seed + 999
            )
            name = "warmup.json" if len(urls) == 1 else f"warmup.{phase.label}.{k}.json"
            argvs.append(wp.argv(self.raw / "serve", name))
        if pool is not None:  # each shard process warms its own replica, all at once
            pool.run(argvs)
        else:
            for a in argvs:
                client.run(a)

    def _presample(self, todo: list[PlanPoint], urls: list[str], client: Any) -> float:
        """Draw every point's prompts before the servers are up; seconds taken."""
        return sum(
            client.presample(self._bench_argv(pt, u, k, pt.raw_names()[k]))
            for pt in todo
            for k, u in enumerate(urls[: pt.shards])
        )

    def run_point(
        self,
        phase: Phase,
        pt: PlanPoint,
        urls: list[str],
        servers: list[VllmServer],
        client: Any,
        pool: Any,
    ) -> float:
        """One measured window; returns its length (seconds, longest shard)."""
        from rackbook.live.bench import command_line, summary

        names, use = pt.raw_names(), urls[: pt.shards]
        argvs = [self._bench_argv(pt, u, k, names[k]) for k, u in enumerate(use)]
        before, warm_s = self._before_point(pt, use, argvs, servers, client)
        t0 = time.monotonic()
        error = None
        try:
            summaries = [summary(client.run(argvs[0]))] if pool is None else pool.run(argvs)
        except Exception as exc:  # noqa: BLE001 (recorded as the point's failure)
            summaries, error = [], f"{type(exc).__name__}: {exc}"
        wall = time.monotonic() - t0
        dead = _dead(servers[: pt.shards])
        after: list[Any] = []
        if not dead:
            try:
                after = [prom.scrape(u, self.key) for u in use]
            except OSError as exc:
                error = error or f"/metrics unreachable after the point: {exc}"
        ok = [s for s in summaries if "error" not in s]
        error = error or next((s["error"] for s in summaries if "error" in s), None)
        completed = sum(int(s.get("completed") or 0) for s in ok)
        failed = sum(int(s.get("failed") or 0) for s in ok)
        if dead or error or (completed == 0 and failed > 0):
            self._fail(pt, servers, dead, error, completed, failed)
        servers_ = [
            {"server": u, "before": [s.__dict__ for s in b], "after": [s.__dict__ for s in a]}
            for u, b, a in zip(use, before, after, strict=True)
        ]
        atomic_write_json(self.raw / "metrics" / f"{pt.point_id}.json", {"servers": servers_})
        pairs = zip(before, after, strict=True)
        gen = sum(prom.delta(b, a, "vllm:generation_tokens_total") for b, a in pairs)
        client_out = sum(int(s.get("total_output_tokens") or 0) for s in summaries)
        durations = [float(s["duration"]) for s in summaries]
        commands = [command_line(a) for a in argvs]
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

    def _before_point(
        self,
        pt: PlanPoint,
        use: list[str],
        argvs: list[list[str]],
        servers: list[VllmServer],
        client: Any,
    ) -> tuple[list[Any], float]:
        """Warm the shared prefix, then ``/metrics`` per server: (samples, warming s); a server
        gone is a failed point (:meth:`_fail`)."""
        warm_s = 0.0
        try:
            if pt.prefix_len:
                for u, a in zip(use, argvs, strict=True):
                    ids = client.prompt_token_ids(a)[0][: pt.prefix_len]
                    warm_s += warm_prefix(u, self.sc.served_model_name, ids, self.key)
            return [prom.scrape(u, self.key) for u in use], warm_s
        except OSError as exc:  # the server went away between points: a failed point, not a crash
            dead: list[VllmServer] = []
            for _ in range(20):  # a dying server may take a moment to be reaped
                if dead := _dead(servers[: pt.shards]):
                    break
                time.sleep(0.25)
            self._fail(pt, servers, dead, f"server unreachable before the point: {exc}", 0, 0)

    def point_refusal(self, phase: Phase, pt: PlanPoint) -> str | None:
        """The validity check of a finished online point (its raw results and counters)."""
        import pandas as pd

        from rackbook.core import validity

        t = self._point_frames(phase, pt)
        rows, _ = self._metric_rows(pt.point_id)
        if rows:
            t.extra["server_metrics"] = pd.DataFrame(rows)
        return validity.refusal(t, pt.point_id)

    def judge(
        self, point_id: str, attempt: int, reason: str | None, names: list[str], folder: str
    ) -> bool:
        """Record attempt ``attempt`` and act on :func:`decide`: True kept, False run again (raw
        to ``rejected/``); :class:`InputError` when refused."""
        action = decide(reason, attempt, self.accept_invalid)
        v = self.info["validity"].setdefault(point_id, {"attempts": []})
        if attempt == 1:
            v["attempts"] = []
        v["attempts"].append({"attempt": attempt, "flagged": reason})
        v["outcome"] = action
        if action == "accept" and point_id not in self.info["accepted_invalid"]:
            self.info["accepted_invalid"].append(point_id)
        if action in ("rerun", "refuse"):  # never kept as done: --resume runs it again
            self.info["points"].pop(point_id, None)  # a point reads as recorded only once kept
            if point_id in self.info["points_kept"]:
                self.info["points_kept"].remove(point_id)
            for name in names:
                src = raw_file(self.raw / folder / name)
                if src.exists():
                    _move(src, self.raw / "rejected" / f"{Path(name).stem}.{attempt}{src.suffix}")
        self._save_info()
        if action == "rerun":
            _say(f"{point_id}: {reason}; running the point once more")
            return False
        if action == "refuse":
            why = f"refused after {attempt} attempts: {reason} (record.json validity; "
            raise InputError(
                self.raw / "record.json", point_id, why + "--accept-invalid keeps such points)"
            )
        if action == "accept":
            _say(f"{point_id}: kept although flagged (--accept-invalid): {reason}")
        if point_id not in self.info["points_kept"]:
            self.info["points_kept"].append(point_id)
            self._save_info()
        hold_after(point_id)
        return True

    def _fail(
        self,
        pt: PlanPoint,
        servers: list[VllmServer],
        dead: list[VllmServer],
        error: str | None,
        completed: int,
        failed: int,
    ) -> NoReturn:
        """Record a failed point (raw moved to failed/, server log tail kept), then stop."""
        n = len(self.info["failures"])
        moved = []
        for name in pt.raw_names():
            src = self.raw / "serve" / name
            if src.exists():
                _move(src, dst := self.raw / "failed" / f"{Path(name).stem}.{n}.json")
                moved.append(f"failed/{dst.name}")
        proc = dead[0].proc if dead else None
        reason = self.redact(
            f"server died (exit code {proc.returncode})"
            if proc is not None
            else error or "every request failed"
        )
        self.info["failures"].append(
            {
                "point_id": pt.point_id,
                "time": _now(),
                "reason": reason,
                "requests_completed": completed,
                "requests_failed": failed,
                "requests_planned": pt.num_prompts * pt.shards,
                "raw": moved,
                "server_log_tail": {
                    s.base_url: s.tail(FAIL_TAIL).splitlines() for s in dead or servers
                },
            }
        )
        self._save_info()
        raise InputError(
            self.raw / "record.json",
            pt.point_id,
            f"point failed: {reason} ({completed} requests completed, {failed} "
            "failed; server log tail in record.json failures); rerun with --resume",
        )

    def run_offline(self) -> None:
        """All offline fixed-batch points with one ``vllm.LLM`` (decode-parity)."""
        from rackbook.live.offline import OfflineConfig, OfflineEngine

        sc = self.sc
        assert isinstance(sc, DecodeParity)
        done = lambda b: raw_file(self.raw / "offline" / f"b{b}.json").exists()  # noqa: E731
        todo = [b for b in sc.batch_sizes if not (self.resume and done(b))]
        cfg = OfflineConfig(
            model=sc.model,
            dtype=sc.dtype,
            max_model_len=sc.max_model_len,
            max_num_seqs=sc.max_num_seqs,
            seed=sc.seed,
            served_model_name=sc.served_model_name,
        )
        eng: dict[str, Any] = {
            "command": cfg.equivalent_command(),
            "points_skipped_resume": [b for b in sc.batch_sizes if b not in todo],
            "cpu_layout": f"unpinned (recorder's cpus {cpus.format_cpu_list(cpus.usable_cpus())})",
        }
        self.info["engines"]["vllm-offline"] = eng
        if not todo:
            return
        t_wall0 = time.monotonic()
        engine = OfflineEngine(cfg)
        t_ready = time.monotonic()
        eng["init_s"] = engine.init_s
        self.commands.append(cfg.equivalent_command())
        windows = 0.0
        bar = self._bar("vllm-offline", len(todo))
        for b in todo:
            pid = sc.point_id("offline", b)
            for attempt in range(1, MAX_ATTEMPTS + 1):
                doc = engine.run_batch(
                    b, sc.input_len, sc.output_len, sc.prompts_per_batch, sc.seed, sc.warmup
                )
                doc |= {"point_id": pid, "engine": "vllm-offline", "scenario": sc.name}
                atomic_write_json(self.raw / "offline" / f"b{b}.json", doc)
                windows += doc["measured_s"]
                if self.judge(
                    pid, attempt, self.offline_refusal(pid, b), [f"b{b}.json"], "offline"
                ):
                    break
            self.info["points"][pid] = {
                "engine": "vllm-offline",
                "batch_size": b,
                "raw": f"offline/b{b}.json",
                "command": f"{cfg.equivalent_command()} .generate(B={b} prompts x "
                f"{sc.input_len} tokens, max_tokens=1 then {sc.output_len})"
                f" x {sc.prompts_per_batch} rounds",
                "duration_s": doc["duration"],
                **{k: doc[k] for k in ("prefill_walls_s", "warmup_s", "output_throughput")},
            }
            self._save_info()
            bar.set_postfix_str(f"B={b} {doc['output_throughput']:.0f} tok/s")
            bar.update(1)
        bar.close()
        eng.update(duty_cycle(windows, t_ready, t_wall0))
        del engine
        self._save_info()

    def offline_refusal(self, pid: str, b: int) -> str | None:
        """The validity check of a finished offline batch (its raw result)."""
        from rackbook.core import validity
        from rackbook.core.importers import vllm_bench

        path = self.raw / "offline" / f"b{b}.json"
        t = vllm_bench.vllm_bench_frames(path, {"engine": "vllm-offline"}, point_id=pid)
        return validity.refusal(t, pid)

    def run(self) -> Path:
        self.raw.mkdir(parents=True, exist_ok=True)
        fsio.update_manifest(self.raw, pending=RAW_PENDING)
        if fsio.marked_kind(self.raw) != "raw":
            fsio.write_marker(self.raw, "raw", pending=RAW_PENDING)
        t0 = time.monotonic()
        ensure_tiny_model(self.sc.model)
        try:
            for phase in self.phases:
                self.run_phase(phase)
        except ServerError as exc:
            lines = str(exc).splitlines()
            cause = [x for x in lines[1:] if "Error" in x or "error" in x]
            last = f"; last error line: {cause[-1].strip()}" if cause else ""
            msg = self.redact(lines[0].rstrip(":") + last)
            raise InputError(self.raw / "record.json", "server", msg) from None
        finally:  # scrubbed on failure too: a kept point's bytes are the same after a resume
            scrub_files(self.raw)
        if isinstance(self.sc, DecodeParity) and "offline" in self.sc.engines:
            self.run_offline()
        self.info["wall_s"] = self.info.get("wall_s", 0.0) + (time.monotonic() - t0)
        self._save_info()
        scrub_files(self.raw)  # no machine's absolute path in the raw artifacts either
        fsio.write_marker(self.raw, "raw")
        out = self.convert()
        _say(f"trace written: {out} (raw artifacts in {self.raw})")
        return out
