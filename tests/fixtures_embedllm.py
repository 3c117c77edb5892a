"""Write a small fixture directory in exactly the layout of the Hub data set ``RZ412/EmbedLLM``.

* ``train.csv`` / ``val.csv`` / ``test.csv``: long format ``prompt_id, model_id, model_name, label, prompt,
  category_id, category``, one row per (prompt, category, model), prompt text repeated in every row;
* ``model_order.csv`` with an unnamed leading index column (as written by ``DataFrame.to_csv``);
* ``question_order.csv``: ``prompt_id, prompt``.

Categories include MMLU subjects and GPQA variants (merged by the adapter), the other eight benchmarks
under their lm-eval style names, and one GPQA question listed under two variants (``gpqa_main_zeroshot``
and ``gpqa_diamond_zeroshot``) whose labels differ for model 0, so duplicate policies give different
results. `FixtureInfo` records what a test needs to check.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MODEL_NAMES = (
    "Qwen/Qwen1.5-7B-Chat",
    "ConvexAI/Luminex-34B-v0.1",
    "lmsys/vicuna-13b-v1.5",
    "deepseek-ai/deepseek-math-7b-instruct",
    "TigerResearch/tigerbot-13b-base",
    "EleutherAI/llemma_7b",
)
CATEGORIES = (
    ("mmlu_abstract_algebra", "MMLU"),
    ("mmlu_anatomy", "MMLU"),
    ("mmlu_world_religions", "MMLU"),
    ("gpqa_main_zeroshot", "GPQA"),
    ("gpqa_diamond_zeroshot", "GPQA"),
    ("ASDiv", "ASDiv"),
    ("MathQA", "MathQA"),
    ("MedMCQA", "MedMCQA"),
    ("SocialIQA", "SocialIQA"),
    ("PIQA", "PIQA"),
    ("GSM8K", "GSM8K"),
    ("TruthfulQA_MC1", "TruthfulQA"),
    ("LogiQA", "LogiQA"),
)
COLUMNS = ("prompt_id", "model_id", "model_name", "label", "prompt", "category_id", "category")


@dataclass
class FixtureInfo:
    directory: Path
    n_models: int
    split_of: dict = field(default_factory=dict)  # prompt_id -> split
    category_of: dict = field(default_factory=dict)  # prompt_id -> first category
    benchmark_of: dict = field(default_factory=dict)  # prompt_id -> merged benchmark
    dup_prompt_id: int = -1  # the GPQA prompt listed under two variants
    dup_labels: tuple = ()  # model 0's labels for it, in file order (first, second)
    n_rows: int = 0  # data rows over the three split files


def write_embedllm_fixture(
    directory: str | Path,
    n_models: int = 6,
    n_prompts: int = 60,
    seed: int = 0,
    model_id_column: bool = True,
    name_style: str = "org/name",
) -> FixtureInfo:
    """Write the fixture into `directory`; return what was written.

    `model_id_column=False` omits ``model_id`` from the split files (the adapter must map
    ``model_name``); `name_style="org__name"` spells names ``org__name`` in the split files.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = MODEL_NAMES[:n_models]
    info = FixtureInfo(directory=directory, n_models=n_models)

    with open(directory / "model_order.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["", "model_id", "model_name"])
        for i, name in enumerate(names):
            w.writerow([i, i, name])

    prompts = [
        f"Question {i}: what is {i} plus {i * 3}?\nA) {4 * i}\nB) {4 * i + 1}, with a comma" for i in range(n_prompts)
    ]
    with open(directory / "question_order.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["prompt_id", "prompt"])
        for i, text in enumerate(prompts):
            w.writerow([i, text])

    n_test = max(n_prompts // 6, 1)
    n_val = max(n_prompts // 6, 1)
    split_of = {
        i: ("train" if i < n_prompts - n_val - n_test else "val" if i < n_prompts - n_test else "test")
        for i in range(n_prompts)
    }
    skill = rng.normal(size=n_models)
    difficulty = rng.normal(size=n_prompts)
    labels = rng.random((n_prompts, n_models)) < 1 / (1 + np.exp(difficulty[:, None] - skill[None, :]))
    labels = labels.astype(int)
    info.dup_prompt_id = 3  # in train: category index 3 -> gpqa_main_zeroshot
    cat_index = {name: k for k, (name, _) in enumerate(CATEGORIES)}

    for split, fname in (("train", "train.csv"), ("val", "val.csv"), ("test", "test.csv")):
        with open(directory / fname, "w", newline="") as fh:
            w = csv.writer(fh)
            cols = [c for c in COLUMNS if model_id_column or c != "model_id"]
            w.writerow(cols)
            for pid in (i for i in range(n_prompts) if split_of[i] == split):
                category, bench = CATEGORIES[pid % len(CATEGORIES)]
                variants = [category]
                if pid == info.dup_prompt_id:
                    variants.append("gpqa_diamond_zeroshot")
                info.split_of[pid] = split
                info.category_of[pid] = category
                info.benchmark_of[pid] = bench
                for v, variant in enumerate(variants):
                    for mid, name in enumerate(names):
                        label = labels[pid, mid]
                        if pid == info.dup_prompt_id and mid == 0:
                            label = 1 if v == 0 else 0
                            info.dup_labels += (label,)
                        shown = name.replace("/", "__") if name_style == "org__name" else name
                        row = {
                            "prompt_id": pid,
                            "model_id": mid,
                            "model_name": shown,
                            "label": label,
                            "prompt": prompts[pid],
                            "category_id": cat_index[variant],
                            "category": variant,
                        }
                        w.writerow([row[c] for c in cols])
                        info.n_rows += 1
    return info
