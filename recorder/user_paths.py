"""A path a user typed, with `~` and `~user` expanded as a shell expands them."""

from __future__ import annotations

from pathlib import Path


def user_path(text: str) -> Path:
    """`text` with a leading `~` or `~user` expanded; left as typed where the shell would leave it (a `~name`
    that names no user, or no home directory known), so the caller's own check names the path it cannot find
    instead of Python's RuntimeError."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        return Path(text)
