"""`recorder --help` (and the start of every command) loads only what lists the commands: the heavy
libraries some commands need (pyarrow and numpy for a log, torch, DuckDB, Ray, transformers, the checkers)
load inside those commands. Checked by what a fresh interpreter has loaded, never by a time."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO

HEAVY = ("pyarrow", "numpy", "torch", "duckdb", "ray", "transformers", "mlperf_logging", "matplotlib", "plotly")


def loaded_after(code: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_listing_the_commands_loads_no_heavy_library() -> None:
    code = "from recorder.cli import app\nimport typer\ntyper.main.get_command(app).get_help"
    assert sorted(set(HEAVY) & loaded_after(code)) == []


def test_the_public_api_still_loads_on_use() -> None:
    assert "pyarrow" in loaded_after("import recorder\nrecorder.read_run")
    assert "pyarrow" not in loaded_after("import recorder")
