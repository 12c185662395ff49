#!/usr/bin/env bash
# On one GPU: our GRPO step vs TRL's, checkpoint overhead at every step, save limits.
#   bench/gpu.sh RESULTS_DIR [extra gpu_bench.py flags, e.g. --tiny --device cpu]
# Writes RESULTS_DIR/gpu-<UTC time>.jsonl (and a copy of the console log). Installs TRL, datasets and their
# missing dependencies from the wheels bench/fetch_wheels.sh put in .whl/ (the GPU machine has no network),
# into /tmp/site, only when trl cannot be imported already. Budget: under 8 minutes on an H200.
set -euo pipefail
results=${1:?usage: bench/gpu.sh RESULTS_DIR [gpu_bench.py flags]}
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
if ! "$py" -c "import trl, datasets" 2>/dev/null; then
  if ls "$repo"/.whl/*.whl >/dev/null 2>&1; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$repo"/.whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  else
    echo "gpu.sh: trl/datasets missing and no wheels in $repo/.whl (run bench/fetch_wheels.sh where pip works);" \
         "the TRL part will record an error" >&2
  fi
fi
# The repo itself is not installed there: import recorder/ and trainer/ from the checkout.
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1
mkdir -p "$results"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
exec "$py" "$repo/bench/gpu_bench.py" "$results" "$@"
