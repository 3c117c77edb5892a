"""Bad inputs of training runs and of the checkpoints `embed` / `route` open: encodings of another data
set, training sizes the split does not have, method parameters, and damaged run directories (checksum,
NaN weights, truncated safetensors, broken config.json), plus model lists that name no model of the run.

``before`` was measured by running each case against the code before the fix (a worktree of the commit
before, same harness): traceback = an exception escaped; silent = exit 0 (the mistake was ignored, e.g.
a modified weights file or encodings of another data set were used as they were); poor-message = exit 2
but the line names neither the file nor the fix; ok = already handled as required. Two ``silent`` cases
are inputs the old code could not check at all: encodings without a data-set fingerprint and a
config.json without the weights' checksum (the old formats), now refused because nothing shows they
belong to the data set / that the weights are the trained ones.

The input builders use only files, pyarrow, safetensors and json (not locus), so they build the same
inputs for the code before and after the fix.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bad_inputs.harness import TINY_LOCUS, Case


# --------------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------------
def train(
    ws,
    *extra,
    method: str = "knn_router",
    data: str | None = None,
    encodings: str | None = None,
    size: str = "20",
    params: dict | None = None,
) -> list[str]:
    argv = [
        "train",
        "--method",
        method,
        "--data",
        data or str(ws.copy("data")),
        "--encodings",
        encodings or str(ws.copy("encodings")),
        "--train-size",
        size,
        "--out",
        "run",
    ]
    if params is not None:
        argv += ["--params", json.dumps(params)]
    return argv + list(extra)


def other_data(ws) -> str:
    """The shared data set with other prompt texts (same prompt ids, models and scores)."""
    queries, models, scores = ws.frames()
    queries = queries.assign(prompt=[f"Name the capital of country {i}." for i in queries["prompt_id"]])
    out = ws.path("other_data")
    out.mkdir()
    for name, frame in (("queries", queries), ("models", models), ("scores", scores)):
        frame.to_parquet(out / f"{name}.parquet", index=False)
    return str(out)


def edited_encodings(ws, edit) -> str:
    """The shared encodings with `edit(ids, vectors, metadata)` -> (ids, vectors, metadata) applied."""
    table = pq.read_table(ws.copy("encodings", "src.parquet"))
    ws.path("src.parquet").unlink()
    col = table.column("embedding").combine_chunks()
    dim = col.type.list_size
    vectors = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim).astype(np.float32)
    ids = table.column("prompt_id").to_numpy().astype(np.int64)
    ids, vectors, meta = edit(ids, vectors.copy(), dict(table.schema.metadata or {}))
    emb = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim)
    out = ws.path("edited.parquet")
    pq.write_table(
        pa.table({"prompt_id": pa.array(ids, type=pa.int64()), "embedding": emb}).replace_schema_metadata(meta), out
    )
    return str(out)


def no_fingerprint(ids, vectors, meta):
    return ids, vectors, {k: v for k, v in meta.items() if k != b"locus.data_fingerprint"}


def shifted_ids(ids, vectors, meta):
    return ids + 1000, vectors, meta


def nan_row(ids, vectors, meta):
    vectors[3] = np.nan
    return ids, vectors, meta


def duplicate_id(ids, vectors, meta):
    ids = ids.copy()
    ids[1] = ids[0]
    return ids, vectors, meta


def damaged_run(ws, how: str, run: str = "locus_run") -> str:
    """A copy of a finished run directory, damaged in one way."""
    from safetensors.numpy import load_file, save_file

    directory = ws.copy(run, "run")
    weights, config_path = directory / "model.safetensors", directory / "config.json"
    config = json.loads(config_path.read_text())

    def rehash():  # keep the checksum consistent when the case is about something else
        if "weights_sha256" in config:
            import hashlib

            config["weights_sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()
        config_path.write_text(json.dumps(config))

    if how == "flipped-byte":
        data = bytearray(weights.read_bytes())
        data[-5] ^= 0x10
        weights.write_bytes(bytes(data))
    elif how == "truncated":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif how == "nan-weights":
        arrays = load_file(str(weights))
        key = sorted(k for k, v in arrays.items() if v.dtype.kind == "f")[0]
        arrays[key] = np.full_like(arrays[key], np.nan)
        save_file(arrays, str(weights))
        rehash()
    elif how == "garbage-weights":
        weights.write_bytes(b"\x00" * 64)
        rehash()
    elif how == "invalid-json":
        config_path.write_text('{"method": "locus", "params": {')
    elif how == "json-list":
        config_path.write_text("[1, 2, 3]")
    elif how == "no-config":
        config_path.unlink()
    elif how == "no-weights":
        weights.unlink()
    elif how == "no-checksum":
        config.pop("weights_sha256", None)
        config_path.write_text(json.dumps(config))
    elif how == "unknown-method":
        config["method"] = "gpt_router"
        config_path.write_text(json.dumps(config))
    elif how == "model-ids-mismatch":
        config["model_ids"] = config["model_ids"][:-1]
        config_path.write_text(json.dumps(config))
    else:
        raise ValueError(how)
    return str(directory)


def scores_csv(ws) -> str:
    rows = ["prompt,score"] + [f"What is {i} plus {i + 1}?,{i % 2}" for i in range(6)]
    return str(ws.write("scores.csv", "\n".join(rows) + "\n"))


def embed(ws, how: str) -> list[str]:
    return ["embed", "--checkpoint", damaged_run(ws, how), "--scores", scores_csv(ws)]


def route(ws, how: str, run: str = "locus_run") -> list[str]:
    return ["route", "--checkpoint", damaged_run(ws, how, run), "What is 2 plus 3?"]


def good_route(ws, *extra) -> list[str]:
    return ["route", "--checkpoint", str(ws.copy("locus_run", "run")), "What is 2 plus 3?", *extra]


def _c(id, klass, before, argv, message, **kw):
    return Case(id=f"runs-{id}", klass=klass, before=before, argv=argv, message=message, **kw)


RERUN_ENCODE = r"re-run `locus encode"
RERUN_TRAIN = r"re-run the training rule"

# --------------------------------------------------------------------------------------------------
# the cases
# --------------------------------------------------------------------------------------------------
CASES = [
    # encodings that do not belong to the data set: refused before any fitting, nothing written
    _c(
        "train-encodings-of-other-dataset",
        "encodings",
        "silent",
        lambda ws: train(ws, data=other_data(ws)),
        rf"encodings .* were made for another data set .*cover 100% .*{RERUN_ENCODE}",
    ),
    _c(
        "train-encodings-without-fingerprint",
        "encodings",
        "silent",
        lambda ws: train(ws, encodings=edited_encodings(ws, no_fingerprint)),
        rf"record no data-set fingerprint.*{RERUN_ENCODE}",
    ),
    _c(
        "train-encodings-shifted-prompt-ids",
        "encodings",
        "ok",
        lambda ws: train(ws, encodings=edited_encodings(ws, shifted_ids)),
        rf"lack 60 of the 60 prompt ids .*{RERUN_ENCODE}",
    ),
    _c(
        "train-encodings-nan-vector",
        "encodings",
        "silent",
        lambda ws: train(ws, encodings=edited_encodings(ws, nan_row)),
        rf"encodings hold NaN/Inf .*{RERUN_ENCODE}",
    ),
    _c(
        "train-encodings-duplicate-prompt-id",
        "encodings",
        "traceback",
        lambda ws: train(ws, encodings=edited_encodings(ws, duplicate_id)),
        rf"duplicate prompt_id .*{RERUN_ENCODE}",
    ),
    # training sizes the split does not have
    _c(
        "train-size-above-split",
        "runs",
        "silent",
        lambda ws: train(ws, size="4096"),
        r"train_size 4096 exceeds the 40 queries of the train split; choose a training size <= 40",
    ),
    _c(
        "train-size-one-above-split",
        "runs",
        "silent",
        lambda ws: train(ws, size="41"),
        r"train_size 41 exceeds the 40 queries",
    ),
    # method parameters: refused when the method is created, before the data are read
    _c(
        "train-unknown-parameter",
        "runs",
        "ok",
        lambda ws: train(ws, params={"kk": 3}),
        r"unknown parameter\(s\) \['kk'\]; known: .*'k_grid'",
    ),
    _c(
        "train-select-by-unknown",
        "runs",
        "ok",
        lambda ws: train(ws, method="embedllm", params={"select_by": "test_acc"}),
        r"select_by must be one of \['val_routing', 'val_bce', 'val_acc'\], got 'test_acc'",
    ),
    _c(
        "train-locus-dim-not-divisible-by-heads",
        "runs",
        "traceback",
        lambda ws: train(ws, method="locus", params={**TINY_LOCUS, "dim": 10, "heads": 4}),
        r"heads must be a divisor of dim \(10\), got 4",
    ),
    _c(
        "train-locus-unknown-encoder-kind",
        "runs",
        "traceback",
        lambda ws: train(ws, method="locus", params={**TINY_LOCUS, "encoder_kind": "lstm"}),
        r"encoder_kind must be one of \['isab', 'sab'\], got 'lstm'",
    ),
    # damaged checkpoints: embed / route say which file and to re-run training
    _c(
        "route-weights-modified",
        "checkpoint",
        "silent",
        lambda ws: route(ws, "flipped-byte"),
        rf"model.safetensors: SHA-256 .* does not match .*truncated or modified .*{RERUN_TRAIN}",
    ),
    _c(
        "embed-weights-truncated",
        "checkpoint",
        "traceback",
        lambda ws: embed(ws, "truncated"),
        rf"model.safetensors: SHA-256 .*truncated or modified .*{RERUN_TRAIN}",
    ),
    _c(
        "route-knn-weights-truncated",
        "checkpoint",
        "traceback",
        lambda ws: route(ws, "truncated", "knn_run"),
        rf"model.safetensors: SHA-256 .*truncated or modified .*{RERUN_TRAIN}",
    ),
    _c(
        "embed-nan-weights",
        "checkpoint",
        "silent",
        lambda ws: embed(ws, "nan-weights"),
        rf"model.safetensors: array '.*' holds \d+ NaN/Inf value\(s\); the checkpoint is damaged .*{RERUN_TRAIN}",
    ),
    _c(
        "route-weights-not-safetensors",
        "checkpoint",
        "traceback",
        lambda ws: route(ws, "garbage-weights"),
        rf"model.safetensors: not a readable safetensors file .*{RERUN_TRAIN}",
    ),
    _c(
        "route-config-invalid-json",
        "checkpoint",
        "traceback",
        lambda ws: route(ws, "invalid-json"),
        rf"config.json: not valid JSON .*{RERUN_TRAIN}",
    ),
    _c(
        "embed-config-not-an-object",
        "checkpoint",
        "traceback",
        lambda ws: embed(ws, "json-list"),
        rf"config.json: must hold a JSON object, found list.*{RERUN_TRAIN}",
    ),
    _c(
        "route-config-missing",
        "checkpoint",
        "ok",
        lambda ws: route(ws, "no-config"),
        rf"config.json: missing; .*{RERUN_TRAIN}",
    ),
    _c(
        "embed-weights-missing",
        "checkpoint",
        "ok",
        lambda ws: embed(ws, "no-weights"),
        rf"model.safetensors: missing; .*{RERUN_TRAIN}",
    ),
    _c(
        "route-weights-unverifiable",
        "checkpoint",
        "silent",
        lambda ws: route(ws, "no-checksum"),
        rf"no 'weights_sha256' entry .*{RERUN_TRAIN}",
    ),
    _c(
        "route-config-unknown-method",
        "checkpoint",
        "poor-message",
        lambda ws: route(ws, "unknown-method"),
        rf"config.json: unknown method 'gpt_router'.*{RERUN_TRAIN}",
    ),
    _c(
        "route-config-model-ids-mismatch",
        "checkpoint",
        "silent",
        lambda ws: route(ws, "model-ids-mismatch"),
        rf"do not describe a fitted 'locus' .*{RERUN_TRAIN}",
    ),
    # model lists naming no model of the run
    _c(
        "route-models-unknown-name",
        "checkpoint",
        "ok",
        lambda ws: good_route(ws, "--models", "org/model-9"),
        r"--models: 'org/model-9' is not a model of this run .*e\.g\. 0=org/model-0",
    ),
    _c(
        "route-models-unknown-id",
        "checkpoint",
        "ok",
        lambda ws: good_route(ws, "--models", "0,77"),
        r"--models: '77' is not a model of this run",
    ),
]
