"""Latency, throughput, memory and hot-add time of `locus serve` on loopback (a benchmark, not a test).

    python scripts/serve_bench.py --run LOCUS_RUN [--knn-run KNN_RUN] --data DATA [--seconds 10] [--clients 64]
        [--threads 1] [--encoder-precision auto|float32|bfloat16|int8] [--compile]

Starts `python -m locus serve` for each run (a LOCUS run and, side by side, a kNN-router run of the same data)
on free loopback ports and measures over real HTTP, each phase bounded by `--requests` and `--seconds`:
- single-query `POST /v1/route`, one request at a time (p50, p99);
- `--clients` concurrent clients in two halves (routed queries/s, errors, p50/p99, the server's RSS before and
  after each half);
- `POST /v1/pool` (hot-add, LOCUS only) from 128 prompts of the data set (their stored encodings are reused)
  and from 128 new prompts (encoded), median of `--adds`;
- `locus route` as one process per call (`--process-calls` calls) for contrast;
- `--poison-valid` valid requests sent at once with one whose query is not Unicode text: how many still succeed;
- single-query `/v1/route` latency while one add of `--add-size` new prompts is in flight (LOCUS only);
- with an encoder other than float32 (`auto` resolves on this CPU; under instruction-set caps pass the precision
  by name) or `--compile`: every test prompt routed by that LOCUS service and by a plain float32 one, the share
  routed to the same model, each one's routing accuracy on the test labels and the difference's paired-bootstrap
  interval.
The header names the CPU, its flags that matter here (AMX, AVX512-BF16, VNNI, AVX2), any caps set in the
environment (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, FBGEMM_ENABLE_INSTRUCTIONS) and the measured matmul peak.
Queries are the data set's test prompts. The clients are plain HTTP/1.1 over kept-alive sockets (the standard
library), so that on a small machine the load generator takes little of the CPU it measures. Prints a Markdown
table; report the machine (CPU) with it.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
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
    def __init__(self, run: str, env: dict, extra: list[str] = ()):
        import httpx

        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "locus", "serve", "--run", run, "--port", str(self.port), *extra]
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


def route_body(queries: list[str], top_k: int = 3) -> bytes:
    return json.dumps({"queries": queries, "top_k": top_k}).encode()


def sequential(port: int, prompts: list[str], requests: int, seconds: float) -> list[float]:
    """Latencies (ms) of single-query requests sent one at a time over one kept-alive connection."""
    bodies = [route_body([q]) for q in prompts]
    headers = {"Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(body: bytes) -> None:
        conn.request("POST", "/v1/route", body, headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"serve_bench: /v1/route answered {response.status}")

    lat = []
    try:
        for body in bodies[:10]:  # warm-up (the encoder loads in the background at start)
            post(body)
        stop = time.perf_counter() + seconds
        for i in range(requests):
            if time.perf_counter() > stop:
                break
            t0 = time.perf_counter()
            post(bodies[i % len(bodies)])
            lat.append(1000 * (time.perf_counter() - t0))
    finally:
        conn.close()
    return lat


async def _post(reader, writer, body: bytes) -> int:
    """One POST /v1/route on an open HTTP/1.1 connection; the status (the body is read and dropped)."""
    writer.write(
        b"POST /v1/route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


def concurrent(port: int, prompts: list[str], clients: int, seconds: float) -> tuple[int, int, float, list[float]]:
    """`clients` connections each sending single-query requests back to back for `seconds`: (answered,
    errors, elapsed s, latencies ms)."""
    bodies = [route_body([q]) for q in prompts]

    async def load():
        done, errors, lat = 0, 0, []
        stop = time.perf_counter() + seconds

        async def worker(w):
            nonlocal done, errors
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            i = w
            try:
                while time.perf_counter() < stop:
                    t0 = time.perf_counter()
                    try:
                        ok = await asyncio.wait_for(_post(reader, writer, bodies[i % len(bodies)]), 60) == 200
                    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError, IndexError):
                        ok = False
                        writer.close()
                        reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    lat.append(1000 * (time.perf_counter() - t0))
                    done += ok
                    errors += not ok
                    i += clients
            finally:
                writer.close()

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(clients)))
        return done, errors, time.perf_counter() - t0, lat

    return asyncio.run(load())


def poison(port: int, prompts: list[str], valid: int) -> tuple[int, int]:
    """`valid` single-query requests and one whose query is half a surrogate pair, sent at once: (valid requests
    answered 200, the poison's status)."""
    bodies = [route_body([prompts[i % len(prompts)]]) for i in range(valid)]
    bad = b'{"queries": ["poison \\ud800 text"]}'

    async def send():
        async def one(body):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                return await asyncio.wait_for(_post(reader, writer, body), 60)
            finally:
                writer.close()

        return await asyncio.gather(*(one(b) for b in bodies[: valid // 2] + [bad] + bodies[valid // 2 :]))

    statuses = asyncio.run(send())
    poisoned = statuses.pop(valid // 2)
    return sum(s == 200 for s in statuses), poisoned


def route_during_add(base: str, port: int, prompts: list[str], train: list[str], size: int) -> dict:
    """Single-query /v1/route latencies (ms) while one add of `size` new prompts (all encoded) is in flight."""
    import threading

    import httpx

    evals = [{"prompt": f"{train[i % len(train)]} [during-add {i}]", "score": float(i % 3 == 0)} for i in range(size)]
    result = {}

    def add():
        t0 = time.perf_counter()
        with httpx.Client(base_url=base, timeout=600) as client:
            r = client.post("/v1/pool", json={"name": "bench/during-add", "evaluations": evals})
            result["status"] = r.status_code
            client.delete("/v1/pool/bench/during-add")
        result["seconds"] = time.perf_counter() - t0

    thread = threading.Thread(target=add)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    lat, i = [], 0
    try:
        thread.start()
        while thread.is_alive():
            t0 = time.perf_counter()
            conn.request(
                "POST", "/v1/route", route_body([prompts[i % len(prompts)]]), {"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            response.read()
            lat.append(1000 * (time.perf_counter() - t0))
            i += 1
    finally:
        thread.join()
        conn.close()
    return {"latencies": lat, **result}


def paired_interval(a, b, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of mean(a - b) over queries resampled with replacement (paired bootstrap)."""
    import numpy as np

    d = np.asarray(a, float) - np.asarray(b, float)
    d = d[~np.isnan(d)]
    idx = np.random.default_rng(seed).integers(0, len(d), (resamples, len(d)))
    means = d[idx].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def chosen_models(base: str, prompts: list[str], batch: int = 64) -> list[str]:
    """The model each prompt is routed to, in requests of `batch` queries."""
    import httpx

    out = []
    with httpx.Client(base_url=base, timeout=600) as client:
        for start in range(0, len(prompts), batch):
            r = client.post("/v1/route", json={"queries": prompts[start : start + batch], "top_k": 1})
            r.raise_for_status()
            out += [res["ranking"][0]["name"] for res in r.json()["results"]]
    return out


def routed_labels(data, prompt_ids, chosen: list[str]):
    """The test label of the chosen model per query (NaN where it has none)."""
    import numpy as np

    col = {name: i for i, name in enumerate(data.models.set_index("model_id").loc[data.model_ids, "name"])}
    labels = data.label_matrix(prompt_ids)
    return labels[np.arange(len(chosen)), [col[name] for name in chosen]]


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
                r = client.post("/v1/pool", json={"name": f"bench/{kind}-{k}", "evaluations": evals})
                out[kind].append(1000 * (time.perf_counter() - t0))
                r.raise_for_status()
                reused = r.json()["reused_encodings"]
                assert reused == (128 if kind == "pool" else 0), reused
                # deleted again: a random bench model must not take queries from the routing comparison
                client.delete(f"/v1/pool/{r.json()['name']}").raise_for_status()
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
    from locus.benchmark import matmul_peak
    from locus.data.canonical import read_dataset
    from locus.encoders import resolve_precision
    from locus.provenance import cpu_flags, cpu_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="a LOCUS run directory")
    ap.add_argument("--knn-run", default=None, help="a knn_router run of the same data, served side by side")
    ap.add_argument("--data", required=True, help="the runs' data set directory")
    ap.add_argument("--requests", type=int, default=300, help="at most this many sequential requests per server")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0, help="at most this long per phase")
    ap.add_argument("--adds", type=int, default=5, help="hot-adds of each kind (median reported)")
    ap.add_argument("--process-calls", type=int, default=3, help="`locus route` processes (0: skip)")
    ap.add_argument("--poison-valid", type=int, default=63, help="valid requests sent beside one poison request")
    ap.add_argument("--add-size", type=int, default=2000, help="new prompts of the add that routing runs beside")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of each service (locus serve --threads)")
    ap.add_argument(
        "--encoder-precision",
        choices=("auto", "float32", "bfloat16", "int8"),
        default="auto",
        help="locus serve --encoder-precision of the services (default auto, as serve's); any but float32 also "
        "compares routing with a float32 service",
    )
    ap.add_argument("--compile", action="store_true", help="locus serve --compile (compares routing as bfloat16 does)")
    args = ap.parse_args(argv)

    data = read_dataset(args.data)
    prompts = data.split_queries("test")["prompt"].tolist()
    train = data.split_queries("train")["prompt"].tolist()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    extra = ["--threads", str(args.threads), "--encoder-precision", args.encoder_precision]
    extra += ["--compile"] if args.compile else []
    precision = resolve_precision(args.encoder_precision)  # what auto means here (--isa caps: pass it by name)
    changed = precision != "float32" or args.compile  # the encoder's vectors are not float32's
    runs = [("locus", args.run)] + ([("knn_router", args.knn_run)] if args.knn_run else [])
    rows = []
    for label, run in runs:
        server = Server(run, env, extra)
        try:
            lat = sequential(server.port, prompts, args.requests, args.seconds)
            rss = [rss_mb(server.proc.pid)]
            done, errors, elapsed, conc = 0, 0, 0.0, []
            for _ in range(2):  # two halves: RSS after each tells growth that levels off from a leak
                d, e, t, c = concurrent(server.port, prompts, args.clients, args.seconds / 2)
                done, errors, elapsed, conc = done + d, errors + e, elapsed + t, conc + c
                rss.append(rss_mb(server.proc.pid))
            adds = hot_adds(server.base, train, train, args.adds) if label == "locus" else None
            poisoned = poison(server.port, prompts, args.poison_valid)
            during = (
                route_during_add(server.base, server.port, prompts, train, args.add_size) if label == "locus" else None
            )
            if label == "locus" and changed:
                low = chosen_models(server.base, prompts)
        finally:
            server.stop()
        rows.append((label, lat, done, errors, elapsed, conc, rss, adds, poisoned, during))
    procs = process_calls(args.run, prompts, args.process_calls, env) if args.process_calls else []
    if changed:
        server = Server(args.run, env, ["--threads", str(args.threads), "--encoder-precision", "float32"])
        try:
            full = chosen_models(server.base, prompts)
        finally:
            server.stop()

    import torch

    torch.set_num_threads(args.threads)
    peaks = {d: matmul_peak("cpu", 1024, 3, d) for d in ("float32", "bfloat16")}
    shown = sorted(f for f in cpu_flags() if f.startswith(("amx", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx2")))
    caps = {
        k: os.environ[k]
        for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "FBGEMM_ENABLE_INSTRUCTIONS")
        if k in os.environ
    }
    print(
        f"locus serve on {cpu_model()}, {os.cpu_count()} CPU(s), flags {' '.join(shown) or 'none of amx/avx512_bf16/vnni/avx2'}"
        f"{f', capped by {caps}' if caps else ''}; matmul peak {peaks['float32']:.0f} GFLOP/s float32, "
        f"{peaks['bfloat16']:.0f} bfloat16 ({args.threads} threads); data {args.data}; --threads {args.threads} "
        f"--encoder-precision {args.encoder_precision} ({precision}){' --compile' if args.compile else ''}"
    )
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
    line(
        "valid requests answered beside a poison request",
        [f"{r[8][0]} of {args.poison_valid} (poison: {r[8][1]})" for r in rows],
        f"{args.poison_valid} of {args.poison_valid}",
    )
    line(
        f"/v1/route p50 / p99 during a {args.add_size}-prompt add (ms)",
        [
            f"{pct(r[9]['latencies'], 50):.1f} / {pct(r[9]['latencies'], 99):.1f} (n={len(r[9]['latencies'])}; "
            f"add {r[9]['seconds']:.1f} s, {r[9]['status']})"
            if r[9]
            else "n/a"
            for r in rows
        ],
        "p99 <= 50",
    )
    if changed:
        import numpy as np

        ids = data.split_queries("test")["prompt_id"].to_numpy()
        same = sum(a == b for a, b in zip(low, full)) / len(full)
        mine, plain = routed_labels(data, ids, low), routed_labels(data, ids, full)
        lo, hi = paired_interval(mine, plain)
        print(
            f"\nLOCUS, {len(full)} test queries: {100 * same:.1f}% routed to the same model with these encoder "
            f"options as with the plain float32 encoder; routing accuracy {100 * np.nanmean(mine):.2f}% (these "
            f"options) vs {100 * np.nanmean(plain):.2f}% (float32); difference 95% paired-bootstrap interval "
            f"[{100 * lo:+.2f}, {100 * hi:+.2f}] points"
        )
    if procs:
        print(
            f"\n`locus route` as a process per call (LOCUS run): median {statistics.median(procs):.0f} ms "
            f"(of {len(procs)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
