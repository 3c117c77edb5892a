"""The workflow's config past its schema (workflow/schemas/config.schema.yaml): the pool's plan applied to it
(:func:`fit_to_pool`) and every cross-field check (:func:`check`), run by workflow/rules/common.smk when
Snakemake builds the DAG.

The checks that need the data set (model names the settings give) read the pool's facts: those of the
canonical files once built, else of the source read in memory (:func:`pool_facts`), so they run at the DAG
build of the first run as of every later one. When the source cannot be read yet (files still to be
downloaded), the first rules that read the data set run them (:func:`check_data`): same function, same
messages, and a run it lets through is never refused by a later, unchanged one.
"""

from __future__ import annotations

import copy
from pathlib import Path

from locus import capacity
from locus.constants import SEED_SECTIONS
from locus.errors import ConfigError, LocusError

HELP = "(see config/config.yaml and README 'Configuration')"
HUB_ENCODERS = ("paraphrase-albert-small-v2", "all-distilroberta-v1")  # the paper's, from the hub
TRAIN_CAP = "the pool's training queries"
FALLBACK_POLICIES = ("best_single", "abstain")  # decisions.fallbacks that are not model names


def error(message: str) -> ConfigError:
    """The one-line config error the workflow raises: the key, what is wrong, and where to read more."""
    return ConfigError(f"config error: {message} {HELP}")


# --- the schema: list values from the command line, and its first error as one line --------------------
def _load_schema(schema) -> dict:
    import yaml

    return schema if isinstance(schema, dict) else yaml.safe_load(Path(schema).read_text())


def parse_list_values(cfg: dict, schema) -> None:
    """`--config seeds='[0,1,2]'` arrives as a string (or a list of strings): parse the values of list-valued
    keys as YAML, so they validate as numbers (a single value becomes a one-element list)."""
    import yaml

    schema = _load_schema(schema)

    def resolve(spec):
        ref = spec.get("$ref", "")
        return {**schema["$defs"][ref.removeprefix("#/$defs/")], **spec} if ref.startswith("#/$defs/") else spec

    def parse(key, raw):
        try:
            return yaml.safe_load(raw) if isinstance(raw, str) else raw
        except yaml.YAMLError as exc:
            raise error(f"{key}={raw!r} is not a YAML list, e.g. {key}='[0,1,2]' ({exc})") from None

    for key, spec in schema.get("properties", {}).items():
        if resolve(spec).get("type") != "array" or key not in cfg:
            continue
        value = parse(key, cfg[key])
        value = value if isinstance(value, list) else [value]
        cfg[key] = [parse(key, item) for item in value]


def check_schema(cfg: dict, schema) -> None:
    """The schema's best-matching error as one line naming the key as a user writes it (`seeds[1]`,
    `methods.locus.params.heads`); Snakemake's own report spans many lines."""
    import jsonschema

    schema = _load_schema(schema)
    found = jsonschema.exceptions.best_match(jsonschema.validators.validator_for(schema)(schema).iter_errors(cfg))
    if found is not None:
        key = ""
        for part in found.absolute_path:
            key += f"[{part}]" if isinstance(part, int) else f".{part}" if key else str(part)
        raise error(f"{key or 'top level'}: {found.message}")


# --- the pool: its facts, and the config fitted to them -------------------------------------------------
def pool_facts(cfg: dict, dataset: str, results: str | Path = "results") -> capacity.PoolFacts | None:
    """The pool's counts, model columns and names: from its canonical files once built, else from its source
    read in memory (nothing written). None when the source cannot be read yet (the data rule names the fix)
    or its settings are wrong (:func:`check` names them)."""
    from locus.params import source_params

    facts = capacity.read_facts(Path(results) / "data" / dataset)
    if facts is None and dataset in cfg["datasets"]:
        entry = cfg["datasets"][dataset]
        try:
            params, options = source_params(entry["source"], entry["params"] or {}, {"duplicates": cfg["duplicates"]})
        except LocusError:
            return None
        facts = capacity.source_facts(entry["source"], params, options)
    return facts


def fit_to_pool(cfg: dict, dataset: str, facts: capacity.PoolFacts | None, schema) -> capacity.PoolPlan | None:
    """The pool's plan, applied to `cfg` in place: every evaluation-count setting capped by the training split
    (and by the reference set for what is subsampled from it), every neighbour or model count by the pool, the
    views' default models replaced by the pool's own where it lacks them, and the outputs it cannot carry
    skipped; each change recorded in the plan. None (nothing changed) when the facts are unknown."""
    if facts is None:
        return None
    plan = capacity.PoolPlan(dataset, facts)
    f = facts
    train = (f.train_queries, TRAIN_CAP)
    geo, views = cfg["geometry"], cfg["geometry"]["views"]

    def sizes(key, holder, name, cap):
        holder[key] = plan.sizes(name, holder[key], *cap)

    def size(key, holder, name, cap):
        holder[key] = plan.size(name, holder[key], *cap)

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
    _default_views_models(plan, views, _load_schema(schema))
    others = (max(f.models - 1, 1), "the other models of the pool")
    size("max_k", geo["neighbours"], "geometry.neighbours.max_k", others)
    if geo["portfolio"]["max_k"] is not None:
        size("max_k", geo["portfolio"], "geometry.portfolio.max_k", (f.models, "the pool's models"))
    _skip_what_the_pool_lacks(plan, cfg)
    return plan


def _default_views_models(plan: capacity.PoolPlan, views: dict, schema: dict) -> None:
    """The views' default models name the paper's pool: on another pool, those it lacks are replaced by its
    own (first by name). A name the user set is kept, and checked (a typo is an error)."""
    from locus.data.canonical import resolve_model

    defaults = schema["properties"]["geometry"]["properties"]["views"]["properties"]
    names = dict(enumerate(plan.facts.names))

    def present(name):
        try:
            return names[resolve_model(name, names, "")]
        except LocusError:
            return None

    why = "the paper's models that this pool lacks replaced by its own"
    for key, single in (("robustness_models", False), ("convergence_model", True)):
        asked = [views[key]] if single else list(views[key])
        if asked != ([defaults[key]["default"]] if single else defaults[key]["default"]):
            continue
        found = [present(m) for m in asked]
        used = plan.models(f"geometry.views.{key}", asked, [m for m in found if m], why)
        views[key] = used[0] if single else used


def _skip_what_the_pool_lacks(plan: capacity.PoolPlan, cfg: dict) -> None:
    """Outputs that need model metadata this pool does not have."""
    f = plan.facts

    def figure(name, *ext):
        return [f"figures/{name}.{e}" for e in ("pdf", "png", "csv", *ext)]

    if not f.has("family"):
        plan.skip(figure("models_family_clustering", "json"), "no model families in this pool (models `family`)")
    if cfg["onboarding"]["held_out"] is None and f.held_out_models == 0:
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


def dataset_label(cfg: dict, dataset: str, plan: capacity.PoolPlan | None) -> str:
    """The label a data set's captions, titles and summary carry (its own `label`, else its name), saying when
    the pool's plan capped the evaluation counts at its training split."""
    label = cfg["datasets"][dataset].get("label", dataset)
    capped = plan is not None and plan.dataset == dataset and any(a["why"].startswith(TRAIN_CAP) for a in plan.adapted)
    return f"{label}; sizes capped at its {plan.facts.train_queries} training queries" if capped else label


def train_size(cfg: dict, key: str) -> int:
    """The training size of the runs that `key` (calibration, decisions) reads: its own, else the smallest of
    the tables' training sizes."""
    own = cfg[key]["train_size"]
    return min(cfg["train_sizes"]) if own is None else int(own)


def train_rules(cfg: dict) -> dict[str, list[str]]:
    """The configured methods each training rule runs: those that use torch `train_run` (a GPU job in the SLURM
    profile), the others (kNN, K-Means) `train_run_cpu`."""
    from locus import methods

    rules = {"train_run": [], "train_run_cpu": []}
    for m in cfg["methods"]:
        rules["train_run" if methods.method_class(m).uses_torch else "train_run_cpu"].append(m)
    return rules


def known_encoders(cfg: dict) -> set[str]:
    """The encoders a config may name: packaged (offline), the paper's hub ones, and `extra_encoders`."""
    from locus.encoders import PACKAGED

    return set(PACKAGED) | set(HUB_ENCODERS) | set(cfg["extra_encoders"])


# --- the checks -------------------------------------------------------------------------------------------
def check(cfg: dict, facts: capacity.PoolFacts | None = None) -> None:
    """Every cross-field check of a schema-valid config (its defaults filled in, fitted to the pool), in the
    order of the config's blocks; the first failing one is a :class:`ConfigError` (see :func:`error`). With
    the pool's `facts`, also the model names the settings give. What the schema checks is not repeated."""
    from locus import methods
    from locus import run_artifacts as artifacts
    from locus.encoders import PACKAGED
    from locus.params import source_params

    dataset, encoder, se, boot = cfg["dataset"], cfg["encoder"], cfg["sample_efficiency"], cfg["bootstrap"]
    if dataset not in cfg["datasets"]:
        raise error(f"dataset {dataset!r} is not a key of `datasets` ({', '.join(cfg['datasets'])})")
    for name, entry in cfg["datasets"].items():  # each source's parameters (names, types, ranges)
        try:
            source_params(entry["source"], entry["params"] or {}, {"duplicates": cfg["duplicates"]})
        except LocusError as exc:
            raise error(f"datasets.{name}.params: {exc}") from None

    # methods: names, parameters and dimensions against the registry, as `locus train` checks them
    known = methods.names()
    for m in cfg["methods"]:
        if m not in known:
            raise error(f"methods: {m!r} is not a registered method; known: {', '.join(known)}")
    table, by_dataset = cfg["table_methods"], cfg.get("by_dataset_methods", cfg["table_methods"])
    for where, listed in (
        ("table_methods", table),
        ("by_dataset_methods", by_dataset),
        ("sample_efficiency.methods", se["methods"]),
    ):
        for m in listed:
            if m not in cfg["methods"]:
                raise error(f"{where}: method {m!r} has no entry under `methods` (known: {', '.join(known)})")
    for m, entry in cfg["methods"].items():
        cls, params, dim = methods.method_class(m), entry["params"] or {}, entry["dim"]
        for key, home in (("dim", f"methods.{m}.dim"), ("threads", "the top-level `threads`")):
            if key in params:
                raise error(f"methods.{m}.params.{key}: set it with {home} instead (one source for each value)")
        if ("dim" in cls.defaults) != (dim > 0):
            raise error(
                f"methods.{m}.dim = {dim}: "
                + (
                    "this method has an embedding, give its dimension (> 0)"
                    if "dim" in cls.defaults
                    else "this method has no embedding, use dim: 0"
                )
            )
        try:
            cls.validate_params({**params, **({"dim": dim} if dim > 0 else {})})
        except LocusError as exc:
            raise error(f"methods.{m}.params: {str(exc).removeprefix(f'method {m!r}: ')}") from None
    if se["reference_method"] not in se["methods"]:
        raise error(
            f"sample_efficiency.reference_method {se['reference_method']!r} is not among "
            f"sample_efficiency.methods {se['methods']}"
        )
    # encoders: packaged (offline) ones, the paper's hub ones, or names the user vouches for
    encoders_ok = known_encoders(cfg)
    unknown = (
        f"is unknown; offline: {', '.join(sorted(PACKAGED))}; with internet also: {', '.join(HUB_ENCODERS)}; "
        f"for another sentence-transformers model add its short name to `extra_encoders`"
    )
    if encoder not in encoders_ok:
        raise error(f"encoder {encoder!r} {unknown}")
    for group in train_rules(cfg).values():  # one rule's methods write the same files
        for m in group:
            if artifacts.run_files(m) != artifacts.run_files(group[0]):
                raise error(f"methods {group[0]!r} and {m!r} write different run files; give them their own rule")
    for where, listed in (("table_methods", table), ("by_dataset_methods", by_dataset)):
        if boot["reference_method"] not in listed:
            raise error(
                f"bootstrap.reference_method {boot['reference_method']!r} is not among {where} "
                f"{listed}: every table compares its methods to it"
            )

    # LOCUS: the ablations, the portfolio, onboarding and the precision effect are about it
    if "locus" not in cfg["methods"]:
        raise error("ablation: the ablation tables compare settings of LOCUS; add locus under `methods`")
    abl, locus = cfg["ablation"], cfg["methods"]["locus"]
    if locus["dim"] not in abl["dims"]:
        raise error(
            f"methods.locus.dim {locus['dim']} is not among ablation.dims {abl['dims']}: the dimension ablation "
            f"compares every d to the configured one (its reference row); add {locus['dim']} to ablation.dims"
        )
    for d in abl["dims"]:
        try:
            methods.method_class("locus").validate_params({**(locus["params"] or {}), "dim": d})
        except LocusError as exc:
            raise error(f"ablation.dims: d = {d} does not fit LOCUS's parameters ({exc})") from None
    if encoder not in abl["encoders"]:
        raise error(
            f"encoder {encoder!r} is not among ablation.encoders {abl['encoders']}: the encoder ablation "
            f"compares every encoder to the configured one (its reference row); add it to ablation.encoders"
        )
    for e in abl["encoders"]:
        if e not in encoders_ok:
            raise error(f"ablation.encoders: {e!r} {unknown}")

    tta = cfg["time_to_accuracy"]
    if tta["reference"] not in tta["recipes"]:
        raise error(
            f"time_to_accuracy.reference {tta['reference']!r} is not among "
            f"time_to_accuracy.recipes {tta['recipes']}; add it to the recipes"
        )

    # geometry: embedding methods, the reference method, clustering, the views' subsampled sets
    geo, nb, views = cfg["geometry"], cfg["geometry"]["neighbours"], cfg["geometry"]["views"]
    for m in geo["methods"]:
        if m not in cfg["methods"]:
            raise error(f"geometry.methods: method {m!r} has no entry under `methods`")
        if not methods.info(m).has_embeddings:
            raise error(f"geometry.methods: {m!r} has no model embeddings; list embedding methods only")
    for section in SEED_SECTIONS:
        sec = cfg[section]
        if int(sec["seed"]) in sec.get("extra_seeds", []):
            raise error(
                f"{section}.extra_seeds {sec['extra_seeds']} holds {section}.seed {sec['seed']}: list only the "
                f"further seeds ({section}.seed's outputs keep the usual paths)"
            )
    if nb["reference_method"] not in geo["methods"]:
        raise error(
            f"geometry.neighbours.reference_method {nb['reference_method']!r} is not among geometry.methods "
            f"{list(geo['methods'])}"
        )
    if nb["linkage"] in ("ward", "centroid", "median") and nb["cluster_metric"] != "euclidean":
        raise error(
            f"geometry.neighbours.linkage {nb['linkage']} assumes Euclidean distances; set cluster_metric: "
            "euclidean or choose another linkage"
        )
    ref_n = int(geo["reference_train_size"])
    for key in ("sizes", "evalset_sizes"):
        if not [n for n in views[key] if n <= ref_n]:
            raise error(
                f"geometry.views.{key} {views[key]}: all exceed geometry.reference_train_size {ref_n}; "
                f"the subsampled sets are drawn from the reference set"
            )

    reg = cfg["regeneration"]
    tsne = {"hidden_layers": reg["hidden_layers"][0], "dim": reg["dims"][-1], **reg["tsne"]}
    if int(tsne["hidden_layers"]) not in reg["hidden_layers"] or int(tsne["dim"]) not in reg["dims"]:
        raise error(
            f"regeneration.tsne: the cell (hidden_layers {tsne['hidden_layers']}, dim {tsne['dim']}) "
            f"is not in the grid hidden_layers {reg['hidden_layers']} x dims {reg['dims']}"
        )
    if reg["sizes"] and all(n > int(reg["train_size"]) for n in reg["sizes"]):
        raise error(f"regeneration.sizes {reg['sizes']}: all exceed regeneration.train_size {reg['train_size']}")

    # the settings that re-read the tables' runs name one of their training sizes
    pe = cfg["precision_effect"]
    if not set(pe["train_sizes"]) <= set(cfg["train_sizes"]):
        raise error(
            f"precision_effect.train_sizes {pe['train_sizes']} must be among train_sizes {cfg['train_sizes']} "
            "(the runs of the tables are re-scored); drop the others or add them to train_sizes"
        )
    for key, why in (
        ("calibration", "(the runs of the tables are calibrated); change one of them or leave it null (the smallest)"),
        ("decisions", "(the runs of the tables are used); change one of them"),
    ):
        n = train_size(cfg, key)
        if n not in cfg["train_sizes"]:
            raise error(f"{key}.train_size {n} must be one of train_sizes {cfg['train_sizes']} {why}")

    if facts is not None:
        check_names(cfg, facts)


def check_names(cfg: dict, facts: capacity.PoolFacts) -> None:
    """The model names the settings give, against the pool's: the views' models, the held-out models of
    onboarding and the decisions' fallbacks (exact, or a unique case-insensitive match, as the commands
    resolve them)."""
    from locus.data.canonical import resolve_model

    names = dict(enumerate(facts.names))
    views, held = cfg["geometry"]["views"], cfg["onboarding"]["held_out"]
    fallbacks = [m for m in cfg["decisions"]["fallbacks"] if m not in FALLBACK_POLICIES]
    for where, listed in (
        ("geometry.views.robustness_models", views["robustness_models"]),
        ("geometry.views.convergence_model", [views["convergence_model"]]),
        ("onboarding.held_out", held or []),
        ("decisions.fallbacks", fallbacks),
    ):
        for m in listed:
            try:
                resolve_model(m, names, where)
            except LocusError as exc:
                raise error(str(exc)) from None


def check_data(cfg: dict, dataset: str, data_dir: str | Path, schema, checked: bool) -> str:
    """For the first rules that read the data set (a params function, evaluated when the job is about to
    run): when the pool was unknown at DAG build (`checked` False), the config is fitted (a copy) to the
    data set now built and checked as the next DAG build will check it. Returns "" (nothing for the shell)."""
    facts = None if checked else capacity.read_facts(data_dir)
    if facts is not None:
        cfg = copy.deepcopy(cfg)
        fit_to_pool(cfg, dataset, facts, schema)
        check(cfg, facts)
    return ""
