# Active onboarding: which k queries to evaluate a new model on. The onboarding run with the most training
# models embeds each held-out model from the queries each selector of `locus onboard` picks; accuracy and
# routing regret vs k. Settings: `active_onboarding` in the config.
AON = config["active_onboarding"]
AON_RUN = onboarding_run_dir(0 if 0 in ONB["model_counts"] else max(ONB["model_counts"]))


rule active_onboarding:
    input:
        run=[f"{AON_RUN}/{name}" for name in _artifacts.run_files("locus")],
        data=data_files(DATASET),
        encodings=encodings(DATASET, ENCODER),
    output:
        **figure("active_onboarding", "Onboarding"),
        **table("active_onboarding"),
    log:
        "results/logs/onboarding/active_onboarding.log",
    benchmark:
        "results/benchmarks/onboarding/active_onboarding.tsv"
    threads: int(AON["threads"])
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        run=input_dir("run"),
        data=input_dir("data"),
        options=(
            f"--sizes {','.join(str(int(k)) for k in AON['sizes'])} --selectors {','.join(AON['selectors'])} "
            f"--repeats {int(AON['repeats'])} --seed {int(AON['seed'])} --hold-out {shlex.quote(ONB_HOLD_OUT)} "
            f"--data-label {shlex.quote(dataset_label(DATASET))}"
        ),
    shell:
        "{LOCUS} active-onboarding --run {params.run} --data {params.data} --encodings {input.encodings} "
        "{params.options} --threads {threads} --out {output.pdf} --table {output.tex} > {log} 2>&1"
