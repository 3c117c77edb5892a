# Shared helpers: config validation, wildcard constraints and path builders.
import json
import shlex
import sys

from snakemake.utils import validate


validate(config, workflow.source_path("../schemas/config.schema.yaml"))


def _config_error(message):
    raise ValueError(f"config error: {message} (see config/config.yaml and README 'Configuration')")


DATASET = config["dataset"]
ENCODER = config["encoder"]
if DATASET not in config["datasets"]:
    _config_error(f"dataset {DATASET!r} is not a key of `datasets` ({', '.join(config['datasets'])})")
for _m in config["table_methods"] + config.get("by_dataset_methods", []) + config.get("sample_efficiency", {}).get("methods", []):
    if _m not in config["methods"]:
        _config_error(f"method {_m!r} is used but has no entry under `methods`")

# The interpreter running Snakemake also runs the jobs (the venv's python on every node).
LOCUS = f"{shlex.quote(sys.executable)} -m locus"


wildcard_constraints:
    dataset="|".join(config["datasets"]),
    encoder=r"[A-Za-z0-9._-]+",
    method="|".join(config["methods"]),
    n=r"\d+",
    dim=r"\d+",
    seed=r"\d+",


def data_files(dataset):
    return multiext(f"results/data/{dataset}/", "queries.parquet", "models.parquet", "scores.parquet")


def data_summary(dataset):
    return f"results/data/{dataset}/summary.md"


def encodings(dataset, encoder):
    return f"results/encodings/{dataset}/{encoder}.parquet"


def run_dir(dataset, encoder, method, n, seed):
    dim = config["methods"][method]["dim"]
    return f"results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}"


def run_metrics(methods, sizes, dataset=None, encoder=None, seeds=None):
    dataset = dataset or DATASET
    encoder = encoder or ENCODER
    return [
        f"{run_dir(dataset, encoder, m, n, s)}/metrics.json"
        for m in methods
        for n in sizes
        for s in (config["seeds"] if seeds is None else seeds)
    ]


def as_json(value):
    return json.dumps(value, sort_keys=True)
