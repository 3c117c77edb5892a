"""Latency and throughput of `locus serve` on loopback (a benchmark, not a test).

    python scripts/serve_bench.py --run RUN --data DATA [--requests 300] [--clients 64] [--seconds 60]

Starts `python -m locus serve --run RUN` on a free port and measures, over real HTTP:
- single-query `POST /v1/route` latency, one request at a time (p50, p99);
- throughput with `--clients` concurrent clients for `--seconds` (routed queries/s, errors, the server's RSS
  before and after);
- `POST /v1/models` (hot-add) from 128 evaluations of prompts of the data set (median of 5).
Queries are the data set's test prompts. Report the machine (CPU model) with the numbers.
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv=None) -> int:
    import httpx
    import numpy as np

    from locus.data.canonical import read_dataset
    from locus.provenance import cpu_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args(argv)

    data = read_dataset(args.data)
    prompts = data.split_queries("test")["prompt"].tolist()
    train = data.split_queries("train")["prompt"].tolist()
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    server = subprocess.Popen(
        [sys.executable, "-m", "locus", "serve", "--run", args.run, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            for _ in range(600):
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            else:
                raise SystemExit("serve_bench: the service did not start")
            for q in prompts[:20]:  # warm-up
                client.post("/v1/route", json={"queries": [q], "top_k": 3}).raise_for_status()
            lat = []
            for i in range(args.requests):
                t0 = time.perf_counter()
                client.post("/v1/route", json={"queries": [prompts[i % len(prompts)]], "top_k": 3}).raise_for_status()
                lat.append(1000 * (time.perf_counter() - t0))
            adds = []
            rng = np.random.default_rng(0)
            for k in range(5):
                evals = [
                    {"prompt": p, "score": float(rng.random() < 0.6)} for p in rng.choice(train, 128, replace=False)
                ]
                t0 = time.perf_counter()
                client.post("/v1/models", json={"name": f"bench/new-{k}", "evaluations": evals}).raise_for_status()
                adds.append(1000 * (time.perf_counter() - t0))
        rss_before = rss_mb(server.pid)

        async def load():
            done, errors = 0, 0
            stop = time.perf_counter() + args.seconds
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:

                async def worker(w):
                    nonlocal done, errors
                    i = w
                    while time.perf_counter() < stop:
                        r = await client.post("/v1/route", json={"queries": [prompts[i % len(prompts)]], "top_k": 3})
                        done += r.status_code == 200
                        errors += r.status_code != 200
                        i += args.clients

                await asyncio.gather(*(worker(w) for w in range(args.clients)))
            return done, errors

        t0 = time.perf_counter()
        done, errors = asyncio.run(load())
        elapsed = time.perf_counter() - t0
        rss_after = rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(30)
    q = statistics.quantiles(lat, n=100)
    print(f"locus serve on {cpu_model()}, {os.cpu_count()} CPU(s); run {args.run}")
    print(f"single-query /v1/route over HTTP, {len(lat)} requests: p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms")
    print(
        f"{args.clients} concurrent clients for {elapsed:.0f} s: {done / elapsed:.1f} routed queries/s, "
        f"{errors} errors, server RSS {rss_before:.0f} -> {rss_after:.0f} MB"
    )
    print(f"hot-add from 128 evaluations of pool prompts: median {statistics.median(adds):.1f} ms (of 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
