# Time complexity of LOCUS (paper appendix G, fig:time_complexity_locus): embedding time vs evaluations per
# model for several pool sizes, and correctness-prediction time vs unseen queries for the largest pool.
# Random inputs of the paper's shape (d_phi = 768) and the network of the configured LOCUS parameters: no
# data, encodings or runs are needed. `locus bench --time-complexity` does the same without Snakemake.
# About 1.5-3 minutes on 2 CPU cores with the defaults. It asks for `time_complexity.threads` cores (default
# 2): on the default 2-core run that is the whole machine, so Snakemake runs nothing beside it and the
# timings are clean; with more cores give it more threads, or run it alone.

TC = {"pool_sizes": [16, 56, 112], "eval_sizes": [64, 256, 1024, 4096], "query_sizes": [256, 1024, 4096],
      "repeat": 3, "device": "auto", "threads": 2, **config.get("time_complexity", {})}


def _tc_sizes(key):
    return ",".join(str(int(v)) for v in TC[key])


rule time_complexity_figure:
    output:
        pdf="results/figures/time_complexity.pdf",
        png=report("results/figures/time_complexity.png", caption="../report/time_complexity.rst",
                   category="Timing"),
        csv="results/figures/time_complexity.csv",
    params:
        pools=_tc_sizes("pool_sizes"),
        evals=_tc_sizes("eval_sizes"),
        queries=_tc_sizes("query_sizes"),
        repeat=int(TC["repeat"]),
        device="" if TC["device"] == "auto" else f"--device {TC['device']}",
        json=as_json({**(config["methods"].get("locus", {}).get("params") or {}),
                      "dim": config["methods"].get("locus", {}).get("dim", 128)}),
    threads: int(TC["threads"])
    resources:
        mem_mb=4000,
        runtime=15,
    log:
        "results/logs/timing/time_complexity.log",
    benchmark:
        "results/benchmarks/timing/time_complexity.tsv"
    shell:
        "{LOCUS} bench --time-complexity {output.pdf} --pool-sizes {params.pools} --eval-sizes {params.evals} "
        "--query-sizes {params.queries} --repeat {params.repeat} {params.device} --threads {threads} "
        "--params {params.json:q} > {log} 2>&1"
