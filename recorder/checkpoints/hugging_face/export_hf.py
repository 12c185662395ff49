"""A checkpoint written out as a Hugging Face directory: `model.safetensors` in the hub's names (experts one
tensor each), `config.json` and the tokenizer's files; what `recorder export-hf` writes.

The weights are read through the same load as an evaluation (every shard hashed while read, Megatron's
names mapped by recorder/checkpoints/megatron/mcore_names.py), so the export holds exactly the tensors an
evaluation of the checkpoint loads; the safetensors metadata names the source and its manifest root.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from recorder.checkpoints.detect import TOKENIZER_FILES, ModelSource, require_config
from recorder.checkpoints.readers import detect, load_state_dict
from trainer.policy.errors import ExportTargetError

# what `save_pretrained` leaves beside tokenizer.json that a tokenizer load reads
_TOKENIZER_EXTRAS = ("special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja")


@dataclass(frozen=True, slots=True)
class Exported:
    """What an export wrote."""

    directory: Path
    tensors: int
    manifest_root: str


def export_hf(checkpoint: Path, out: Path, *, dtype: str = "fp32", source: ModelSource | None = None) -> Exported:
    """`checkpoint` as a Hugging Face directory at `out` (which must not exist or be empty); CheckpointError
    for a checkpoint that does not load, ExportTargetError for an `out` with files in it."""
    from safetensors.torch import save_file

    from recorder.checkpoints.evaluable import load_tokenizer  # checks the tokenizer loads

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportTargetError(f"{out}: exists and is not empty: export into a new directory")
    info = detect(Path(checkpoint), source)
    config = require_config(info)
    load_tokenizer(info)
    assert info.tokenizer_dir is not None  # load_tokenizer refuses a checkpoint without one
    state, manifest = load_state_dict(info, dtype=dtype)
    out.mkdir(parents=True, exist_ok=True)
    metadata = {"format": "pt", "source": str(info.path), "source_format": info.format, "manifest_root": manifest.root}
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "model.safetensors"), metadata=metadata)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    for name in (*TOKENIZER_FILES, *_TOKENIZER_EXTRAS):
        if (info.tokenizer_dir / name).is_file():
            shutil.copyfile(info.tokenizer_dir / name, out / name)
    return Exported(out, len(state), manifest.root)
