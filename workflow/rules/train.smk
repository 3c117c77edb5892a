# One training run per method x encoder x training size x dimension x seed (a cluster job: GPU-capable).


rule train_run:
    input:
        data=data_files("{dataset}"),
        encodings="results/encodings/{dataset}/{encoder}.parquet",
    output:
        metrics="results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}/metrics.json",
        scores_val="results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}/scores_val.parquet",
        scores_test="results/runs/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}/scores_test.parquet",
    params:
        json=lambda w: as_json(config["methods"][w.method].get("params", {})),
        sampling=config.get("sampling", "shared"),
        duplicates=config.get("duplicates", "last"),
        out=lambda w: f"results/runs/{w.dataset}/{w.encoder}/{w.method}/n{w.n}/d{w.dim}/s{w.seed}",
    threads: config.get("threads", 1)
    resources:
        mem_mb=8000,
        runtime=120,
    log:
        "results/logs/train/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}.log",
    benchmark:
        "results/benchmarks/train/{dataset}/{encoder}/{method}/n{n}/d{dim}/s{seed}.tsv"
    shell:
        "{LOCUS} train --method {wildcards.method} --data results/data/{wildcards.dataset} "
        "--encodings {input.encodings} --train-size {wildcards.n} --dim {wildcards.dim} "
        "--seed {wildcards.seed} --params {params.json:q} --sampling {params.sampling} "
        "--duplicates {params.duplicates} --threads {threads} --out {params.out} > {log} 2>&1"
