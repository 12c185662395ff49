"""Code that runs in the scoring process without being recorded: a `sitecustomize` on PYTHONPATH (it runs
before the command and could rewrite every accuracy) is refused before anything is read or scored; a module
file written into site-packages after the install is named, and every imported module file is hashed into
the result's provenance."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recorder import imported_code
from tests.helpers import RECORDER, run_cli


def test_a_sitecustomize_on_pythonpath_is_refused_before_scoring(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text("SCORES = 'every accuracy 1.0'\n")
    env = {**os.environ, "PYTHONPATH": str(hooks)}
    args = [RECORDER, "zero-shot", str(tmp_path / "ckpt"), "--data-dir", str(tmp_path)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    said = " ".join(done.stderr.split())
    assert f"sitecustomize imported at start-up from {hooks / 'sitecustomize.py'}" in said, said
    clean = run_cli("zero-shot", str(tmp_path / "ckpt"), "--data-dir", str(tmp_path))
    assert "start-up" not in clean.stderr, clean.stderr  # the same command without it gets past the check


def test_a_module_written_into_site_packages_is_named_and_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    site.mkdir()
    installed = imported_code._site_dirs
    monkeypatch.setattr(imported_code, "_site_dirs", lambda: [*installed(), site])
    monkeypatch.syspath_prepend(str(site))
    (site / "planted_scores.py").write_text("ACCURACY = 1.0\n")
    honest = imported_code.imported_environment()
    assert honest.unrecorded == [] and honest.changed == []
    importlib.import_module("planted_scores")
    try:
        found = imported_code.imported_environment()
        assert found.unrecorded == [str(site / "planted_scores.py")], found
        (site / "planted_scores.py").write_text("ACCURACY = 0.9\n")
        assert imported_code.imported_environment().sha256 != found.sha256  # the digest holds every byte
    finally:
        sys.modules.pop("planted_scores", None)
