# Active onboarding: which queries to evaluate a new model on. The onboarding run with the most training models
# (onboarding.smk: `model_counts`, 0 = all that are not held out) embeds each held-out model from k queries
# chosen by each selector of `locus onboard`; accuracy and routing regret vs k, and the k reaching random
# selection's accuracy at the largest k. Settings: `active_onboarding` in the config.
AON = config["active_onboarding"]
AON_COUNT = 0 if 0 in ONB["model_counts"] else max(ONB["model_counts"])
AON_RUN = onboarding_run_dir(AON_COUNT)


rule active_onboarding:
    input:
        run=[f"{AON_RUN}/{name}" for name in _artifacts.run_files("locus")],
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        pdf="results/figures/active_onboarding.pdf",
        png=report(
            "results/figures/active_onboarding.png",
            caption="../report/active_onboarding.rst",
            category="Onboarding",
        ),
        csv="results/figures/active_onboarding.csv",
        tex="results/tables/active_onboarding.tex",
        tab_csv="results/tables/active_onboarding.csv",
    log:
        "results/logs/onboarding/active_onboarding.log",
    benchmark:
        "results/benchmarks/onboarding/active_onboarding.tsv"
    threads: int(AON["threads"])
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        run=lambda w, input: str(Path(input.run[0]).parent),
        data=input_dir("data"),
        options=(
            f"--sizes {','.join(str(int(k)) for k in AON['sizes'])} --selectors {','.join(AON['selectors'])} "
            f"--repeats {int(AON['repeats'])} --seed {int(AON['seed'])} --hold-out {shlex.quote(ONB_HOLD_OUT)} "
            f"--data-label {shlex.quote(dataset_label(DATASET))}"
        ),
    shell:
        "{LOCUS} active-onboarding --run {params.run} --data {params.data} --encodings {input.encodings} "
        "{params.options} --threads {threads} --out {output.pdf} --table {output.tex} > {log} 2>&1"
