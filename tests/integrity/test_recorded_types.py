"""As-recorded replay reads an imported log's values with their types: the compliance checker compares
`true > 0.69` as 1 > 0.69, so a failing log whose accuracies are rewritten to `true` passed it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import run_cli
from tests.kit.synthetic import record_run


def _honest_failing_log(tmp_path: Path) -> Path:
    """A synthetic run that never reaches the target, replayed to its official mllog (aborted)."""
    record_run(tmp_path / "recorded", "honest", gbs=256, steps=20, evals=[(18, 0.60), (19, 0.61), (20, 0.62)])
    done = run_cli("replay", str(tmp_path / "recorded" / "honest"))
    assert done.returncode == 0 and "official: aborted" in " ".join(done.stdout.split()), done.stdout + done.stderr
    return tmp_path / "recorded" / "honest" / "derived" / "result_official.txt"


def _replayed_as_imported(log: Path, root: Path, run_id: str) -> str:
    done = run_cli("import", str(log), "--root", str(root), "--run-id", run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    replayed = run_cli("replay", str(root / run_id), "--check")
    assert "Traceback" not in replayed.stderr, replayed.stderr
    return " ".join((replayed.stdout + replayed.stderr).split())


def test_a_failing_log_with_accuracies_rewritten_to_true_is_no_success(tmp_path: Path) -> None:
    log = _honest_failing_log(tmp_path)
    honest = _replayed_as_imported(log, tmp_path / "runs", "honest")
    assert "as-recorded: aborted" in honest and "mistyped" not in honest, honest
    text = log.read_text()
    forged = re.sub(r'("key": "eval_accuracy", "value": )[0-9.]+', r"\1true", text)
    forged = forged.replace('"status": "aborted"', '"status": "success"')
    assert forged.count('"key": "eval_accuracy", "value": true') == 3
    (tmp_path / "forged").mkdir()
    (tmp_path / "forged" / "result_0.txt").write_text(forged)
    said = _replayed_as_imported(tmp_path / "forged" / "result_0.txt", tmp_path / "runs", "forged")
    assert "as-recorded: success" not in said and "PASSED" not in said, said
    assert re.search(r"line \d+: eval_accuracy true is not a finite number", said), said
