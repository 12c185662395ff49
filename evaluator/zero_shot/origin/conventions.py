"""What a command learns about a team's conventions before any work: the model code as the options and the
team's declaration give it, how MoE capacity is switched (refused when it cannot be), whether the results can
be written where they go, and the commit the training ran (train_metadata.yaml's `git_commit`)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.loading import ModelCode
from evaluator.zero_shot.origin.declaration import Declaration, read_declaration
from recorder.checkpoints.capacity_switch import CapacitySwitch, FactoryCall
from recorder.checkpoints.torch_dcp.fsdp2_layout import EPOCH_META, STEP_KEYS, LayoutNames

TRAINING_COMMIT_KEY = "git_commit"  # train_metadata.yaml's record of the training's code (the seed's provenance)


def declared_code(code: ModelCode) -> tuple[ModelCode, Declaration]:
    """The model code with what ROOT/pyproject.toml's [tool.recorder] declares filled in where no option (or
    the seed's variable) said it; ZeroShotInputError when ROOT is given with no factory anywhere."""
    declaration = read_declaration(code.root)
    factory = code.factory or declaration.factory
    if code.root is not None and factory is None:
        raise ZeroShotInputError(
            f"--model-code {code.root}: no model factory: pass --model-factory pkg.module:function "
            f"(EVAL_MODEL_FACTORY), or declare it in {code.root / 'pyproject.toml'} [tool.recorder] factory"
        )
    # the declared switch and call describe the declared factory (or, with none declared, the one given)
    own = code.factory is None or declaration.factory in (None, code.factory)
    call = FactoryCall(converter=declaration.config, keywords=declaration.keywords)
    return replace(
        code,
        factory=factory,
        holdout_fn=code.holdout_fn or declaration.holdout_function,
        switch=code.switch or (declaration.capacity if own else None),
        call=call if own else code.call,
        logits=declaration.logits if own else code.logits,
        eos_token=declaration.eos_token,
        pad_token=declaration.pad_token,
        bos=declaration.bos,
    ), declaration


def layout_names(declaration: Declaration, root: Path | None) -> LayoutNames:
    """The team's epoch meta file and step key as declared (else the defaults), and its root (the model
    code, else the working directory) where a relative archive `source` may be written from."""
    keys = (declaration.step_key,) if declaration.step_key else STEP_KEYS
    bases = tuple(dict.fromkeys(p.resolve() for p in (*([root] if root else []), Path.cwd())))
    return LayoutNames(epoch_meta=declaration.epoch_meta or EPOCH_META, step_keys=keys, bases=bases)


def capacity_switch(code: ModelCode, *, skip_capacity: bool) -> tuple[bool | None, CapacitySwitch | None]:
    """(the capacity the scoring model is built with, the switch that sets it). Without a declared switch or a
    `capacity` argument the model is built as the training's config builds it (None): with capacity off asked
    (the default), the job then verifies that no row depends on its batch (a model with no MoE: capacity not
    applicable) and fails the checkpoint naming the ways to switch it when one does."""
    from recorder.checkpoints.team_code.model_code import factory_switch, import_from_tree

    if code.factory is None or code.root is None:
        return None, None  # a Hugging Face class: no MoE capacity to switch
    if code.switch is None:
        import torch  # noqa: F401  (first, as in a worker: the tree's import then brings in the tree's modules)

    switch = code.switch or factory_switch(import_from_tree(code.root, code.factory, "--model-factory"))
    if switch is not None:
        return not skip_capacity, switch
    return None, None


def check_writable(directory: Path) -> None:
    """ZeroShotInputError, before any work, when results cannot be created under `directory` (its nearest
    existing parent is read-only, not a directory, or refuses a file)."""
    existing = directory
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    problem = None
    if not existing.is_dir():
        problem = f"{existing} is not a directory"
    else:
        try:
            fd, probe = tempfile.mkstemp(prefix=".recorder-write-check-", dir=existing)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            problem = f"{existing}: {e.strerror or e}"
    if problem is not None:
        raise ZeroShotInputError(
            f"{directory}: the results cannot be written there ({problem}): pass -o DIR (EVAL_OUTPUT_DIR) to "
            "write them elsewhere"
        )


def training_commit(metadata: dict[str, Any]) -> str | None:
    """The training's code commit train_metadata.yaml records, if it does."""
    value = metadata.get(TRAINING_COMMIT_KEY)
    return value if isinstance(value, str) and value else None


def commit_record(training: str | None, code: dict[str, Any] | None) -> dict[str, Any] | None:
    """results.json's comparison of the code's commit with the training's (None: the training recorded none)."""
    if training is None:
        return None
    ran = code.get("git_commit") if code else None
    return {
        "training": training,
        "code": ran,
        "same": isinstance(ran, str) and (ran.startswith(training) or training.startswith(ran)),
    }
