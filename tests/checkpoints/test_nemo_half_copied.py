"""A NeMo-RL step copied in part or linked in, made from the series the real megatron-core wrote
(tests/golden/mcore/): a Megatron-Core iteration folder without `common.pt` or `metadata.json` (megatron-core
writes both with every torch_dist save) is left out naming the missing file; a step that is a link (a step on
another disk) is left out naming the link and the way to import it; the other steps import. `--strict`
refuses a series whose gap is a step left out as unfinished saying so, not blaming keep_top_k pruning. The
commands run in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder.store.reader import read_run
from tests.checkpoints.test_nemo_messy_series import _series, _source, _with_training_log
from tests.helpers import run_in_process
from tests.kit.mcore_golden import ITERATION


def _commits(run: Path) -> list[int]:
    return sorted(e.step for e in read_run(run).events if e.kind == "checkpoint_committed" and e.step is not None)


@pytest.mark.parametrize("companion", ["common.pt", "metadata.json"])
def test_a_step_without_a_megatron_companion_file_is_left_out_naming_it(companion: str, tmp_path: Path) -> None:
    series = _series(tmp_path)
    gone = series / "step_19" / ITERATION / companion
    gone.unlink()
    run = _with_training_log(tmp_path, final_step=19)
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), *_source())
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    left = [line for line in done.stdout.splitlines() if line.startswith("left out:")]
    text = " ".join(done.stdout.split())
    assert len(left) == 1 and str(series / "step_19") in left[0], done.stdout
    assert f"{gone}: missing (megatron-core writes it with every torch_dist save" in text, text
    assert _commits(run) == [18]


def test_strict_names_a_gap_left_by_an_unfinished_save_as_that(tmp_path: Path) -> None:
    series = _series(tmp_path, step_20=True)
    gone = series / "step_19" / ITERATION / ".metadata"
    gone.unlink()
    run = _with_training_log(tmp_path, final_step=20)
    before = [e.digest for e in read_run(run).events]
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), "--strict", *_source())
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    text = " ".join(done.stderr.split())
    assert len(errors) == 1 and "missing checkpoints for steps 19" in text, text
    assert f"step 19 left out, its save did not finish: {gone}: missing" in text, text
    assert "keep_top_k" not in text, text
    assert [e.digest for e in read_run(run).events] == before


def test_a_step_linked_in_from_another_disk_is_left_out_naming_the_way_to_import_it(tmp_path: Path) -> None:
    series = _series(tmp_path)
    elsewhere = tmp_path / "other-disk" / "step_19"
    elsewhere.parent.mkdir()
    (series / "step_19").rename(elsewhere)
    (series / "step_19").symlink_to(elsewhere)
    run = _with_training_log(tmp_path, final_step=19)
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), *_source())
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert not [line for line in done.stderr.splitlines() if line.startswith("error:")], done.stderr
    left = [line for line in done.stdout.splitlines() if line.startswith("left out:")]
    text = " ".join(done.stdout.split())
    assert len(left) == 1 and f"{series / 'step_19'}: a symlink" in text, done.stdout
    assert "replace the link by a copy of what it points to (cp -rL)" in text, text
    assert "did not finish" not in text, text
    assert _commits(run) == [18]
