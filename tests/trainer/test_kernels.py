"""Pinned CPU kernels (the tiny model's default): one float order under every kernel set a CPU would pick.

Each probe is a fresh process (ATEN_CPU_CAPABILITY and MKL_CBWR are read when torch loads) started with a
kernel set's variables, as a CPU of that kind would choose them; it pins as the trainer pins the tiny model, then builds the
tiny model from its seed, trains four warm-up batches and samples completions, and prints a digest of the
weights and the samples. Pinned, every kernel set gives the same digest; with the pin off they differ.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.learning import KERNEL_SETS, kernel_env, refusal
from tests.helpers import RECORDER, REPO

PROBE = """
import hashlib, json
from trainer.policy.kernels import is_pinned, pin_cpu_kernels, wants_pinned
pin_cpu_kernels(wants_pinned("tiny", "torch"))
import torch
from trainer.learning.grpo import build_batch, token_logprobs
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.sampling import generate, sample_seed
from trainer.policy.task import warmup_tasks
torch.set_num_threads(1)
torch.manual_seed(0)
model, tok = build_model(ModelConfig()), build_tokenizer(ModelConfig())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for b in range(1, 5):  # warm-up batches, as trainer/warmup.py trains them
    tasks = warmup_tasks(0, b, 32)
    batch = build_batch([[tok.bos_id, *tok.encode(t.prompt)] for t in tasks],
                        [[*tok.encode(t.answer), tok.eos_id] for t in tasks], tok.pad_id)
    nll = -(token_logprobs(model(input_ids=batch.inputs).logits, batch.targets) * batch.mask).sum() / batch.mask.sum()
    opt.zero_grad(set_to_none=True)
    nll.backward()
    opt.step()
prompts = ["12+34=", "7+8=", "40+2="] * 8
outs = generate(model, tok, prompts, temperature=1.0, top_p=1.0, max_new_tokens=5,
                seeds=[sample_seed(0, 1, i) for i in range(len(prompts))])
h = hashlib.sha256()
for name, value in sorted(model.state_dict().items()):
    h.update(name.encode() + value.contiguous().numpy().tobytes())
h.update(json.dumps(outs).encode())
print(json.dumps({"digest": h.hexdigest(), "pinned": is_pinned(),
                  "aten": str(torch.backends.cpu.get_cpu_capability())}))
"""


@functools.cache
def _refusals() -> dict[str, str | None]:
    """Each kernel set and why this CPU cannot run it (None: it can)."""
    return {k: refusal(k) for k in KERNEL_SETS}


def _offered() -> list[str]:
    return [k for k, why in _refusals().items() if why is None]


@functools.cache
def _probe(kernels: str, *, pinned: bool) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=kernel_env(kernels, "auto" if pinned else "native"),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.slow  # a probe per kernel set, in its own process; the pinned comparison below stays in the tier
@pytest.mark.parametrize("kernels", list(KERNEL_SETS))
def test_each_kernel_set_this_cpu_offers_computes_with_its_own_kernels(kernels: str) -> None:
    """A set the CPU announces but cannot execute (a virtual machine reporting AVX-512 it lacks) is skipped
    with its reason, and left out of the comparisons below, instead of killing them with SIGILL."""
    why = _refusals()[kernels]
    if why is not None:
        pytest.skip(why)
    assert str(_probe(kernels, pinned=False)["aten"]).lower() == kernels


def _widest_and_portable(offered: list[str]) -> list[str]:
    """The CPU's widest set and the portable one: the two farthest apart in float order."""
    return list(dict.fromkeys([offered[0], offered[-1]]))


# The widest and the portable set stand for every set in the default tier (a probe costs a process that loads
# torch and transformers); the slow tier compares every set the CPU offers.
@pytest.mark.parametrize(
    "chosen", [_widest_and_portable, pytest.param(lambda offered: offered, marks=pytest.mark.slow, id="every")]
)
def test_pinned_kernels_give_the_same_bits_under_every_kernel_set(chosen: Callable[[list[str]], list[str]]) -> None:
    probes = {k: _probe(k, pinned=True) for k in chosen(_offered())}
    assert all(p["pinned"] and p["aten"] == "DEFAULT" for p in probes.values()), probes
    assert len({p["digest"] for p in probes.values()}) == 1, probes


@pytest.mark.slow  # the unpinned probes of every kernel set, as above
def test_without_the_pin_each_kernel_set_has_its_own_float_order() -> None:
    offered = _offered()
    if len(offered) < 2:
        pytest.skip(f"this CPU offers one kernel set only ({', '.join(offered)}): nothing to compare")
    probes = {k: _probe(k, pinned=False) for k in offered}
    assert all(str(p["aten"]).lower() == k for k, p in probes.items()), probes
    assert len({p["digest"] for p in probes.values()}) == len(offered), probes
    # the pinned float order is the portable set's, whichever kernels the CPU would pick
    assert probes["default"]["digest"] == _probe(offered[0], pinned=True)["digest"], probes


def test_the_evaluator_pins_only_a_run_recorded_as_pinned() -> None:
    from trainer.policy.kernels import recorded_pinned

    assert recorded_pinned({"cpu_kernels": {"aten": "DEFAULT", "mkl_cbwr": "COMPATIBLE"}})
    assert recorded_pinned({"cpu_kernels": {"aten": "default", "mkl_cbwr": "COMPATIBLE"}})  # the environment's
    assert not recorded_pinned({"cpu_kernels": {"aten": None, "mkl_cbwr": "COMPATIBLE"}})
    assert not recorded_pinned({"cpu_kernels": {"aten": "AVX512", "mkl_cbwr": None}})
    assert not recorded_pinned({"cpu_kernels": {"aten": "DEFAULT", "mkl_cbwr": None}})  # portable ATen, MKL by CPU
    assert not recorded_pinned({"host": "an import: no kernels recorded"})
    assert not recorded_pinned(None)


PINNED_RUN = """
import sys
from pathlib import Path
from trainer.config import load_config
from trainer.loop import GRPOTrainer
from trainer.policy.model import ModelConfig
assert "torch" not in sys.modules  # the pin is read when torch loads: setup must set it first
small = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
trainer = GRPOTrainer(load_config(sets=["warmup.enabled=false"]), root=Path(sys.argv[1]), run_id="pinned",
                      model_cfg=small)
trainer.setup()
trainer.cleanup("interrupted", "stopped after setup")
"""


@pytest.mark.parametrize("choice", [None, *(pytest.param(c, marks=pytest.mark.slow) for c in ("pinned", "native"))])
def test_a_new_tiny_run_records_the_kernels_it_computed_with(choice: str | None, tmp_path: Path) -> None:
    """Unset (auto) and pinned pin the tiny model; native keeps the CPU's own kernels. What the run records is
    what the evaluator pins its evaluation by."""
    from recorder.store.reader import read_run
    from trainer.policy.kernels import CHOICE, PINNED, recorded_pinned

    env = {k: v for k, v in os.environ.items() if k not in {*PINNED, CHOICE}} | ({CHOICE: choice} if choice else {})
    subprocess.run([sys.executable, "-c", PINNED_RUN, str(tmp_path)], env=env, cwd=REPO, check=True)
    opened = next(e for e in read_run(tmp_path / "pinned").events if e.kind == "run_opened")
    provenance = opened.data["provenance"]
    if choice == "native":
        assert provenance["cpu_kernels"]["mkl_cbwr"] is None, provenance
        assert not recorded_pinned(provenance)
    else:
        assert provenance["cpu_kernels"] == {"aten": "DEFAULT", "mkl_cbwr": "COMPATIBLE"}, provenance
        assert recorded_pinned(provenance)


@pytest.mark.parametrize(
    ("choice", "model", "rollout", "pinned"),
    [
        (None, "tiny", "auto", True),
        ("auto", "tiny", "torch", True),
        (" Auto ", "tiny", "auto", True),
        (None, "tiny", "vllm", False),  # vLLM's CPU backend brings its own kernels
        (None, "smollm2-135m", "auto", False),
        ("native", "tiny", "auto", False),
        ("pinned", "smollm2-135m", "auto", True),
    ],
)
def test_auto_pins_the_tiny_model_with_a_torch_rollout_only(
    choice: str | None, model: str, rollout: str, pinned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.policy.kernels import CHOICE, wants_pinned

    if choice is None:
        monkeypatch.delenv(CHOICE, raising=False)
    else:
        monkeypatch.setenv(CHOICE, choice)
    assert wants_pinned(model, rollout) is pinned


def test_a_kernel_choice_it_does_not_know_is_refused_before_anything_runs(tmp_path: Path) -> None:
    env = {**os.environ, "RECORDER_CPU_KERNELS": "pined"}
    r = subprocess.run([RECORDER, "train", "--root", str(tmp_path)], capture_output=True, text=True, env=env)
    assert r.returncode == 2, r.stderr
    assert "RECORDER_CPU_KERNELS='pined': expected one of auto, native, pinned" in r.stderr
    assert "starting" not in r.stderr and not any(tmp_path.iterdir())
