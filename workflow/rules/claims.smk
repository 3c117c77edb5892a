# The claims ledger: the paper's claims with verdicts computed from the outputs that test them
# (locus/experiments/claims.py lists the files; a test checks this rule reads exactly those).
from locus.experiments.claims import FILES as CLAIM_FILES


localrules:
    claims_table,


rule claims_table:
    input:
        [f"results/{f}" for f in CLAIM_FILES],
        data_summary(DATASET),
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
