"""lm-eval run directly with a team's own adapter (its `eval/lm_adapter.py`, an `lm_eval.api.model.LM` of its
own writing), as the team runs it without this project: `lm_eval.simple_evaluate` on lm-eval's own task
definitions, their data the same local splits the evaluator reads (tests/kit/lm_eval_direct.task_configs).

    python -m tests.kit.team_adapter_direct TEAM_ROOT CHECKPOINT HF_CACHE LIMIT OUT.json --team birch|cedar|dune
        [--tasks arc_easy,...]

Run from anywhere: the team's code resolves its paths from its own root. Each adapter is built as its README
says: birch's `BirchEvalLM(checkpoint_dir)`, cedar's `CedarLM.from_checkpoint(path)`, dune's
`DuneEvalLM(checkpoint_dir)`. OUT.json: {"scores" {task: value}, "loglikelihoods" {task: [[per choice] per
doc]}}, docs in doc order.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tests.kit.lm_eval_direct import OWN_TASKS, own_yaml, task_configs

METRIC = {"winogrande": "acc", "social_iqa": "acc"}  # acc_norm for the others


def adapter(team: str, root: Path, checkpoint: Path) -> Any:
    """The team's own LM, as its README builds it."""
    sys.path[:0] = [str(root / "eval"), str(root)]
    import lm_adapter  # the team's eval/lm_adapter.py

    if team == "birch":
        return lm_adapter.BirchEvalLM(str(checkpoint))
    if team == "dune":
        return lm_adapter.DuneEvalLM(str(checkpoint))
    return lm_adapter.CedarLM.from_checkpoint(str(checkpoint))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("hf_cache", type=Path)
    parser.add_argument("limit", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--team", choices=("birch", "cedar", "dune"), required=True)
    parser.add_argument("--tasks", default=",".join(OWN_TASKS))
    a = parser.parse_args()
    import lm_eval
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks import TaskManager

    configs = task_configs(a.hf_cache, a.tasks.split(","))
    manager = TaskManager(include_defaults=False)
    tasks: list[Any] = configs
    index = getattr(manager, "_task_index", None)
    if isinstance(index, dict):  # as lm_eval_direct.evaluate: hand lm-eval the tasks built from the configs
        tasks = [ConfigurableTask(config=c) for c in configs]
        index.update(
            {c["task"]: {"type": "task", "yaml_path": str(own_yaml(c["task"])), "task": c["task"]} for c in configs}
        )
    out = lm_eval.simple_evaluate(
        model=adapter(a.team, a.root, a.checkpoint), tasks=tasks, num_fewshot=0, limit=a.limit or None,
        log_samples=True, task_manager=manager, bootstrap_iters=0,
    )  # fmt: skip
    names = [c["task"] for c in configs]
    scores = {t: out["results"][t][f"{METRIC.get(t, 'acc_norm')},none"] for t in names}
    samples = {t: sorted(out["samples"][t], key=lambda s: s["doc_id"]) for t in names}
    lls = {t: [[float(r[0][0]) for r in s["resps"]] for s in samples[t]] for t in names}
    a.out.write_text(json.dumps({"scores": scores, "loglikelihoods": lls}))


if __name__ == "__main__":
    main()
