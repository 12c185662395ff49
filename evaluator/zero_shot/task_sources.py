"""The seven zero-shot tasks by lm-eval's names, and where their data come from: a local Hugging Face datasets
directory (`--hf-cache`: the hub's cache layout, or `save_to_disk` copies) or JSON-lines exports (`--data-dir`).

Each task's split is lm-eval's own (test for ARC and OpenBookQA, validation for the rest); the field layout
is the Hugging Face datasets' (evaluator/harness/tasks/<task>.yaml). Winogrande is read from
`winogrande_debiased` (its validation split is the standard 1,267 examples) and SIQA from `jet-ai/social_i_qa`
(the same schema and 1,954 validation examples); `--task-source TASK=PATH[:CONFIG]` names another source."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.taskset import METRICS, TASKS_DIR, TaskData, data_file
from evaluator.zero_shot.errors import ZeroShotInputError

ALIASES = {"siqa": "social_iqa"}
TASKS = ("arc_easy", "arc_challenge", "hellaswag", "openbookqa", "piqa", "winogrande", "social_iqa")


@dataclass(frozen=True, slots=True)
class HubDataset:
    """Where lm-eval reads a task: the hub dataset, its configuration and the split scored."""

    path: str
    name: str | None
    split: str


HUB = {
    "arc_easy": HubDataset("allenai/ai2_arc", "ARC-Easy", "test"),
    "arc_challenge": HubDataset("allenai/ai2_arc", "ARC-Challenge", "test"),
    "hellaswag": HubDataset("Rowan/hellaswag", None, "validation"),
    "openbookqa": HubDataset("allenai/openbookqa", "main", "test"),
    "piqa": HubDataset("baber/piqa", None, "validation"),
    "winogrande": HubDataset("allenai/winogrande", "winogrande_debiased", "validation"),
    "social_iqa": HubDataset("jet-ai/social_i_qa", None, "validation"),
}
Sources = dict[str, HubDataset]


def parse_task_names(text: str) -> list[str]:
    """'arc_easy,siqa' -> ['arc_easy', 'social_iqa']: lm-eval's names, aliases mapped, order kept."""
    names = list(dict.fromkeys(ALIASES.get(t.strip(), t.strip()) for t in text.split(",") if t.strip()))
    unknown = [n for n in names if n not in HUB]
    if unknown or not names:
        raise ZeroShotInputError(
            f"--tasks: unknown task(s) {', '.join(unknown) or repr(text)}; "
            f"known: {', '.join(TASKS)} (siqa = social_iqa)"
        )
    return names


def parse_sources(text: str) -> Sources:
    """'winogrande=allenai/winogrande:winogrande_xl,siqa=lighteval/siqa' -> {task: HubDataset}, each task's
    split kept; ZeroShotInputError naming an entry that is not TASK=PATH[:CONFIG] of a known task."""
    out: Sources = {}
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        task, _, source = entry.partition("=")
        task = ALIASES.get(task.strip(), task.strip())
        path, _, name = source.strip().partition(":")
        if task not in HUB or not path:
            raise ZeroShotInputError(
                f"--task-source {entry!r}: expected TASK=PATH[:CONFIG] with TASK one of {', '.join(TASKS)}"
            )
        out[task] = HubDataset(path, name or None, HUB[task].split)
    return out


def hub_split_files(cache: Path, task: str, hub: HubDataset | None = None) -> list[Path]:
    """The Arrow files of the task's split under `cache`: `save_to_disk` of the dataset
    (<cache>/<path>[/<name>]/<split>/*.arrow), or the hub cache (<cache>/<org>___<ds>/<name|default>/*/*/
    <ds>-<split>*.arrow)."""
    hub = hub or HUB[task]
    saved = cache / hub.path / (hub.name or "") / hub.split
    if saved.is_dir():
        return sorted(saved.glob("*.arrow"))
    cached = cache / hub.path.replace("/", "___") / (hub.name or "default")
    base = hub.path.split("/")[-1]
    return sorted(cached.glob(f"*/*/{base}-{hub.split}*.arrow"))


def resolve_task_data(
    names: list[str], *, hf_cache: Path | None, data_dir: Path | None, sources: Sources | None = None
) -> list[TaskData]:
    """Each task's config and local data (`sources` replacing a task's hub dataset); one ZeroShotInputError
    naming every task without data."""
    sources = sources or {}
    if hf_cache is None and data_dir is None:
        raise ZeroShotInputError("no task data: pass --hf-cache DIR (Hugging Face datasets) or --data-dir DIR (JSONL)")
    out, missing = [], []
    for name in names:
        config = TASKS_DIR / f"{name}.yaml"
        files = hub_split_files(hf_cache, name, sources.get(name)) if hf_cache is not None else []
        jsonl = _jsonl(data_dir, name) if data_dir is not None else None
        if files:
            out.append(
                TaskData(
                    name=name,
                    metric=METRICS[name],
                    config=config,
                    data=files[0].parent,
                    builder="arrow",
                    files=tuple(files),
                ).read()  # read once here: its hashes and the rows scored are of the same bytes
            )
        elif jsonl is not None:
            out.append(TaskData(name=name, metric=METRICS[name], config=config, data=jsonl).read())
        else:
            missing.append(_where(name, hf_cache, data_dir, sources.get(name) or HUB[name]))
    if missing:
        raise ZeroShotInputError("no data for " + "; ".join(missing))
    return out


def _jsonl(directory: Path, name: str) -> Path | None:
    path = data_file(directory, name)
    return path if path.is_file() else None


def _where(name: str, hf_cache: Path | None, data_dir: Path | None, hub: HubDataset) -> str:
    places = []
    if hf_cache is not None:
        places.append(
            f"{hf_cache / hub.path / (hub.name or '') / hub.split}/*.arrow (save_to_disk of "
            f"{hub.path}{'/' + hub.name if hub.name else ''}, split {hub.split})"
        )
    if data_dir is not None:
        places.append(str(data_dir / f"{name}.jsonl"))
    return f"{name}: put it at {' or '.join(places)}"
