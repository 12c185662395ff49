"""The warm-up init shipped with recorder: made for the default run's settings and float order, below the
target, and taken only when `warmup.shipped` allows and its key is the run's."""

import hashlib
import json

import pytest

from trainer import warmup
from trainer.config import load_config
from trainer.policy.kernels import PINNED
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.task import validation_tasks
from trainer.warmup import SHIPPED, cache_key, pass_at_k, warm_start

# The kernels the default run computes with: pinned (trainer/policy/kernels.py) on the config's one thread.
DEFAULT_RUN_KERNELS = {"aten": PINNED["ATEN_CPU_CAPABILITY"].upper(), "mkl_cbwr": PINNED["MKL_CBWR"], "threads": "1"}


def default_key() -> str:
    cfg = load_config()
    return cache_key(cfg, ModelConfig(name=cfg.model, init_seed=cfg.seed), DEFAULT_RUN_KERNELS)


def test_the_default_run_has_a_shipped_init_made_for_it():
    # A change to the warm-up's settings, code version or evaluation settings changes the key: the init must
    # then be made again (trainer/warmup.py says how), or every first run trains its own for minutes.
    folder = SHIPPED / default_key()
    assert (folder / "model.safetensors").is_file(), f"no shipped init for the default run's key {folder.name}"
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["key"] == folder.name
    assert meta["made"]["kernels"] == DEFAULT_RUN_KERNELS
    assert meta["batches"] > 0 and load_config().warmup.stop_dev_accuracy <= meta["dev_accuracy"]


def test_the_shipped_init_starts_below_the_target():
    """GRPO has to earn the crossing: the init's own pass@k on the validation tasks, scored as the evaluator
    scores, is below the target."""
    from safetensors.torch import load_file

    cfg = load_config()
    model = build_model(ModelConfig())
    model.load_state_dict(load_file(str(SHIPPED / default_key() / "model.safetensors")), strict=True)
    ev = cfg.eval
    tasks = validation_tasks()[: ev.samples]
    accuracy = pass_at_k(
        model,
        build_tokenizer(ModelConfig()),
        tasks,
        k=ev.k,
        temperature=ev.temperature,
        top_p=ev.top_p,
        max_new_tokens=ev.max_new_tokens,
    )
    assert 0.3 < accuracy < ev.target


@pytest.mark.parametrize("shipped", [True, False])
def test_a_shipped_init_is_taken_only_when_allowed(tmp_path, monkeypatch, shipped):
    from safetensors.torch import save_file

    cfg = load_config(
        sets=[
            f"warmup.cache_dir={tmp_path / 'cache'}",
            f"warmup.shipped={str(shipped).lower()}",
            "warmup.max_batches=0",
        ]
    )
    model_cfg = ModelConfig()
    made = build_model(ModelConfig(init_seed=7))  # other weights than the run's own init
    folder = tmp_path / "shipped" / cache_key(cfg, model_cfg)  # this process's float order, as the run's
    folder.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in made.state_dict().items()}, str(folder / "model.safetensors"))
    (folder / "meta.json").write_text(json.dumps({"batches": 5, "dev_accuracy": 0.6, "key": folder.name}))
    monkeypatch.setattr(warmup, "SHIPPED", tmp_path / "shipped")

    model = build_model(model_cfg)
    result = warm_start(model, build_tokenizer(model_cfg), cfg, model_cfg)
    same = all((a == b).all() for a, b in zip(model.state_dict().values(), made.state_dict().values(), strict=True))
    assert (result.shipped, result.cached, same) == (shipped, shipped, shipped)
    if shipped:
        assert (result.batches, result.dev_accuracy, result.cache_path) == (5, 0.6, str(folder))
        weights = folder / "model.safetensors"
    else:  # trained here (no batch: max_batches=0) and cached in the user's folder
        assert result.batches == 0 and (tmp_path / "cache" / folder.name / "meta.json").is_file()
        weights = tmp_path / "cache" / folder.name / "model.safetensors"
    assert result.sha256 == hashlib.sha256(weights.read_bytes()).hexdigest()  # the bytes the policy holds
