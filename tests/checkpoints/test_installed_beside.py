"""A library installed beside the environment (`pip install --target DIR`, DIR on PYTHONPATH, as
.ci/lm-eval-0.4.11 installs lm-eval 0.4.11) is an installed library: its files are the ones its
distribution's RECORD lists, under the directory of sys.path it was installed into. A file in the same
directory that no RECORD lists is not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from recorder.checkpoints.team_code import exec_audit


def _install(target: Path) -> tuple[Path, Path]:
    """A distribution `beside` 1.0 as pip --target leaves it, and a stray module next to it."""
    (target / "beside").mkdir(parents=True)
    module = target / "beside" / "__init__.py"
    module.write_text("VALUE = 1\n")
    info = target / "beside-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: beside\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        "beside/__init__.py,,\nbeside-1.0.dist-info/METADATA,,\nbeside-1.0.dist-info/RECORD,,\n"
    )
    stray = target / "stray.py"
    stray.write_text("VALUE = 2\n")
    return module, stray


def test_a_recorded_file_beside_the_environment_is_an_installed_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, stray = _install(tmp_path / "site")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site"), *sys.path])
    exec_audit._recorded.cache_clear()
    assert exec_audit.recorded_by_a_distribution(module.resolve())
    assert not exec_audit.recorded_by_a_distribution(stray.resolve())


def test_off_the_path_it_is_not(tmp_path: Path) -> None:
    module, _ = _install(tmp_path / "site")
    exec_audit._recorded.cache_clear()
    assert not exec_audit.recorded_by_a_distribution(module.resolve())
