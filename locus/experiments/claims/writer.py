"""The ledger (:func:`ledger`: one row per claim) and its writer: ``claims.csv``, ``claims.md`` and ``claims.tex``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from locus import atomic
from locus.constants import CLAIM_VERDICTS
from locus.experiments import report
from locus.experiments.claims.pool_plan import judged, plan
from locus.experiments.claims.registry import CLAIMS
from locus.experiments.report import Source

COLUMNS = ["id", "claim", "paper_ref", "statistic", "paper_value", "ours", "dataset", "verdict", "rule", "reason"]


def ledger(src: Source, seeds: Mapping[str, Sequence[int]] | None = None) -> pd.DataFrame:
    """One row per claim (:data:`COLUMNS`), its verdict computed from the files under ``src.results`` (untestable
    where the pool's plan skipped a file the claim reads: :func:`judged`); the figure claims repeated at further
    seeds judged on each of `seeds`[SECTION] (``SECTION.seed``, then ``SECTION.extra_seeds``, for the sections of
    ``rules.SEED_SECTIONS``; a section not given: one seed)."""
    label = report.dataset_label(src)
    the_plan = plan(src)
    rows = []
    for c in CLAIMS:
        out = judged(c, src, the_plan, seeds)
        rows.append(
            {
                "id": c.id,
                "claim": c.claim,
                "paper_ref": c.paper_ref,
                "statistic": c.statistic,
                "paper_value": c.paper_value,
                "ours": out.ours,
                "dataset": label,
                "verdict": out.verdict,
                "rule": c.rule,
                "reason": out.reason,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(frame: pd.DataFrame) -> str:
    counts = frame["verdict"].value_counts()
    head = ", ".join(f"{counts[v]} {v}" for v in CLAIM_VERDICTS if v in counts)
    lines = [f"Claims of the paper on {frame['dataset'].iloc[0]}: {head}.", ""]
    lines += report.md_table(
        ["claim", "paper", "ours", "verdict", "why"],
        [
            [f"{r.claim} (`{r.paper_ref}`)", r.paper_value, r.ours, f"**{r.verdict}**", f"{r.reason}. Rule: {r.rule}"]
            for r in frame.itertuples()
        ],
    )
    return "\n".join(lines) + "\n"


def latex(frame: pd.DataFrame) -> str:
    from locus.render.latex import wrap

    def esc(text: str) -> str:
        for a, b in (
            ("\\", r"\textbackslash{}"),
            ("&", r"\&"),
            ("%", r"\%"),
            ("$", r"\$"),
            ("#", r"\#"),
            ("_", r"\_"),
            ("{", r"\{"),
            ("}", r"\}"),
            ("~", r"\~{}"),
            ("^", r"\^{}"),
        ):
            text = text.replace(a, b)
        symbols = {"≥": r"$\geq$", "≤": r"$\leq$", "≈": r"$\approx$", "±": r"$\pm$", "×": r"$\times$"}
        symbols |= {"α": r"$\alpha$", "ρ": r"$\rho$", "→": r"$\to$", "‖": r"$\|$", "…": r"\ldots{}"}
        for a, b in symbols.items():  # outside what pdflatex's utf8 reads
            text = text.replace(a, b)
        return text.replace("−", "--")

    body = [
        "\\begin{tabular}{p{4.2cm}p{3.2cm}p{5.6cm}l}",
        "\\toprule",
        "Claim & Paper & Ours & Verdict \\\\",
        "\\midrule",
    ]
    body += [
        f"{esc(r.claim)} & {esc(r.paper_value)} & {esc(r.ours)} & {esc(r.verdict)} \\\\" for r in frame.itertuples()
    ]
    body += ["\\bottomrule", "\\end{tabular}"]
    caption = (
        f"The paper's claims on {esc(frame['dataset'].iloc[0])}, each verdict computed from the DAG's outputs by "
        "the rule in claims.csv, whose reasons say what each interval covers (one seed: method comparisons cover "
        "test queries only; several seeds: each seed is judged too, and a verdict that differs between seeds is "
        "inconclusive)."
    )
    return wrap(body, caption, "tab:claims", wide=True, size="\\scriptsize")


def write(src: Source, out_tex: Path, seeds: Mapping[str, Sequence[int]] | None = None) -> pd.DataFrame:
    """``claims.tex`` with ``claims.csv`` and ``claims.md`` beside it, each written atomically."""
    frame = ledger(src, seeds)
    out_tex = Path(out_tex)
    atomic.write_text(out_tex.with_suffix(".csv"), frame.to_csv(index=False))
    atomic.write_text(out_tex.with_suffix(".md"), markdown(frame))
    atomic.write_text(out_tex, latex(frame))
    return frame
