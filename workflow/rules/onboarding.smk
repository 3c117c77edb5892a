# New-model onboarding (paper §4.2): LOCUS trained without the held-out models on growing numbers of the
# others (`onboarding_run`), then each held-out model embedded from k of its evaluations by every such run and
# the whole pool's run of the tables (`onboarding_figure`). Settings: `onboarding` in the config.
ONB = config["onboarding"]
ONB_DIR = "results/onboarding/{dataset}/{encoder}/m{models}/n{n}/s{seed}"
ONB_HOLD_OUT = "column" if ONB["held_out"] is None else ",".join(ONB["held_out"])


def onboarding_run_dir(count):
    return ONB_DIR.format(dataset=DATASET, encoder=ENCODER, models=count, n=ONB["train_size"], seed=ONB["seed"])


def onboarding_runs():
    """The run directories of the figure's rows: one per model count, and the whole pool's run."""
    runs = [onboarding_run_dir(c) for c in ONB["model_counts"]]
    if ONB["all_models_row"]:
        runs.append(run_dir(DATASET, ENCODER, "locus", ONB["train_size"], ONB["seed"]))
    return runs


use rule train_run as onboarding_run with:
    output:
        **run_outputs(ONB_DIR, "locus"),
    log:
        f"results/logs/{ONB_DIR.removeprefix('results/')}.log",
    benchmark:
        f"results/benchmarks/{ONB_DIR.removeprefix('results/')}.tsv"
    wildcard_constraints:
        models=r"\d+",
    priority: 0
    params:
        **locus_train(hold_out=lambda w: f"--hold-out {shlex.quote(ONB_HOLD_OUT)} --train-models {w.models} "),


rule onboarding_figure:
    input:
        runs=[f"{d}/{name}" for d in onboarding_runs() for name in ("model.safetensors", "config.json")],
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        **figure("sample_eff_ood_test", "Onboarding"),
    log:
        "results/logs/onboarding/sample_eff_ood_test.log",
    benchmark:
        "results/benchmarks/onboarding/sample_eff_ood_test.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        runs=" ".join(shlex.quote(d) for d in onboarding_runs()),
        data=input_dir("data"),
        options=(
            f"--sizes {','.join(str(int(k)) for k in ONB['sizes'])} --repeats {int(ONB['repeats'])} "
            f"--seed {int(ONB['seed'])} --hold-out {shlex.quote(ONB_HOLD_OUT)} "
            f"--data-label {shlex.quote(dataset_label(DATASET))}"
        ),
    shell:
        "{LOCUS} onboarding --runs {params.runs} --data {params.data} --encodings {input.encodings} "
        "{params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"


# LOCUS's one-pass onboarding beside training-free rivals (cluster accuracy with shrinkage, cluster error
# vectors, kNN on agreement, the mean-accuracy floor) under the field's protocol (UniRoute): in each of
# `repeats` repeats a seeded random `held_out` models are left out of a LOCUS run (`rivals_run`, own run
# directories under results/onboarding_rivals/), and every method onboards them from k of their evaluations
# (`onboarding_rivals`). Settings: `onboarding_rivals` in the config.
RIV = config["onboarding_rivals"]
RIV_DIR = "results/onboarding_rivals/{dataset}/{encoder}/{method}/h{held}/n{n}/s{seed}"


def rivals_run_dirs(method="locus"):
    """One run directory per repeat: repeat r holds out draw:HELD:(100 * seed + r) (locus.runs.draw_held_out)."""
    return [
        RIV_DIR.format(
            dataset=DATASET,
            encoder=ENCODER,
            method=method,
            held=RIV["held_out"],
            n=RIV["train_size"],
            seed=100 * RIV["seed"] + r,
        )
        for r in range(RIV["repeats"])
    ]


def rivals_fit_dirs():
    """The embedding-fit methods' runs (EmbedLLM, IRT-Net), one per method and repeat."""
    return [d for method in RIV["fit_methods"] for d in rivals_run_dirs(method)]


use rule train_run as rivals_run with:
    output:
        config=f"{RIV_DIR}/config.json",
        metrics=f"{RIV_DIR}/metrics.json",
    log:
        f"results/logs/{RIV_DIR.removeprefix('results/')}.log",
    benchmark:
        f"results/benchmarks/{RIV_DIR.removeprefix('results/')}.tsv"
    wildcard_constraints:
        method="locus|embedllm|irt_net",
        held=r"\d+",
    priority: 0
    params:
        encoder="",
        dim=lambda w: config["methods"][w.method]["dim"],
        seed=RIV["seed"],  # the wildcard seed names the held-out draw
        hold_out=lambda w: f"--hold-out draw:{w.held}:{w.seed} ",


rule onboarding_rivals:
    input:
        runs=[f"{d}/{name}" for d in rivals_run_dirs() for name in ("config.json", "metrics.json")],
        fits=[f"{d}/metrics.json" for d in rivals_fit_dirs()],
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        tex=report(
            "results/tables/onboarding_rivals.tex",
            caption="../report/onboarding_rivals.rst",
            category="Onboarding",
        ),
        csv="results/tables/onboarding_rivals.csv",
        pdf="results/figures/onboarding_rivals.pdf",
        png="results/figures/onboarding_rivals.png",
    log:
        "results/logs/onboarding/onboarding_rivals.log",
    benchmark:
        "results/benchmarks/onboarding/onboarding_rivals.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        runs=" ".join(shlex.quote(d) for d in rivals_run_dirs()),
        fits=" ".join(["--fit-runs", *map(shlex.quote, rivals_fit_dirs())] if RIV["fit_methods"] else []),
        data=input_dir("data"),
        options=(
            f"--k {','.join(str(int(k)) for k in RIV['sizes'])} --seed {int(RIV['seed'])} --held-out untrained "
            f"--pool {RIV['pool']} "
            + (f"--selector {RIV['selector']} " if RIV["selector"] else "")
            + f"--data-label {shlex.quote(dataset_label(DATASET))}"
        ),
    shell:
        "{LOCUS} onboarding-rivals --run {params.runs} {params.fits} --data {params.data} "
        "--encodings {input.encodings} {params.options} --threads {threads} --out {output.tex} --figure {output.pdf} > {log} 2>&1"
