"""`locus decisions`: routing decisions of trained, calibrated runs (one training size; every seed given).

- ``selective``: Learn-then-Test thresholds certified on validation (monotone over the alpha grid), their test
  coverage / risk, the violation frequency with its Clopper-Pearson interval and flag above delta, and with
  generator truth the true expected risk (``--table OUT.tex`` + .csv); the risk-coverage curves with the best
  single model (``--figure OUT.pdf`` + .png, .csv);
- ``cost``: accuracy vs mean cost with the cost weight swept (``--figure``) and AIQ over the largest cost and
  over the cost range, with bootstrap intervals and the paired difference to the two-model mix frontier
  (``--table``). Costs: the data set's ``cost`` column, else ``params_b``.

Each run needs its ``calibration.json`` (``locus calibrate --run RUN``). Definitions:
:mod:`locus.experiments.routing_decisions`, :mod:`locus.decisions`.
"""

from __future__ import annotations

from locus.cli import (
    add_alphas_argument,
    add_data_argument,
    add_seed_argument,
    comma_list,
    existing_dir,
    int_at_least,
    level,
    only_with,
    output_file,
)

NAME = "decisions"
HELP = "selective routing with a certified risk, and cost-aware routing (AIQ), from calibrated runs"


def add_arguments(p) -> None:
    p.add_argument("kind", choices=("selective", "cost"), help="which experiment")
    p.add_argument("--runs", nargs="+", required=True, type=existing_dir("run directory"), help="run directories")
    add_data_argument(p, "the runs' data set", required=True)
    p.add_argument("--table", required=True, type=output_file((".tex",)), help="OUT.tex (+ .csv beside it)")
    p.add_argument("--figure", required=True, type=output_file((".pdf",)), help="OUT.pdf (+ .png, .csv)")
    p.add_argument("--data-label", default=None, help="the data set's name in captions and titles")
    add_alphas_argument(p)
    p.add_argument("--delta", type=float, default=0.1, help="allowed probability of a violated guarantee")
    p.add_argument(
        "--fallbacks",
        type=comma_list,
        default=["best_single", "abstain"],
        help="best_single (chosen on validation), abstain, or model names",
    )
    p.add_argument("--lambdas", type=int_at_least(2), default=30, help="cost weights swept (cost)")
    p.add_argument("--bootstrap-resamples", type=int_at_least(1), default=200, help="resamples of test queries")
    add_seed_argument(p, "--bootstrap-seed", help="seed of the resampling")
    p.add_argument(
        "--confidence",
        type=level,
        default=0.95,
        help="interval level (AIQ intervals; the violations' Clopper-Pearson intervals)",
    )


def run(args) -> int:
    from locus.experiments import routing_decisions as rd

    # each experiment's own options, given to the other, would be ignored silently
    selective = args.kind == "selective"
    only_with(args, ("alphas", "delta", "fallbacks"), selective, "with `locus decisions selective`")
    only_with(args, ("lambdas",), not selective, "with `locus decisions cost`")
    runs, data = rd.load_runs(args.runs, args.data)
    if args.kind == "selective":
        frame, _ = rd.write_selective(
            runs,
            data,
            args.table,
            args.figure,
            args.alphas,
            args.delta,
            args.fallbacks,
            args.bootstrap_resamples,
            args.bootstrap_seed,
            args.data_label,
            args.confidence,
        )
        for r in frame.to_dict("records"):
            truth = "" if r["true_risk_ok"] is None else f" true_risk={100 * r['true_risk']:.1f}%"
            truth += "" if r["true_risk_ok"] in (None, True) else " (> alpha)"
            print(
                f"{r['method']:<14} alpha={r['alpha']:<5g} {r['fallback']:<12} "
                + ("tau=none " if r["n_none"] == r["n_seeds"] else f"tau={r['tau_mean']:.2f} ")
                + f"coverage={100 * r['coverage']:.1f}% risk={100 * r['test_risk']:.1f}%{truth} "
                f"violations={100 * r['violation_freq']:.1f}% [{100 * r['violation_ci_low']:.1f}, "
                f"{100 * r['violation_ci_high']:.1f}]" + (" (> delta)" if r["violation_above_delta"] else "")
            )
    else:
        frame, _ = rd.write_cost(
            runs,
            data,
            args.table,
            args.figure,
            args.lambdas,
            args.bootstrap_resamples,
            args.bootstrap_seed,
            args.confidence,
            args.data_label,
        )
        for r in frame.to_dict("records"):
            print(
                f"{r['router']:<40} AIQ/max={100 * r['aiq']:.2f}% [{100 * r['aiq_ci_low']:.2f}, "
                f"{100 * r['aiq_ci_high']:.2f}] AIQ/range={100 * r['aiq_range']:.2f}% "
                f"[{100 * r['aiq_range_ci_low']:.2f}, {100 * r['aiq_range_ci_high']:.2f}] vs mix "
                f"{100 * r['diff_vs_mix']:+.2f} [{100 * r['diff_vs_mix_ci_low']:+.2f}, "
                f"{100 * r['diff_vs_mix_ci_high']:+.2f}]"
            )
    print(f"wrote {args.table} (+ .csv) and {args.figure} (+ .png, .csv)")
    return 0
