"""A team's conventions, declared once in its own repository: the `[tool.recorder]` table of the
`pyproject.toml` at the model code's root (docs/zero-shot.md, "The team's declaration").

    [tool.recorder]
    factory = "pkg.module:function"           # --model-factory / EVAL_MODEL_FACTORY (or pkg.module:Class.build)
    config = "pkg.module:function"            # turns the model's config into the factory's argument
    call = "positional"                        # or "keywords": factory(**argument)
    holdout_function = "pkg.module:function"  # --holdout-fn
    model = "model"                            # key path of the model's config in all_config.yaml ("": all)
    max_length = "model.max_positions"         # positions the model takes: a key path or a number
    tokenizer = "tokenizer"                    # key path of the tokenizer in train_metadata.yaml (or config_file)
    config_file = "config.toml"                # a checkpoint outside the team layouts: its run's config file
    logits = 0                                 # the forward's logits: a tuple index, a dict key or an attribute
    eos_token = "<|endoftext|>"                # the tokenizer's EOS / padding, where its files do not say them
    pad_token = "<pad>"
    bos = true                                 # every scored request begins with the tokenizer's BOS

    [tool.recorder.layout]                     # the team's own meta file names and step key
    epoch_meta = "epoch_meta.json"
    step_key = "step"
    step_file = "run_info.json"                # a checkpoint outside the team layouts: the file beside its weights
    state_key = "model"                        # a torch.save file: the entry holding the model's state dict

    [tool.recorder.capacity]                   # one of argument / config / attribute / method, and on/off
    config = "moe.capacity"

    [tool.recorder.holdout]                    # key paths in all_config.yaml, or the values themselves
    seq_len = "packing.seq_len"
    tokens = "eval.tokens"
    batch_rows = "eval.batch_rows"
    val_path = "data.val_path"
    param_dtype = "train.param_dtype"

Every entry is optional; an option or the seed's environment variable wins over it. pyproject.toml, because
it is the file a Python team already keeps at its root and `[tool.NAME]` is where every tool it uses (ruff,
pytest, mypy) reads its settings: no new file to learn, and one place a reviewer looks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from recorder.checkpoints.capacity_switch import CapacitySwitch, switch_of
from trainer.policy.errors import ModelCodeError

PYPROJECT = "pyproject.toml"
DECLARATION_LIMIT = 1024 * 1024  # a pyproject.toml is a few KB
TABLE = "[tool.recorder]"
# a checkpoint outside the team layouts: its metrics log, where its records are (a JSON document's list), the
# step's and the loss's keys in them, the training's world size, how its rows were cut, whether documents begin
# with the BOS
PLAIN_HOLDOUT_KEYS = {"log", "log_records", "log_step", "log_loss", "world_size", "windows", "bos"}
WINDOWS = ("disjoint", "shifted")
HOLDOUT_KEYS = {  # the setting: its key path in all_config.yaml when nothing is declared
    "seq_len": "packing.seq_len",
    "tokens": "eval.tokens",
    "batch_rows": "eval.batch_rows",
    "val_path": "data.val_path",
    "param_dtype": "train.param_dtype",
}
TOP_KEYS = {
    "factory", "config", "call", "holdout_function", "model", "max_length", "tokenizer", "capacity", "holdout",
    "layout", "config_file", "logits", "eos_token", "pad_token", "bos",
}  # fmt: skip
LAYOUT_KEYS = {"epoch_meta", "step_key", "step_file", "state_key"}
CALLS = ("positional", "keywords")
MODEL_KEY = "model"
TOKENIZER_KEYS = ("tokenizer", "tokenizer_path")  # the spellings read undeclared; both present must agree


@dataclass(frozen=True, slots=True, kw_only=True)
class Declaration:
    """What the team's pyproject.toml declares (None / empty: nothing, the defaults apply)."""

    file: Path | None = None
    factory: str | None = None
    config: str | None = None
    keywords: bool = False
    holdout_function: str | None = None
    model: str | None = None
    max_length: int | str | None = None
    tokenizer: str | None = None
    capacity: CapacitySwitch | None = None
    holdout: dict[str, Any] = field(default_factory=dict)
    epoch_meta: str | None = None
    step_key: str | None = None
    config_file: str | None = None  # a checkpoint outside the team layouts: its run's config (JSON, YAML, TOML)
    logits: int | str | None = None  # which entry of the forward's tuple or dict (or which attribute) is the logits
    eos_token: str | None = None
    pad_token: str | None = None
    bos: bool = False  # each scored request begins with the tokenizer's BOS (the team's own framing)
    step_file: str | None = None
    state_key: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file} {TABLE}"


def read_declaration(root: Path | None) -> Declaration:
    """The `[tool.recorder]` table of ROOT/pyproject.toml (an empty Declaration when there is none);
    ZeroShotInputError naming the file and the entry that is wrong."""
    from recorder.untrusted.bounded_documents import read_toml
    from recorder.untrusted.untrusted_files import IrregularFileError

    if root is None or not os.path.lexists(root / PYPROJECT):
        return Declaration()
    file = (root / PYPROJECT).resolve()
    try:  # bounded: a regular file of at most 1 MiB, its depth and values capped (a FIFO is refused at once)
        doc = read_toml(root / PYPROJECT, "TOML file", limit=DECLARATION_LIMIT, follow=True)
    except IrregularFileError as e:
        raise ZeroShotInputError(f"{e}: correct it") from e
    table = doc.get("tool", {}).get("recorder")
    if table is None:
        return Declaration()
    where = f"{file} {TABLE}"
    if not isinstance(table, dict):
        raise ZeroShotInputError(f"{where}: expected a table")
    unknown = sorted(set(table) - TOP_KEYS)
    if unknown:
        raise ZeroShotInputError(f"{where}: unknown entr{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}")
    holdout = table.get("holdout", {})
    if not isinstance(holdout, dict) or set(holdout) - set(HOLDOUT_KEYS) - PLAIN_HOLDOUT_KEYS:
        known = ", ".join([*HOLDOUT_KEYS, *sorted(PLAIN_HOLDOUT_KEYS)])
        raise ZeroShotInputError(f"{where}: holdout takes {known} (key paths or values)")
    if holdout.get("windows", WINDOWS[0]) not in WINDOWS or not isinstance(holdout.get("bos", False), bool):
        raise ZeroShotInputError(f"{where}: holdout windows is one of {', '.join(WINDOWS)}; bos is true or false")
    layout = table.get("layout", {})
    if not isinstance(layout, dict) or set(layout) - LAYOUT_KEYS:
        raise ZeroShotInputError(f"{where}: layout takes {', '.join(sorted(LAYOUT_KEYS))}")
    call = table.get("call", "positional")
    if call not in CALLS:
        raise ZeroShotInputError(f"{where}: call {call!r}: one of {', '.join(CALLS)}")
    max_length = table.get("max_length")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, (int, str))):
        raise ZeroShotInputError(f"{where}: max_length must be a key path in all_config.yaml or a number")
    logits = table.get("logits")
    if logits is not None and (isinstance(logits, bool) or not isinstance(logits, (int, str)) or logits == ""):
        raise ZeroShotInputError(
            f"{where}: logits must be the index of the logits in the forward's tuple, or their key or attribute name"
        )
    try:
        capacity = None if "capacity" not in table else switch_of(table["capacity"], f"{where} capacity")
    except ModelCodeError as e:
        raise ZeroShotInputError(str(e)) from e
    return Declaration(
        file=file,
        factory=_text(table, "factory", where),
        config=_text(table, "config", where),
        keywords=call == "keywords",
        holdout_function=_text(table, "holdout_function", where),
        model=_text(table, "model", where, empty=True),
        max_length=max_length,
        tokenizer=_text(table, "tokenizer", where),
        capacity=capacity,
        holdout=dict(holdout),
        epoch_meta=_text(layout, "epoch_meta", f"{where} layout"),
        step_key=_text(layout, "step_key", f"{where} layout"),
        config_file=_text(table, "config_file", where),
        logits=logits,
        eos_token=_text(table, "eos_token", where),
        pad_token=_text(table, "pad_token", where),
        bos=_flag(table, "bos", where),
        step_file=_text(layout, "step_file", f"{where} layout"),
        state_key=_text(layout, "state_key", f"{where} layout", empty=True),
    )


def _flag(table: dict[str, Any], key: str, where: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ZeroShotInputError(f"{where}: {key} must be true or false")
    return value


def _text(table: dict[str, Any], key: str, where: str, *, empty: bool = False) -> str | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, str) or not (value or empty)):
        raise ZeroShotInputError(f"{where}: {key} must be a non-empty string")
    return value


def lookup(doc: dict[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) of a dotted key path in a nested mapping; the empty path is the whole mapping."""
    node: Any = doc
    for part in path.split(".") if path else ():
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node
