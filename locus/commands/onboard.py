"""`locus onboard`: the prompts to evaluate a new model on before embedding it with a LOCUS run (active
onboarding, :mod:`locus.onboard`); with --answers, the next prompts and whether the stopping rule fires."""

from __future__ import annotations

from pathlib import Path

from locus.cli import (
    add_data_argument,
    add_out_argument,
    add_seed_argument,
    existing_dir,
    existing_file,
    only_with,
    output_file,
)

NAME = "onboard"
HELP = "which prompts to evaluate a new model on (random, stratified, anchor, disagreement, uncertainty selectors)"


def add_arguments(p) -> None:
    p.add_argument("--run", required=True, type=existing_dir("run directory"), help="a finished LOCUS run directory")
    p.add_argument("--budget", required=True, type=int, help="evaluations in all (K)")
    src = p.add_mutually_exclusive_group(required=True)
    add_data_argument(src, "candidates: its training-split queries")
    src.add_argument(
        "--candidates", type=Path, help="candidates: a text file (one prompt per line) or a CSV with a prompt column"
    )
    p.add_argument(
        "--encodings",
        type=existing_file("encodings file"),
        default=None,
        help="with --data: its query encodings (default: encode the texts with the run's encoder)",
    )
    p.add_argument(
        "--selector", default="anchor", help="random | stratified | anchor (default) | disagreement | uncertainty"
    )
    p.add_argument(
        "--answers",
        type=Path,
        default=None,
        help="CSV/Parquet (prompt, score in [0, 1]) of what the new model was evaluated on so far, in order",
    )
    p.add_argument("--batch", type=int, default=8, help="prompts printed per step once answers are given")
    p.add_argument(
        "--epsilon",
        type=float,
        default=0.02,
        help="stop when at most this fraction of the reference queries is routed differently between the "
        "embeddings before and after the last batch",
    )
    add_seed_argument(p, help="seed of the selectors")
    add_out_argument(
        p,
        output_file((".csv",)),
        "also write the prompts as CSV (prompt_id, prompt, score left empty: fill in and append to --answers)",
        required=False,
    )


def one_line(text: str) -> str:
    """A prompt on one output line: backslashes, newlines and tabs escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def run(args) -> int:
    from locus.onboard import SEQUENTIAL, plan

    # without what they refine, these would be ignored silently
    only_with(args, ("encodings",), args.data is not None, "with --data (its query encodings)")
    only_with(args, ("epsilon",), args.answers is not None, "with --answers (the stopping rule compares answers)")
    r = plan(
        args.run,
        args.budget,
        selector=args.selector,
        data=args.data,
        encodings=args.encodings,
        candidates=args.candidates,
        answers=args.answers,
        batch=args.batch,
        epsilon=args.epsilon,
        seed=args.seed,
    )
    left = r.budget - r.n_answers
    if r.prompts:
        print(
            f"evaluate the new model on these {len(r.prompts)} prompts ({args.selector}; {r.n_answers} answered, "
            f"budget {r.budget}):"
        )
        for pid, text in r.prompts:
            print(f"{pid}\t{one_line(text)}")
    else:
        print(f"budget spent: {r.n_answers} answers for a budget of {r.budget}.")
    if args.selector in SEQUENTIAL and r.n_answers == 0 and left > len(r.prompts):
        print("sequential selector: evaluate these, then rerun with --answers FILE for the next prompts.")
    if args.out is not None:
        import pandas as pd

        from locus.atomic import write_text

        frame = pd.DataFrame({"prompt_id": [p for p, _ in r.prompts], "prompt": [t for _, t in r.prompts], "score": ""})
        write_text(args.out, frame.to_csv(index=False))
        print(f"wrote {args.out}")
    if r.changed is not None:
        verdict = "stop" if r.stop else "continue"
        print(
            f"stopping rule: routing changed on {100 * r.changed:.2f}% of {r.reference} reference queries "
            f"after the last {args.batch} answers (epsilon {100 * args.epsilon:.2f}%): {verdict}"
        )
    elif r.n_answers:
        print(f"stopping rule: needs more than {args.batch} answers to compare two embeddings.")
    return 0
