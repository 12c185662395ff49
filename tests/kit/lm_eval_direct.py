"""lm-eval run directly on a team checkpoint, as a team would run it without this project: lm-eval's own
`HFLM` model class and lm-eval's own task definitions (the YAMLs shipped inside the installed lm_eval
package), `lm_eval.simple_evaluate`, on the same weights and the same local task data.

    python -m tests.kit.lm_eval_direct CKPT TEAM_ROOT HF_CACHE LIMIT OUT.json
        [--batch-size 32] [--softmax-dtype float64] [--tasks arc_easy,...] [--team team|lumen|quill|heron]

No lm-eval model class reads a DCP checkpoint or a model outside `transformers`: HFLM takes an
already-built model (anything with `.config`, `.device` and a forward answering `.logits`) and a
`transformers` tokenizer. So the weights are read here with torch.distributed.checkpoint alone (not this
project's loader) into the team's own model, built as each team's README says (capacity off, fp32, as
scoring runs): tests/fixtures/team's `models.moe:build_model(config, capacity=False)`, lumen's
`build_lumen(load_model_config(...))` with `cfg.moe.use_capacity = False`, quill's
`QuillLM.build(**arch_kwargs(config))` then `set_expert_capacity(False)`, heron's
`build_model(config["model"], drop_overflow=False)`. Lumen, quill and heron ship a Hugging Face tokenizer
directory, read by transformers' AutoTokenizer; the fixture team's char tokenizer is shimmed. The
two thin shims below only give them the shape HFLM calls:

- `HFShaped`: `.config.max_position_embeddings` (the model's `max_seq_len`, so HFLM truncates as the
  evaluator does), `.device`, and the logits wrapped in transformers' `CausalLMOutput`.
- `char_tokenizer`: the team's char tokenizer as a `transformers.PreTrainedTokenizerFast` built with the
  `tokenizers` library: one token per character, <bos> prefixed to every encoding (HFLM's default for
  causal models, the char tokenizer's prefix), a character outside the alphabet read as
  alphabet[ord(c) % n] (the evaluator's reading of a char tokenizer, so that English data can be scored).

Everything else (prompts, request splitting, tokenising the context/continuation pair, truncation,
batching, the log-likelihood sum, acc/acc_norm) is lm-eval's own code. OUT.json: {"version", "scores"
{task: value}, "correct" {task: [acc or acc_norm per doc]}, "loglikelihoods" {task: [[per choice] per doc]}},
docs in doc order.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# lm-eval's own definition of each task (relative to lm_eval/tasks/) and the split its config evaluates.
OWN_TASKS = {
    "arc_easy": "arc/arc_easy.yaml",
    "arc_challenge": "arc/arc_challenge.yaml",
    "hellaswag": "hellaswag/hellaswag.yaml",
    "openbookqa": "openbookqa/openbookqa.yaml",
    "piqa": "piqa/piqa.yaml",
    "winogrande": "winogrande/default.yaml",
    "social_iqa": "siqa/siqa.yaml",
}


RUNS = {  # each team tree's run directory
    "team": "checkpoints/tiny/run1",
    "lumen": "checkpoints/lumen-pretrain/moe-d32-e4-r1",
    "quill": "checkpoints/quill-tiny/moe-d32-e4",
    "heron": "checkpoints/heron_pretrain/moe_tiny_r1",
}


def build(name: str, team: Path, config: dict[str, Any]) -> tuple[Any, int]:
    """(the team's model built its own way with capacity off, the positions it takes)."""
    sys.path.insert(0, str(team))
    if name == "lumen":
        from models import LumenConfig, build_lumen

        cfg = LumenConfig.from_dict(config["model"])
        cfg.moe.use_capacity = False
        return build_lumen(cfg), cfg.max_positions
    if name == "quill":
        from quill_lm.config import arch_kwargs
        from quill_lm.model import QuillLM

        model = QuillLM.build(**arch_kwargs(config))
        model.set_expert_capacity(False)
        return model, 2048  # rotary positions: no limit of its own; lm-eval's default
    if name == "heron":
        from models import build_model as build_heron

        return build_heron(config["model"], drop_overflow=False), int(config["model"]["max_positions"])
    from models.moe import build_model

    built = build_model(config["model"], capacity=False)
    return built, int(built.max_seq_len)


def load_model(ckpt: Path, team: Path, config: dict[str, Any], name: str = "team") -> tuple[Any, int]:
    """The team's model (capacity off, fp32) with the checkpoint's `model.*` tensors, read by torch's DCP."""
    from torch.distributed.checkpoint import state_dict_loader

    built, positions = build(name, team, config)
    model = built.float().eval()
    state = model.state_dict()
    state_dict_loader.load({"model": state}, checkpoint_id=str(ckpt))  # only the model's entries are requested
    model.load_state_dict(state)
    return model, positions


class HFShaped:
    """What HFLM reads of a model it is handed: `.config`, `.device`, and `model(ids).logits`."""

    def __init__(self, inner: Any, positions: int) -> None:
        from transformers import PretrainedConfig

        self.inner = inner
        self.config = PretrainedConfig()
        self.config.max_position_embeddings = positions
        self.device = next(inner.parameters()).device

    def __call__(self, input_ids: Any, **_: Any) -> Any:
        from transformers.modeling_outputs import CausalLMOutput

        return CausalLMOutput(logits=self.inner(input_ids))

    def eval(self) -> HFShaped:
        self.inner.eval()
        return self

    def tie_weights(self) -> None:
        pass


def char_tokenizer(chars: str, texts: list[str]) -> Any:
    """The char tokenizer (ids: <pad> 0, <bos> 1, <eos> 2, then one per character) as a transformers
    tokenizer; `texts`: every text the tasks hold, whose characters outside the alphabet are mapped."""
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<bos>", "<eos>"]
    vocab = {t: i for i, t in enumerate([*specials, *chars])}
    outside = sorted({c for text in texts for c in text} - set(chars))
    tok = Tokenizer(WordLevel(vocab, unk_token="<pad>"))
    tok.normalizer = normalizers.Sequence([normalizers.Replace(c, chars[ord(c) % len(chars)]) for c in outside])
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>")


def task_configs(hf_cache: Path, tasks: list[str]) -> list[dict[str, Any]]:
    """lm-eval's own config of each task, its data read from the local split (save_to_disk's Arrow files)."""
    from evaluator.zero_shot.task_sources import HUB

    out = []
    for name in tasks:
        cfg = _load_yaml(own_yaml(name))
        hub = HUB[name]
        files = sorted((hf_cache / hub.path / (hub.name or "") / hub.split).glob("*.arrow"))
        assert files, f"no {hub.split} split of {name} in {hf_cache}"
        which = "test_split" if cfg.get("test_split") else "validation_split"
        split = cfg[which]
        cfg.pop("tag", None)
        for key in ("training_split", "validation_split", "test_split", "fewshot_split"):  # 0-shot: only the one
            cfg[key] = split if key == which else None
        cfg |= {"dataset_path": "arrow", "dataset_name": None, "task_alias": name}
        cfg["dataset_kwargs"] = {"data_files": {split: [str(f) for f in files]}}
        out.append(cfg)
    return out


def own_yaml(task: str) -> Path:
    import lm_eval

    return Path(lm_eval.__file__).parent / "tasks" / OWN_TASKS[task]


def _load_yaml(path: Path) -> dict[str, Any]:
    """lm-eval's YAML loader of the installed version (it moved in 0.4.12), `include:` and `!function` resolved."""
    try:
        from lm_eval.tasks._yaml_loader import load_yaml
    except ImportError:
        from lm_eval.utils import load_yaml_config

        return dict(load_yaml_config(yaml_path=str(path), mode="full"))
    return dict(load_yaml(path, resolve_func=True))


def evaluate(
    model: Any, tokenizer: Any, configs: list[dict[str, Any]], limit: int | None, softmax: str | None, batch: int
) -> Any:
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=model, tokenizer=tokenizer, backend="causal", batch_size=batch, softmax_dtype=softmax)
    manager = TaskManager(include_defaults=False)
    tasks: list[Any] = configs
    index = getattr(manager, "_task_index", None)
    if isinstance(index, dict):  # lm-eval 0.4.11 drops a config dict's task name: hand it the tasks built
        from lm_eval.api.task import ConfigurableTask

        tasks = [ConfigurableTask(config=c) for c in configs]
        index.update(
            {c["task"]: {"type": "task", "yaml_path": str(own_yaml(c["task"])), "task": c["task"]} for c in configs}
        )
    return lm_eval.simple_evaluate(
        model=lm, tasks=tasks, num_fewshot=0, limit=limit, log_samples=True, task_manager=manager,
        bootstrap_iters=0, random_seed=0, numpy_random_seed=0, torch_random_seed=0, fewshot_random_seed=0,
    )  # fmt: skip


def main() -> None:
    import lm_eval
    import yaml

    p = argparse.ArgumentParser()
    for name in ("ckpt", "team", "hf_cache"):
        p.add_argument(name, type=Path)
    p.add_argument("limit", type=int, help="examples per task; 0: all")
    p.add_argument("out", type=Path)
    p.add_argument("--softmax-dtype", default=None)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--tasks", default=",".join(OWN_TASKS))
    p.add_argument("--team", dest="team_choice", default="team", choices=sorted(RUNS))
    a = p.parse_args()
    run = a.team / RUNS[a.team_choice]
    config = yaml.safe_load((run / "all_config.yaml").read_text())
    configs = task_configs(a.hf_cache, a.tasks.split(","))
    model = HFShaped(*load_model(a.ckpt, a.team, config, a.team_choice))
    out = evaluate(model, _tokenizer(a, run, configs), configs, a.limit or None, a.softmax_dtype, a.batch_size)
    scores, correct, logliks = {}, {}, {}
    for name, res in out["results"].items():
        metric = "acc" if name in ("winogrande", "social_iqa") else "acc_norm"
        scores[name] = res[f"{metric},none"]
        rows = sorted(out["samples"][name], key=lambda s: s["doc_id"])
        correct[name] = [float(s[metric]) for s in rows]
        logliks[name] = [[float(r[0][0]) for r in s["resps"]] for s in rows]
    found = {"version": lm_eval.__version__, "scores": scores, "correct": correct, "loglikelihoods": logliks}
    a.out.write_text(json.dumps(found))


def _tokenizer(a: Any, run: Path, configs: list[dict[str, Any]]) -> Any:
    """The team's tokenizer as HFLM takes it: lumen's, quill's and heron's Hugging Face directories as they are, the
    fixture team's char tokenizer through the shim."""
    import yaml

    metadata = yaml.safe_load((run / "train_metadata.yaml").read_text())
    if a.team_choice != "team":
        from transformers import AutoTokenizer

        key = {"lumen": "hf_tokenizer", "quill": "hf_tokenizer_dir", "heron": "tokenizer_path"}[a.team_choice]
        return AutoTokenizer.from_pretrained(str(a.team / metadata[key]), local_files_only=True)
    chars = json.loads((a.team / metadata["tokenizer"]).read_text())
    texts = [Path(f).read_bytes().decode("utf-8", errors="ignore") for c in configs for f in _files(c)]
    return char_tokenizer(chars["chars"], texts)


def _files(config: dict[str, Any]) -> list[str]:
    return [f for files in config["dataset_kwargs"]["data_files"].values() for f in files]


if __name__ == "__main__":
    main()
