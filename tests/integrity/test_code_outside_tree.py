"""Every module the team's model code executes is judged as it runs: code from outside the committed tree
that covers its tracks afterwards is refused by `recorder eval`, naming the module and where it ran from.

Each attack is a committed `--model-code` tree whose model runs a module from a folder outside it, which
writes a marker file (proof that it ran), and then hides it: (a) a folder put first on `sys.path`, an
already imported module taken out of `sys.modules`, imported again from there, the original put back;
(b) a module imported from a `.zip`; (c) a module whose `__file__` is set to None after its import; and a
file's code run by hand (`exec(compile(text, FILE, "exec"))`), no module at all.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.evaluator.synth import record_run
from tests.helpers import run_cli

LLAMA = """
from transformers import LlamaConfig, LlamaForCausalLM


def _llama(config):
    cfg = dict(config)
    cfg.pop("model_type", None)
    return LlamaForCausalLM(LlamaConfig(**cfg))
"""

RERUN = """
import sys
import json as _json

OUTSIDE = {outside!r}


def build(config, *, capacity=True):
    sys.path.insert(0, OUTSIDE)
    del sys.modules["json"]
    import json  # the outside folder's json.py runs

    sys.modules["json"] = _json
    sys.path.remove(OUTSIDE)
    return _llama(config)
"""

ZIPPED = """
import sys

sys.path.insert(0, {outside!r})
import zhelper  # noqa: E402  (from the archive)

sys.path.remove({outside!r})


def build(config, *, capacity=True):
    return _llama(config)
"""

UNNAMED = """
import sys


def build(config, *, capacity=True):
    sys.path.insert(0, {outside!r})
    import fhelper

    fhelper.__file__ = None
    sys.path.remove({outside!r})
    return _llama(config)
"""


Attack = Callable[[Path, Path], tuple[str, str, str]]  # (outside folder, marker) -> (model.py, module, origin)

BY_HAND = """
def build(config, *, capacity=True):
    path = {outside!r}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), {{}})  # no loader, no module: a file's code run by hand
    return _llama(config)
"""


def _marker(where: Path) -> str:
    return f"from pathlib import Path\nPath({str(where)!r}).write_text('ran')\n"


def _committed(root: Path, model: str) -> Path:
    (root / "teamcode").mkdir(parents=True)
    (root / "teamcode" / "__init__.py").write_text("")
    (root / "teamcode" / "model.py").write_text(model + LLAMA)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"], cwd=root, check=True)
    return root


def _rerun(outside: Path, marker: Path) -> tuple[str, str, str]:
    outside.mkdir()
    (outside / "json.py").write_text(_marker(marker))
    return RERUN.format(outside=str(outside)), "json", str(outside / "json.py")


def _zipped(outside: Path, marker: Path) -> tuple[str, str, str]:
    outside.mkdir()
    archive = outside / "helpers.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zhelper.py", _marker(marker))
    return ZIPPED.format(outside=str(archive)), "zhelper", f"{archive}/zhelper.py"


def _unnamed(outside: Path, marker: Path) -> tuple[str, str, str]:
    outside.mkdir()
    (outside / "fhelper.py").write_text(_marker(marker))
    return UNNAMED.format(outside=str(outside)), "fhelper", str(outside / "fhelper.py")


def _by_hand(outside: Path, marker: Path) -> tuple[str, str, str]:
    outside.mkdir()
    (outside / "helper.py").write_text(_marker(marker))
    return BY_HAND.format(outside=str(outside / "helper.py")), "", str(outside / "helper.py")


@pytest.mark.parametrize(
    "attack", [_rerun, _zipped, _unnamed, _by_hand], ids=["sys-modules-rerun", "zip", "file-none", "exec-by-hand"]
)
def test_code_run_from_outside_the_tree_is_refused_naming_it(tmp_path: Path, attack: Attack) -> None:
    run = record_run(tmp_path, target=-1.0, samples=2)
    marker = tmp_path / "ran.txt"
    model, name, origin = attack(tmp_path / "outside", marker)
    root = _committed(tmp_path / "code", model)

    done = run_cli("eval", str(run.path), "--model-code", str(root), "--model-factory", "teamcode.model:build")

    assert marker.read_text() == "ran"  # the outside code did run
    results = run.path / "derived" / "evals" / "step_0000018" / "results.json"
    recorded = json.loads(results.read_text())["backend"]["model_code"] if results.exists() else None
    assert done.returncode == 2, (done.stdout, done.stderr, recorded)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    what = f"module {name}" if name else "code"
    assert f"{what} ran from {origin}" in errors[0] and "outside --model-code" in errors[0], errors[0]
    assert not results.exists() and "Traceback" not in done.stderr
