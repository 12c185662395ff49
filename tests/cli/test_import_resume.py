"""`recorder import` run again over the same files (after it was stopped): the files already imported are
skipped, each said once, and the rest imported; a file whose run was removed is imported again."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli.shell import run_main
from tests.kit.synthetic import record_run


def test_import_again_skips_what_it_imported_and_goes_on(tmp_path: Path) -> None:
    run = record_run(tmp_path / "recorded", "r", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path
    logs = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for log in logs:
        assert run_main("replay", str(run), "-o", str(log)).code == 0
    root = tmp_path / "imported"
    first = run_main("import", *map(str, logs), "--root", str(root))
    assert first.code == 0, first.err
    runs = sorted(p.name for p in root.iterdir())
    shutil.rmtree(root / runs[1])  # b's run gone, as if the import had stopped before it

    again = run_main("import", *map(str, logs), "--root", str(root))
    assert again.code == 0, again.err
    assert f"{logs[0]}: already imported as {root / runs[0]}: skipped" in again.out
    assert f"{logs[1]} -> {root / runs[1]}" in again.out
    assert sorted(p.name for p in root.iterdir()) == runs
