# The claims ledger: the paper's claims with verdicts computed from the outputs that test them
# (locus/experiments/claims/ lists the files; a test checks this rule reads exactly those), and the pool's
# plan (common.smk), whose skipped outputs make their claims untestable with the reason.
from locus.experiments.claims import FILES as CLAIM_FILES


localrules:
    pool_plan,
    claims_table,


rule pool_plan:
    output:
        f"results/{_capacity.PLAN_FILE}",
    log:
        "results/logs/tables/pool_plan.log",
    benchmark:
        "results/benchmarks/tables/pool_plan.tsv"
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
    output:
        tex=report("results/tables/claims.tex", caption="../report/claims.rst", category="Tables"),
        csv="results/tables/claims.csv",
        md="results/tables/claims.md",
    log:
        "results/logs/tables/claims.log",
    benchmark:
        "results/benchmarks/tables/claims.tsv"
    params:
        dataset=DATASET,
    shell:
        "{LOCUS} claims --results results --dataset {params.dataset:q} --out {output.tex} > {log} 2>&1"
