# The config (schema, then locus.workflow_config: the pool's plan, every cross-field check), wildcard constraints
# and the helpers every rule file uses, in rule_helpers.py beside this file (docs/architecture.md, "Rules").
import shlex
import sys

from snakemake.utils import validate

from locus import capacity as _capacity
from locus import run_artifacts as _artifacts
from locus import workflow_config as _wc
from locus.constants import RECIPES as _RECIPES
import rule_helpers

_SCHEMA = workflow.source_path("../schemas/config.schema.yaml")
_wc.parse_list_values(config, _SCHEMA)  # `--config seeds='[0,1,2]'` is a list
_wc.check_schema(config, _SCHEMA)  # one line naming the key
validate(config, _SCHEMA, set_default=True)  # the schema's defaults fill every missing key
POOL = _wc.pool_facts(config, config["dataset"])  # None while the data set's source cannot be read
PLAN = _wc.fit_to_pool(config, config["dataset"], POOL, _SCHEMA)  # sizes fitted to the pool, outputs it lacks skipped
for _line in PLAN.lines() if PLAN else []:
    print(f"locus: pool {config['dataset']}: {_line}", file=sys.stderr)
_wc.check(config, POOL)  # every cross-field check (with the pool's model names where it is known)
rule_helpers.configure(config, _SCHEMA, PLAN, POOL)
from rule_helpers import *

# The interpreter running Snakemake also runs the jobs (the venv's python on every node).
LOCUS = f"{shlex.quote(sys.executable)} -m locus"


wildcard_constraints:
    dataset="|".join(config["datasets"]),
    encoder=r"[A-Za-z0-9._-]+",
    method="|".join(config["methods"]),
    n=r"\d+",
    dim=r"\d+",
    seed=r"\d+",
