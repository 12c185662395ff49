"""Which zero-shot tasks exist, which metric each reports, and where their data come from.

The task configs are lm-eval YAMLs shipped in tasks/; the data never come from a hub (none is reachable):
`<data dir>/<task>.jsonl`, the data dir from --data-dir or RECORDER_EVAL_DATA. tasks/data/ holds small
files written for the tests (python -m tests.kit.write_data), not the real datasets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.harness.errors import MissingTaskDataError, UnknownTaskError

if TYPE_CHECKING:
    from evaluator.harness.task_rows import TaskRows

TASKS_DIR = Path(__file__).parent / "tasks"
SHIPPED_DATA = TASKS_DIR / "data"
ENV = "RECORDER_EVAL_DATA"

# The metric each task reports (the usual zero-shot reading): acc_norm (log-likelihood per byte of the
# continuation) where answers differ in length, plain acc for Winogrande (one shared continuation) and SIQA.
METRICS = {
    "arc_easy": "acc_norm",
    "arc_challenge": "acc_norm",
    "hellaswag": "acc_norm",
    "openbookqa": "acc_norm",
    "piqa": "acc_norm",
    "winogrande": "acc",
    "siqa": "acc",
    "social_iqa": "acc",
    "easy_qa": "acc_norm",
}
DATA_ALIASES = {"social_iqa": "siqa"}  # lm-eval's name -> the file name of the shipped data
DEFAULT_TASKS = ("arc_easy", "arc_challenge", "hellaswag", "openbookqa", "piqa", "winogrande", "siqa")


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskData:
    """One task: its config file and its local data: a JSON-lines file, or the Arrow files of a Hugging Face
    datasets split (`builder="arrow"`, `files` sorted)."""

    name: str
    metric: str
    config: Path
    data: Path
    builder: str = "json"
    files: tuple[Path, ...] = ()
    content: TaskRows | None = field(default=None, repr=False, compare=False)  # the rows, read once (`read`)

    def read(self) -> TaskData:
        """This task with its rows read once (evaluator.harness.task_rows): what is hashed is what is scored."""
        if self.content is not None:
            return self
        from evaluator.harness.task_rows import read_rows

        return replace(self, content=read_rows(list(self.files) or [self.data], self.builder))

    @property
    def rows(self) -> TaskRows:
        content = self.read().content
        assert content is not None
        return content

    @property
    def data_sha256(self) -> str:
        """sha256 of the data file's bytes as read; of the files' "name sha256" lines for a split in several."""
        return self.rows.data_sha256

    @property
    def content_sha256(self) -> str:
        """sha256 of the split's rows, whatever files hold them (evaluator.harness.task_content)."""
        return self.rows.content_sha256


def parse_tasks(text: str) -> list[str]:
    """'arc_easy, piqa' -> ['arc_easy', 'piqa'], checked against what is shipped; order kept, no repeats."""
    names = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not names:
        raise UnknownTaskError(f"--tasks {text!r}: name at least one task ({', '.join(METRICS)})")
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise UnknownTaskError(f"--tasks: unknown task(s) {', '.join(unknown)}; known: {', '.join(METRICS)}")
    return names


def data_dir(option: Path | None) -> Path:
    """--data-dir, else $RECORDER_EVAL_DATA; MissingTaskDataError when neither names a directory."""
    chosen = option if option is not None else (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if chosen is None:
        raise MissingTaskDataError(
            f"no task data directory: pass --data-dir DIR or set {ENV}=DIR, holding "
            f"<task>.jsonl per task (no hub is reachable here; the small test files "
            f"shipped with the project are in {SHIPPED_DATA})"
        )
    if not chosen.is_dir():
        raise MissingTaskDataError(
            f"task data directory {chosen} does not exist (from {'--data-dir' if option is not None else ENV})"
        )
    return chosen


def data_file(directory: Path, name: str) -> Path:
    """<directory>/<name>.jsonl; for social_iqa, siqa.jsonl when that is the file there."""
    path = directory / f"{name}.jsonl"
    alias = directory / f"{DATA_ALIASES.get(name, name)}.jsonl"
    return alias if not path.is_file() and alias.is_file() else path


def resolve_tasks(names: list[str], directory: Path) -> list[TaskData]:
    """Each task's config and data file; MissingTaskDataError naming every task without its file."""
    missing = [n for n in names if not data_file(directory, n).is_file()]
    if missing:
        raise MissingTaskDataError(
            "no data for task(s) "
            + ", ".join(f"{n} (put it at {directory / (n + '.jsonl')})" for n in missing)
            + f": one JSON record per line in the Hugging Face field layout (see {TASKS_DIR}/<task>.yaml)"
        )
    return [
        TaskData(name=n, metric=METRICS[n], config=TASKS_DIR / f"{n}.yaml", data=data_file(directory, n)).read()
        for n in names
    ]


def lm_eval_config(task: TaskData) -> dict[str, Any]:
    """The task's lm-eval config (a dict: !function resolved), its data the rows read once (`TaskData.read`),
    handed over in memory: the datasets library neither reads the files again nor answers from its cache."""
    cfg = _load_task_yaml(task.config)
    cfg.setdefault("task_alias", task.name)  # lm-eval 0.4.11 prints each task under its alias, None otherwise
    cfg["dataset_path"] = task.builder
    cfg["dataset_kwargs"] = {}
    cfg["custom_dataset"] = partial(_dataset, task.rows)
    return cfg


def _dataset(rows: TaskRows, **_: Any) -> Any:
    """lm-eval's `custom_dataset`: called with the task's metadata and dataset_kwargs, which the rows need not."""
    from evaluator.harness.task_rows import in_memory_dataset

    return in_memory_dataset(rows)


def _load_task_yaml(path: Path) -> dict[str, Any]:
    """A task YAML with its `!function` tags resolved, by the loader of the lm-eval installed: 0.4.12 moved it
    from `lm_eval.utils.load_yaml_config` (0.4.11) to `lm_eval.tasks._yaml_loader.load_yaml`."""
    try:
        from lm_eval.tasks._yaml_loader import load_yaml
    except ImportError:
        from lm_eval.utils import load_yaml_config

        return dict(load_yaml_config(yaml_path=str(path), mode="full"))
    return dict(load_yaml(path, resolve_func=True))
