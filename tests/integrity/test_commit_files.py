"""Commits hash config.json and the tokenizer like the weights; a payload that does not parse is a
verify failure (rule payload), never a traceback; `eval --force` on a run that fails verify records the result
UNVERIFIED in its eval_result, and `evals` and the history's `evals` view show it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder import signing
from recorder.store.kinds import CheckpointCommitted, EvalResult
from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.helpers import run_cli, run_in_process
from tests.integrity.forge import Row, copy_run, rewrite


def _commits(run: Path) -> dict[int, CheckpointCommitted]:
    return {
        e.step: CheckpointCommitted.from_event(e)
        for e in read_run(run).events
        if e.kind == "checkpoint_committed" and e.step is not None
    }


def test_each_commit_hashes_its_config_and_tokenizer(evaluated_run: Path) -> None:
    commits = _commits(evaluated_run)
    assert sorted(commits) == [18, 19]
    for step, commit in commits.items():
        assert commit.files is not None and sorted(commit.files) == ["config.json", "tokenizer.json"], step
    assert verify_run(evaluated_run).ok


def _caught(run: Path, rule: str) -> str:
    done = run_cli("verify", str(run))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    return next(x for x in done.stdout.splitlines() if f"[rule {rule}]" in x)


def test_an_edited_config_json_is_caught(attacked: Path) -> None:
    config = attacked / "checkpoints" / "step_0000018" / "config.json"
    doc = json.loads(config.read_text())
    doc["num_hidden_layers"] = 100_000  # an absurd config must not pass as the committed one
    config.write_text(json.dumps(doc))
    line = _caught(attacked, "commit-files")
    assert line.startswith("ALTERED: trainer-0001.arrows seq ") and "step 18's config.json" in line


def test_an_edited_tokenizer_is_caught(attacked: Path) -> None:
    tokenizer = attacked / "checkpoints" / "step_0000019" / "tokenizer.json"
    tokenizer.write_text(tokenizer.read_text().replace('"', "'", 1))
    assert "step 19's tokenizer.json" in _caught(attacked, "commit-files")


def test_a_commit_payload_that_does_not_parse_is_a_rule_not_a_traceback(attacked: Path) -> None:
    def bad_files(events: list[Row]) -> list[Row]:
        commit = next(e for e in events if e["kind"] == "checkpoint_committed")
        commit["data"] = {**commit["data"], "files": ["config.json"]}  # rechained: the bytes verify
        return events

    rewrite(attacked / "events" / "trainer-0001.arrows", bad_files)
    assert "files is list" in _caught(attacked, "payload")


def test_eval_force_on_a_run_that_fails_verify_records_and_shows_unverified(
    trained_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed, too: the real evaluator session signs its segment with the key RECORDER_SIGNING_KEY names."""
    run = copy_run(trained_run, tmp_path, evaluations=False)
    signing.generate(tmp_path / "key")
    monkeypatch.setenv(signing.SIGNING_KEY_ENV, str(tmp_path / "key"))
    (run / "events" / "notes.txt").write_text("a file that is not a segment: verify fails\n")
    refused = run_in_process("eval", str(run), "--order", "18")  # what eval says and records is read
    assert refused.returncode == 1 and "--force" in refused.stderr
    done = run_in_process("eval", str(run), "--order", "18", "--force")
    assert done.returncode in (0, 1) and "UNVERIFIED:" in done.stdout, done.stdout + done.stderr
    (result,) = [EvalResult.from_event(e) for e in read_run(run).events if e.kind == "eval_result"]
    assert result.unverified is not None and "notes.txt" in result.unverified
    evals = run_cli("evals", str(run))
    assert "UNVERIFIED (notes.txt" in evals.stdout, evals.stdout
    shown = run_cli(
        "query", "--root", str(tmp_path), "SELECT reason FROM evals WHERE status = 'ok'", "--format", "json"
    )
    assert json.loads(shown.stdout)["reason"].startswith("UNVERIFIED: notes.txt"), shown.stdout + shown.stderr
    (evaluator,) = [s for s in verify_run(run).segments if s.name.startswith("evaluator-")]
    assert evaluator.signed_by is not None and [evaluator.signed_by] == list(
        signing.load_trusted([tmp_path / "key.pub"])
    )
