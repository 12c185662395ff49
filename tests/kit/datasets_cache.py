"""A local Hugging Face datasets directory for the seven tasks, made with `save_to_disk` in lm-eval's field
layout from the small records shipped for the tests (evaluator/harness/tasks/data/)."""

from __future__ import annotations

import json
from pathlib import Path

from evaluator.harness.taskset import SHIPPED_DATA
from evaluator.zero_shot.task_sources import ALIASES, HUB


def make_cache(root: Path) -> Path:
    """<root>/<hub path>[/<name>]/<split>/ per task; returns root."""
    from datasets import Dataset, DatasetDict

    by_name = {v: k for k, v in ALIASES.items()}
    for task, hub in HUB.items():
        source = SHIPPED_DATA / f"{by_name.get(task, task)}.jsonl"
        rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
        DatasetDict({hub.split: Dataset.from_list(rows)}).save_to_disk(str(root / hub.path / (hub.name or "")))
    return root
