"""The one place lm-eval is called: `simple_evaluate` over a `CheckpointLM`, as every zero-shot score is made
(`recorder zero-shot` on any checkpoint, and the harness session that records scores into a recorder run,
`recorder zero-shot RUN` or `recorder eval RUN --harness lm-eval`), quiet, with its per-example rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from evaluator.harness.taskset import TaskData, lm_eval_config

if TYPE_CHECKING:
    from evaluator.harness.adapter import CheckpointLM


def simple_evaluate(
    lm_eval: Any, lm: CheckpointLM, tasks: Sequence[TaskData], *, limit: int | None, stderr: bool = False
) -> Any:
    """lm-eval's simple_evaluate as every zero-shot path runs it: 0-shot, fixed seeds, only this project's
    task configs. `stderr`: bootstrap the metrics' standard errors (lm-eval's default), else none."""
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_defaults=False)
    configs: list[Any] = [lm_eval_config(task) for task in tasks]
    index = getattr(manager, "_task_index", None)
    if isinstance(index, dict):
        # lm-eval 0.4.11 loses a config's task name while loading it, and looks every task up in its index to
        # log its YAML's path: the tasks go in built, and indexed under their names.
        from lm_eval.api.task import ConfigurableTask

        configs = [ConfigurableTask(config=config) for config in configs]
        index.update({t.name: {"type": "task", "yaml_path": str(t.config), "task": t.name} for t in tasks})
    return lm_eval.simple_evaluate(
        model=lm,
        tasks=configs,
        num_fewshot=0,
        limit=limit,
        log_samples=True,
        task_manager=manager,
        random_seed=0,
        numpy_random_seed=0,
        torch_random_seed=0,
        fewshot_random_seed=0,
        **({} if stderr else {"bootstrap_iters": 0}),
    )


@contextmanager
def quiet() -> Iterator[None]:
    """lm-eval's progress bars (stderr) and INFO/WARNING logs (e.g. "Overwriting default num_fewshot") off
    for the call; errors still raise."""
    import io
    import logging
    from contextlib import redirect_stderr

    import lm_eval.evaluator

    logger = logging.getLogger("lm_eval")
    before = logger.level, lm_eval.evaluator.get_git_commit_hash
    logger.setLevel(logging.ERROR)
    # lm-eval asks git for the working directory's commit with git's stderr on the terminal: outside a
    # checkout that is a "fatal: not a git repository" line among the scores. The same question, asked quietly.
    lm_eval.evaluator.get_git_commit_hash = _working_directory_commit
    try:
        with redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(before[0])
        lm_eval.evaluator.get_git_commit_hash = before[1]


def _working_directory_commit() -> str | None:
    """`git describe --always` in the working directory, as lm-eval records it; None outside a checkout."""
    import subprocess

    try:
        done = subprocess.run(["git", "describe", "--always"], capture_output=True, text=True, check=False)
    except OSError:  # no git
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def sample_row(s: dict[str, Any]) -> dict[str, Any]:
    """Per example: lm-eval's hashes of document, prompt and target, the log-likelihoods and outcomes."""
    return {
        "doc_id": s["doc_id"],
        "doc_hash": s.get("doc_hash"),
        "prompt_hash": s.get("prompt_hash"),
        "target_hash": s.get("target_hash"),
        "target": s.get("target"),
        "loglikelihoods": [
            float(r[0][0]) if isinstance(r[0], (list, tuple)) else float(r[0]) for r in s.get("resps", [])
        ],
        **{m: s[m] for m in ("acc", "acc_norm") if m in s},
    }
