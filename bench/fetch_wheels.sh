#!/usr/bin/env bash
# Download TRL, datasets and the dependencies the GPU machine lacks as wheels into .whl/ (git-ignored), for
# Python 3.12 manylinux x86_64 (the H200 image: /work/.library/device/KINDS.md lists what it already has:
# torch, transformers, accelerate, pyarrow, pandas, huggingface-hub, xxhash, fsspec, ... are there).
# Versions are pinned to what this repo's venv runs, so the bench exercises the same TRL both places.
# There: python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#          --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site   (bench/gpu.sh does this)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dest=$repo/.whl
py=${PYTHON:-python3}
ver() { "$py" -c "import importlib.metadata as m; print(m.version('$1'))"; }
pkgs=("trl==$(ver trl)" "datasets==$(ver datasets)" "dill==$(ver dill)" "multiprocess==$(ver multiprocess)")
# datasets wants pyarrow >= 24; the H200 image's pyarrow version is not on record. If the `trl` record of a
# GPU run says pyarrow is too old, fetch it too (pyarrow 26.0.1: 55 MB, of the 64 MiB a device call may carry).
if [ "${WITH_PYARROW:-0}" = 1 ]; then pkgs+=("pyarrow==$(ver pyarrow)"); fi
mkdir -p "$dest"
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dest" "${pkgs[@]}"
ls -l "$dest"
du -sh "$dest"
