"""The model a checkpoint's weights go into: the Hugging Face class its config names, or the team's own
code (`--model-code ROOT --model-factory package.module:build`), with the provenance of that code.

The factory is called with the checkpoint's config (a dict); MoE capacity (whether MoE layers keep their
expert capacity limit) is switched as the team declared it (capacity_switch.py: an argument, a config key,
an attribute or a method), else through a `capacity` argument when the factory takes one. Without either,
the model is built as the config says (capacity=None: as the training built it) and asking for capacity off
is refused. It returns an `nn.Module` whose state_dict names match the checkpoint's.

Provenance: every module of ROOT that ran, with the sha256 of the source bytes it was
compiled from (tree_import.py: no bytecode is read or written), ROOT's git commit, and which of those files
differ from the commit's blobs or are not in it (tree_git.py). A module of one of ROOT's top-level packages
that was imported from elsewhere (an installed copy, a module already loaded) is a shadowed module: the
model would run code that is not the tree's, so the build is refused, naming it. So is a module the
factory's import or the model uses whose file is outside ROOT and is no installed library (a directory on
PYTHONPATH), and a module of ROOT that ran without the source-only loader (loaded before, or by a loader
of its own).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder.checkpoints.capacity_switch import WAYS, CapacitySwitch, FactoryCall
from recorder.checkpoints.detect import CheckpointInfo
from recorder.checkpoints.team_code import exec_audit, tree_import
from recorder.checkpoints.team_code.tree_git import tree_state
from trainer.policy.errors import CheckpointError, FactoryCallError, ModelCodeError

if TYPE_CHECKING:
    import torch
    from torch import nn


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeProvenance:
    """Which code built the model: the files of ROOT that ran, its commit, whether it was dirty."""

    root: str
    factory: str
    files: tuple[tuple[str, str], ...]  # (path relative to root, sha256 of the bytes that ran), sorted
    git_commit: str | None
    git_dirty: bool | None  # None: ROOT is no git checkout
    modified: tuple[str, ...] = ()  # files whose bytes that ran differ from the commit's blob
    untracked: tuple[str, ...] = ()  # files the commit does not hold (untracked, ignored, only staged)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "factory": self.factory,
            "files": [{"path": p, "sha256": h} for p, h in self.files],
            "git_commit": self.git_commit,
            "git_dirty": self.git_dirty,
            "modified": list(self.modified),
            "untracked": list(self.untracked),
        }


def build_model(
    info: CheckpointInfo,
    *,
    dtype: torch.dtype | str,
    device: str,
    model_code: Path | None = None,
    model_factory: str | None = None,
    capacity: bool | None = True,
    switch: CapacitySwitch | None = None,
    call: FactoryCall | None = None,
) -> tuple[nn.Module, CodeProvenance | None]:
    """(the model for `info`'s weights, in `dtype` on `device`, eval mode; the code's provenance or None).
    `capacity` None, or True without a switch: built as the config says (the training's model)."""
    from recorder.checkpoints.load import torch_dtype

    target = torch_dtype(dtype)
    if model_factory is None:
        if model_code is not None:
            raise ModelCodeError("--model-code needs --model-factory package.module:function naming the builder")
        return _hf_model(info, target).to(device).eval(), None
    if model_code is None:
        raise ModelCodeError(f"--model-factory {model_factory} needs --model-code ROOT: the tree it is imported from")
    model, prov = _factory_model(info, Path(model_code), model_factory, capacity, switch, call or FactoryCall())
    return model.to(dtype=target).to(device).eval(), prov


def hf_config(info: CheckpointInfo) -> Any:
    """The transformers config of `info`'s model config; CheckpointError when it names no known model."""
    from transformers import AutoConfig

    from recorder.checkpoints.detect import require_config

    config = dict(require_config(info))
    kind = config.pop("model_type", None)
    if not isinstance(kind, str):
        raise CheckpointError(
            f"{info.path}: the model config has no model_type: pass --model-code and --model-factory to build "
            "the model with its own code"
        )
    try:
        return AutoConfig.for_model(kind, **config)
    except (ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"{info.path}: no Hugging Face config for model_type {kind!r}: {e}") from e


def _hf_model(info: CheckpointInfo, dtype: torch.dtype) -> nn.Module:
    from transformers import AutoModelForCausalLM

    try:
        model: nn.Module = AutoModelForCausalLM.from_config(hf_config(info), dtype=dtype)
    except (ValueError, KeyError, TypeError, RuntimeError) as e:
        raise CheckpointError(f"{info.path}: no Hugging Face causal LM for its config: {e}") from e
    return model


def _factory_model(
    info: CheckpointInfo, root: Path, spec: str, capacity: bool | None, switch: CapacitySwitch | None,
    call: FactoryCall,
) -> tuple[nn.Module, CodeProvenance]:  # fmt: skip
    with exec_audit.watching():  # every module the build executes, whatever it does to sys.modules after
        model = _built(info, root.resolve(), spec, capacity, switch, call)
    return model, code_provenance(root.resolve(), spec + (f" {call.converter}" if call.converter else ""))


def _built(
    info: CheckpointInfo, root: Path, spec: str, capacity: bool | None, switch: CapacitySwitch | None,
    call: FactoryCall,
) -> nn.Module:  # fmt: skip
    from torch import nn

    before = set(sys.modules)
    factory = import_from_tree(root, spec, "--model-factory")
    switch = switch or factory_switch(factory)
    if switch is None and capacity is False:
        raise ModelCodeError(f"--model-factory {spec} cannot switch MoE capacity off: declare how ({WAYS})")
    config, kwargs = dict(info.config), {}
    if switch is not None and capacity is not None:
        config, kwargs = switch.config(config, capacity), switch.arguments(capacity)
    convert = import_from_tree(root, call.converter, "[tool.recorder] config") if call.converter else None
    try:
        argument = convert(config) if convert is not None else config
    except Exception as e:
        raise FactoryCallError(f"[tool.recorder] config {call.converter}: failed: {type(e).__name__}: {e}") from e
    _check_call(factory, spec, argument, kwargs, keywords=call.keywords)
    try:
        model = factory(**argument, **kwargs) if call.keywords else factory(argument, **kwargs)
    except Exception as e:
        raise FactoryCallError(f"--model-factory {spec}: building the model failed: {type(e).__name__}: {e}") from e
    if not isinstance(model, nn.Module):
        raise ModelCodeError(f"--model-factory {spec}: returned a {type(model).__name__}, not a torch nn.Module")
    if switch is not None and capacity is not None:
        switch.apply(model, capacity)
    check_not_shadowed(root, model)
    classes = {type(m).__module__ for m in model.modules()}
    check_inside(root, (set(sys.modules) - before) | classes)
    exec_audit.check()
    return model


def factory_switch(factory: Any) -> CapacitySwitch | None:
    """The factory's own `capacity` argument as its switch (the protocol's), or None when it takes none."""
    try:
        takes = "capacity" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or an object without a signature takes no keyword we know
        return None
    return CapacitySwitch(kind="argument", name="capacity") if takes else None


def _check_call(factory: Any, spec: str, argument: Any, kwargs: dict[str, Any], *, keywords: bool) -> None:
    """ModelCodeError when the factory's signature does not take the call made to it (an argument missing or
    unknown), said before it runs: the declaration's `call`, `config` or capacity switch is what to change."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to read: the call itself will say
        return
    try:
        if keywords:
            if not isinstance(argument, dict):
                raise TypeError(f"call = 'keywords' needs a mapping, the config is a {type(argument).__name__}")
            signature.bind(**argument, **kwargs)
        else:
            signature.bind(argument, **kwargs)
    except TypeError as e:
        how = "factory(**config)" if keywords else "factory(config)"
        raise ModelCodeError(
            f"--model-factory {spec} does not take {how}{' with ' + ', '.join(kwargs) if kwargs else ''}: {e}; "
            "declare how it is called ([tool.recorder] call, config)"
        ) from None


def import_from_tree(root: Path, spec: str, option: str) -> Any:
    """The function `spec` (package.module:function) names, imported from ROOT; ModelCodeError naming what is
    wrong (the spec, the import, a module of the tree shadowed, a module from outside the tree)."""
    module_name, _, func_name = spec.partition(":")
    if not module_name or not func_name:
        raise ModelCodeError(f"{option} {spec!r}: expected package.module:function")
    root = root.resolve()
    if not root.is_dir():
        raise ModelCodeError(f"--model-code {root}: no such directory")
    check_not_shadowed(root)  # a package of the tree already loaded from elsewhere: the import would reuse it
    check_ran_from_source(root)  # a module of the tree already loaded otherwise: the import would reuse it
    before = set(sys.modules)
    tree_import.register(root)
    sys.path.insert(0, str(root))
    try:
        with exec_audit.watching():
            module = importlib.import_module(module_name)
    except tree_import.TreeImportError as e:
        raise ModelCodeError(f"{option} {spec}: {e}") from e
    except Exception as e:  # the team's code may raise anything while importing
        raise ModelCodeError(f"{option} {spec}: importing {module_name} from {root} failed: {e}") from e
    finally:
        sys.path.remove(str(root))
    check_not_shadowed(root)
    check_ran_from_source(root)
    check_inside(root, (set(sys.modules) - before) | {module_name})
    exec_audit.check()
    function: Any = module
    for part in func_name.split("."):  # a function, or a class's method: Class.build
        function = getattr(function, part, None)
    if not callable(function):
        raise ModelCodeError(f"{option} {spec}: {module_name} has no function {func_name}")
    return function


def check_inside(root: Path, names: set[str]) -> None:
    """ModelCodeError naming the first of the modules `names` whose file is neither under ROOT nor an installed
    library's (the standard library, site-packages) nor this project's: code the model runs that is not the
    tree's and not recorded (a directory on PYTHONPATH, a path added at run time)."""
    from recorder.own_packages import PROJECT_PACKAGES

    allowed = _installed_places()
    for name in sorted(names):
        file = module_file(sys.modules.get(name))
        if file is None or name.split(".", 1)[0] in PROJECT_PACKAGES:
            continue
        path = Path(file).resolve()
        if root in path.parents or any(place in path.parents for place in allowed):
            continue
        if exec_audit.recorded_by_a_distribution(path):  # installed beside the environment, on PYTHONPATH
            continue
        raise ModelCodeError(
            f"module {name} is imported from {file}, outside --model-code {root} and not an installed library: "
            "the model would run code its provenance does not record; move it into the tree (or install it)"
        )


def module_file(module: Any) -> str | None:
    """The file a module was loaded from; None for a built-in, a namespace package or a module whose
    `__file__` is no absolute path of a file (some extension shims name a bare file name)."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not Path(file).is_absolute() or not Path(file).is_file():
        return None
    return file


def _installed_places() -> set[Path]:
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    places = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    places |= set(site.getsitepackages()) | {site.getusersitepackages()}
    return {Path(p).resolve() for p in places if p}


def check_not_shadowed(root: Path, model: Any = None) -> None:
    """ModelCodeError naming the first loaded module of one of ROOT's packages that does not come from ROOT
    (and, given the model, any of its classes' modules)."""
    packages = tree_import.top_level_names(root)
    names = {n for n in sys.modules if n.split(".", 1)[0] in packages}
    if model is not None:
        names |= {type(m).__module__ for m in model.modules() if type(m).__module__.split(".", 1)[0] in packages}
    for name in sorted(names):
        file = module_file(sys.modules.get(name))
        if file is None:  # a namespace package has no file; its modules are checked themselves
            continue
        if root not in Path(file).resolve().parents:
            raise ModelCodeError(
                f"module {name} is imported from {file}, outside --model-code {root}, which has its own "
                f"{name.split('.', 1)[0]}: the model would run code that is not the tree's; uninstall or rename "
                "the other copy, or run in a fresh process"
            )


def check_ran_from_source(root: Path) -> None:
    """ModelCodeError naming the first loaded module whose file is in ROOT but that did not run through the
    source-only loader: it may have run from bytecode, or from bytes other than those recorded."""
    for name, module in sorted(sys.modules.items()):
        file = module_file(module)
        if file is None:
            continue
        path = Path(file).resolve()
        if root in path.parents and not tree_import.ran_from_source(path):
            raise ModelCodeError(
                f"module {name} ({file}) of --model-code {root} was loaded before the recorder imported the "
                "tree, or by a loader of its own: what it ran is not recorded; run in a fresh process"
            )


def code_provenance(root: Path, spec: str) -> CodeProvenance:
    """Every module of ROOT that ran so far (path, sha256 of the bytes it ran from), ROOT's commit, and
    which of those files differ from the commit or are not in it; ModelCodeError when a module ran from
    outside the tree and the installed libraries (exec_audit.py)."""
    exec_audit.check()
    check_ran_from_source(root)
    files = tree_import.executed(root)
    state = tree_state(root, files)
    return CodeProvenance(
        root=str(root),
        factory=spec,
        files=tuple(files),
        git_commit=state.commit,
        git_dirty=state.dirty,
        modified=state.modified,
        untracked=state.untracked,
    )


def load_weights(model: nn.Module, state: dict[str, Any], info: CheckpointInfo) -> None:
    """`state` into `model`, every name matched both ways (a tied output layer may be left out); the
    names are compared first so that a mismatch says which, in words."""
    from recorder.checkpoints.hugging_face.hf_layout import fuse_experts

    own = model.state_dict()
    state = fuse_experts(fit_names(state, set(own)), set(own))
    missing = sorted(set(own) - set(state) - _tied(model))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise CheckpointError(
            f"{info.path}: the checkpoint's tensors do not match the model's: "
            + (f"missing {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}; " if missing else "")
            + (
                f"not in the model {', '.join(unexpected[:5])}{' ...' if len(unexpected) > 5 else ''}"
                if unexpected
                else ""
            )
        )
    shapes = [k for k in state if tuple(state[k].shape) != tuple(own[k].shape)]
    if shapes:
        k = shapes[0]
        raise CheckpointError(
            f"{info.path}: {k} is {tuple(state[k].shape)} in the checkpoint, {tuple(own[k].shape)} in the model"
        )
    model.load_state_dict(state, strict=False)
    tie = getattr(model, "tie_weights", None)
    if callable(tie):  # transformers models re-tie a shared output layer after a load
        tie()


WRAPPER_PREFIXES = ("model.", "module.", "_orig_mod.")  # {"model": sd} saved whole, DDP, torch.compile


def fit_names(state: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """`state` with a wrapper's prefix taken off every name, when that makes more of them the model's."""
    best = state
    for prefix in WRAPPER_PREFIXES:
        if state and all(k.startswith(prefix) for k in state):
            stripped = {k.removeprefix(prefix): v for k, v in state.items()}
            if len(names & set(stripped)) > len(names & set(best)):
                best = stripped
    return best


def _tied(model: nn.Module) -> set[str]:
    """Names that share their tensor with another parameter (tied embeddings): optional in a checkpoint."""
    seen: dict[int, str] = {}
    tied = set()
    for name, p in model.state_dict(keep_vars=True).items():
        if id(p) in seen:
            tied.add(name)
        else:
            seen[id(p)] = name
    return tied
