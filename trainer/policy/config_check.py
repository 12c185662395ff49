"""A checkpoint's config.json checked against its weights before any allocation.

`num_hidden_layers: 100000` in a config.json next to a 3-layer model once made eval allocate until it hung.
The parameter count a config implies is computed on PyTorch's meta device (no memory), from one- and
two-layer copies (layers are uniform, so the count is linear in the layer count), and must equal the
number of values the safetensors header declares.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from recorder.checkpoints.hugging_face.safetensors_header import read_header
from recorder.errors import DataError
from trainer.policy.errors import CheckpointError


def _meta_model(config: Any) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def _meta_parameters(config: Any) -> int:
    return sum(p.numel() for p in _meta_model(config).parameters())


def _tied_head_parameters(config: Any) -> int:
    """The output embedding's size when it is tied to the input embedding (else 0): a file may store the
    tied tensor under both names (a state_dict saved as is, as our trainer's checkpoints are) or once
    (`save_pretrained`)."""
    if not getattr(config, "tie_word_embeddings", False):
        return 0
    one = copy.deepcopy(config)
    one.num_hidden_layers = 1
    head = _meta_model(one).get_output_embeddings()
    return int(head.weight.numel()) if head is not None else 0


def implied_parameters(config: Any) -> int:
    """The number of parameters a model built from `config` would have (nothing allocated)."""
    layers = getattr(config, "num_hidden_layers", None)
    if not isinstance(layers, int) or layers < 2:
        return _meta_parameters(config)
    kinds = getattr(config, "layer_types", None)
    if isinstance(kinds, list) and len(kinds) == layers and len(set(kinds)) > 1:
        return _hybrid_parameters(config, kinds)
    one, two = copy.deepcopy(config), copy.deepcopy(config)
    one.num_hidden_layers, two.num_hidden_layers = 1, 2
    p1, p2 = _meta_parameters(one), _meta_parameters(two)
    return p1 + (layers - 1) * (p2 - p1)


def _hybrid_parameters(config: Any, kinds: list[Any]) -> int:
    """A hybrid model's count (Qwen3.5: linear and full attention layers): each kind of layer costs what a
    second layer of that kind adds, counted on one- and two-layer copies of that kind alone."""
    total, base = 0, None
    for kind in set(kinds):
        one, two = copy.deepcopy(config), copy.deepcopy(config)
        one.num_hidden_layers, one.layer_types = 1, [kind]
        two.num_hidden_layers, two.layer_types = 2, [kind, kind]
        p1, p2 = _meta_parameters(one), _meta_parameters(two)
        base = p1 - (p2 - p1)
        total += kinds.count(kind) * (p2 - p1)
    assert base is not None
    return base + total


def check_config_matches_weights(config: Any, weights: Path) -> None:
    """CheckpointError unless the config implies as many parameters as `weights` stores (a tied output
    embedding may be stored once or a second time under its own name: both are the same weights)."""
    try:
        stored = read_header(weights).parameters
    except DataError as e:
        raise CheckpointError(str(e)) from e
    implied = implied_parameters(config)
    if stored == implied or stored == implied + _tied_head_parameters(config):  # the meta model only if needed
        return
    raise CheckpointError(
        f"{weights.parent / 'config.json'} implies {implied:,} parameters, {weights.name} stores {stored:,}: "
        "the config does not describe these weights; refused before building the model"
    )


def check_config_matches_count(config: Any, stored: int, where: Path, what: str) -> None:
    """CheckpointError unless `config` implies `stored` parameters (the tensors a checkpoint holds, counted
    from its files before any model is built)."""
    implied = implied_parameters(config)
    if stored == implied or stored == implied + _tied_head_parameters(config):
        return
    raise CheckpointError(
        f"{where / 'config.json'} implies {implied:,} parameters, {what} stores {stored:,}: "
        "the config does not describe these weights; refused before building the model"
    )
