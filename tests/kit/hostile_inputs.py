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
    if not top.exists():
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
    from trainer.policy.checkpoints.chunk_cover import Chunk

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


CORPUS_LOG = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "qwen35_397b_grpo_rcp"


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
}
