"""A checkpoint of any format made ready for the zero-shot job, through the formats' loader
(recorder/checkpoints/): detected, every shard hashed as it is read (once), and models built from the
weights read: the holdout model as training ran it (its parameter dtype, MoE capacity on) and the scoring
model (the scoring dtype, capacity off: a sample's score must not depend on its batch)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder.checkpoints.capacity_switch import CapacitySwitch, FactoryCall
from recorder.checkpoints.detect import CheckpointInfo
from recorder.checkpoints.evaluable import tokenizer_from, tokenizer_place
from recorder.checkpoints.manifest import Manifest
from recorder.checkpoints.readers import load_state_dict
from recorder.checkpoints.team_code.model_code import CodeProvenance, build_model, code_provenance, load_weights
from recorder.checkpoints.tokenizer_files import TokenizerFiles, read_tokenizer_files
from trainer.policy.errors import CheckpointError, FactoryCallError, ModelCodeError


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCode:
    """--model-code ROOT --model-factory pkg.mod:fn (or neither), the team's holdout loss, if any, and how its
    model's MoE capacity is switched (None: the factory's `capacity` argument, if it has one)."""

    root: Path | None = None
    factory: str | None = None
    holdout_fn: str | None = None
    switch: CapacitySwitch | None = None
    call: FactoryCall = field(default_factory=FactoryCall)
    max_length: int | None = None  # positions the model takes (declared); None: what the model says, else refused
    model_group: str | None = None  # a team's DCP {model, optim, progress, ...}: the group its model is in
    logits: int | str | None = None  # where the forward's logits are (declared): tuple index, dict key, attribute
    eos_token: str | None = None  # the tokenizer's EOS and padding, declared where its files do not say them
    pad_token: str | None = None
    bos: bool = False  # every scored request begins with the tokenizer's BOS (declared: the team's framing)


@dataclass(frozen=True, slots=True, kw_only=True)
class Weights:
    """A checkpoint's model tensors (fp32, on the CPU), the manifest of the shards read, its tokenizer."""

    info: CheckpointInfo
    state: dict[str, Any]
    manifest: Manifest
    tokenizer: Any
    tokenizer_files: TokenizerFiles  # the bytes the tokenizer was built from (results.json records their sha256)


def read(
    info: CheckpointInfo, *, tokenizer: Path | TokenizerFiles | None = None, code: ModelCode | None = None
) -> Weights:
    """Every shard read and hashed once; `tokenizer` (a tokenizer.json or a directory, or the bytes of one
    already read) replaces the checkpoint's own; `code`'s declared EOS and padding tokens are set on it."""
    state, manifest = load_state_dict(info, dtype="fp32")
    files = tokenizer if isinstance(tokenizer, TokenizerFiles) else tokenizer_files(info, tokenizer)
    return Weights(
        info=info, state=state, manifest=manifest, tokenizer=tokenizer_of(files, code), tokenizer_files=files
    )


def tokenizer_files(info: CheckpointInfo, tokenizer: Path | None) -> TokenizerFiles:
    """The bytes of the tokenizer file or directory given, else of the checkpoint's own, each read once."""
    return read_tokenizer_files(tokenizer if tokenizer is not None else tokenizer_place(info))


def tokenizer_of(files: TokenizerFiles, code: ModelCode | None) -> Any:
    """The tokenizer these bytes make, with its EOS and padding: as its files say them, else as declared;
    TokenizerError when no EOS is known or a declared token is not in it."""
    from evaluator.zero_shot.special_tokens import framed_with_bos, with_special_tokens

    eos, pad = (code.eos_token, code.pad_token) if code is not None else (None, None)
    tok = with_special_tokens(tokenizer_from(files), eos=eos, pad=pad, where=str(files.path))
    return framed_with_bos(tok, where=str(files.path)) if code is not None and code.bos else tok


def build(w: Weights, *, dtype: str, device: str, code: ModelCode, capacity: bool | None) -> Any:
    """A model of `w` (eval mode) in `dtype` on `device`, with MoE capacity on or off (the team's factory;
    None: as the config builds it)."""
    if code.factory is None:
        from recorder.checkpoints.team_code.model_code import hf_config
        from trainer.policy.config_check import check_config_matches_count

        shards = [s.path for s in w.manifest.shards if not s.path.endswith(".metadata")]
        what = shards[0] if len(shards) == 1 else f"the {len(shards)} shards"
        check_config_matches_count(hf_config(w.info), sum(t.numel() for t in w.state.values()), w.info.path, what)
    model, _ = build_model(
        w.info, dtype=dtype, device="cpu", model_code=code.root, model_factory=code.factory, capacity=capacity,
        switch=code.switch, call=code.call,
    )  # fmt: skip
    group = f"{code.model_group}."
    state = w.state if code.model_group is None else {k: v for k, v in w.state.items() if k.startswith(group)}
    load_weights(model, state, w.info)
    _declared(model, code)
    return model.to(device).eval()


def _declared(model: Any, code: ModelCode) -> None:
    """What the team declared about its model set on it: the positions it takes and where its forward's logits
    are; its positions known before any request is cut to them, or refused naming the declaration."""
    from evaluator.harness.model_call import declare_logits, declare_max_length, max_length

    if code.max_length is not None:
        declare_max_length(model, code.max_length)
    if code.logits is not None:
        declare_logits(model, code.logits)
    max_length(model)


def check_model_before_reading(info: CheckpointInfo, code: ModelCode) -> None:
    """A team's model checked before any weight is read: built on the meta device (no memory, no weights), its
    positions known and a two-token forward answering logits where it was told (ModelCodeError naming what to
    declare otherwise). A model its code cannot build or run on the meta device says nothing here: the real
    build and the first real forward check the same again."""
    if code.factory is None:
        return  # a transformers model: its config says its positions, its output has .logits
    import torch

    from evaluator.harness.model_call import ModelOutputError, logits

    try:
        with torch.device("meta"):
            model, _ = build_model(
                info, dtype="fp32", device="meta", model_code=code.root, model_factory=code.factory, capacity=None,
                switch=code.switch, call=code.call,
            )  # fmt: skip
    except FactoryCallError:  # the team's code raised building on the meta device: the real build will say
        return
    except (ModelCodeError, CheckpointError):
        raise  # the code, its config or its call, whatever the weights: said now
    except Exception:  # code that needs real tensors to be built
        return
    _declared(model, code)
    try:
        with torch.no_grad():
            logits(model, torch.zeros((1, 2), dtype=torch.long, device="meta"))
    except ModelOutputError as e:
        if e.__cause__ is None:  # the output itself, not a forward the meta device could not run
            raise
    except Exception:
        return


def holdout_function(code: ModelCode) -> Any:
    """The team's `--holdout-fn package.module:function`, imported from --model-code."""
    from recorder.checkpoints.team_code.model_code import import_from_tree

    if code.holdout_fn is None:
        return None
    if code.root is None:
        raise CheckpointError(f"--holdout-fn {code.holdout_fn} needs --model-code ROOT: the tree it is imported from")
    return import_from_tree(code.root, code.holdout_fn, "--holdout-fn")


def provenance(code: ModelCode) -> CodeProvenance | None:
    """The team's code as imported so far (None: the model was a Hugging Face class)."""
    if code.root is None or code.factory is None:
        return None
    spec = code.factory + (f" {code.holdout_fn}" if code.holdout_fn else "")
    return code_provenance(code.root.resolve(), spec)


def described(model: Any) -> tuple[str, str]:
    """(torch's name of the parameters' dtype, their device)."""
    param = next(iter(model.parameters()))
    return str(param.dtype).removeprefix("torch."), str(param.device)
