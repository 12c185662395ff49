"""`recorder`, `replay` and the CLI work without torch installed (torch is an extra)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.kit.synthetic import record_worked_example

# Make `import torch` (and friends) fail in the child, as on a machine without the `train` extra.
BLOCK = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name.split('.')[0] in ('torch', 'transformers', 'safetensors', 'ray', 'vllm'):\n"
    "            raise ImportError('blocked: ' + name)\n"
    "sys.meta_path.insert(0, Block())\n"
    "sys.argv = ['recorder'] + sys.argv[1:]\n"
    "from recorder.cli import main\n"
    "main()\n"
)


def _cli_without_torch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK, *args], capture_output=True, text=True, cwd=REPO)


@pytest.mark.parametrize("args", [["--help"], ["verify", "{run}"], ["events", "{run}", "--kind", "weight_update"]])
def test_cli_runs_without_torch(tmp_path: Path, args: list[str]) -> None:
    run = record_worked_example(tmp_path, "demo")
    out = _cli_without_torch(*(a.format(run=run.path) for a in args))
    assert out.returncode == 0, out.stderr
    assert "blocked" not in out.stderr


@pytest.mark.slow
def test_plain_install_without_extras(tmp_path: Path) -> None:
    """A real `pip install -e .` into a fresh venv without extras: recorder --help, verify, events."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([venv / "bin" / "pip", "install", "-q", "-e", str(REPO)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    assert subprocess.run([venv / "bin" / "python", "-c", "import torch"], capture_output=True).returncode != 0
    run = record_worked_example(tmp_path, "demo")
    for args in (["--help"], ["verify", str(run.path)], ["events", str(run.path)]):
        out = subprocess.run([venv / "bin" / "recorder", *args], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
