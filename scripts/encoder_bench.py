"""Speed and routing agreement of the query encoder in each precision (a benchmark, not a test).

    python scripts/encoder_bench.py [--data results/data/synthetic] [--run LOCUS_RUN] [--threads 2]
        [--precisions float32,bfloat16,int8] [--isa native|avx512_bf16|avx512_vnni|avx512|avx2] [--repeats 3]
        [--onnx]

For each precision of ``locus.encoders.prepare_query_encoder`` (and, with ``--onnx``, ONNX Runtime float32 and
int8 beside them, when ``onnxruntime`` and ``onnx`` are importable) it measures, on the data set's test prompts:
- one query at a time through ``encode_direct`` as ``locus serve`` calls it (p50 and p99 ms over ``--calls``);
- batches of ``--batch`` queries (queries/s over ``--batches`` batches, ``--encode-batch`` texts per forward pass);
each ``--repeats`` times, the precisions taking turns, and prints the best and the median of the repeats. With
``--run`` (a finished run of the same encoder) it also encodes every test prompt in each precision and routes it
with the run: the share routed to the same model as with float32, and the routing accuracy on the test labels.

``--isa`` emulates an older CPU on this one by capping every kernel library's instruction set before torch
loads: ``ATEN_CPU_CAPABILITY`` (torch's own kernels), ``ONEDNN_MAX_CPU_ISA`` (oneDNN: bfloat16 products),
``FBGEMM_ENABLE_INSTRUCTIONS`` (fbgemm: int8 products) and ``MKL_ENABLE_INSTRUCTIONS`` (MKL: float32 products);
the script re-executes itself with them set. Setting those variables by hand works too. ONNX Runtime has no
such cap, so ``--onnx`` rows are left out under ``--isa``. The table names the CPU, its flags that matter here,
the cap and what ``auto`` picks for the emulated CPU. Report the machine with the numbers: CPU results repeat
only on the same CPU model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CAP_VARS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "FBGEMM_ENABLE_INSTRUCTIONS", "MKL_ENABLE_INSTRUCTIONS")
# --isa: the variables capping each library, and the /proc/cpuinfo flags the emulated CPU lacks (prefixes)
ISAS = {
    "native": ({}, ()),
    "avx512_bf16": (
        {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"},
        ("amx",),
    ),
    "avx512_vnni": (
        {
            "ATEN_CPU_CAPABILITY": "avx512",
            "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI",
            "FBGEMM_ENABLE_INSTRUCTIONS": "AVX512_E1",
            "MKL_ENABLE_INSTRUCTIONS": "AVX512",
        },
        ("amx", "avx512_bf16"),
    ),
    "avx512": (
        {
            "ATEN_CPU_CAPABILITY": "avx512",
            "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
            "FBGEMM_ENABLE_INSTRUCTIONS": "AVX512",
            "MKL_ENABLE_INSTRUCTIONS": "AVX512",
        },
        ("amx", "avx512_bf16", "avx512_vnni", "avx_vnni"),
    ),
    "avx2": (
        {
            "ATEN_CPU_CAPABILITY": "avx2",
            "ONEDNN_MAX_CPU_ISA": "AVX2",
            "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        },
        ("amx", "avx512", "avx_vnni"),
    ),
}
SHOWN_FLAGS = ("amx_bf16", "amx_int8", "amx_tile", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512f", "avx2")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="results/data/synthetic", help="data set whose test prompts are encoded")
    ap.add_argument("--run", default=None, help="a finished run: routing agreement and accuracy per precision")
    ap.add_argument("--encoder", default=None, help="encoder name (default: the run's, else all-MiniLM-L6-v2)")
    ap.add_argument("--precisions", default="float32,bfloat16,int8", help="comma list; float32 always runs")
    ap.add_argument("--isa", choices=list(ISAS), default="native", help="cap the kernels' instruction set")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--calls", type=int, default=300, help="single-query calls per repeat")
    ap.add_argument("--batch", type=int, default=32, help="queries per batch call")
    ap.add_argument("--batches", type=int, default=20, help="batch calls per repeat")
    ap.add_argument("--encode-batch", type=int, default=16, help="texts per forward pass (locus serve: 16)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of each measurement (best and median shown)")
    ap.add_argument("--onnx", action="store_true", help="also ONNX Runtime float32 and int8 (no --isa)")
    return ap.parse_args(argv)


def apply_isa(isa: str) -> None:
    """Re-execute this script with the --isa caps in the environment (they must be set before torch loads)."""
    caps = ISAS[isa][0]
    env = {k: v for k, v in os.environ.items() if k not in CAP_VARS or isa == "native"}
    env.update(caps)
    if all(os.environ.get(k) == env.get(k) for k in CAP_VARS):
        return
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def pct(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def weight_mb(model) -> float:
    """Bytes of the encoder's parameters and buffers, int8-packed layers counted as int8 weights + float32 bias."""
    total = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    for module in model.modules():
        if type(module).__name__ == "Int8Linear":
            total += module.in_features * module.out_features + 4 * module.out_features
    return total / 2**20


def torch_encoders(name: str, precisions: list[str], encode_batch: int):
    """{label: (encode(texts) -> float32 [n, dim], {load_s, prepare_s, weights_mb})} for each precision."""
    from locus import encoders

    out = {}
    for precision in precisions:
        t0 = time.perf_counter()
        model = encoders.load_encoder(name, device="cpu")
        t1 = time.perf_counter()
        encoders.prepare_query_encoder(model, precision)
        t2 = time.perf_counter()
        info = {"load_s": t1 - t0, "prepare_s": t2 - t1, "weights_mb": weight_mb(model)}
        out[precision] = (lambda texts, m=model: encoders.encode_direct(m, texts, encode_batch), info)
    return out


def onnx_encoders(name: str, encode_batch: int, threads: int, workdir: Path):
    """ONNX Runtime float32 and dynamic int8 (per-channel weights) of the same model, its tokenizer and pooling
    (mean over the attention mask, then L2 normalisation: the packaged encoders' modules); {} when unavailable."""
    import warnings

    import numpy as np
    import torch

    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        print(f"(--onnx: {exc}; pip install onnxruntime onnx)", file=sys.stderr)
        return {}
    from locus import encoders

    model = encoders.load_encoder(name, device="cpu").eval()
    pooling = model[1]
    if getattr(pooling, "pooling_mode_mean_tokens", True) is False:
        print("(--onnx: only mean pooling is reproduced here)", file=sys.stderr)
        return {}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = model.preprocess(["an example", "a second, longer example"])
    names = [k for k in names if k in sample]
    bert = model[0].auto_model

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, *args):
            return self.bert(**dict(zip(names, args))).last_hidden_state

    f32, i8 = workdir / "encoder.onnx", workdir / "encoder-int8.onnx"
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Wrapped(),
            tuple(sample[k] for k in names),
            str(f32),
            input_names=names,
            output_names=["tokens"],
            dynamic_axes={k: {0: "batch", 1: "tokens"} for k in [*names, "tokens"]},
            opset_version=17,
            dynamo=False,
        )
    t1 = time.perf_counter()
    quantize_dynamic(str(f32), str(i8), weight_type=QuantType.QInt8, per_channel=True)
    t2 = time.perf_counter()
    normalise = any(type(m).__name__ == "Normalize" for m in model)

    def make(path: Path, prepare_s: float):
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        def encode(texts):
            chunks = []
            for start in range(0, len(texts), encode_batch):
                features = model.preprocess(list(texts[start : start + encode_batch]))
                feeds = {k: features[k].numpy() for k in names}
                tokens = session.run(None, feeds)[0]
                mask = feeds["attention_mask"][..., None].astype(np.float32)
                vectors = (tokens * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
                if normalise:
                    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                chunks.append(vectors.astype(np.float32))
            return np.concatenate(chunks)

        return encode, {"load_s": float("nan"), "prepare_s": prepare_s, "weights_mb": path.stat().st_size / 2**20}

    return {"onnx float32": make(f32, t1 - t0), "onnx int8": make(i8, t2 - t0)}


def measure(encode, prompts: list[str], calls: int, batch: int, batches: int) -> dict:
    for text in prompts[:20]:  # warm-up: allocators, oneDNN primitive caches
        encode([text])
    encode(prompts[:batch])
    lone = []
    for i in range(calls):
        t = time.perf_counter()
        encode([prompts[i % len(prompts)]])
        lone.append(time.perf_counter() - t)
    t = time.perf_counter()
    for b in range(batches):
        start = (b * batch) % max(1, len(prompts) - batch)
        encode(prompts[start : start + batch])
    qps = batch * batches / (time.perf_counter() - t)
    return {"p50": 1e3 * pct(lone, 50), "p99": 1e3 * pct(lone, 99), "qps": qps}


def routing(run_dir: str, data_dir: str, vectors: dict, prompt_ids) -> dict:
    """{label: (same top model as float32, routing accuracy)} with the run's method."""
    import numpy as np

    from locus.checkpoint import load_checkpoint
    from locus.data.canonical import read_dataset

    checkpoint = load_checkpoint(run_dir)
    labels = read_dataset(data_dir).label_matrix(prompt_ids, checkpoint.model_ids)
    chosen = {k: checkpoint.method.predict_logits(v, checkpoint.model_ids).argmax(axis=1) for k, v in vectors.items()}
    top2 = np.sort(checkpoint.method.predict_logits(vectors["float32"], checkpoint.model_ids), axis=1)[:, -2:]
    gap = top2[:, 1] - top2[:, 0]  # float32's margin between its first and second model
    rows = np.arange(len(prompt_ids))
    out = {}
    for k, c in chosen.items():
        moved = c != chosen["float32"]
        out[k] = (
            float(np.mean(~moved)),
            float(np.nanmean(labels[rows, c])),
            float(gap[moved].max()) if moved.any() else 0.0,
        )
    out["_gap"] = gap
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    apply_isa(args.isa)

    import numpy as np
    import torch

    from locus import encoders
    from locus.data.canonical import read_dataset
    from locus.provenance import cpu_flags, cpu_model

    torch.set_num_threads(args.threads)
    encoder = args.encoder
    if encoder is None and args.run:
        from locus.checkpoint import load_checkpoint

        encoder = load_checkpoint(args.run).encoder
    encoder = encoder or encoders.DEFAULT_ENCODER
    queries = read_dataset(args.data).queries
    test = queries[queries["split"] == "test"].sort_values("prompt_id")
    prompts, prompt_ids = test["prompt"].tolist(), test["prompt_id"].to_numpy()
    precisions = ["float32"] + [p for p in args.precisions.split(",") if p and p != "float32"]
    for p in precisions:
        encoders.resolve_precision(p)

    flags = cpu_flags()
    emulated = {f for f in flags if not any(f.startswith(d) for d in ISAS[args.isa][1])}
    runners = torch_encoders(encoder, precisions, args.encode_batch)
    if args.onnx and args.isa == "native":
        workdir = Path(tempfile.mkdtemp(prefix="encoder-bench-onnx-"))
        runners.update(onnx_encoders(encoder, args.encode_batch, args.threads, workdir))
    elif args.onnx:
        print("(--onnx left out under --isa: ONNX Runtime picks its kernels from the CPU itself)", file=sys.stderr)

    results = {label: [] for label in runners}
    for r in range(args.repeats):
        for label, (encode, _) in runners.items():
            results[label].append(measure(encode, prompts, args.calls, args.batch, args.batches))
            print(f"repeat {r + 1}/{args.repeats} {label}: {results[label][-1]}", file=sys.stderr)

    reference = runners["float32"][0](prompts)
    vectors = {label: (reference if label == "float32" else encode(prompts)) for label, (encode, _) in runners.items()}
    routed = routing(args.run, args.data, vectors, prompt_ids) if args.run else {}

    caps = ", ".join(f"{k}={os.environ[k]}" for k in CAP_VARS if os.environ.get(k)) or "none"
    print(f"\n**CPU** {cpu_model()}; flags: {' '.join(f for f in SHOWN_FLAGS if f in flags) or '(none of these)'}")
    print(
        f"**--isa {args.isa}** (caps: {caps}); torch CPU capability {torch.backends.cpu.get_cpu_capability()}; "
        f"emulated flags: {' '.join(f for f in SHOWN_FLAGS if f in emulated) or '(none of these)'}; "
        f"`auto` picks **{encoders.choose_precision(emulated)}**"
    )
    print(
        f"torch {torch.__version__}, {args.threads} threads, encoder {encoder}, {len(prompts)} test prompts; "
        f"single: {args.calls} calls x {args.repeats}; batch {args.batch} ({args.encode_batch} per pass) x "
        f"{args.batches} x {args.repeats}; best / median of the repeats\n"
    )
    head = "| encoder | p50 ms | p99 ms | batch q/s | cos to f32 min / mean | prepare s | weights MB |"
    sep = "|---|---|---|---|---|---|---|"
    if routed:
        head += " same route as f32 | routing acc | widest f32 margin moved |"
        sep += "---|---|---|"
    print(head)
    print(sep)
    for label, (_, info) in runners.items():
        runs = results[label]

        def lo(key, runs=runs):
            return f"{min(r[key] for r in runs):.2f} / {statistics.median(r[key] for r in runs):.2f}"

        qps = f"{max(r['qps'] for r in runs):.0f} / {statistics.median(r['qps'] for r in runs):.0f}"
        cos = (vectors[label] * reference).sum(axis=1)
        line = (
            f"| {label} | {lo('p50')} | {lo('p99')} | {qps} | {cos.min():.4f} / {cos.mean():.4f} | "
            f"{info['prepare_s']:.2f} | {info['weights_mb']:.0f} |"
        )
        if routed:
            same, accuracy, widest = routed[label]
            line += f" {100 * same:.1f}% | {100 * accuracy:.2f}% | {widest:.4f} |"
        print(line)
    if routed:
        gap = routed["_gap"]
        print(
            f"\nfloat32's margin between its first and second model (logits): median {np.median(gap):.4f}; "
            f"{np.mean(gap < 1e-3):.1%} of the queries below 0.001, {np.mean(gap < 3e-3):.1%} below 0.003. "
            "'widest f32 margin moved': the largest such margin among the queries routed elsewhere."
        )
    norms = {k: float(np.abs(np.linalg.norm(v, axis=1) - 1).max()) for k, v in vectors.items()}
    print(f"\nmax | |v| - 1 | per encoder: {', '.join(f'{k} {v:.1e}' for k, v in norms.items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
