# Active onboarding: which k queries to evaluate a new model on, each selector of `locus onboard` on the
# onboarding run with the most training models; accuracy and routing regret vs k.


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
        options=active_onboarding_options(),
    shell:
        "{LOCUS} active-onboarding --run {params.run} --data {params.data} --encodings {input.encodings} "
        "{params.options} --threads {threads} --out {output.pdf} --table {output.tex} > {log} 2>&1"
