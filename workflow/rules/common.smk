# Shared by every rule file: the config (its schema, then the pool's plan and every cross-field check, in
# locus.workflow_config), wildcard constraints, data and encoding paths, output helpers. Run paths: train.smk.
import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate

from locus import capacity as _capacity
from locus import run_artifacts as _artifacts
from locus import workflow_config as _wc
from locus.constants import RECIPES as _RECIPES
from locus.data.truth import SOURCES_WITH_TRUTH as _TRUTH_SOURCES, TRUTH_FILE as _TRUTH_FILE

_SCHEMA = workflow.source_path("../schemas/config.schema.yaml")
_wc.parse_list_values(config, _SCHEMA)  # `--config seeds='[0,1,2]'` is a list
_wc.check_schema(config, _SCHEMA)  # one line naming the key
validate(config, _SCHEMA, set_default=True)  # the schema's defaults fill every missing key
DATASET = config["dataset"]
POOL = _wc.pool_facts(config, DATASET)  # None while the data set's source cannot be read
PLAN = _wc.fit_to_pool(config, DATASET, POOL, _SCHEMA)  # sizes fitted to the pool, outputs it lacks skipped
for _line in PLAN.lines() if PLAN else []:
    print(f"locus: pool {DATASET}: {_line}", file=sys.stderr)
_wc.check(config, POOL)  # every cross-field check (with the pool's model names where it is known)
ENCODER = config["encoder"]
SE = config["sample_efficiency"]
TABLE_METHODS = config["table_methods"]
BY_DATASET_METHODS = config.get("by_dataset_methods", TABLE_METHODS)
# The interpreter running Snakemake also runs the jobs (the venv's python on every node).
LOCUS = f"{shlex.quote(sys.executable)} -m locus"


def check_data(wildcards, input):
    """A params function of the first rules that read the data set (evaluated when the job starts): the
    checks that need it, if it could not be read when the DAG was built. Adds nothing to the command."""
    checked = POOL is not None or wildcards.dataset != DATASET
    return _wc.check_data(config, DATASET, os.path.dirname(input[0]), _SCHEMA, checked=checked)


def dataset_label(dataset):
    return _wc.dataset_label(config, dataset, PLAN)


def planned(targets):
    """`targets` (results/... paths) without the outputs the pool's plan skips."""
    flat = [t for group in targets for t in ([group] if isinstance(group, str) else group)]
    return [t for t in flat if PLAN is None or not PLAN.is_skipped(t.removeprefix("results/"))]


def one_of(names):
    """A wildcard constraint matching exactly these names (none: matches nothing)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


wildcard_constraints:
    dataset="|".join(config["datasets"]),
    encoder=r"[A-Za-z0-9._-]+",
    method="|".join(config["methods"]),
    n=r"\d+",
    dim=r"\d+",
    seed=r"\d+",


# --- paths: every rule builds data and encoding paths here and nowhere else (run paths: train.smk) ----
def data_files(dataset):
    """The canonical data set: three Parquet files and the manifest that ties them together."""
    return multiext(f"results/data/{dataset}/", "queries.parquet", "models.parquet", "scores.parquet", "dataset.json")


def has_truth(dataset):
    """Whether the data set's source also writes the generator's truth (synthetic; locus.data.truth)."""
    return config["datasets"][dataset]["source"] in _TRUTH_SOURCES


def truth_file(dataset):
    """The generator's truth beside a data set whose source writes one (see has_truth), else None."""
    return f"results/data/{dataset}/{_TRUTH_FILE}" if has_truth(dataset) else None


def data_summary(dataset):
    return f"results/data/{dataset}/summary.md"


def encodings(dataset, encoder):
    return f"results/encodings/{dataset}/{encoder}.parquet"


# --- outputs and params shared by the rules ------------------------------------------------------------
def figure(name, category=None, *extra):
    """A figure's outputs: PDF, PNG (in the report under `category`, with its caption), the plotted points
    (CSV) and files of the `extra` suffixes."""
    png = f"results/figures/{name}.png"
    return {
        "pdf": f"results/figures/{name}.pdf",
        "png": report(png, caption=f"../report/{name}.rst", category=category) if category else png,
        "points": f"results/figures/{name}.csv",
        **{e: f"results/figures/{name}.{e}" for e in extra},
    }


def table(name, category=None):
    """A table's outputs: LaTeX (in the report under `category`, with its caption) and CSV."""
    tex = f"results/tables/{name}.tex"
    tex = report(tex, caption=f"../report/{name}.rst", category=category) if category else tex
    return {"tex": tex, "csv": f"results/tables/{name}.csv"}


def input_dir(key, quote=False):
    """A params function: the directory of the rule's input `key` (of its first file), derived from the
    inputs rather than retyped; shell-quoted with `quote`."""

    def get(wildcards, input):
        files = getattr(input, key)
        path = os.path.dirname(files if isinstance(files, str) else files[0])
        return shlex.quote(path) if quote else path

    return get


def input_dirs(key):
    """A params function: the directories of the rule's input files `key` (one per file), shell-quoted."""
    return lambda wildcards, input: " ".join(shlex.quote(os.path.dirname(f)) for f in getattr(input, key))


def joined(values):
    """`values` as one command-line list: 16,32,64."""
    return ",".join(str(v) for v in values)


def as_json(value):
    return json.dumps(value, sort_keys=True)
