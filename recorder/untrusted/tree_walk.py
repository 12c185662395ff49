"""Walking a folder tree that someone else made: iteratively, never through a link, to a bounded depth.

`Path.rglob` and a walk that calls itself per folder use one Python frame per level, so a checkpoint holding
1,500 nested folders ended `collect` and `import-checkpoints` in a RecursionError. Every walk of a tree the
recorder did not write goes through `walk`: a list of folders still to visit instead of the call stack, and a
depth past which the tree is refused, naming the folder. No layout the recorder reads is more than a dozen
folders deep (a Hugging Face cache, a Megatron-Core step, a zero-shot result folder); MAX_DEPTH leaves room.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from recorder.errors import InputError

MAX_DEPTH = 128


class TreeWalkError(InputError):
    """A folder tree nested deeper than MAX_DEPTH, or a folder in it that cannot be listed."""


def walk(directory: Path, *, max_depth: int = MAX_DEPTH) -> Iterator[os.DirEntry[str]]:
    """Every entry under `directory` that is not itself a folder (files, and links of any kind, never
    followed), each folder's by name, so the first one named is always the same. Folders are entered without
    following a link. TreeWalkError naming the first folder more than `max_depth` below `directory`, or one
    that cannot be listed; a `directory` that is missing or not a folder holds nothing."""
    folders: list[tuple[str, int]] = [(os.fspath(directory), 0)]
    while folders:
        here, depth = folders.pop()
        if depth > max_depth:
            raise TreeWalkError(
                f"{here}: folders nested more than {max_depth} deep under {directory}: refused (no layout the "
                "recorder reads is this deep; remove the nesting)"
            )
        try:
            with os.scandir(here) as entries:
                listed = sorted(entries, key=lambda x: x.name)
        except OSError as e:
            if depth == 0 and isinstance(e, (FileNotFoundError, NotADirectoryError)):
                return
            raise TreeWalkError(f"{here}: the folder cannot be listed ({e.strerror})") from e
        folders.extend((e.path, depth + 1) for e in reversed(listed) if e.is_dir(follow_symlinks=False))
        yield from (e for e in listed if not e.is_dir(follow_symlinks=False))


def files_under(directory: Path, *, max_depth: int = MAX_DEPTH) -> list[Path]:
    """Every file under `directory` (a link to a file counts, as `Path.is_file` says), sorted; `walk`'s
    errors."""
    return sorted(Path(e.path) for e in walk(directory, max_depth=max_depth) if e.is_file())
