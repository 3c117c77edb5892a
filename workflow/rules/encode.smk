# Query texts -> sentence encodings (Parquet: prompt_id + fixed-size float32 vector).


rule encode:
    input:
        data_files("{dataset}"),
    output:
        "results/encodings/{dataset}/{encoder}.parquet",
    log:
        "results/logs/encode/{dataset}/{encoder}.log",
    benchmark:
        "results/benchmarks/encode/{dataset}/{encoder}.tsv"
    threads: config["encode_threads"]
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        batch_size=config["encode_batch_size"],
    shell:
        "{LOCUS} encode --data results/data/{wildcards.dataset} --encoder {wildcards.encoder} "
        "--out {output} --batch-size {params.batch_size} --threads {threads} > {log} 2>&1"
