"""The holdout check of a checkpoint outside the team layouts (docs/zero-shot.md, "A checkpoint of any
layout"): its settings are values, or key paths in the run's config file, that `[tool.recorder.holdout]`
names (nothing is assumed: each is declared), and the loss it logged is a record of its metrics log, a file
beside the weights or in the directory above, whose `log_loss` key holds the loss at its `log_step`. The log's
records are its lines (JSON lines); with `log_records`, the list at that key path of one JSON document (a
`trainer_state.json`'s `log_history`); in a `.csv` or `.tsv` file, its rows under their header.

    [tool.recorder.holdout]
    seq_len = "validation.seq_len"     tokens = "validation.token_budget"   batch_rows = 16
    val_path = "data.val_file"         param_dtype = "fp32"                 world_size = 1
    log = "metrics.jsonl"              log_step = "step"                    log_loss = "val_loss"
    windows = "shifted"                bos = false                          log_records = "log_history"
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.holdout_check.reference import LoggedLoss
from evaluator.zero_shot.origin.declaration import Declaration, lookup
from evaluator.zero_shot.origin.plain_checkpoint import PlainCheckpoint
from evaluator.zero_shot.origin.team_config import PARAM_DTYPES
from evaluator.zero_shot.origin.training_run import HoldoutPlan
from recorder.user_paths import user_path

TABLE = "[tool.recorder.holdout]"
NUMBERS = ("seq_len", "tokens", "batch_rows", "world_size")


def plain_holdout_plan(
    plain: PlainCheckpoint, declaration: Declaration, *, world_size: int | None, data: Path | None, bases: list[Path]
) -> HoldoutPlan:
    """How the team's training computed its validation loss; ZeroShotInputError naming the entry to declare."""
    declared, sources = declaration.holdout, dict[str, str]()

    def setting(name: str) -> Any:
        value, sources[name] = _setting(plain, declaration, name)
        return value

    seq_len, tokens, batch_rows = (_whole(setting(n), n, sources) for n in ("seq_len", "tokens", "batch_rows"))
    if world_size is not None:
        world, sources["world_size"] = world_size, "--train-world-size"
    else:
        world = _whole(setting("world_size"), "world_size", sources)
    if data is not None:
        val, sources["val_path"] = data.resolve(), "--holdout-data"
    else:
        val = _found(str(setting("val_path")), bases, f"{sources['val_path']} (val_path)")
    dtype = str(setting("param_dtype"))
    if dtype not in PARAM_DTYPES:
        raise ZeroShotInputError(f"{sources['param_dtype']}: param_dtype {dtype!r}: one of {', '.join(PARAM_DTYPES)}")
    if tokens < seq_len * world:
        raise ZeroShotInputError(f"{declaration.where}: holdout tokens {tokens} is less than one row per rank")
    return HoldoutPlan(
        data=val, seq_len=seq_len, tokens=tokens, world_size=world, batch_rows=batch_rows,
        dtype=PARAM_DTYPES[dtype], capacity=True, config=dict(plain.config), sources=sources,
        shifted=declared.get("windows") == "shifted", bos=bool(declared.get("bos", False)),
    )  # fmt: skip


def logged_validation_loss(plain: PlainCheckpoint, declaration: Declaration, step: int | None) -> LoggedLoss:
    """The loss the training logged at `step` in the declared metrics log; ZeroShotInputError naming the
    file, the keys and the steps it holds otherwise."""
    declared = declaration.holdout
    name, loss_key = declared.get("log"), declared.get("log_loss")
    if not isinstance(name, str) or not isinstance(loss_key, str):
        raise ZeroShotInputError(
            f"{declaration.where}: no metrics log to check the holdout loss against: declare {TABLE} log = 'FILE' "
            "(JSON lines, a .csv or .tsv with a header, or a JSON document with log_records = 'KEY.PATH' of its list "
            "of records) and log_loss = 'KEY' (and log_step, default 'step'), or run with --holdout off or record"
        )
    step_key = str(declared.get("log_step", "step"))
    home = plain.info.path if plain.info.path.is_dir() else plain.info.path.parent
    file = _found(name, [home, home.parent], f"{declaration.where} holdout.log")
    records = declared.get("log_records")
    if records is not None and not isinstance(records, str):
        raise ZeroShotInputError(f"{declaration.where}: holdout log_records {records!r} is not a key path")
    logged = _losses(file, step_key, loss_key, records)
    if step is None or step not in logged:
        steps = ", ".join(map(str, sorted(logged))) or "none"
        raise ZeroShotInputError(
            f"{file}: no {loss_key} at {step_key} {step} (logged at: {steps}): evaluate a checkpoint of a logged "
            "step, or use --holdout record"
        )
    return LoggedLoss(value=logged[step], step=step, source=file)


def _losses(file: Path, step_key: str, loss_key: str, records: str | None) -> dict[int, float]:
    """{step: loss} of the records that hold both keys (a training log mixes other records in)."""
    out: dict[int, float] = {}
    for where, row in _records(file, records):
        if not isinstance(row, dict) or loss_key not in row or step_key not in row:
            continue
        step, loss = _step_and_loss(row[step_key], row[loss_key])
        if step is None or loss is None:
            raise ZeroShotInputError(
                f"{where}: {step_key} {row[step_key]!r}, {loss_key} {row[loss_key]!r}: not a step and a loss"
            )
        if not math.isfinite(loss) or loss < 0:
            raise ZeroShotInputError(f"{where}: {loss_key} {row[loss_key]!r} is not a loss")
        out[step] = loss
    return out


def _records(file: Path, records: str | None) -> list[tuple[str, Any]]:
    """(where, record) of every record of the log: its lines, its rows, or the list at `records` in it."""
    import csv

    from recorder.untrusted.bounded_documents import past_caps, unique_keys
    from recorder.untrusted.untrusted_files import JSON_LIMIT, IrregularFileError, read_bounded

    try:
        text = read_bounded(file, JSON_LIMIT, "metrics log", follow=True).decode("utf-8")
    except (OSError, IrregularFileError, UnicodeDecodeError) as e:
        raise ZeroShotInputError(f"{file}: cannot read the metrics log ({e})") from e
    if records is not None:
        try:
            doc = json.loads(text, object_pairs_hook=unique_keys)
        except (ValueError, RecursionError) as e:
            raise ZeroShotInputError(f"{file}: not a JSON document ({e})") from e
        if (why := past_caps(doc)) is not None:
            raise ZeroShotInputError(f"{file}: {why}")
        found, listed = lookup(doc, records)
        if not found or not isinstance(listed, list):
            raise ZeroShotInputError(f"{file}: no list of records at {records} (declared as {TABLE} log_records)")
        return [(f"{file} {records}[{i}]", row) for i, row in enumerate(listed)]
    if file.suffix.lower() in (".csv", ".tsv"):
        rows = csv.DictReader(text.splitlines(), delimiter="\t" if file.suffix.lower() == ".tsv" else ",")
        return [(f"{file}:{number}", row) for number, row in enumerate(rows, 2)]
    out: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            out.append((f"{file}:{number}", json.loads(line, object_pairs_hook=unique_keys) if line.strip() else {}))
        except (ValueError, RecursionError) as e:
            raise ZeroShotInputError(f"{file}:{number}: not a JSON object ({e})") from e
    return out


def _step_and_loss(step: Any, loss: Any) -> tuple[int | None, float | None]:
    """A record's step and loss as numbers (a CSV row's are text), or None for what is not one."""
    if isinstance(step, str) and step.strip().isdigit():
        step = int(step)
    if isinstance(loss, str):
        try:
            loss = float(loss)
        except ValueError:
            return None, None
    whole = isinstance(step, int) and not isinstance(step, bool)
    number = isinstance(loss, (int, float)) and not isinstance(loss, bool)
    return (step if whole else None), (float(loss) if number else None)


def _setting(plain: PlainCheckpoint, declaration: Declaration, name: str) -> tuple[Any, str]:
    declared = declaration.holdout.get(name)
    literal = name in NUMBERS and isinstance(declared, int) and not isinstance(declared, bool)
    if literal or (name == "param_dtype" and declared in PARAM_DTYPES):
        return declared, f"{declaration.where} holdout.{name}"
    if not isinstance(declared, str) or plain.config_file is None:
        raise ZeroShotInputError(
            f"{declaration.where}: no holdout {name}: declare it, {TABLE} {name} = 'KEY.PATH' in config_file"
            + ("" if name == "val_path" else " or the value")
            + ", or run with --holdout off"
        )
    found, value = lookup(plain.config, declared)
    if not found or value is None:
        raise ZeroShotInputError(f"{plain.config_file}: no holdout {name} at {declared} (declared in {TABLE})")
    return value, f"{plain.config_file} {declared}"


def _whole(value: Any, name: str, sources: dict[str, str]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ZeroShotInputError(f"{sources[name]}: holdout {name} {value!r} is not a positive whole number")
    return value


def _found(value: str, bases: list[Path], where: str) -> Path:
    named = user_path(value)
    places = [named] if named.is_absolute() else [b / named for b in bases]
    hit = next((p for p in places if p.is_file()), None)
    if hit is None:
        raise ZeroShotInputError(
            f"{where}: {value!r} not found (tried {', '.join(map(str, places))}): pass --holdout-data FILE, or "
            "--holdout off"
        )
    return hit.resolve()
