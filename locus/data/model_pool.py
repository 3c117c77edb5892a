"""The 112-model pool of the LOCUS paper (the EmbedLLM models): a packaged metadata table.

``resources/model_pool.csv`` has one row per model in the paper's model-id order, with columns
``model_id``, ``name`` (HuggingFace id as printed in the paper), ``params_b`` (total parameters in billions:
all experts for MoE, unquantised for AWQ, the base architecture's count for fine-tunes and merges),
``family`` (the authors' 35 families; ``other_unknown`` when unknown), ``tags`` (joined by ``;``, empty
when none: ``chat_instruct``, ``math``, ``code``, ``biomed``, ``science``, ``base``, ``safety``, ``roleplay``,
``rag``, ``long_context``, ``moe``, ``quantized``), ``size_bucket`` (the authors', copied as is; a few
disagree with ``params_b``) and ``held_out`` (1 for the paper's 16 onboarding hold-outs, ids 96-111).

The table holds public facts only. Its ``params_b`` sum is about 2022 B, 4.8 % above the paper's
1930 B (:data:`TOTAL_PARAMS_PAPER_B`): four checkpoints (ids 35, 43, 53, 76) are larger than the
authors' size bucket says; the counts are the real ones, not adjusted.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

TOTAL_PARAMS_PAPER_B = 1930
"""Total parameter count of the 112-model pool as stated in the paper, in billions."""

POOL_COLUMNS = ("model_id", "name", "params_b", "family", "tags", "size_bucket", "held_out")


def load_model_pool() -> pd.DataFrame:
    """The packaged model-pool table, sorted by ``model_id`` (``tags`` is ``""`` when a model has none)."""
    with resources.files("locus.data").joinpath("resources/model_pool.csv").open("r", encoding="utf-8") as fh:
        pool = pd.read_csv(
            fh, keep_default_na=False, dtype={"name": str, "family": str, "tags": str, "size_bucket": str}
        )
    pool["model_id"] = pool["model_id"].astype("int64")
    pool["params_b"] = pool["params_b"].astype("float64")
    pool["held_out"] = pool["held_out"].astype("int64")
    return pool[list(POOL_COLUMNS)].sort_values("model_id").reset_index(drop=True)
