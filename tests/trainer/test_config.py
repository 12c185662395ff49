import json

import pytest

from tests.trainer.specs import write_spec
from trainer.config import load_config, validation_start_step
from trainer.errors import ConfigError
from trainer.policy.taskspec import load_spec, shipped


def test_defaults_resolve():
    cfg = load_config()
    assert cfg.global_batch_size == 256 and cfg.validation_start == 18 and cfg.max_steps == 19
    assert (cfg.eval.k, cfg.eval.temperature, cfg.eval.top_p, cfg.eval.target) == (4, 0.1, 0.95, 0.69)
    assert cfg.division == "open" and cfg.to_dict()["eval"]["samples"] == 251


def test_the_default_evaluation_is_the_benchmarks():
    """The embedded default evaluates as the ruleset does (recorder.rules.BENCHMARK_EVAL, which verify's
    benchmark-eval rule holds a claiming run to), on the shipped spec whose sha256 it names."""
    from recorder.rules import BENCHMARK_EVAL, eval_deviations

    section = load_config().to_dict()["eval"]
    assert {name: section[name] for name in BENCHMARK_EVAL} == dict(BENCHMARK_EVAL)
    assert eval_deviations(section) == [] and eval_deviations({**section, "top_p": 1.0}) == ["top_p 1.0, not 0.95"]


def test_validation_start_rule():
    assert validation_start_step(256) == 18
    assert validation_start_step(512) == 10  # ceil(2.5 + 7.5) = ceil(10.0)
    assert validation_start_step(3840) == 4


def test_set_and_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("seed = 3\n[checkpoint]\nsync = true\n")
    cfg = load_config(f, ["model=smollm2-135m", "eval.k=8", "learning_rate=2e-4"])
    assert cfg.seed == 3 and cfg.checkpoint.sync and cfg.model == "smollm2-135m"
    assert cfg.eval.k == 8 and cfg.learning_rate == 2e-4 and cfg.config_filename == "c.toml"
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"rollout": "vllm"}))
    assert load_config(j).rollout == "vllm"


def test_every_error_at_once():
    with pytest.raises(ConfigError) as info:
        load_config(
            sets=[
                "eval.k=0",
                "learning_rate=abc",
                "model=gpt",
                "bogus=1",
                "micro_batch_size=7",
                "max_steps=3",
                "checkpoint.x=1",
                "noequals",
            ]
        )
    errs = info.value.errors
    for field in (
        "eval.k",
        "learning_rate",
        "model",
        "bogus",
        "micro_batch_size",
        "max_steps",
        "checkpoint.x",
        "noequals",
    ):
        assert any(e.startswith(field) or field in e.split(":")[0] for e in errs), field
    assert len(errs) == 8
    assert "set max_steps >= 18" in str(info.value)


def test_bad_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("seed = = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(f)
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "missing.toml")


def test_device_dtype_model_and_task_settings(tmp_path):
    cfg = load_config()
    assert (cfg.device, cfg.dtype, cfg.model, cfg.task, cfg.rollout) == ("auto", "fp32", "tiny", "addition", "auto")
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    spec = write_spec(tmp_path)
    cfg = load_config(sets=["device=cuda:1", "dtype=bf16", f"model={hf}", f"task={spec}"])
    assert (cfg.device, cfg.dtype, cfg.model, cfg.task) == ("cuda:1", "bf16", str(hf), str(spec)) and cfg.pretrained
    with pytest.raises(ConfigError) as info:
        load_config(sets=["device=tpu", "dtype=fp16", f"model={tmp_path}", f"task={tmp_path / 'none.toml'}"])
    errs = info.value.errors
    assert len(errs) == 4
    assert any(e.startswith("device: 'tpu' is not auto, cpu, cuda or cuda:N") for e in errs)
    assert any(e.startswith("dtype: 'fp16' is not one of fp32, bf16") for e in errs)
    assert any(e.startswith("model:") and "Hugging Face model directory" in e for e in errs)
    assert any(e.startswith("task:") and "task spec file" in e for e in errs)


def test_resolve_device_and_dtype():
    import torch

    from trainer.device import resolve_device, resolve_dtype

    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_dtype("bf16") is torch.bfloat16 and resolve_dtype("fp32") is torch.float32
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="sees no GPU"):
            resolve_device("cuda:0")


def test_a_run_on_a_task_spec_records_it_and_takes_its_settings(tmp_path, monkeypatch):
    spec = write_spec(tmp_path)
    monkeypatch.chdir(tmp_path)
    cfg = load_config(sets=["task=plus-one.toml", "eval.k=1"])
    assert cfg.task == cfg.eval.task == str(spec.resolve())  # absolute: found from any working directory
    assert cfg.eval.task_sha256 == load_spec(spec).sha256
    ev = cfg.eval
    # the spec's settings, but eval.k: given, it wins
    assert (ev.k, ev.samples, ev.temperature, ev.top_p, ev.max_new_tokens, ev.target) == (1, 5, 0.3, 0.9, 3, 0.5)


def test_the_builtin_task_records_the_shipped_specs_sha256():
    cfg = load_config()
    assert cfg.task == "addition" and cfg.eval.task is None
    assert cfg.eval.task_sha256 == load_spec(shipped("addition")).sha256


def test_a_recorded_config_given_back_must_still_name_its_spec(tmp_path):
    spec = write_spec(tmp_path)
    recorded = tmp_path / "recorded.json"
    recorded.write_text(json.dumps(load_config(sets=[f"task={spec}"]).to_dict()))
    assert load_config(recorded).eval == load_config(sets=[f"task={spec}"]).eval
    write_spec(tmp_path, answers_shift=2)  # the spec's data changed since
    with pytest.raises(ConfigError, match=r"eval\.task_sha256: .* it is set by `task`: leave eval\.task_sha256 out"):
        load_config(recorded)


def test_a_spec_run_scores_at_most_the_specs_tasks(tmp_path):
    spec = write_spec(tmp_path)
    with pytest.raises(ConfigError, match="eval.samples: 7 is more than the 6 tasks of plus-one.toml"):
        load_config(sets=[f"task={spec}", "eval.samples=7"])
    with pytest.raises(ConfigError, match=r"eval.samples: 252 must be in 1\.\.251"):
        load_config(sets=["eval.samples=252"])
    bad = tmp_path / "bad.toml"
    bad.write_text("k = 0\n")
    with pytest.raises(ConfigError, match=r"task: .*bad\.toml"):
        load_config(sets=[f"task={bad}"])


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ("learning_rate=inf", "learning_rate: inf is not a finite number; give e.g. 1e-4"),
        ("learning_rate=nan", "learning_rate: nan is not a finite number; give e.g. 1e-4"),
        ("eval.target=-inf", "eval.target: -inf is not a finite number; give e.g. 1e-4"),
        ("learning_rate=1e300", "learning_rate: 1e+300 must be at most 1 (larger steps diverge)"),
        ("max_steps=1e23", "max_steps: 1e+23 is not an integer; give a whole number"),
        (
            "max_steps=100000000000000000000000",
            "max_steps: 100000000000000000000000 is out of range; give a whole number of at most 9007199254740991",
        ),
        ("max_steps=2000000", "max_steps: 2000000 must be at most 1e+06 (a longer run is several runs, resumed)"),
        (
            "num_generations_per_prompt=100000",
            "num_generations_per_prompt: 100000 must be at most 1024 (a step's batch is held in memory)",
        ),
        ("threads=5000", "threads: 5000 must be at most 1024 (threads of one process)"),
        ("warmup.batch_size=1000000", "warmup.batch_size: 1000000 must be at most 65536 (a batch is held in memory)"),
    ],
)
def test_every_numeric_setting_is_finite_and_bounded(setting, problem):
    with pytest.raises(ConfigError) as e:
        load_config(None, [setting])
    assert e.value.errors == [problem]


def test_a_number_too_long_to_show_is_cut_in_the_message():
    with pytest.raises(ConfigError) as e:
        load_config(None, ["learning_rate=1" + "0" * 400])
    assert e.value.errors == [
        "learning_rate: 10000000000000000000... (401 characters) is not a finite number; give e.g. 1e-4"
    ]
    with pytest.raises(ConfigError) as e:  # more digits than Python converts to an integer: text, not a number
        load_config(None, ["max_steps=1" + "0" * 5000])
    assert e.value.errors == [
        "max_steps: '1000000000000000000... (5003 characters) is not an integer; give a whole number"
    ]
