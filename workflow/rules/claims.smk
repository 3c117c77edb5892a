# The claims ledger: the paper's claims with verdicts computed from the outputs that test them (their list:
# locus/experiments/claims/), and the pool's plan, whose skipped outputs make their claims untestable.
from locus.experiments.claims import FILES as CLAIM_FILES


rule pool_plan:
    output:
        f"results/{_capacity.PLAN_FILE}",
    log:
        "results/logs/tables/pool_plan.log",
    benchmark:
        "results/benchmarks/tables/pool_plan.tsv"
    localrule: True
    params:
        plan=PLAN.to_json() if PLAN is not None else "{}",
    run:
        from locus import atomic

        atomic.write_text(output[0], f"{params.plan}\n")
        atomic.write_text(log[0], f"wrote {output[0]}\n")


rule claims_table:
    input:
        planned([f"results/{f}" for f in CLAIM_FILES]),
        data_summary(DATASET),
        plan=f"results/{_capacity.PLAN_FILE}",
        seeds=CLAIM_SEED_INPUTS,
    output:
        **table("claims", "Tables"),
        md="results/tables/claims.md",
    log:
        "results/logs/tables/claims.log",
    benchmark:
        "results/benchmarks/tables/claims.tsv"
    localrule: True
    params:
        dataset=DATASET,
        # the seeds the figure claims are judged on: none said, one seed (the command is the default's)
        seeds=claim_seed_options(),
    shell:
        "{LOCUS} claims --results results --dataset {params.dataset:q}{params.seeds} --out {output.tex} > {log} 2>&1"
