"""A checkpoint made ready to evaluate: detected, its shards hashed while loaded into its model, and its
tokenizer. What `recorder eval` and the zero-shot evaluation both load through."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.checkpoints.detect import CheckpointInfo, ModelSource
from recorder.checkpoints.load import torch_dtype
from recorder.checkpoints.manifest import Manifest
from recorder.checkpoints.readers import detect, load_state_dict, reader
from recorder.checkpoints.team_code.model_code import CodeProvenance, build_model, fit_names, load_weights
from recorder.checkpoints.tokenizer_files import TokenizerFiles, hf_tokenizer_from, is_own_json, read_tokenizer_files
from trainer.policy.errors import CheckpointError


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """A loaded checkpoint: the model (eval mode), its tokenizer, what was read and how."""

    model: Any
    tokenizer: Any
    info: CheckpointInfo
    manifest: Manifest
    provenance: CodeProvenance | None
    dtype: str  # torch's name of the dtype the weights are in: "bfloat16", "float32"
    device: str  # where they are: "cpu", "cuda:0"
    # with keep_state: the tensors the model was loaded from, in the checkpoint's Hugging Face names (experts
    # one tensor each), what another engine (vLLM) loads; views of the same hashed read, never read again
    state: dict[str, Any] | None = None


def load_checkpoint(
    path: Path,
    *,
    dtype: Any,
    device: str = "cpu",
    expected: Manifest | None = None,
    model_code: Path | None = None,
    model_factory: str | None = None,
    capacity: bool = True,
    trust_remote_code: bool = False,
    source: ModelSource | None = None,
    keep_state: bool = False,
) -> Loaded:
    """Detect, load (every shard checked against `expected` as it is read) and build; CheckpointError.
    `keep_state`: the loaded tensors are kept in Loaded.state."""
    info = detect(Path(path), source)
    state, manifest = load_state_dict(info, dtype=dtype, expected=expected)
    if model_factory is None:  # a config.json of 100000 layers must not allocate them: counted on meta first
        _check_count(info, state, manifest)
    model, prov = build_model(
        info, dtype=dtype, device="cpu", model_code=model_code, model_factory=model_factory, capacity=capacity
    )
    state = fit_names(state, set(model.state_dict()))
    load_weights(model, state, info)
    kept = state if keep_state else None
    del state
    model = model.to(device)
    param = next(iter(model.parameters()), None)
    used_dtype = str(param.dtype).removeprefix("torch.") if param is not None else str(torch_dtype(dtype))
    used_device = str(param.device) if param is not None else device
    return Loaded(
        model=model,
        tokenizer=load_tokenizer(info, trust_remote_code=trust_remote_code),
        info=info,
        manifest=manifest,
        provenance=prov,
        dtype=used_dtype,
        device=used_device,
        state=kept,
    )


def _check_count(info: CheckpointInfo, state: dict[str, Any], manifest: Manifest) -> None:
    """CheckpointError unless the config implies as many parameters as the checkpoint holds, naming the
    config.json it was read from and the tensors with no counterpart on either side."""
    from recorder.checkpoints.name_diff import describe, model_names, unmatched
    from recorder.checkpoints.team_code.model_code import hf_config
    from trainer.policy.config_check import check_config_matches_count

    shards = [s.path for s in manifest.shards if not s.path.endswith(".metadata")]
    what = shards[0] if len(shards) == 1 else f"the {len(shards)} shards"
    config = hf_config(info)
    where = info.config_file.parent if info.config_file is not None else info.path
    try:
        check_config_matches_count(config, sum(t.numel() for t in state.values()), where, what)
    except CheckpointError as e:
        names = model_names(config)
        extra, lacking = unmatched(state, names), unmatched(names, state)
        told = [f"tensors with no counterpart in the model it builds: {describe(extra)}"] if extra else []
        told += [f"the model's tensors the checkpoint lacks: {describe(lacking)}"] if lacking else []
        raise CheckpointError("; ".join([str(e), *told])) from e


def load_tokenizer(info: CheckpointInfo, *, trust_remote_code: bool = False) -> Any:
    """The checkpoint's tokenizer: the policy's own tokenizer.json (no tokenizer_config.json beside it), else
    the Hugging Face tokenizer files, with their chat template; each file read once."""
    files = read_tokenizer_files(tokenizer_place(info), trust_remote_code=trust_remote_code)
    return tokenizer_from(files, trust_remote_code=trust_remote_code)


def tokenizer_place(info: CheckpointInfo) -> Path:
    """Where the checkpoint's tokenizer files are; CheckpointError saying how to give them when nowhere."""
    where = info.tokenizer_dir
    lacks = reader(info.format).lacks_tokenizer
    if where is None and lacks:
        raise CheckpointError(
            f"{info.path}: no tokenizer: {lacks}, and the base model's "
            f"({info.model_name or 'config.yaml names no policy.model_name'}) is not a local directory or in the "
            "Hugging Face cache: pass --tokenizer DIR"
        )
    if where is None:
        raise CheckpointError(
            f"{info.path}: no tokenizer files (tokenizer.json, tokenizer_config.json, tokenizer.model) next to the "
            "weights, in tokenizer/ or in the run it came from: save the tokenizer with the checkpoint"
        )
    return where


def tokenizer_from(files: TokenizerFiles, *, trust_remote_code: bool = False) -> Any:
    """The tokenizer these bytes make (recorder.checkpoints.tokenizer_files), never read from disk again."""
    if is_own_json(files):
        from trainer.policy.tokenizer import from_json

        data = next(iter(files.files.values())) if files.single else files.files["tokenizer.json"]
        try:
            text = data.decode()
        except UnicodeDecodeError as e:
            raise CheckpointError(f"{files.path}: the tokenizer file is not UTF-8 text ({e})") from e
        return from_json(text)
    from recorder.checkpoints.hugging_face.hf_checkpoint import ChatTokenizer

    try:
        hf = hf_tokenizer_from(files, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError) as e:
        raise CheckpointError(f"{files.path}: cannot load the tokenizer: {e}") from e
    return ChatTokenizer(hf)
