"""What the trainer trains on: each step's prompts and the reward of a completion.

The built-in addition task (trainer/policy/task.py) is the default; `task=<spec.toml>` trains on a task spec
(trainer/policy/taskspec.py) and rewards with the spec's verifier, the very one its evaluation scores with.
A spec's scored items (its first `samples`) are never trained on: the training pool is the rest of its data.
Prompts are drawn as a function of (run seed, step) only, like the built-in task's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from recorder.user_paths import user_path
from trainer.policy import task as addition
from trainer.policy.taskspec import TaskItem, TaskSpec, TaskSpecError, load_spec
from trainer.policy.tokenizer import Tokenizer


@dataclass(frozen=True, slots=True)
class Problem:
    """One training prompt as the model sees it, and the answer its completion is checked against."""

    prompt: str
    answer: str


class TrainingTask(Protocol):
    """Prompts per step and the reward of a completion (1.0 correct, 0.0 not, or anything in between)."""

    def problems(self, seed: int, step: int, n: int) -> list[Problem]: ...

    def reward(self, problem: Problem, completion: str) -> float: ...


class AdditionTask:
    """The built-in task: `a+b=` from the training pool, exact-answer reward."""

    def problems(self, seed: int, step: int, n: int) -> list[Problem]:
        return [Problem(t.prompt, t.answer) for t in addition.training_tasks(seed, step, n)]

    def reward(self, problem: Problem, completion: str) -> float:
        return addition.reward(addition.Task(problem.prompt, problem.answer), completion)


class SpecTask:
    """A task spec's unscored items, rendered with its template (or chat template), rewarded by its verifier."""

    def __init__(self, spec: TaskSpec, tokenizer: Tokenizer) -> None:
        self.spec = spec
        self.pool: list[TaskItem] = list(spec.items[spec.samples :])
        if not self.pool:
            raise TaskSpecError(
                f"{spec.path}: no items to train on: all {len(spec.items)} items of its data are scored "
                f"(samples = {spec.samples}); lower `samples` or add items, the rest are the training pool"
            )
        self.prompts = [spec.render(item, tokenizer) for item in self.pool]

    def problems(self, seed: int, step: int, n: int) -> list[Problem]:
        rng = random.Random(f"train:{seed}:{step}")  # str seeds hash with SHA-512: stable across versions
        picks = [rng.randrange(len(self.pool)) for _ in range(n)]
        return [Problem(self.prompts[i], self.pool[i].answer) for i in picks]

    def reward(self, problem: Problem, completion: str) -> float:
        return self.spec.verifier.reward(completion, problem.answer)


def training_task(name: str, tokenizer: Tokenizer) -> TrainingTask:
    """The config's `task`: `addition` or the path of a task spec file."""
    if name == "addition":
        return AdditionTask()
    return SpecTask(load_spec(user_path(name)), tokenizer)
