"""NeMo-RL series whose weights the real megatron-core wrote (tests/golden/mcore/: dense at TP1 and TP2, MoE
with a shared expert, Qwen3.5's hybrid) through `import-checkpoints`, `eval` and `replay --ruleset 6.1.0
--check`, as a submitter runs them: the series path, and `--model-config`/`--tokenizer` because NeMo-RL's
Megatron worker saves neither. The weights are loaded and fingerprinted at import, checked shard by shard
at evaluation, and evaluated by our torch backend; a passing evaluation (the submitter's command) gives a
series both 6.1.0 checkers pass."""

from __future__ import annotations

import json
import pickle
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checkpoints.test_formats import _RunsACommand
from tests.evaluator import nemo_run
from tests.evaluator.test_nemo_end_to_end import COMMAND, SMALL_STEPS, check_replay
from tests.helpers import run_cli
from tests.kit import mcore_golden
from tests.kit.mcore_golden import ITERATION, SERIES

# Every series end to end takes a minute of CPU each: the default tier runs the dense TP1 one, the slow tier
# the rest (each layout's names are still checked against megatron-core's logits in test_mcore_golden.py).
EACH_SERIES = [kind if kind == "dense-tp1" else pytest.param(kind, marks=pytest.mark.slow) for kind in SERIES]
from trainer.policy.taskspec import shipped


def _source(kind: str) -> list[str]:
    return ["--model-config", str(mcore_golden.model_config(kind)), "--tokenizer", str(mcore_golden.tokenizer())]


def _import(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """(the run, the series): the training mllog imported, then the series' checkpoints."""
    series = mcore_golden.copy_series(kind, tmp_path / "checkpoints")
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=SMALL_STEPS[-1])
    done = run_cli("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo")
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "nemo"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), *_source(kind), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return run, series


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Path], tuple[Path, Path]]:
    """(the run, the series) for a kind, imported once per module: each test gets a copy of the whole folder
    (training log, series, run: the commit names its files relative to the run), to add evaluations to."""
    done: dict[str, Path] = {}

    def copy(kind: str, where: Path) -> tuple[Path, Path]:
        if kind not in done:
            done[kind] = tmp_path_factory.mktemp(kind)
            _import(done[kind], kind)
        shutil.copytree(done[kind], where, symlinks=True, dirs_exist_ok=True)
        return where / "runs" / "nemo", where / "checkpoints"

    return copy


def _results(run: Path, step: int) -> dict:  # type: ignore[type-arg]
    doc: dict = json.loads((run / "derived" / "evals" / f"step_{step:07d}" / "results.json").read_text())  # type: ignore[type-arg]
    return doc


@pytest.mark.parametrize("kind", EACH_SERIES)
def test_a_megatron_core_series_is_evaluated_by_our_torch_backend(
    kind: str, imported: Callable[[str, Path], tuple[Path, Path]], tmp_path: Path
) -> None:
    run, _ = imported(kind, tmp_path)
    spec = shipped("next-number")
    done = run_cli("eval", str(run), "--task", str(spec), "--all", *_source(kind), timeout=900)
    # tiny random weights reach no target: exit 1 with that one line, every checkpoint scored
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: no evaluated checkpoint reached pass@1 > 0.69: no run_stop can claim success"], errors
    for step in SMALL_STEPS:
        backend = _results(run, step)["backend"]
        assert (backend["dtype"], backend["rollout_dtype"], backend["rule_precision"]) == ("bf16", "bf16", True)
    done = run_cli("verify", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_cli("replay", str(run), "--ruleset", "6.1.0", "--check")
    assert done.returncode == 1, done.stdout + done.stderr  # the checkers refuse a run that did not converge
    assert "official: aborted, no passing step" in done.stdout and "every checkpoint evaluated" in done.stdout


@pytest.mark.parametrize("kind", EACH_SERIES)
def test_a_passing_megatron_core_series_replays_with_both_checkers_passing(
    kind: str, imported: Callable[[str, Path], tuple[Path, Path]], tmp_path: Path
) -> None:
    run, series = imported(kind, tmp_path)
    script = tmp_path / "my_eval.py"
    script.write_text(COMMAND)
    done = run_cli(
        "eval", str(run), "--task", str(shipped("next-number")), "--backend", "command",
        "--command", f"{sys.executable} {script} {{checkpoint}} {{out}}", *_source(kind),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "first passing checkpoint: step 19" in done.stdout
    check_replay(run, series, passing=19)
    done = run_cli("verify", str(run))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # the default tier keeps the dense TP1 series end to end
def test_fp32_training_with_bf16_rollouts_is_evaluated_in_bf16_and_fp32_is_named_by_verify(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, "dense-tp1")  # policy.precision float32, vllm_cfg.precision bfloat16
    spec = str(shipped("next-number"))
    done = run_cli("eval", str(run), "--task", spec, "--order", "18", *_source("dense-tp1"), timeout=900)
    assert "Traceback" not in done.stderr, done.stderr
    backend = _results(run, 18)["backend"]
    assert (backend["dtype"], backend["rollout_dtype"], backend["rule_precision"]) == ("bf16", "bf16", True)
    done = run_cli("eval", str(run), "--task", spec, "--order", "19", "--dtype", "fp32", *_source("dense-tp1"))
    assert "Traceback" not in done.stderr, done.stderr
    backend = _results(run, 19)["backend"]
    assert (backend["dtype"], backend["rollout_dtype"], backend["rule_precision"]) == ("fp32", "bf16", False)
    done = run_cli("verify", str(run))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "eval-precision" in done.stdout and "step 19 was evaluated in fp32" in done.stdout.replace("\n", " ")


@pytest.mark.slow  # the default tier compares the two series' loaded tensors and logits (test_mcore_pipeline.py)
def test_a_series_saved_by_pipeline_stages_imports_with_its_twins_fingerprints(tmp_path: Path) -> None:
    """import-checkpoints loads each checkpoint and records its fingerprint (the mean log-likelihood of fixed
    texts under the loaded model): the PP2 series and the TP1 series whose weights it saved again agree."""
    from recorder.checkpoints.fingerprint import matches
    from recorder.store.reader import read_run

    def fingerprints(kind: str) -> dict[int, float]:
        run, _ = _import(tmp_path / kind, kind)
        committed = [e for e in read_run(run).events if e.kind == "checkpoint_committed"]
        return {e.step: e.data["fingerprint"]["value"] for e in committed}

    pp, twin = fingerprints("dense-pp2"), fingerprints(mcore_golden.TWINS["dense-pp2"])
    assert sorted(pp) == sorted(twin) == list(SMALL_STEPS)
    assert all(matches(twin[s], pp[s]) for s in SMALL_STEPS), (pp, twin)


def test_without_the_base_models_config_the_import_says_what_to_pass(tmp_path: Path) -> None:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=SMALL_STEPS[-1])
    assert run_cli("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo").returncode == 0
    done = run_cli("import-checkpoints", str(series), "--into", str(tmp_path / "runs" / "nemo"))
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "--model-config DIR" in done.stderr.replace("\n", " ") and "recorder-tests/tiny-dense-tp1" in done.stderr


@pytest.mark.slow  # the default tier keeps the dense TP1 series end to end
def test_a_flipped_megatron_shard_is_refused_naming_it(tmp_path: Path) -> None:
    run, series = _import(tmp_path, "dense-tp2")
    shard = series / "step_18" / ITERATION / "__1_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 3] ^= 0x10
    shard.write_bytes(bytes(data))
    evaluate = ("eval", str(run), "--task", str(shipped("next-number")), "--all", *_source("dense-tp2"))
    done = run_cli(*evaluate)  # verify names the shard first: the run is refused before anything is loaded
    assert done.returncode == 1, done.stdout + done.stderr
    assert "__1_0.distcp" in "".join((done.stdout + done.stderr).split()), done.stdout + done.stderr
    done = run_cli(*evaluate, "--force")  # forced past verify, the evaluator's own check refuses the shard
    assert done.returncode == 1, done.stdout + done.stderr
    done = run_cli("evals", str(run))
    assert "HashMismatchError" in done.stdout and "__1_0.distcp" in done.stdout.replace("\n", ""), done.stdout


@pytest.mark.parametrize(
    ("module", "name"),
    [
        pytest.param("posix", "system", marks=pytest.mark.slow),  # the default tier keeps builtins.eval
        pytest.param("torch.distributed.checkpoint.planner", "LoadPlan", marks=pytest.mark.slow),
        ("builtins", "eval"),
    ],
)
def test_a_metadata_naming_any_other_global_is_refused_with_one_error_line(
    module: str, name: str, tmp_path: Path
) -> None:
    series = mcore_golden.copy_series("moe", tmp_path / "checkpoints")
    marker = tmp_path / "command-ran"
    meta = series / "step_19" / ITERATION / ".metadata"
    if module == "posix":
        meta.write_bytes(pickle.dumps(_RunsACommand(marker)))
    else:  # the real file with one more global first: protocol 4's STACK_GLOBAL of module and name, popped
        head = b"\x80\x04" + _short_unicode(module) + _short_unicode(name) + b"\x93" + b"0"
        meta.write_bytes(head + meta.read_bytes()[2:])
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=SMALL_STEPS[-1])
    assert run_cli("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo").returncode == 0
    done = run_cli("import-checkpoints", str(series), "--into", str(tmp_path / "runs" / "nemo"), *_source("moe"))
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f".metadata: names {module}.{name}" in done.stderr.replace("\n", ""), done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()


def _short_unicode(text: str) -> bytes:
    """pickle's SHORT_BINUNICODE opcode for `text`."""
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data
