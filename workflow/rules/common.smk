# Shared helpers: config validation (schema, then cross-field checks against the method registry and
# the data), wildcard constraints, data and encoding paths. Run paths live in train.smk, beside the rule
# that writes the runs.
import json
import os
import shlex
import sys
from pathlib import Path

import yaml
from snakemake.utils import validate

from locus import methods as _methods
from locus import run_artifacts as _artifacts
from locus.constants import RECIPES as _RECIPES
from locus.data.truth import SOURCES_WITH_TRUTH as _TRUTH_SOURCES, TRUTH_FILE as _TRUTH_FILE
from locus.encoders import PACKAGED as _PACKAGED_ENCODERS
from locus.errors import LocusError

_SCHEMA = workflow.source_path("../schemas/config.schema.yaml")


def _config_error(message):
    raise ValueError(f"config error: {message} (see config/config.yaml and README 'Configuration')")


def _coerce_command_line_lists(cfg, schema_path):
    """`--config seeds='[0,1,2]'` arrives as a string (or a list of strings): parse the values of
    list-valued keys as YAML, so they validate as numbers (a single value becomes a one-element list)."""
    schema = yaml.safe_load(Path(schema_path).read_text())

    def resolve(spec):
        ref = spec.get("$ref", "")
        return {**schema["$defs"][ref.removeprefix("#/$defs/")], **spec} if ref.startswith("#/$defs/") else spec

    def parse(key, raw):
        try:
            return yaml.safe_load(raw) if isinstance(raw, str) else raw
        except yaml.YAMLError as exc:
            _config_error(f"{key}={raw!r} is not a YAML list, e.g. {key}='[0,1,2]' ({exc})")

    for key, spec in schema.get("properties", {}).items():
        if resolve(spec).get("type") != "array" or key not in cfg:
            continue
        value = parse(key, cfg[key])
        value = value if isinstance(value, list) else [value]
        cfg[key] = [parse(key, item) for item in value]


def _schema_path(error):
    """The config key of a schema error, as a user writes it: `methods.locus.params.heads`, `seeds[1]`."""
    key = ""
    for part in error.absolute_path:
        key += f"[{part}]" if isinstance(part, int) else f".{part}" if key else str(part)
    return key


def _validate_config(cfg, schema_path):
    """The schema check with one line naming the offending key (Snakemake's own message spans many lines),
    then Snakemake's validation, which also fills in the schema's defaults."""
    import jsonschema

    schema = yaml.safe_load(Path(schema_path).read_text())
    error = jsonschema.exceptions.best_match(jsonschema.validators.validator_for(schema)(schema).iter_errors(cfg))
    if error is not None:
        _config_error(f"{_schema_path(error) or 'top level'}: {error.message}")
    validate(cfg, schema_path, set_default=True)


_coerce_command_line_lists(config, _SCHEMA)
_validate_config(config, _SCHEMA)  # the schema's defaults fill every missing key

DATASET = config["dataset"]
ENCODER = config["encoder"]
SE = config["sample_efficiency"]
TABLE_METHODS = config["table_methods"]
BY_DATASET_METHODS = config.get("by_dataset_methods", TABLE_METHODS)
if DATASET not in config["datasets"]:
    _config_error(f"dataset {DATASET!r} is not a key of `datasets` ({', '.join(config['datasets'])})")


def dataset_label(dataset):
    """The label a data set's captions, titles and summary carry (its own `label`, else its name)."""
    return config["datasets"][dataset].get("label", dataset)


# --- data sets: each source's parameters (names, types, ranges) as `locus data` checks them ----------
from locus.params import source_params as _source_params

for _d, _entry in config["datasets"].items():
    try:
        _source_params(_entry["source"], _entry["params"] or {}, {"duplicates": config["duplicates"]})
    except LocusError as _exc:
        _config_error(f"datasets.{_d}.params: {_exc}")


# --- methods: names, parameters and dimensions are checked against the registry --------------------
_known = _methods.names()
for _m in config["methods"]:
    if _m not in _known:
        _config_error(f"methods: {_m!r} is not a registered method; known: {', '.join(_known)}")
for _where, _list in (
    ("table_methods", TABLE_METHODS),
    ("by_dataset_methods", BY_DATASET_METHODS),
    ("sample_efficiency.methods", SE["methods"]),
):
    for _m in _list:
        if _m not in config["methods"]:
            _config_error(f"{_where}: method {_m!r} has no entry under `methods` (known: {', '.join(_known)})")
for _m, _entry in config["methods"].items():
    _cls = _methods.method_class(_m)
    _params = _entry["params"] or {}
    for _key, _home in (("dim", f"methods.{_m}.dim"), ("threads", "the top-level `threads`")):
        if _key in _params:
            _config_error(f"methods.{_m}.params.{_key}: set it with {_home} instead (one source for each value)")
    if ("dim" in _cls.defaults) != (_entry["dim"] > 0):
        _config_error(
            f"methods.{_m}.dim = {_entry['dim']}: "
            + (
                "this method has an embedding, give its dimension (> 0)"
                if "dim" in _cls.defaults
                else "this method has no embedding, use dim: 0"
            )
        )
    try:  # names (and, for LOCUS, types and ranges) as `locus train` checks them
        _cls.validate_params({**_params, **({"dim": _entry["dim"]} if _entry["dim"] > 0 else {})})
    except LocusError as _exc:
        _config_error(f"methods.{_m}.params: {str(_exc).removeprefix(f'method {_m!r}: ')}")
if SE["reference_method"] not in SE["methods"]:
    _config_error(
        f"sample_efficiency.reference_method {SE['reference_method']!r} is not among "
        f"sample_efficiency.methods {SE['methods']}"
    )

# --- encoder: packaged (offline) ones, the paper's hub ones, or names the user vouches for ----------
_HUB_ENCODERS = ("paraphrase-albert-small-v2", "all-distilroberta-v1")
_encoders_ok = set(_PACKAGED_ENCODERS) | set(_HUB_ENCODERS) | set(config["extra_encoders"])
if ENCODER not in _encoders_ok:
    _config_error(
        f"encoder {ENCODER!r} is unknown; offline: {', '.join(sorted(_PACKAGED_ENCODERS))}; with internet "
        f"also: {', '.join(_HUB_ENCODERS)}; for another sentence-transformers model add its short name "
        f"to `extra_encoders`"
    )


# --- the number of training queries of a data set, known at DAG-build time where possible ----------
def train_split_size(dataset):
    """Number of training queries of a data set, when it can be known before building it (None if not)."""
    entry = config["datasets"][dataset]
    if entry["source"] == "synthetic":
        from locus.data import synthetic

        try:
            return int(synthetic.split_sizes(entry["params"])["train"])
        except LocusError as exc:
            _config_error(f"datasets.{dataset}.params: {exc}")
    queries = Path(f"results/data/{dataset}/queries.parquet")
    if queries.is_file():
        import pyarrow.parquet as pq

        try:
            return int(sum(s == "train" for s in pq.read_table(queries, columns=["split"]).column(0).to_pylist()))
        except Exception:  # an unreadable file is rebuilt by the data rule and refused by the loader
            return None
    return None


# The interpreter running Snakemake also runs the jobs (the venv's python on every node).
LOCUS = f"{shlex.quote(sys.executable)} -m locus"


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


def input_dir(key, quote=False):
    """A params function: the directory of the rule's input `key` (of its first file), derived from the
    inputs rather than retyped; shell-quoted with `quote`."""

    def get(wildcards, input):
        files = getattr(input, key)
        path = os.path.dirname(files if isinstance(files, str) else files[0])
        return shlex.quote(path) if quote else path

    return get


def as_json(value):
    return json.dumps(value, sort_keys=True)
