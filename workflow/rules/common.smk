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
    """The label a data set's captions, titles and summary carry (its own `label`, else its name), saying
    when the pool's plan capped the evaluation counts at its training split."""
    label = config["datasets"][dataset].get("label", dataset)
    capped = dataset == DATASET and PLAN is not None and any(a["why"].startswith(TRAIN_CAP) for a in PLAN.adapted)
    return f"{label}; sizes capped at its {PLAN.facts.train_queries} training queries" if capped else label


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


# --- the pool's plan: sizes fitted to the pool, outputs it cannot carry skipped (locus.capacity) -------
from locus import capacity as _capacity


def pool_facts(dataset):
    """The pool's counts and model columns: from its canonical files once built, else from its source read
    in memory (nothing written); None when the source cannot be read yet (the data rule names the fix)."""
    facts = _capacity.read_facts(f"results/data/{dataset}")
    if facts is None:
        entry = config["datasets"][dataset]
        params, options = _source_params(entry["source"], entry["params"] or {}, {"duplicates": config["duplicates"]})
        facts = _capacity.source_facts(entry["source"], params, options)
    return facts


def _fit_config_to_pool(plan):
    """Every evaluation-count setting capped by the training split (and by the reference set for what is
    subsampled from it), every neighbour or model count by the pool; each change recorded in the plan."""
    f = plan.facts
    train = (f.train_queries, TRAIN_CAP)
    cfg, geo, views = config, config["geometry"], config["geometry"]["views"]
    sizes = lambda key, holder, name, cap: holder.__setitem__(key, plan.sizes(name, holder[key], *cap))
    size = lambda key, holder, name, cap: holder.__setitem__(key, plan.size(name, holder[key], *cap))
    sizes("train_sizes", cfg, "train_sizes", train)
    sizes("train_sizes", cfg["sample_efficiency"], "sample_efficiency.train_sizes", train)
    sizes("train_sizes", cfg["precision_effect"], "precision_effect.train_sizes", train)
    for key in ("dim_train_sizes", "encoder_train_sizes"):
        sizes(key, cfg["ablation"], f"ablation.{key}", train)
    size("train_size", cfg["regeneration"], "regeneration.train_size", train)
    reg = (cfg["regeneration"]["train_size"], "regeneration.train_size")
    sizes("sizes", cfg["regeneration"], "regeneration.sizes", reg)
    size("train_size", cfg["onboarding"], "onboarding.train_size", train)
    sizes("sizes", cfg["onboarding"], "onboarding.sizes", train)
    size("train_size", cfg["onboarding_rivals"], "onboarding_rivals.train_size", train)
    sizes("sizes", cfg["onboarding_rivals"], "onboarding_rivals.sizes", train)
    field = (max(1, min(f.models - 1, round(38 * f.models / 112))), "the field's share (38 of 112) of the pool")
    size("held_out", cfg["onboarding_rivals"], "onboarding_rivals.held_out", field)
    sizes("sizes", cfg["active_onboarding"], "active_onboarding.sizes", train)
    size("reference_train_size", geo, "geometry.reference_train_size", train)
    ref = (geo["reference_train_size"], "geometry.reference_train_size")
    for key in ("hypothetical_sizes", "sizes", "evalset_sizes"):
        sizes(key, views, f"geometry.views.{key}", ref)
    for key in ("calibration", "decisions"):
        if cfg[key]["train_size"] is not None:
            size("train_size", cfg[key], f"{key}.train_size", train)
    _default_views_models(plan, views)
    others = (max(f.models - 1, 1), "the other models of the pool")
    size("max_k", geo["neighbours"], "geometry.neighbours.max_k", others)
    if geo["portfolio"]["max_k"] is not None:
        size("max_k", geo["portfolio"], "geometry.portfolio.max_k", (f.models, "the pool's models"))


def _default_views_models(plan, views):
    """The views' default models name the paper's pool: on another pool, those it lacks are replaced by its
    own (first by name). A name the user set is kept, and checked by views.smk (a typo is an error)."""
    from locus.data.canonical import resolve_model

    schema = yaml.safe_load(Path(_SCHEMA).read_text())["properties"]["geometry"]["properties"]["views"]["properties"]
    names = dict(enumerate(plan.facts.names))

    def present(name):
        try:
            return names[resolve_model(name, names, "")]
        except LocusError:
            return None

    why = "the paper's models that this pool lacks replaced by its own"
    for key, single in (("robustness_models", False), ("convergence_model", True)):
        asked = [views[key]] if single else list(views[key])
        if asked != ([schema[key]["default"]] if single else schema[key]["default"]):
            continue
        found = [present(m) for m in asked]
        used = plan.models(f"geometry.views.{key}", asked, [m for m in found if m], why)
        views[key] = used[0] if single else used


def _skip_what_the_pool_lacks(plan):
    """Outputs that need model metadata this pool does not have."""
    f = plan.facts
    figure = lambda name, *ext: [f"figures/{name}.{e}" for e in ("pdf", "png", "csv", *ext)]
    if not f.has("family"):
        plan.skip(figure("models_family_clustering", "json"), "no model families in this pool (models `family`)")
    if config["onboarding"]["held_out"] is None and f.held_out_models == 0:
        plan.skip(
            figure("sample_eff_ood_test")
            + figure("active_onboarding")
            + ["tables/active_onboarding.tex", "tables/active_onboarding.csv"],
            "no held-out models in this pool (no `held_out` column): name them in onboarding.held_out",
        )
    if not (f.has("cost") or f.has("params_b")):
        plan.skip(
            figure("cost_quality") + ["tables/aiq.tex", "tables/aiq.csv"],
            "no model costs or parameter counts in this pool (models `cost` or `params_b`)",
        )
    if not f.has("params_b"):
        plan.skip(figure("model_portfolio", "json"), "no parameter counts in this pool (models `params_b`)")


TRAIN_CAP = "the pool's training queries"
POOL = pool_facts(DATASET)
PLAN = _capacity.PoolPlan(DATASET, POOL) if POOL is not None else None
if PLAN is not None:
    _fit_config_to_pool(PLAN)
    _skip_what_the_pool_lacks(PLAN)
    for _line in PLAN.lines():
        print(f"locus: pool {DATASET}: {_line}", file=sys.stderr)


def planned(targets):
    """`targets` (results/... paths) without the outputs the pool's plan skips."""
    flat = [t for group in targets for t in ([group] if isinstance(group, str) else group)]
    return [t for t in flat if PLAN is None or not PLAN.is_skipped(t.removeprefix("results/"))]


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
