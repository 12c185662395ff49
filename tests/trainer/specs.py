"""A small task spec for tests: six `i+1=` problems, settings unlike the built-in task's."""

from __future__ import annotations

import json
from pathlib import Path

SPEC = (
    'name = "plus-one"\ndata = "plus-one.jsonl"\nprompt = "{prompt}"\nsamples = 5\nk = 2\ntemperature = 0.3\n'
    'top_p = 0.9\nmax_new_tokens = 3\ntarget = 0.5\n[verifier]\nkind = "exact"\n'
)


def write_spec(folder: Path, answers_shift: int = 1) -> Path:
    """plus-one.toml and its data in `folder`; another `answers_shift` writes other data (another sha256)."""
    rows = [{"id": f"q{i}", "prompt": f"{i}+1=", "answer": str(i + answers_shift)} for i in range(6)]
    (folder / "plus-one.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "plus-one.toml").write_text(SPEC)
    return folder / "plus-one.toml"
