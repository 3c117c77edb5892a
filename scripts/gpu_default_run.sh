#!/usr/bin/env bash
# The whole default run on one GPU machine, timed: every output of `snakemake` with LOCUS on CUDA
# (config/gpu.yaml), then the per-job and per-rule times from the benchmark files.
#
#   bash install.sh --torch-index https://download.pytorch.org/whl/cu126   # once: the CUDA build of torch
#   bash scripts/gpu_default_run.sh [CORES] [extra snakemake arguments]
#
# Writes results/ as the default run does, and results/gpu_run_times.txt (wall time, machine, per-rule table).
set -euo pipefail
cd "$(dirname "$0")/.."
cores=${1:-16}
shift || true
py=.venv/bin/python
"$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'torch sees no CUDA device: install the CUDA build (see the header)')"
start=$(date +%s)
.venv/bin/snakemake --cores "$cores" --configfile config/gpu.yaml "$@"
end=$(date +%s)
{
  echo "default run on $("$py" -c 'import torch; print(torch.cuda.get_device_name(0))') with $cores cores" \
    "($("$py" -c 'from locus.provenance import cpu_model; print(cpu_model())')): $((end - start)) s wall"
  "$py" scripts/rule_times.py results --top 40
} | tee results/gpu_run_times.txt
