"""Bad inputs found by a tour of the command line: files that are not what their names say, paths that are
not regular files, a prompt scored twice with conflicting scores, run directories whose files come from
several runs, and a run without model embeddings given to `portfolio`.

``before``: what the same input did before the fix (measured by hand on the code before it)."""

from __future__ import annotations

import gzip
import shutil

from bad_inputs.harness import Case


def _evaluations(ws, sep: str = ",") -> str:
    base = (ws._base / "evaluations.csv").read_text(encoding="utf-8")
    return base if sep == "," else base.replace(",", sep)


def csv_data(ws, name: str) -> list[str]:
    return ["data", "csv", "--out", "out", "--params", f'{{"path": "{name}"}}']


def gzip_named_csv(ws) -> list[str]:
    ws.write_bytes("evals.csv", gzip.compress(_evaluations(ws).encode()))
    return csv_data(ws, "evals.csv")


def text_named_gz(ws) -> list[str]:
    ws.write("evals.csv.gz", _evaluations(ws))
    return csv_data(ws, "evals.csv.gz")


def parquet_named_csv(ws) -> list[str]:
    shutil.copy2(ws._base / "data" / "scores.parquet", ws.path("evals.csv"))
    return csv_data(ws, "evals.csv")


def separated_by(sep: str):
    def argv(ws) -> list[str]:
        ws.write("evals.csv", _evaluations(ws, sep))
        return csv_data(ws, "evals.csv")

    return argv


def train_with_encodings(path) -> callable:
    def argv(ws) -> list[str]:
        enc = path(ws) if callable(path) else path
        return [
            "train",
            "--method",
            "knn_router",
            "--data",
            str(ws.copy("data")),
            "--encodings",
            enc,
            "--train-size",
            "10",
            "--out",
            "run",
        ]

    return argv


def a_dir(ws, name: str) -> str:
    ws.path(name).mkdir(parents=True, exist_ok=True)
    return name


def duplicate_scores(ws) -> str:
    rows = "prompt,score\nWhat is 1 plus 2?,1\nWhat is 3 plus 4?,0\nWhat is 1 plus 2?,0\n"
    return str(ws.write("scores.csv", rows))


def mixed_run(ws, names=("config.json", "model.safetensors")) -> str:
    """A LOCUS run directory with files of the kNN run copied over its own."""
    run = ws.copy("locus_run")
    other = ws.copy("knn_run", "other_run")
    for name in names:
        shutil.copy2(other / name, run / name)
    shutil.rmtree(other)
    return str(run)


def locus_files_over_locus(ws, names=("config.json", "model.safetensors")) -> str:
    """A LOCUS run directory whose checkpoint comes from another LOCUS run (another seed: same method)."""
    run = ws.copy("locus_run")
    other = ws.copy("locus_run", "other_run")
    (other / "config.json").write_text(
        (other / "config.json").read_text().replace('"seed": 0', '"seed": 1'), encoding="utf-8"
    )
    for name in names:
        shutil.copy2(other / name, run / name)
    shutil.rmtree(other)
    return str(run)


def other_embeddings(ws) -> str:
    """A LOCUS run directory whose embeddings.parquet was written by another run (other vectors, same ids)."""
    from locus import run_artifacts as ra
    from locus.data.encodings import write_vectors

    run = ws.copy("locus_run")
    ids, z = ra.read_embeddings(run)
    write_vectors(run / "embeddings.parquet", "model_id", ids, z[::-1].copy())
    return str(run)


def _c(id, klass, before, argv, message, **kw):
    return Case(id=f"tour-{id}", klass=klass, before=before, argv=argv, message=message, **kw)


DEVICE = r"/dev/null: is a device \(such as /dev/null\), not a file"
CASES = [
    # files that are not what their names say
    _c("csv-gzip-named-csv", "csv-reading", "poor-message", gzip_named_csv, r"looks gzip-compressed.*\.csv\.gz"),
    _c("csv-text-named-gz", "csv-reading", "poor-message", text_named_gz, r"named \.gz but not gzip-compressed"),
    _c("csv-parquet-named-csv", "csv-reading", "poor-message", parquet_named_csv, r"is a Parquet file.*\.parquet"),
    _c("csv-semicolons", "csv-reading", "poor-message", separated_by(";"), r"separated by semicolons \(';'\)"),
    _c("csv-tabs-in-csv", "csv-reading", "poor-message", separated_by("\t"), r"separated by tabs.*as \.tsv"),
    _c("csv-pipes", "csv-reading", "poor-message", separated_by("|"), r"separated by pipes"),
    # paths that are not regular files
    _c("csv-path-dev-null", "files", "poor-message", lambda ws: csv_data(ws, "/dev/null"), DEVICE),
    _c(
        "csv-path-directory",
        "files",
        "ok",
        lambda ws: csv_data(ws, a_dir(ws, "evals.csv")),
        r"evals\.csv: is a directory",
    ),
    _c("train-encodings-dev-null", "files", "poor-message", train_with_encodings("/dev/null"), DEVICE),
    _c(
        "train-encodings-directory",
        "files",
        "poor-message",
        train_with_encodings(lambda ws: a_dir(ws, "enc.parquet")),
        r"enc\.parquet: is a directory",
    ),
    _c(
        "embed-scores-dev-null",
        "files",
        "poor-message",
        lambda ws: ["embed", "--checkpoint", str(ws.copy("locus_run")), "--scores", "/dev/null"],
        DEVICE,
    ),
    _c(
        "route-file-dev-null",
        "files",
        "poor-message",
        lambda ws: ["route", "--checkpoint", str(ws.copy("locus_run")), "--file", "/dev/null"],
        DEVICE,
    ),
    _c(
        "route-file-directory",
        "files",
        "ok",
        lambda ws: ["route", "--checkpoint", str(ws.copy("locus_run")), "--file", a_dir(ws, "queries")],
        r"queries: is a directory",
    ),
    # a prompt scored twice
    _c(
        "embed-prompt-twice-conflicting",
        "duplicates",
        "silent",
        lambda ws: ["embed", "--checkpoint", str(ws.copy("locus_run")), "--scores", duplicate_scores(ws)],
        r"given more than once, e\.g\. 'What is 1 plus 2\?' in rows \[2, 4\].*scores \[1\.0, 0\.0\].*--duplicates",
    ),
    _c(
        "embed-duplicates-unknown",
        "duplicates",
        "ok",
        lambda ws: [
            "embed",
            "--checkpoint",
            str(ws.copy("locus_run")),
            "--scores",
            duplicate_scores(ws),
            "--duplicates",
            "first",
        ],
        r"--duplicates: invalid choice: 'first'",
    ),
    # run directories whose files come from several runs
    _c(
        "portfolio-checkpoint-of-another-run",
        "run-files",
        "silent",
        lambda ws: ["portfolio", "--run", locus_files_over_locus(ws), "--k", "2"],
        r"config\.json: not the file this run wrote.*must all come from one `locus train`",
    ),
    _c(
        "route-checkpoint-of-another-run",
        "run-files",
        "silent",
        lambda ws: ["route", "--checkpoint", locus_files_over_locus(ws), "a query"],
        r"config\.json: not the file this run wrote",
    ),
    _c(
        "embed-checkpoint-of-another-method",
        "run-files",
        "ok",
        lambda ws: ["embed", "--checkpoint", mixed_run(ws), "--scores", duplicate_scores(ws)],
        r"config\.json: not the file this run wrote",
    ),
    _c(
        "portfolio-embeddings-of-another-run",
        "run-files",
        "silent",
        lambda ws: ["portfolio", "--run", other_embeddings(ws), "--k", "2"],
        r"embeddings\.parquet: not the file this run wrote",
    ),
    # a run without model embeddings
    _c(
        "portfolio-knn-run",
        "run-files",
        "poor-message",
        lambda ws: ["portfolio", "--run", str(ws.copy("knn_run")), "--k", "2"],
        r"a knn_router run has no model embeddings .*embedding method \(locus",
    ),
    _c(
        "portfolio-budget-without-params-b",
        "run-files",
        "ok",
        lambda ws: [
            "portfolio",
            "--run",
            str(ws.copy("locus_run")),
            "--data",
            str(ws.copy("data")),
            "--budget-b",
            "10",
        ],
        r"no params_b column",
    ),
]
