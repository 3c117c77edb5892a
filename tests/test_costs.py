"""Model costs: the csv adapter's optional `cost` column, its check in models.parquet and the params_b proxy."""

import numpy as np
import pandas as pd
import pytest

from locus.data import canonical, csv_source
from locus.errors import DataError


def evals(n_prompts=10, costs=None):
    """Rows of three models on n prompts (scores alternate); `costs`: model -> cost cell of every row."""
    rows = []
    for i in range(n_prompts):
        for j, model in enumerate(["alpha", "mid", "zeta"]):
            rows.append({"prompt": f"q{i}", "model": model, "score": float((i + j) % 2)})
    df = pd.DataFrame(rows)
    if costs is not None:
        df["cost"] = df["model"].map(costs)
    return df


def build(tmp_path, df):
    path = tmp_path / "evals.csv"
    df.to_csv(path, index=False)
    return path, csv_source.build({"path": str(path)})


def test_csv_cost_column_reaches_models_parquet(tmp_path):
    df = evals(costs={"alpha": 0.5, "mid": 2, "zeta": 10})
    df.loc[3, "cost"] = None  # an empty cell: another row of the model gives its cost
    _, (q, m, s) = build(tmp_path, df)
    assert m.set_index("name")["cost"].to_dict() == {"alpha": 0.5, "mid": 2.0, "zeta": 10.0}
    data = canonical.write_dataset(tmp_path / "data", q, m, s)
    back = canonical.read_dataset(tmp_path / "data")
    assert back.models["cost"].tolist() == [0.5, 2.0, 10.0]
    costs, column = canonical.model_costs(back.models, [2, 0], "here")
    assert column == "cost" and costs.tolist() == [10.0, 0.5]
    assert "cost" not in csv_source.build({"path": str(tmp_path / "evals.csv")})[0].columns
    assert len(data.models) == 3


@pytest.mark.parametrize(
    "change,pattern",
    [
        (lambda df: df.assign(cost=np.where(df["model"] == "mid", -1.0, 1.0)), r"number >= 0.*CSV row\(s\) 3"),
        (lambda df: df.assign(cost=np.where(df["model"] == "mid", "cheap", "1")), r"'cheap'"),
        (lambda df: df.assign(cost=np.where(df.index == 4, 3.0, 1.0)), r"constant per model.*'mid'.*\[1.0, 3.0\]"),
        (lambda df: df.assign(cost=np.where(df["model"] == "zeta", np.nan, 1.0)), r"'zeta' has no cost"),
    ],
)
def test_csv_cost_errors_name_rows(tmp_path, change, pattern):
    path = tmp_path / "evals.csv"
    change(evals()).to_csv(path, index=False)
    with pytest.raises(DataError, match=pattern) as err:
        csv_source.build({"path": str(path)})
    assert str(path) in str(err.value)


@pytest.mark.parametrize("bad", [-0.5, np.nan, np.inf, "x"])
def test_models_parquet_cost_must_be_finite_and_non_negative(tmp_path, bad):
    _, (q, m, s) = build(tmp_path, evals())
    m["cost"] = pd.Series([1.0, bad, 2.0], dtype=object)
    with pytest.raises(DataError, match=r"column 'cost'.*model_id 1"):
        canonical.validate(q, m, s)


def test_params_b_is_the_proxy_and_neither_is_an_error(tmp_path):
    _, (q, m, s) = build(tmp_path, evals())
    models = canonical.validate(q, m, s).models
    with pytest.raises(DataError, match="neither a 'cost' nor a 'params_b'"):
        canonical.model_costs(models, [0, 1], "data")
    costs, column = canonical.model_costs(models.assign(params_b=[7.0, 13.0, 70.0]), [1, 2], "data")
    assert column == "params_b" and costs.tolist() == [13.0, 70.0]
    with pytest.raises(DataError, match=r"'params_b' has no usable value.*'mid'"):
        canonical.model_costs(models.assign(params_b=[7.0, np.nan, 70.0]), [0, 1], "data")
