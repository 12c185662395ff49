"""A task is a file: a small TOML spec naming its data, prompt, verifier and sampling settings.

    name = "addition"
    data = "addition.jsonl"          # {id, prompt, answer} per line, relative to this file
    dev = "addition-holdout.jsonl"   # optional: its texts (prompt + answer) fingerprint a checkpoint
    prompt = "{prompt}"              # a template; or `chat = true` (and optional `system`) to use the
                                     # tokenizer's chat template with the prompt as the user's message
    samples = 251                    # tasks scored: the first `samples` of `data` (default: all)
    k = 4                            # pass@k, k samples per task
    temperature = 0.1
    top_p = 0.95
    max_new_tokens = 5
    target = 0.69                    # must equal the ruleset's (recorder.rules.TARGET) for a comparable run
    [verifier]
    kind = "exact"                   # exact | numeric (tolerance) | regex (pattern) | math

The evaluator scores with it and the trainer rewards with the same `verifier`, so one spec serves both.
The specs shipped with the package live in `trainer/policy/tasks/`; `shipped("addition")` finds one.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.policy.errors import TaskError
from trainer.policy.tokenizer import Tokenizer
from trainer.policy.verifiers import Verifier, VerifierError

BUILTIN_TASK = "addition"  # the built-in task (trainer/policy/task.py); its shipped spec has this name
SHIPPED_DIR = Path(__file__).parent / "tasks"
PROMPT_FIELD = "{prompt}"
_KEYS = {
    "name",
    "data",
    "dev",
    "prompt",
    "chat",
    "system",
    "samples",
    "k",
    "temperature",
    "top_p",
    "max_new_tokens",
    "target",
    "verifier",
}


class TaskSpecError(TaskError):
    """A task spec or one of its data files that cannot be used; the message names the file and line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskItem:
    """One problem: its id, the prompt the model sees (before the template), and the expected answer."""

    id: str
    prompt: str
    answer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    """A loaded, checked task spec with its data."""

    name: str
    path: Path
    items: tuple[TaskItem, ...]
    dev: tuple[TaskItem, ...]
    template: str
    chat: bool
    system: str | None
    verifier: Verifier
    samples: int
    k: int
    temperature: float
    top_p: float
    max_new_tokens: int
    target: float
    sha256: str  # of the spec file and its data files, as read

    @property
    def scored(self) -> tuple[TaskItem, ...]:
        """The items scored: the first `samples` of the data."""
        return self.items[: self.samples]

    def render(self, item: TaskItem, tokenizer: Tokenizer) -> str:
        """The text the model is given for `item`: the template filled in, or the chat template applied."""
        text = self.template.replace(PROMPT_FIELD, item.prompt)
        if not self.chat:
            return text
        hf = getattr(tokenizer, "hf", None)
        if hf is None or not getattr(hf, "chat_template", None):
            raise TaskSpecError(
                f"{self.path}: chat = true, but the checkpoint's tokenizer has no chat template; "
                "set chat = false and a prompt template"
            )
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": text}
        ]
        return str(hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def reward(self, item: TaskItem, completion: str) -> float:
        """1.0 when the completion is correct for `item` (the verifier's verdict), else 0.0."""
        return self.verifier.reward(completion, item.answer)

    def fingerprint_texts(self) -> list[str] | None:
        """The dev split's texts (prompt + answer), or None when the spec has no dev split."""
        return [d.prompt + d.answer for d in self.dev] if self.dev else None

    def describe(self) -> dict[str, Any]:
        """What results.json records about the task."""
        return {
            "name": self.name,
            "spec": self.path.name,
            "spec_sha256": self.sha256,
            "verifier": self.verifier.kind,
            "verifier_version": self.verifier.version,
            "chat": self.chat,
        }


def shipped(name: str) -> Path:
    """The path of a spec shipped in the package (`addition`, `math-word`)."""
    path = SHIPPED_DIR / f"{name}.toml"
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in SHIPPED_DIR.glob("*.toml")))
        raise TaskSpecError(f"no shipped task spec named {name!r} (shipped: {names})")
    return path


def load_spec(path: Path | str) -> TaskSpec:
    """Read and check a task spec and its data. Every problem of the spec file is reported at once."""
    path = Path(path)
    try:
        raw_bytes = path.read_bytes()
        raw = tomllib.loads(raw_bytes.decode())
    except OSError as e:
        raise TaskSpecError(f"{path}: cannot read the task spec: {e.strerror}") from e
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise TaskSpecError(f"{path}: not a TOML task spec: {e}") from e
    errors = [f"unknown key {key!r}" for key in sorted(set(raw) - _KEYS)]
    data_path = _data_path(path, raw, "data", errors)
    dev_path = _data_path(path, raw, "dev", errors) if "dev" in raw else None
    settings = _settings(raw, errors)
    template, chat, system = _prompt(raw, errors)
    verifier = _verifier(raw.get("verifier"), errors)
    if errors:
        raise TaskSpecError(f"{path}: " + "; ".join(errors))
    assert data_path is not None and verifier is not None  # no errors
    items = read_items(data_path)
    dev = read_items(dev_path) if dev_path is not None else ()
    samples = settings.pop("samples", len(items))
    if not 1 <= samples <= len(items):
        raise TaskSpecError(f"{path}: samples = {samples}, but {data_path.name} holds {len(items)} tasks")
    digest = hashlib.sha256(raw_bytes)
    for extra in (data_path, dev_path):
        if extra is not None:
            digest.update(extra.read_bytes())
    return TaskSpec(
        name=str(raw.get("name", path.stem)),
        path=path,
        items=items,
        dev=dev,
        template=template,
        chat=chat,
        system=system,
        verifier=verifier,
        samples=samples,
        sha256=digest.hexdigest(),
        **settings,
    )


def read_items(path: Path) -> tuple[TaskItem, ...]:
    """The {id, prompt, answer} records of a JSONL file; the error names the line."""
    items: list[TaskItem] = []
    seen: dict[str, int] = {}
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise TaskSpecError(f"{path}: cannot read the task data: {e}") from e
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskSpecError(f"{path} line {n}: not JSON ({e.msg})") from e
        if not isinstance(obj, dict) or not all(k in obj for k in ("id", "prompt", "answer")):
            raise TaskSpecError(f"{path} line {n}: expected an object with id, prompt and answer")
        if not isinstance(obj["prompt"], str) or isinstance(obj["answer"], (dict, list, bool)):
            raise TaskSpecError(f"{path} line {n}: prompt must be text and answer text or a number")
        key = str(obj["id"])
        if key in seen:
            raise TaskSpecError(f"{path} line {n}: id {key!r} repeats line {seen[key]}")
        seen[key] = n
        items.append(TaskItem(id=key, prompt=obj["prompt"], answer=str(obj["answer"])))
    if not items:
        raise TaskSpecError(f"{path}: no tasks")
    return tuple(items)


def _data_path(spec: Path, raw: dict[str, Any], key: str, errors: list[str]) -> Path | None:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        errors.append(f"{key} = {value!r}: the path of a JSONL file of {{id, prompt, answer}}")
        return None
    found = (spec.parent / value).resolve()
    if not found.is_file():
        errors.append(f"{key} = {value!r}: {found} does not exist")
        return None
    return found


_SETTINGS: dict[str, type] = {
    "samples": int,
    "k": int,
    "temperature": float,
    "top_p": float,
    "max_new_tokens": int,
    "target": float,
}


def _settings(raw: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, typ in _SETTINGS.items():
        if key not in raw:
            if key != "samples":
                errors.append(f"{key}: missing")
            continue
        v = raw[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (typ is int and not isinstance(v, int)):
            errors.append(f"{key} = {v!r}: expected {typ.__name__}")
            continue
        out[key] = typ(v)
    ranges = {
        "k": lambda v: v >= 1,
        "max_new_tokens": lambda v: v >= 1,
        "samples": lambda v: v >= 1,
        "temperature": lambda v: v >= 0,
        "top_p": lambda v: 0 < v <= 1,
        "target": lambda v: 0 <= v <= 1,
    }
    for key, ok in ranges.items():
        if key in out and not ok(out[key]):
            errors.append(f"{key} = {out[key]!r}: out of range")
    return out


def _prompt(raw: dict[str, Any], errors: list[str]) -> tuple[str, bool, str | None]:
    chat = raw.get("chat", False)
    template = raw.get("prompt", PROMPT_FIELD)
    system = raw.get("system")
    if not isinstance(chat, bool):
        errors.append(f"chat = {chat!r}: true or false")
        chat = False
    if not isinstance(template, str) or PROMPT_FIELD not in template:
        errors.append(f"prompt = {template!r}: a template containing {PROMPT_FIELD}")
        template = PROMPT_FIELD
    if system is not None and (not isinstance(system, str) or not chat):
        errors.append("system: a text, and only with chat = true")
        system = None
    return template, chat, system


def _verifier(raw: Any, errors: list[str]) -> Verifier | None:
    if not isinstance(raw, dict) or "kind" not in raw:
        errors.append("[verifier] with kind = exact | numeric | regex | math: missing")
        return None
    unknown = sorted(set(raw) - {"kind", "tolerance", "pattern"})
    if unknown:
        errors.append(f"[verifier]: unknown key(s) {', '.join(unknown)}")
        return None
    try:
        return Verifier(kind=raw["kind"], tolerance=float(raw.get("tolerance", 0.0)), pattern=raw.get("pattern"))
    except (VerifierError, TypeError, ValueError) as e:
        errors.append(f"[verifier]: {e}")
        return None
