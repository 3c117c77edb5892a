#!/usr/bin/env bash
# Make `snakemake --profile slurm` work (from any directory) by linking this repository's
# profiles/slurm into Snakemake's per-user profile directory.
#
# Usage: scripts/link-profile.sh [NAME ...]     (default NAME: slurm)
#
# Why: `snakemake --profile NAME` looks for NAME in the current directory,
# in ~/.config/snakemake/ (more precisely $XDG_CONFIG_HOME/snakemake/) and in the site-wide
# $XDG_CONFIG_DIRS/snakemake/, but never in ./profiles/. Without this step, say
# `snakemake --profile profiles/slurm`, which always works from the repository root.
# The link (not a copy) keeps following edits to profiles/slurm/config.yaml. An existing
# link is replaced; an existing real directory of the same name is left alone (exit 1).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=${XDG_CONFIG_HOME:-$HOME/.config}/snakemake
mkdir -p "$DEST"
[[ $# -gt 0 ]] || set -- slurm
for name in "$@"; do
  src=$REPO/profiles/$name
  [[ -f $src/config.yaml ]] || { echo "link-profile.sh: no profile $src/config.yaml" >&2; exit 1; }
  if [[ -e $DEST/$name && ! -L $DEST/$name ]]; then
    echo "link-profile.sh: $DEST/$name exists and is not a link; remove it first" >&2; exit 1
  fi
  ln -sfn "$src" "$DEST/$name"
  echo "link-profile.sh: $DEST/$name -> $src"
done
