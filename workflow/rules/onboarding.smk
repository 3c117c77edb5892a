# New-model onboarding (paper §4.2): LOCUS trained without the held-out models (`onboarding_run`), each embedded
# from k evaluations; beside training-free rivals under UniRoute's protocol (`rivals_run`, `onboarding_rivals`).


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
        runs=onboarding_figure_inputs(),
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
        runs=quoted(onboarding_runs()),
        data=input_dir("data"),
        options=onboarding_options(),
    shell:
        "{LOCUS} onboarding --runs {params.runs} --data {params.data} --encodings {input.encodings} "
        "{params.options} --threads {threads} --out {output.pdf} > {log} 2>&1"


use rule onboarding_figure as onboarding_figure_seed with:
    input:
        runs=lambda w: onboarding_figure_inputs(int(w.seed)),
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        **seed_figure("sample_eff_ood_test"),
    log:
        seed_log("logs", "sample_eff_ood_test", "onboarding"),
    benchmark:
        seed_log("benchmarks", "sample_eff_ood_test", "onboarding")
    wildcard_constraints:
        seed=r"\d+",
    params:
        runs=lambda w: quoted(onboarding_runs(int(w.seed))),
        options=lambda w: onboarding_options(int(w.seed)),


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
        runs=[f"{d}/config.json" for d in rivals_run_dirs()],
        run_metrics=[f"{d}/metrics.json" for d in rivals_run_dirs()],
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
        runs=input_dirs("runs"),
        fits=lambda w, input: f"--fit-runs {input_dirs('fits')(w, input)}" if input.fits else "",
        data=input_dir("data"),
        options=rivals_options(),
    shell:
        "{LOCUS} onboarding-rivals --run {params.runs} {params.fits} --data {params.data} "
        "--encodings {input.encodings} {params.options} --threads {threads} --out {output.tex} --figure {output.pdf} > {log} 2>&1"
