"""The pool's plan (written by the workflow): outputs it skipped make their claims untestable with its reason, and
sizes it adapted to the pool are noted on the claims they shape (:func:`judged`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from locus.capacity import PLAN_FILE
from locus.errors import DataError
from locus.experiments import report
from locus.experiments.claims.rules import Claim, Outcome, judge_over_seeds, seed_path
from locus.experiments.report import Source
from locus.experiments.report.source import _target

PLAN = PLAN_FILE  # the workflow's plan for the pool
GEOMETRY_FILES = (
    "tables/distance_correlation.csv",
    "figures/nearest_neighbor_proxies.csv",
    "figures/fallback_routing.csv",
    "figures/perf_vs_size_and_overlap.csv",
    "figures/models_family_clustering.json",
    "figures/model_portfolio.json",
    "figures/hypothetical_model_embedding.csv",
    "figures/overlap_convergence.csv",
    "figures/anchor_size_convergence.csv",
)
ADAPTS: dict[str, tuple[str, ...]] = {  # a setting of the plan (fnmatch pattern) -> the files its sizes shape
    "train_sizes": ("tables/routing.csv", "tables/routing_by_dataset.csv", "tables/correctness_by_dataset.csv"),
    "sample_efficiency.train_sizes": ("figures/train_sample_eff.json", "figures/train_sample_eff.csv"),
    "ablation.dim_train_sizes": ("tables/dim_ablation_routing.csv", "tables/dim_ablation_correctness.csv"),
    "ablation.encoder_train_sizes": ("tables/encoder_ablation_routing.csv", "tables/encoder_ablation_correctness.csv"),
    "regeneration.*": ("figures/relearn_embedllm_heatmap_test_disagreement.csv",),
    "onboarding.*": ("figures/sample_eff_ood_test.csv",),
    "geometry.reference_train_size": GEOMETRY_FILES,
    "geometry.views.hypothetical_sizes": ("figures/hypothetical_model_embedding.csv",),
    "geometry.views.sizes": ("figures/anchor_size_convergence.csv",),
    "geometry.views.evalset_sizes": ("figures/perf_vs_size_and_overlap.csv",),
    "geometry.neighbours.max_k": ("figures/nearest_neighbor_proxies.csv", "figures/fallback_routing.csv"),
    "geometry.portfolio.max_k": ("figures/model_portfolio.json",),
}


def plan(src: Source) -> dict | None:
    """The pool's plan under ``src.results`` (:data:`PLAN`), or None for results without one; a DataError when
    it is not of the plan's shape."""
    path = src.path(PLAN)
    if not path.is_file():
        return None
    found = report.read_json(src, PLAN, ("adapted", "skipped"))
    ok = isinstance(found["adapted"], list) and isinstance(found["skipped"], list)
    ok = ok and all(isinstance(s, dict) and isinstance(s.get("outputs"), list) and "why" in s for s in found["skipped"])
    ok = ok and all(isinstance(a, dict) and {"setting", "asked", "used"} <= set(a) for a in found["adapted"])
    if not ok:
        raise DataError(f"{path}: adapted or skipped is not of the plan's shape; rebuild it (snakemake --cores 2)")
    return found


def _skipped(the_plan: dict | None, rel: str) -> str | None:
    return next((s["why"] for s in (the_plan or {}).get("skipped", []) if rel in s["outputs"]), None)


def skipped_reason(src: Source, rel: str) -> str | None:
    """Why the pool's plan left `rel` (a path under the results directory) out, or None when it did not."""
    return _skipped(plan(src), rel)


def adaptation_note(the_plan: dict | None, files: tuple[str, ...]) -> str:
    """ "sizes adapted to the pool: SETTING ASKED→USED, ..." for the plan's settings that shape `files` ('' when
    none does); settings :data:`ADAPTS` does not name shape nothing."""
    import fnmatch

    def change(a: dict) -> str:
        asked, used = (v if isinstance(v, list) else [v] for v in (a["asked"], a["used"]))
        if len(asked) == len(used):
            return ", ".join(f"{x}→{y}" for x, y in zip(asked, used) if x != y)
        return f"{', '.join(map(str, asked))}→{', '.join(map(str, used))}"

    parts = [
        f"{a['setting']} {change(a)}"
        for a in (the_plan or {}).get("adapted", [])
        if any(fnmatch.fnmatchcase(a["setting"], pat) and set(fs) & set(files) for pat, fs in ADAPTS.items())
    ]
    return f"sizes adapted to the pool: {', '.join(parts)}" if parts else ""


def judged(
    claim: Claim, src: Source, the_plan: dict | None, seeds: Mapping[str, Sequence[int]] | None = None
) -> Outcome:
    """The claim's outcome: untestable, with the plan's reason, when the plan skipped a file it reads; a
    DataError naming a file that is missing otherwise; else its judge's, noting the sizes the plan adapted. A
    claim repeated at further seeds (``claim.seeds``, a config section) is judged on each of that section's
    `seeds` (``SECTION.seed``, then ``SECTION.extra_seeds``: the first at the usual paths, the others' files at
    :func:`seed_path`), or noted as one seed (:func:`judge_over_seeds`)."""
    whys = report.unique(why for f in claim.files if (why := _skipped(the_plan, f)))
    if whys:
        return Outcome("–", "untestable", "; ".join(whys))
    own = tuple((seeds or {}).get(claim.seeds, ())) if claim.seeded else ()
    for rel in [*claim.files, *(seed_path(f, s) for s in own[1:] for f in claim.files)]:
        path = src.path(rel)
        if not path.is_file():
            raise DataError(
                f"{path}: not found; build it first (snakemake --cores 2 {_target(path)}) or point "
                "--results at a finished run"
            )
    out = judge_over_seeds(claim.judge, src, own, claim.seeds) if claim.seeded else claim.judge(src)
    note = adaptation_note(the_plan, claim.files)
    return Outcome(out.ours, out.verdict, f"{out.reason}; {note}") if note else out
