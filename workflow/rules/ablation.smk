# Ablation tables of LOCUS (paper appendices "Ablation on choice of Sentence Encoder" and "Ablation on
# Embedding Dimension"): the by-dataset layout with rows = LOCUS's embedding dimension d, or the query
# encoder, x training size (`locus table {dim,encoder}-ablation-{routing,correctness}`,
# locus/experiments/ablation.py). The runs are ordinary run directories: a LOCUS run at another d or with
# another encoder is just another RUN_DIR path, built by `train_run` (its `d{dim}` wildcard gives --dim;
# the `encode` rule builds the encodings of any configured encoder). The runs at the configured d and
# encoder are those of the other tables. Include after tables.smk (BOOTSTRAP, table_data_dir).
# Config block `ablation` (defaults in the schema; cross-field checks here at DAG-build time):
#   dims / dim_train_sizes: LOCUS's d of the dimension ablation (must contain methods.locus.dim, the
#   reference row) and its training sizes; encoders / encoder_train_sizes: the query encoders (must
#   contain `encoder`, the reference row) and theirs. Seeds: the top-level `seeds`.


localrules:
    dim_ablation_routing_table,
    dim_ablation_correctness_table,
    encoder_ablation_routing_table,
    encoder_ablation_correctness_table,


ABL = config["ablation"]
# the tables (their CSVs beside them); the encoder tables need every encoder of ablation.encoders installed
# (all-mpnet-base-v2: `bash install.sh --mpnet`; hub encoders: internet)
DIM_ABLATION_TARGETS = [f"results/tables/dim_ablation_{_metric}.tex" for _metric in ("routing", "correctness")]
ENCODER_ABLATION_TARGETS = [f"results/tables/encoder_ablation_{_metric}.tex" for _metric in ("routing", "correctness")]
ABLATION_TARGETS = DIM_ABLATION_TARGETS + ENCODER_ABLATION_TARGETS


def _ablation_checks():
    """Cross-field checks of the `ablation` block (the schema checks the types)."""
    unknown = sorted(set(ABL) - {"dims", "dim_train_sizes", "encoders", "encoder_train_sizes"})
    if unknown:
        _config_error(
            f"ablation: unknown key(s) {unknown}; known: dims, dim_train_sizes, encoders, " "encoder_train_sizes"
        )
    if "locus" not in config["methods"]:
        _config_error("ablation: the ablation tables compare settings of LOCUS; add locus under `methods`")
    for key in ABL:
        values = ABL[key]
        if not isinstance(values, list) or not values:
            _config_error(f"ablation.{key} must be a non-empty list, got {values!r}")
        if len(set(map(str, values))) != len(values):
            _config_error(f"ablation.{key} {values} lists a value twice")
        if key != "encoders" and not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
            _config_error(f"ablation.{key} {values}: expected positive integers")
    dim = config["methods"]["locus"]["dim"]
    if dim not in ABL["dims"]:
        _config_error(
            f"methods.locus.dim {dim} is not among ablation.dims {ABL['dims']}: the dimension ablation "
            f"compares every d to the configured one (its reference row); add {dim} to ablation.dims"
        )
    locus_cls = _methods.method_class("locus")
    for d in ABL["dims"]:
        try:
            locus_cls({**(config["methods"]["locus"]["params"] or {}), "dim": d})
        except LocusError as exc:
            _config_error(f"ablation.dims: d = {d} does not fit LOCUS's parameters ({exc})")
    if ENCODER not in ABL["encoders"]:
        _config_error(
            f"encoder {ENCODER!r} is not among ablation.encoders {ABL['encoders']}: the encoder ablation "
            f"compares every encoder to the configured one (its reference row); add it to ablation.encoders"
        )
    for e in ABL["encoders"]:
        if e not in _encoders_ok:  # common.smk: packaged, the paper's hub encoders and `extra_encoders`
            _config_error(
                f"ablation.encoders: {e!r} is unknown; offline: {', '.join(sorted(_PACKAGED_ENCODERS))}; "
                f"with internet also: {', '.join(_HUB_ENCODERS)}; for another sentence-transformers model "
                f"add its short name to `extra_encoders`"
            )


_ablation_checks()


def ablation_run_files(by, name):
    """File `name` of every LOCUS run of an ablation: each d of ablation.dims at the configured encoder
    (RUN_DIR with an explicit d), or each encoder of ablation.encoders at the configured d."""
    if by == "dim":
        return [
            f"{RUN_DIR.format(dataset=DATASET, encoder=ENCODER, method='locus', n=n, dim=d, seed=s)}/{name}"
            for d in ABL["dims"]
            for n in ABL["dim_train_sizes"]
            for s in config["seeds"]
        ]
    return [
        path
        for e in ABL["encoders"]
        for path in run_files_named(["locus"], ABL["encoder_train_sizes"], name, encoder=e)
    ]


# the bootstrap options of `locus table` without --reference-method: an ablation's reference is a setting
ABLATION_BOOTSTRAP = (
    f"--bootstrap-resamples {int(BOOTSTRAP['n_resamples'])} "
    f"--bootstrap-seed {int(BOOTSTRAP['seed'])} --confidence {float(BOOTSTRAP['confidence'])}"
)


for _by in ("dim", "encoder"):
    for _metric in ("routing", "correctness"):

        rule:
            name:
                f"{_by}_ablation_{_metric}_table"
            input:
                metrics=ablation_run_files(_by, "metrics.json"),
                scores=ablation_run_files(_by, _artifacts.scores_file("test")),
                data=data_files(DATASET),
            output:
                tex=report(
                    f"results/tables/{_by}_ablation_{_metric}.tex",
                    caption=f"../report/{_by}_ablation_{_metric}.rst",
                    category="Tables",
                ),
                csv=f"results/tables/{_by}_ablation_{_metric}.csv",
            log:
                f"results/logs/ablation/{_by}_ablation_{_metric}.log",
            benchmark:
                f"results/benchmarks/ablation/{_by}_ablation_{_metric}.tsv"
            params:
                kind=f"{_by}-ablation-{_metric}",
                reference=str(config["methods"]["locus"]["dim"] if _by == "dim" else ENCODER),
                settings=",".join(str(v) for v in (sorted(ABL["dims"]) if _by == "dim" else ABL["encoders"])),
                label=dataset_label(DATASET),
                data=table_data_dir,
                bootstrap=ABLATION_BOOTSTRAP,
            shell:
                "{LOCUS} table {params.kind} --metrics {input.metrics} --data {params.data:q} --out {output.tex} "
                "--methods locus --reference-setting {params.reference:q} --settings {params.settings:q} "
                "--data-label {params.label:q} {params.bootstrap} > {log} 2>&1"
