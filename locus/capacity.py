"""What a pool can carry: its counts and model metadata (:class:`PoolFacts`), and the workflow's plan for it
(:class:`PoolPlan`): experiment sizes fitted to the pool and outputs skipped with the reason.

The workflow plans every output from these facts when it builds the DAG, so a pool smaller than a setting
asks for still builds everything it can: a size larger than the training split becomes the split's size, and
an output that needs what the pool lacks (model families, held-out models, parameter counts) is left out.
Both are written to ``results/tables/pool_plan.json``, which the claims ledger and the captions read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from locus.errors import LocusError

PLAN_FILE = "tables/pool_plan.json"  # under the results directory


@dataclass(frozen=True)
class PoolFacts:
    """The counts and model columns of a canonical data set, all the planning needs."""

    models: int
    train_queries: int
    val_queries: int
    test_queries: int
    model_columns: frozenset[str] = frozenset()
    held_out_models: int = 0  # models flagged in the `held_out` column
    names: tuple[str, ...] = ()  # model names, by model_id

    def has(self, column: str) -> bool:
        return column in self.model_columns


def facts_of(queries, models) -> PoolFacts:
    """Facts of validated canonical frames (queries with `split`, models with their optional columns)."""
    split = queries["split"]
    held = int(models["held_out"].astype(bool).sum()) if "held_out" in models.columns else 0
    usable = {c for c in models.columns if models[c].notna().any()}  # an all-empty column carries nothing
    return PoolFacts(
        models=len(models),
        train_queries=int((split == "train").sum()),
        val_queries=int((split == "val").sum()),
        test_queries=int((split == "test").sum()),
        model_columns=frozenset(usable),
        held_out_models=held,
        names=tuple(models.sort_values("model_id")["name"].astype(str)),
    )


def read_facts(directory: str | Path) -> PoolFacts | None:
    """Facts of a canonical data set on disk; None when it is absent or unreadable (the data rule rebuilds it
    and its loader names the problem)."""
    import pandas as pd

    directory = Path(directory)
    try:
        queries = pd.read_parquet(directory / "queries.parquet", columns=["split"])
        models = pd.read_parquet(directory / "models.parquet")
    except Exception:  # noqa: BLE001 - any unreadable file means "not known yet", never a plan from bad data
        return None
    return facts_of(queries, models)


def source_facts(source: str, params: dict, options: dict) -> PoolFacts | None:
    """Facts of a source's pool, built in memory exactly as `locus data` would build it (nothing is written).
    None when the source cannot be read yet (files not in place): the data rule then reports the fix."""
    from locus.data.canonical import validate
    from locus.params import adapter

    try:
        queries, models, scores = adapter(source).build(params)[:3]
        data = validate(queries, models, scores, source=f"data set source {source!r}", **options)
    except LocusError:
        return None
    return facts_of(data.queries, data.models)


@dataclass
class PoolPlan:
    """Sizes fitted to one pool and outputs skipped, each with the reason a reader sees."""

    dataset: str
    facts: PoolFacts
    adapted: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)

    def sizes(self, setting: str, asked: list[int], cap: int, what: str) -> list[int]:
        """`asked` with every size above `cap` replaced by `cap` (order kept, repeats dropped); the change is
        recorded under `setting`, with `what` the cap is (e.g. "the 600 training queries")."""
        used = list(dict.fromkeys(min(int(n), cap) for n in asked))
        if used != [int(n) for n in asked]:
            self._record(setting, list(asked), used, f"{what} ({cap})")
        return used

    def size(self, setting: str, asked: int, cap: int, what: str) -> int:
        if int(asked) > cap:
            self._record(setting, int(asked), cap, f"{what} ({cap})")
        return min(int(asked), cap)

    def _record(self, setting: str, asked, used, why: str) -> None:
        self.adapted.append({"setting": setting, "asked": asked, "used": used, "why": why})

    def models(self, setting: str, asked: list[str], present: list[str], why: str) -> list[str]:
        """`asked` model names with those not in the pool replaced by the pool's first other models (by name),
        as many as were asked for while the pool has them; the change is recorded under `setting`."""
        kept = [m for m in asked if m in present]
        fill = [m for m in sorted(self.facts.names) if m not in kept]
        used = kept + fill[: max(len(asked) - len(kept), 0)]
        if used != list(asked):
            self._record(setting, list(asked), used, why)
        return used

    def skip(self, outputs: list[str], why: str) -> None:
        """Leave `outputs` (paths under the results directory) out of the DAG, saying why."""
        self.skipped.append({"outputs": sorted(outputs), "why": why})

    def is_skipped(self, output: str) -> bool:
        return any(output in s["outputs"] for s in self.skipped)

    def lines(self) -> list[str]:
        """One line per change, as the workflow prints them when it builds the DAG."""
        out = [f"{a['setting']}: {a['asked']} -> {a['used']}: {a['why']}" for a in self.adapted]
        out += [f"skipped {', '.join(s['outputs'])}: {s['why']}" for s in self.skipped]
        return out

    def as_dict(self) -> dict:
        f = self.facts
        return {
            "dataset": self.dataset,
            "models": f.models,
            "train_queries": f.train_queries,
            "val_queries": f.val_queries,
            "test_queries": f.test_queries,
            "adapted": self.adapted,
            "skipped": self.skipped,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1, sort_keys=True)
