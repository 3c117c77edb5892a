"""Latency, throughput, memory and hot-add time of `locus serve` on loopback (a benchmark, not a test).

    python scripts/serve_bench.py --run LOCUS_RUN [--knn-run KNN_RUN] --data DATA [--seconds 10] [--clients 64]

Starts `python -m locus serve` for each run (a LOCUS run and, side by side, a kNN-router run of the same data)
on free loopback ports and measures over real HTTP, each phase bounded by `--requests` and `--seconds`:
- single-query `POST /v1/route`, one request at a time (p50, p99);
- `--clients` concurrent clients in two halves (routed queries/s, errors, p50/p99, the server's RSS before and
  after each half);
- `POST /v1/models` (hot-add, LOCUS only) from 128 prompts of the data set (their stored encodings are reused)
  and from 128 new prompts (encoded), median of `--adds`;
- `locus route` as one process per call (`--process-calls` calls) for contrast.
Queries are the data set's test prompts. Prints a Markdown table; report the machine (CPU) with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values, q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100)[q - 1]


class Server:
    def __init__(self, run: str, env: dict):
        import httpx

        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "locus", "serve", "--run", run, "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with httpx.Client(base_url=self.base, timeout=60) as client:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise SystemExit(f"serve_bench: locus serve --run {run} exited ({self.proc.returncode})")
                try:
                    if client.get("/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    time.sleep(0.2)
        raise SystemExit(f"serve_bench: locus serve --run {run} did not start within 300 s")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def sequential(base: str, prompts: list[str], requests: int, seconds: float) -> list[float]:
    import httpx

    lat = []
    with httpx.Client(base_url=base, timeout=120) as client:
        for q in prompts[:10]:  # warm-up (the encoder loads in the background at start)
            client.post("/v1/route", json={"queries": [q], "top_k": 3}).raise_for_status()
        stop = time.perf_counter() + seconds
        for i in range(requests):
            if time.perf_counter() > stop:
                break
            t0 = time.perf_counter()
            client.post("/v1/route", json={"queries": [prompts[i % len(prompts)]], "top_k": 3}).raise_for_status()
            lat.append(1000 * (time.perf_counter() - t0))
    return lat


def concurrent(base: str, prompts: list[str], clients: int, seconds: float) -> tuple[int, int, float, list[float]]:
    import httpx

    async def load():
        done, errors, lat = 0, 0, []
        stop = time.perf_counter() + seconds
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:

            async def worker(w):
                nonlocal done, errors
                i = w
                while time.perf_counter() < stop:
                    t0 = time.perf_counter()
                    try:
                        r = await client.post("/v1/route", json={"queries": [prompts[i % len(prompts)]], "top_k": 3})
                        ok = r.status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    lat.append(1000 * (time.perf_counter() - t0))
                    done += ok
                    errors += not ok
                    i += clients

            t0 = time.perf_counter()
            await asyncio.gather(*(worker(w) for w in range(clients)))
            return done, errors, time.perf_counter() - t0, lat

    return asyncio.run(load())


def hot_adds(base: str, pool_prompts: list[str], new_prompts: list[str], adds: int, seed: int = 0):
    import httpx
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {"pool": [], "new": []}
    with httpx.Client(base_url=base, timeout=300) as client:
        for k in range(adds):
            for kind, source in (("pool", pool_prompts), ("new", new_prompts)):
                chosen = rng.choice(len(source), 128, replace=False)
                evals = [{"prompt": source[i], "score": float(rng.random() < 0.6)} for i in chosen]
                if kind == "new":
                    evals = [{**e, "prompt": f"{e['prompt']} [bench variant {k}]"} for e in evals]
                t0 = time.perf_counter()
                r = client.post("/v1/models", json={"name": f"bench/{kind}-{k}", "evaluations": evals})
                out[kind].append(1000 * (time.perf_counter() - t0))
                r.raise_for_status()
                reused = r.json()["reused_encodings"]
                assert reused == (128 if kind == "pool" else 0), reused
    return out


def process_calls(run: str, prompts: list[str], calls: int, env: dict) -> list[float]:
    out = []
    for i in range(calls):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "locus", "route", "--checkpoint", run, prompts[i % len(prompts)]],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        out.append(1000 * (time.perf_counter() - t0))
    return out


def main(argv=None) -> int:
    from locus.data.canonical import read_dataset
    from locus.provenance import cpu_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="a LOCUS run directory")
    ap.add_argument("--knn-run", default=None, help="a knn_router run of the same data, served side by side")
    ap.add_argument("--data", required=True, help="the runs' data set directory")
    ap.add_argument("--requests", type=int, default=300, help="at most this many sequential requests per server")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0, help="at most this long per phase")
    ap.add_argument("--adds", type=int, default=5, help="hot-adds of each kind (median reported)")
    ap.add_argument("--process-calls", type=int, default=3, help="`locus route` processes (0: skip)")
    args = ap.parse_args(argv)

    data = read_dataset(args.data)
    prompts = data.split_queries("test")["prompt"].tolist()
    train = data.split_queries("train")["prompt"].tolist()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    runs = [("locus", args.run)] + ([("knn_router", args.knn_run)] if args.knn_run else [])
    rows = []
    for label, run in runs:
        server = Server(run, env)
        try:
            lat = sequential(server.base, prompts, args.requests, args.seconds)
            rss = [rss_mb(server.proc.pid)]
            done, errors, elapsed, conc = 0, 0, 0.0, []
            for _ in range(2):  # two halves: RSS after each tells growth that levels off from a leak
                d, e, t, c = concurrent(server.base, prompts, args.clients, args.seconds / 2)
                done, errors, elapsed, conc = done + d, errors + e, elapsed + t, conc + c
                rss.append(rss_mb(server.proc.pid))
            adds = hot_adds(server.base, train, train, args.adds) if label == "locus" else None
        finally:
            server.stop()
        rows.append((label, lat, done, errors, elapsed, conc, rss, adds))
    procs = process_calls(args.run, prompts, args.process_calls, env) if args.process_calls else []

    print(f"locus serve on {cpu_model()}, {os.cpu_count()} CPU(s); data {args.data}")
    print(f"runs: {', '.join(f'{label} {run}' for label, run in runs)}\n")
    print("| measure | " + " | ".join(label for label, *_ in rows) + " | target |")
    print("|---|" + "---|" * len(rows) + "---|")

    def line(name, cells, target=""):
        print(f"| {name} | " + " | ".join(cells) + f" | {target} |")

    line("single-query /v1/route p50 (ms)", [f"{pct(r[1], 50):.1f} (n={len(r[1])})" for r in rows], "<= 15")
    line("single-query /v1/route p99 (ms)", [f"{pct(r[1], 99):.1f}" for r in rows], "<= 50")
    line(
        f"{args.clients} clients: routed queries/s",
        [f"{r[2] / r[4]:.1f} ({r[3]} errors, {r[4]:.0f} s)" for r in rows],
        ">= 200",
    )
    line(f"{args.clients} clients: p50 / p99 (ms)", [f"{pct(r[5], 50):.0f} / {pct(r[5], 99):.0f}" for r in rows])
    line("server RSS before -> half -> all of the load (MB)", [" -> ".join(f"{v:.0f}" for v in r[6]) for r in rows], "")
    for kind, what in (("pool", "128 pool prompts (stored encodings)"), ("new", "128 new prompts (encoded)")):
        cells = [f"{statistics.median(r[7][kind]):.1f} (of {len(r[7][kind])})" if r[7] else "n/a" for r in rows]
        line(f"hot-add from {what}, median (ms)", cells, "<= 50" if kind == "pool" else "")
    if procs:
        print(
            f"\n`locus route` as a process per call (LOCUS run): median {statistics.median(procs):.0f} ms "
            f"(of {len(procs)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
