"""Bad inputs of the `locus` command line itself: option values, output locations, devices, the files
users hand to `embed` / `route`, and the metrics files of `table` / `figure`.

``before`` was measured by running each case against the code before the fix (a worktree of the
commit before, same harness): traceback = an exception escaped; silent = exit 0 (the mistake was
ignored); poor-message = exit 2 but the line does not say what to do; late = the error came only
after the expensive work; ok = already handled as required.
"""

from __future__ import annotations

import json

from bad_inputs.harness import Case

# --------------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------------
SIZES = (64, 128)


def metrics_dict(
    method: str, n: int, seed: int = 0, acc: float = 0.6, encoder: str = "enc", dataset: str = "results/data/tiny"
) -> dict:
    """A metrics.json as `locus train` writes it (the fields tables and figures read)."""
    block = {
        "overall": {"routing_acc": acc, "correctness_acc": acc + 0.1},
        "by_benchmark": {"math": {"routing_acc": acc, "correctness_acc": acc + 0.1}},
    }
    ref = {
        "oracle": {"overall": 0.9, "math": 0.9},
        "random": {"overall": 0.3, "math": 0.3},
        "best_single": {"overall": 0.5, "math": 0.5},
    }
    return {
        "method": method,
        "params": {},
        "train_size": n,
        "seed": seed,
        "sampling": "shared",
        "encoder": encoder,
        "dataset": dataset,
        "val": block,
        "test": block,
        "reference": ref,
    }


def metrics(ws, **kw) -> list[str]:
    """metrics.json files of two methods at two training sizes (a valid table and figure input)."""
    paths = []
    for method, base in (("locus", 0.60), ("knn_router", 0.50)):
        for i, n in enumerate(SIZES):
            m = {**metrics_dict(method, n, acc=base + 0.05 * i), **kw}
            paths.append(str(ws.write(f"runs/{method}/n{n}/metrics.json", json.dumps(m))))
    return paths


def scores_csv(ws, name: str = "scores.csv", models=None, encoding: str = "utf-8") -> str:
    rows = ["prompt,score" + (",model" if models else "")]
    for i in range(6):
        rows.append(f"What is {i} plus {i + 1}?,{i % 2}" + (f",{models[i % len(models)]}" if models else ""))
    return str(ws.write(name, "\n".join(rows) + "\n", encoding=encoding))


def run(ws) -> str:
    return str(ws.copy("locus_run"))


def table(ws, *extra, out: str = "t.tex") -> list[str]:
    return ["table", "routing", "--metrics", *metrics(ws), "--out", out, *extra]


def figure(ws, *extra, out: str = "f.pdf") -> list[str]:
    return ["figure", "sample-efficiency", "--metrics", *metrics(ws), "--out", out, *extra]


def train(ws, *extra, out: str = "run") -> list[str]:
    return [
        "train",
        "--method",
        "knn_router",
        "--data",
        str(ws.copy("data")),
        "--encodings",
        str(ws.copy("encodings")),
        "--train-size",
        "20",
        "--out",
        out,
        *extra,
    ]


def encode(ws, *extra, out: str = "enc.parquet") -> list[str]:
    return ["encode", "--data", str(ws.copy("data")), "--out", out, "--no-progress", *extra]


def a_file(ws, name: str) -> str:
    return str(ws.write(name, "not a directory\n"))


def a_dir(ws, name: str) -> str:
    ws.path(name).mkdir(parents=True)
    return name


def latin1_queries(ws) -> str:
    return str(ws.write("queries.txt", "Qu'est-ce qu'une fonction dérivée ?\nCafé\n", encoding="latin-1"))


def _c(id, before, argv, message, **kw):
    return Case(id=f"cli-{id}", klass="cli", before=before, argv=argv, message=message, **kw)


# --------------------------------------------------------------------------------------------------
# the cases
# --------------------------------------------------------------------------------------------------
OUT_DIR = r"is a directory; give a file path"
OUT_PARENT_FILE = r"cannot create .* is a file, not a directory"

CASES = [
    # output locations: refused before any work, nothing written
    _c(
        "table-out-parent-is-file",
        "traceback",
        lambda ws: table(ws, out=f"{a_file(ws, 'notes')}/t.tex"),
        OUT_PARENT_FILE,
    ),
    _c("table-out-is-directory", "traceback", lambda ws: table(ws, out=a_dir(ws, "t.tex")), OUT_DIR),
    _c(
        "figure-out-parent-is-file",
        "traceback",
        lambda ws: figure(ws, out=f"{a_file(ws, 'notes')}/f.pdf"),
        OUT_PARENT_FILE,
    ),
    _c("figure-out-is-directory", "traceback", lambda ws: figure(ws, out=a_dir(ws, "f.pdf")), OUT_DIR),
    _c(
        "figure-sibling-out-is-directory",
        "traceback",  # after writing f.pdf and f.png
        lambda ws: figure(ws, out="f.pdf") if a_dir(ws, "f.csv") else [],
        r"f\.csv is a directory",
    ),
    _c(
        "embed-out-is-directory",
        "traceback",  # after the embedding
        lambda ws: ["embed", "--checkpoint", run(ws), "--scores", scores_csv(ws), "--out", a_dir(ws, "z.parquet")],
        OUT_DIR,
    ),
    _c(
        "train-out-is-file",
        "traceback",  # after training
        lambda ws: train(ws, out=a_file(ws, "run")),
        r"exists and is a file",
    ),
    _c(
        "encode-out-parent-is-file",
        "traceback",  # after encoding
        lambda ws: encode(ws, out=f"{a_file(ws, 'notes')}/e.parquet"),
        OUT_PARENT_FILE,
        fake_encoder=False,
    ),
    _c(
        "bench-json-is-directory",
        "traceback",  # after the whole benchmark (28 s)
        lambda ws: ["bench", "--quick", "--json", a_dir(ws, "b.json")],
        OUT_DIR,
    ),
    # numbers out of range: argparse rejects them (exit 2) with the allowed range
    _c(
        "bench-threads-negative",
        "silent",
        lambda ws: ["bench", "--quick", "--threads", "-2"],
        r"--threads: must be >= 0",
    ),
    _c("bench-repeat-zero", "silent", lambda ws: ["bench", "--quick", "--repeat", "0"], r"--repeat: must be >= 1"),
    _c("train-threads-negative", "silent", lambda ws: train(ws, "--threads", "-1"), r"--threads: must be >= 0"),
    _c(
        "train-size-zero",
        "ok",
        lambda ws: train(ws)[:-4] + ["--train-size", "0", "--out", "run"],
        r"train.size:? must be >= 1",
    ),
    _c("train-seed-negative", "traceback", lambda ws: train(ws, "--seed", "-3"), r"--seed: must be >= 0"),
    _c(
        "encode-threads-negative",  # 0 is torch's default, as for every --threads (cli.threads_arg)
        "silent",
        lambda ws: encode(ws, "--threads", "-1"),
        r"--threads: must be >= 0",
        fake_encoder=False,
    ),
    _c(
        "encode-batch-size-zero",
        "ok",
        lambda ws: encode(ws, "--batch-size", "0"),
        r"batch.size:? must be >= 1",
        fake_encoder=False,
    ),
    _c(
        "route-top-k-zero",
        "silent",
        lambda ws: ["route", "--checkpoint", run(ws), "a query", "--top-k", "0"],
        r"--top-k: must be >= 1",
    ),
    _c(
        "route-top-k-negative",
        "silent",
        lambda ws: ["route", "--checkpoint", run(ws), "a query", "--top-k", "-2"],
        r"--top-k: must be >= 1",
    ),
    _c(
        "embed-top-negative",
        "silent",
        lambda ws: ["embed", "--checkpoint", run(ws), "--scores", scores_csv(ws), "--top", "-1"],
        r"--top: must be >= 0",
    ),
    _c(
        "figure-reference-point-zero",
        "ok",
        lambda ws: figure(ws, "--reference-point", "0"),
        r"--reference-point: must be >= 1|reference point n=0 is outside",
    ),
    # devices: refused when this machine does not have one (the tests run without CUDA)
    _c(
        "encode-device-cuda-without-cuda",
        "traceback",
        lambda ws: encode(ws, "--device", "cuda"),
        r"CUDA is not available.*--device cpu",
        fake_encoder=False,
        env={"CUDA_VISIBLE_DEVICES": ""},
    ),
    _c(
        "bench-device-cuda-without-cuda",
        "poor-message",
        lambda ws: ["bench", "--quick", "--device", "cuda"],
        r"CUDA is not available.*--device cpu",
        env={"CUDA_VISIBLE_DEVICES": ""},
    ),
    _c(
        "bench-device-unknown",
        "poor-message",
        lambda ws: ["bench", "--quick", "--device", "tpu"],
        r"unknown device 'tpu'; use cpu or cuda",
    ),
    # lists that name nothing
    _c(
        "route-models-empty-list",
        "traceback",
        lambda ws: ["route", "--checkpoint", run(ws), "a query", "--models", ","],
        r"--models: ',' names nothing",
    ),
    _c("table-methods-empty-list", "silent", lambda ws: table(ws, "--methods", ","), r"--methods: ',' names nothing"),
    _c(
        "figure-methods-empty-list",
        "silent",
        lambda ws: figure(ws, "--methods", " , "),
        r"--methods: ' , ' names nothing",
    ),
    # files users hand to embed / route
    _c(
        "route-file-latin1",
        "traceback",
        lambda ws: ["route", "--checkpoint", run(ws), "--file", latin1_queries(ws)],
        r"not UTF-8 .*iconv -f latin1 -t utf-8",
    ),
    _c(
        "embed-scores-latin1",
        "poor-message",
        lambda ws: [
            "embed",
            "--checkpoint",
            run(ws),
            "--scores",
            scores_csv(ws, encoding="latin-1", models=["modèle"]),
        ],
        r"not UTF-8.*iconv",
    ),
    _c(
        "embed-scores-several-models",
        "silent",
        lambda ws: ["embed", "--checkpoint", run(ws), "--scores", scores_csv(ws, models=["a/x", "b/y", "c/z"])],
        r"scores of 3 models .*pick one with --model",
    ),
    _c(
        "embed-model-not-in-file",
        "poor-message",
        lambda ws: [
            "embed",
            "--checkpoint",
            run(ws),
            "--scores",
            scores_csv(ws, models=["a/x", "b/y"]),
            "--model",
            "c/z",
        ],
        r"no rows of model 'c/z'.*found: a/x, b/y",
    ),
    _c(
        "embed-model-without-model-column",
        "poor-message",
        lambda ws: ["embed", "--checkpoint", run(ws), "--scores", scores_csv(ws), "--model", "a/x"],
        r"no 'model' column",
    ),
    _c(
        "route-checkpoint-missing",
        "ok",
        lambda ws: ["route", "--checkpoint", "runs/nope", "a query"],
        r"--checkpoint: .*not found|missing",
    ),
    _c(
        "embed-checkpoint-missing",
        "ok",
        lambda ws: ["embed", "--checkpoint", "runs/nope", "--scores", scores_csv(ws)],
        r"--checkpoint: .*not found|missing",
    ),
    _c(
        "embed-checkpoint-is-file",
        "ok",
        lambda ws: ["embed", "--checkpoint", a_file(ws, "run"), "--scores", scores_csv(ws)],
        r"expected a run directory|missing",
    ),
    # metrics files of table / figure
    _c(
        "table-metrics-missing",
        "ok",
        lambda ws: ["table", "routing", "--metrics", "runs/x/metrics.json", "--out", "t.tex"],
        r"not found",
    ),
    _c(
        "table-metrics-not-json",
        "ok",
        lambda ws: ["table", "routing", "--metrics", str(ws.write("m.json", "{oops")), "--out", "t.tex"],
        r"not a readable JSON metrics file",
    ),
    _c(
        "figure-metrics-not-json",
        "ok",
        lambda ws: ["figure", "sample-efficiency", "--metrics", str(ws.write("m.json", "[1, 2")), "--out", "f.pdf"],
        r"not a readable JSON metrics file",
    ),
    _c(
        "table-metrics-mixed-encoders",
        "ok",
        lambda ws: (
            table(ws)[:-2]
            + [
                str(ws.write("o/metrics.json", json.dumps(metrics_dict("irt_net", 64, encoder="other")))),
                "--out",
                "t.tex",
            ]
        ),
        r"mix several values of 'encoder'",
    ),
    _c(
        "figure-metrics-mixed-datasets",
        "ok",
        lambda ws: (
            figure(ws)[:-2]
            + [
                str(ws.write("o/metrics.json", json.dumps(metrics_dict("irt_net", 64, dataset="results/data/other")))),
                "--out",
                "f.pdf",
            ]
        ),
        r"mix several values of 'dataset'",
    ),
    _c(
        "table-metrics-params-not-object",
        "silent",
        lambda ws: ["table", "routing", "--metrics", *metrics(ws, params=[16]), "--out", "t.tex"],
        r"'params' must be a JSON object",
    ),
    _c("table-out-not-tex", "ok", lambda ws: table(ws, out="t.txt"), r"expected a path ending in \.tex|\.tex path"),
]
