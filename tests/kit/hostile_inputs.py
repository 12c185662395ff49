"""Hostile inputs built from honest layouts by the tests' own builders, then damaged: what once hung a command
or took its memory. tests/integrity/test_hostile_inputs.py refuses each; bench/hostile_inputs.py measures
each refusal. Each builder makes its input under `where` and returns the `recorder` arguments that read it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

GBS = 256


def _snapshots(where: Path) -> Path:
    from tests.checkpoints.test_dcp_import import write_snapshots

    series: Path = write_snapshots(where / "job")
    return series


def _mcore(where: Path) -> Path:
    from tests.adoption import nemo_layout
    from tests.evaluator import nemo_run

    series = where / "checkpoints"
    for step in (18, 19):
        nemo_layout.write_checkpoint(series, step, nemo_run.update_ms(step))
    return series


def _weights(series: Path) -> Path:
    return series / "step_18" / "policy" / "weights" / "iter_0000000"


def fifo_dcp_shard(where: Path) -> list[str]:
    series = _snapshots(where)
    os.mkfifo(series / "snapshots" / "step_18" / "__9_0.distcp")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r"), "--global-batch-size", str(GBS)]


def fifo_mcore_weight(where: Path) -> list[str]:
    series = _mcore(where)
    os.mkfifo(_weights(series) / "__9_0.distcp")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


def symlink_loop_mcore(where: Path) -> list[str]:
    series = _mcore(where)
    os.symlink(".", _weights(series) / "loop")
    os.symlink("a", _weights(series) / "b")
    os.symlink("b", _weights(series) / "a")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


def sparse_final_meta(where: Path) -> list[str]:
    from tests.checkpoints.test_dcp_import import write_archives

    series = write_archives(where / "archives", where / "job")
    meta = series / "fsdp2_epoch_1" / "final_meta.json"
    with open(meta, "r+b") as f:  # its JSON, then 2 GB of holes: the file system stores none of them
        f.seek(2 * 2**30)
        f.write(b" ")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r"), "--global-batch-size", str(GBS)]


def deep_config_yaml(where: Path) -> list[str]:
    series = _mcore(where)
    (series / "step_18" / "config.yaml").write_text("[" * 1_000_000)
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


def _nest(under: Path, depth: int) -> Path:
    """`depth` folders, each inside the last, under `under` (made one level at a time: a path this long is
    past what one `mkdir -p` call may be given on some systems)."""
    here = under
    for _ in range(depth):
        here = here / "d"
        here.mkdir()
    return here


def remove_tree(top: Path) -> None:
    """Remove `top` and all under it, folder by folder from a list: `shutil.rmtree` recurses once per level
    and cannot remove a tree nested DEEP folders deep."""
    if not os.path.lexists(top):
        return
    if not top.is_dir() or top.is_symlink():  # a FIFO or a link the case made beside its tree
        top.unlink()
        return
    order, folders = [], [top]
    while folders:
        here = folders.pop()
        order.append(here)
        for entry in os.scandir(here):
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            else:
                os.unlink(entry.path)
    for folder in reversed(order):
        folder.rmdir()


DEEP = 1_500  # past Python's recursion limit (1,000): a walk that recurses per folder ends in RecursionError


def deep_tree_import(where: Path) -> list[str]:
    series = _mcore(where)
    _nest(series / "step_18", DEEP)
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


def deep_tree_collect(where: Path) -> list[str]:
    series = _mcore(where)
    _nest(series / "step_18", DEEP)
    return ["collect", str(series / "step_18")]


def staircase_chunks(n: int) -> tuple[tuple[int, int], list[Any]]:
    """(size, chunks) of a 2-D tensor [n, n] cut into 2n chunks that cover it exactly: column i is cut at row i
    into [0, i) and [i, n). Both dimensions have n distinct offsets and every chunk runs along dim 0 from its
    start to the end, so a sweep that keeps every chunk still running compares each with all the others."""
    from recorder.checkpoints.torch_dcp.chunk_cover import Chunk

    chunks = [Chunk((0, i), (i, 1), "__0_0.distcp", 0, 0) for i in range(1, n)]
    chunks += [Chunk((i, i), (n - i, 1), "__0_0.distcp", 0, 0) for i in range(n)]
    return (n, n), chunks


def flow_list_config_yaml(where: Path, size: int = 16 * 2**20 - 4096) -> list[str]:
    """A NeMo-RL `config.yaml` that is the honest one followed by a key holding `size` bytes of flow lists
    (`[[0, 1], [0, 1], ...]`: two bytes a node), within the 16 MiB cap on a YAML file's bytes."""
    series = _mcore(where)
    config = series / "step_18" / "config.yaml"
    pairs = "[0, 1], " * (size // 8)
    config.write_text(config.read_text() + f"padding: [{pairs}]\n")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


# RECORDER_CORPUS, as tests/conftest.py reads it: where a worktree that is not next to ../shared finds it
_CORPUS = os.environ.get("RECORDER_CORPUS", str(Path(__file__).resolve().parents[2].parent / "shared" / "corpus"))
CORPUS_LOG = Path(_CORPUS) / "qwen35_397b_grpo_rcp"


def long_mllog(where: Path, lines: int, newline: str = "\r") -> Path:
    """A real reference log (GBS256 seed 1) whose lines between run_start and run_stop are repeated until the
    file holds `lines` lines, joined by `newline` (a CR alone: the checker's universal newlines read it)."""
    text = (CORPUS_LOG / "GBS256" / "seed_1.out").read_text(encoding="latin-1").splitlines()
    start = next(i for i, line in enumerate(text) if '"key": "run_start"' in line)
    stop = next(i for i, line in enumerate(text) if '"key": "run_stop"' in line)
    head, body, tail = text[: start + 1], text[start + 1 : stop], text[stop:]
    out = head + body * max(1, (lines - len(head) - len(tail)) // len(body)) + tail
    log = where / "long.log"
    log.write_text(newline.join(out) + newline, encoding="latin-1")
    return log


def query_list_bomb(where: Path) -> list[str]:
    from tests.kit.synthetic import record_worked_example

    record_worked_example(where / "runs")
    sql = "SELECT list_value(range(100000000))"
    return ["query", "--root", str(where / "runs"), sql, "--timeout", "5", "--memory-limit", "256MB"]


def query_list_bomb_256m(where: Path) -> list[str]:
    """The bomb under `--memory-limit 256M`: a spelling DuckDB reads that once switched the command's watch off."""
    args = query_list_bomb(where)
    args[args.index("--memory-limit") + 1] = "256M"
    return args


def query_no_memory_limit(where: Path) -> list[str]:
    """The bomb under `--memory-limit -1`: DuckDB's "no limit"."""
    args = query_list_bomb(where)
    args[args.index("--memory-limit") + 1] = "-1"
    return args


def query_honest(where: Path) -> list[str]:
    """The bomb's peer: the same command on the same history, reading every event (what a query costs before
    it builds anything)."""
    args = query_list_bomb(where)
    args[args.index("SELECT list_value(range(100000000))")] = "SELECT count(*) FROM events"
    return args


def _team(where: Path) -> tuple[Path, list[str]]:
    """A copy of the golden team repository and the `zero-shot` arguments that score its epoch-2 archive with
    the team's own code on the shipped test records (what every zero-shot case below damages)."""
    from evaluator.harness.taskset import SHIPPED_DATA
    from tests.fixtures import team_tree

    team = team_tree.copy(where / "team")
    args = [
        "zero-shot", str(team / "archive" / "ckpt_E2"), "--model-code", str(team), "--model-factory",
        "models.moe:build_model", "--data-dir", str(SHIPPED_DATA), "--tasks", "piqa", "--workers", "1",
    ]  # fmt: skip
    return team, args


def _team_run(team: Path) -> Path:
    return team / "checkpoints" / "tiny" / "run1"


def nan_holdout_gap(where: Path) -> list[str]:
    return [*_team(where)[1], "--holdout-max-gap", "nan"]


def huge_holdout_gap(where: Path) -> list[str]:
    return [*_team(where)[1], "--holdout-max-gap", "1e300"]


def deep_declaration(where: Path) -> list[str]:
    team, args = _team(where)
    (team / "pyproject.toml").write_text("[tool.recorder]\nfactory = " + "[" * 5000 + "]" * 5000 + "\n")
    return args


def bracket_scalars(where: Path) -> list[str]:
    team, args = _team(where)
    (_team_run(team) / "tensorboard_scalars.json").write_text("[" * 200_000)
    return args


def sparse_scalars(where: Path) -> list[str]:
    team, args = _team(where)
    with open(_team_run(team) / "tensorboard_scalars.json", "r+b") as f:  # its JSON, then 2 GB of holes
        f.seek(2 * 2**30)
        f.write(b" ")
    return args


def fifo_event_file(where: Path) -> list[str]:
    team, args = _team(where)
    (_team_run(team) / "tensorboard_scalars.json").unlink()  # the event files are then the reference
    os.mkfifo(_team_run(team) / "events.out.tfevents.1700000000.host.1.0")
    return args


def big_all_config(where: Path) -> list[str]:
    """all_config.yaml followed by 15 MiB of flow lists (two bytes a node), within the bytes cap."""
    team, args = _team(where)
    config = _team_run(team) / "all_config.yaml"
    config.write_text(config.read_text() + "padding: [" + "[0, 1], " * (15 * 2**20 // 8) + "]\n")
    return args


def zero_seq_len(where: Path) -> list[str]:
    team, args = _team(where)
    config = _team_run(team) / "all_config.yaml"
    config.write_text(config.read_text().replace("\n  seq_len: 32\n", "\n  seq_len: 0\n"))
    return args


def _pins(where: Path, make: Callable[[Path], None]) -> list[str]:
    """`collect` of the shipped results with RECORDER_TASK_PINS naming what `make` puts there (given to the
    command as `env NAME=VALUE`)."""
    from tests.zero_shot.test_bound_results import _document

    checkpoint = where / "fsdp2_epoch_2"
    checkpoint.mkdir()
    (checkpoint / "__0_0.distcp").write_bytes(b"\0" * 64)
    from evaluator.zero_shot.reporting.outputs import write_outputs

    write_outputs(where / "out" / "r", _document(checkpoint, 0.5, "2026-01-01T00:00:00+00:00"), "", "")
    make(where / "pins")
    return ["env", f"RECORDER_TASK_PINS={where / 'pins'}", "collect", str(where / "out")]


def fifo_pins(where: Path) -> list[str]:
    return _pins(where, os.mkfifo)


def dev_zero_pins(where: Path) -> list[str]:
    return _pins(where, lambda p: os.symlink("/dev/zero", p))


CASES: dict[str, Callable[[Path], list[str]]] = {
    "fifo-dcp-shard": fifo_dcp_shard,
    "fifo-mcore-weight": fifo_mcore_weight,
    "symlink-loop-mcore": symlink_loop_mcore,
    "sparse-final-meta": sparse_final_meta,
    "deep-config-yaml": deep_config_yaml,
    "query-list-bomb": query_list_bomb,
    "query-list-bomb-256M": query_list_bomb_256m,
    "query-memory-limit--1": query_no_memory_limit,
    "flow-list-config-yaml": flow_list_config_yaml,
    "deep-tree-import": deep_tree_import,
    "deep-tree-collect": deep_tree_collect,
    "holdout-gap-nan": nan_holdout_gap,
    "holdout-gap-1e300": huge_holdout_gap,
    "declaration-5000-deep": deep_declaration,
    "scalars-200000-brackets": bracket_scalars,
    "sparse-scalars": sparse_scalars,
    "fifo-event-file": fifo_event_file,
    "all-config-15MiB": big_all_config,
    "seq-len-0": zero_seq_len,
    "pins-fifo": fifo_pins,
    "pins-dev-zero": dev_zero_pins,
}
