"""The model a checkpoint's weights go into: a transformers Llama from the checkpoint's config, or the
team's own code (`--model-code ROOT --model-factory pkg.mod:fn`), with the provenance of that code.

A factory is called as `fn(config, capacity=capacity)` and returns an `nn.Module` whose state-dict names
match the checkpoint. `capacity=False` asks an MoE model to route without token dropping (every token to its
experts), so that a sample's score does not depend on what else is in its batch.
"""

from __future__ import annotations

import hashlib
import importlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.errors import InputError
from trainer.policy.errors import ModelError
from trainer.policy.formats.detect import CheckpointInfo
from trainer.policy.formats.load import torch_dtype


class ModelCodeError(ModelError, InputError):
    """A --model-code / --model-factory that cannot be imported or called, or a module shadowed from outside."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeProvenance:
    """The team's code the model came from: files imported from the root (path, sha256), commit, dirty."""

    root: str
    factory: str
    files: tuple[tuple[str, str], ...]
    commit: str | None
    dirty: bool | None


def build_model(
    info: CheckpointInfo,
    *,
    dtype: str,
    device: str,
    model_code: Path | None = None,
    model_factory: str | None = None,
    capacity: bool = True,
) -> tuple[Any, CodeProvenance | None]:
    """A model with the checkpoint's architecture (weights not loaded), in `dtype` on `device`."""
    if model_factory is None:
        model = _llama(info.config)
        provenance = None
    else:
        if model_code is None:
            raise ModelCodeError("--model-factory needs --model-code ROOT: the tree the factory is imported from")
        model, provenance = _from_factory(info.config, model_code.resolve(), model_factory, capacity)
    return model.to(dtype=torch_dtype(dtype), device=device), provenance


def _llama(config: dict[str, Any]) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    fields = config.get("model", config)
    return LlamaForCausalLM(LlamaConfig(**fields))


def _from_factory(config: dict[str, Any], root: Path, spec: str, capacity: bool) -> tuple[Any, CodeProvenance]:
    module_name, _, fn_name = spec.partition(":")
    if not module_name or not fn_name:
        raise ModelCodeError(f"--model-factory {spec!r}: write it as package.module:function")
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
        model = getattr(module, fn_name)(config, capacity=capacity)
    except (ImportError, AttributeError, TypeError) as e:
        raise ModelCodeError(f"--model-factory {spec} under {root}: {e}") from e
    finally:
        sys.path.remove(str(root))
    top = module_name.split(".")[0]
    outside = [n for n in sys.modules if n.split(".")[0] == top and not _under(sys.modules[n], root)]
    if outside:
        raise ModelCodeError(f"module {outside[0]} was imported from outside {root}: remove the shadowing copy")
    # every module of the tree now loaded (also those an earlier build imported), not only the new ones
    files = sorted(
        {str(Path(str(m.__file__)).resolve().relative_to(root)) for m in list(sys.modules.values()) if _under(m, root)}
    )
    hashes = tuple((f, hashlib.sha256((root / f).read_bytes()).hexdigest()) for f in files)
    commit, dirty = _git(root)
    return model, CodeProvenance(root=str(root), factory=spec, files=hashes, commit=commit, dirty=dirty)


def _under(module: Any, root: Path) -> bool:
    file = getattr(module, "__file__", None)
    return file is not None and Path(file).resolve().is_relative_to(root)


def _git(root: Path) -> tuple[str | None, bool | None]:
    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain")
    return commit, (None if status is None else bool(status))
