"""Blocks of the claims ledger (``tables/claims.csv``, written by :mod:`locus.experiments.claims`): the verdicts of
this run, and those of several runs on other pools side by side."""

from __future__ import annotations

from locus.experiments.report.markdown import md_table, unique
from locus.experiments.report.source import dataset_label, provenance, read_rows


def block_claims(src):
    rel = "tables/claims.csv"
    # its writer (locus.experiments.claims.COLUMNS) imports this module: naming the columns read avoids the cycle
    rows = read_rows(src.path(rel), ("claim", "paper_ref", "paper_value", "ours", "verdict", "rule", "reason"))
    from locus.constants import CLAIM_VERDICTS

    counts = {v: n for v in CLAIM_VERDICTS if (n := sum(r["verdict"] == v for r in rows))}
    lines = [", ".join(f"{n} {v}" for v, n in counts.items()) + f" of {len(rows)} claims.", ""]
    lines += md_table(
        ["claim", "paper", "ours", "verdict", "why (and the rule in claims.csv)"],
        [
            [f"{r['claim']} (`{r['paper_ref']}`)", r["paper_value"], r["ours"], f"**{r['verdict']}**", r["reason"]]
            for r in rows
        ],
    )
    return lines + ["", provenance(src, [rel])]


def block_claims_pools(src):
    """The verdicts of the claims ledgers of several runs side by side: this one's and each of ``src.others``
    (one column per pool, in the order given), with each run's machine and commit below."""
    rel = "tables/claims.csv"
    runs = [src, *src.others]
    ledgers = [{r["id"]: r for r in read_rows(s.path(rel), ("id", "claim", "verdict"))} for s in runs]
    ids = unique(i for ledger in ledgers for i in ledger)
    labels = [dataset_label(s) for s in runs]
    rows = []
    for i in ids:
        claim = next(ledger[i]["claim"] for ledger in ledgers if i in ledger)
        verdicts = [ledger[i]["verdict"] if i in ledger else "–" for ledger in ledgers]
        agree = "" if len(set(verdicts)) == 1 else " ≠"
        rows.append([claim + agree, *verdicts])
    lines = md_table(
        ["claim (≠: the pools' verdicts differ)", *[f"{k + 1}. {lab}" for k, lab in enumerate(labels)]], rows
    )
    lines.append("")
    for k, s in enumerate(runs):
        lines.append(f"{k + 1}. {provenance(s, [rel])}")
    return lines
