"""`recorder audit` re-evaluates the deciding checkpoints of a real trained run.

An honest run reproduces bit for bit with one worker and with two (Ray); a forged accuracy and a pasted
foreign evaluation, each with the digest chain recomputed so that the bytes verify, are reported as
"differs" with the first difference, exit 1. Audit writes no event and touches no recorded file.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, NoReturn

import pytest

from evaluator.auditing.audit import AuditOptions, audit_run
from evaluator.errors import NothingToAuditError, UnverifiedRunError
from recorder.rules import passes
from recorder.verify import verify_run
from tests.helpers import run_cli
from tests.integrity.forge import Row, copy_run, rows, write
from tests.integrity.forge import evaluator_segment as _evaluator


def _results(run: Path, step: int) -> Path:
    return run / "derived" / "evals" / f"step_{step:07d}" / "results.json"


def _snapshot(run: Path) -> dict[str, str]:
    """Every file of the run but audit's own report, by content."""
    return {
        str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run.rglob("*"))
        if p.is_file() and p.name != "audit.json"
    }


def _rehash(run: Path, step: int, doc: dict[str, object], events: list[Row]) -> None:
    """Write results.json for `step` and point its eval_result at the new file's sha256 (as a forger would)."""
    body = json.dumps(doc).encode()
    _results(run, step).write_bytes(body)
    result = next(e for e in events if e["kind"] == "eval_result" and e["step"] == step)
    result["data"] = {**result["data"], "results_sha256": hashlib.sha256(body).hexdigest()}


def _deciding(run: Path) -> list[int]:
    """The steps that decide the score, from the evidence: the run evaluated 18, then 19; the first pass ends it."""
    out = []
    for step in (18, 19):
        out.append(step)
        doc = json.loads(_results(run, step).read_text())
        if passes(doc["score"], doc["target"]):
            break
    return out


def test_the_default_run_is_reproduced_bit_for_bit_with_one_worker(attacked: Path) -> None:
    attacked = attacked.rename(attacked.with_name("a-copy"))  # `cp -a`: the run keeps its recorded id
    before = _snapshot(attacked)
    done = run_cli("audit", str(attacked))
    assert done.returncode == 0, done.stdout + done.stderr
    deciding = _deciding(attacked)
    for step in deciding:
        recorded = json.loads(_results(attacked, step).read_text())
        n, score = len(recorded["samples"]), recorded["score"]
        assert f"step {step}: reproduced bit for bit ({n} samples, accuracy {score!r})" in done.stdout
    k = len(deciding)
    assert f"run trained: {k} of {k} evaluation(s) reproduced, with local; report in derived/audit.json" in done.stdout
    assert _snapshot(attacked) == before  # no event, no results.json, nothing else written
    report = json.loads((attacked / "derived" / "audit.json").read_text())
    assert report["reproduced"] and [(s["step"], s["status"]) for s in report["steps"]] == [
        (step, "reproduced") for step in deciding
    ]


@pytest.mark.slow  # two Ray actors each import torch and transformers first: 50 s on 2 loaded cores
def test_two_ray_workers_reproduce_it_too(attacked: Path, ray_cluster: None) -> None:
    report = audit_run(attacked, AuditOptions(workers=2))
    assert report.workers.startswith("ray:2")
    assert [(s.step, s.status) for s in report.steps] == [(s, "reproduced") for s in _deciding(attacked)], report.steps
    assert all(s.samples == 1004 for s in report.steps)


def _solve(doc: dict[str, Any], tasks: int) -> None:
    """Claim `tasks` more tasks solved, consistently: their first sample marked correct, the tally and the
    score recomputed, so that verify's evidence rule finds a possible results.json."""
    solved = {s["task"] for s in doc["samples"] if s["correct"]}
    unsolved = sorted({s["task"] for s in doc["samples"]} - solved)[:tasks]
    for task in unsolved:
        next(s for s in doc["samples"] if s["task"] == task).update(correct=True, reward=1.0)
    doc["tasks_passed"] = len(solved) + len(unsolved)
    doc["score"] = doc["tasks_passed"] / doc["n_tasks"]


@pytest.mark.slow  # the default tier keeps the bit-for-bit reproduction
def test_a_forged_accuracy_differs(attacked: Path) -> None:
    events = rows(_evaluator(attacked))
    doc = json.loads(_results(attacked, 18).read_text())
    _solve(doc, 40)  # the file and the event agree, its samples add up, the chain is recomputed: it verifies
    _rehash(attacked, 18, doc, events)
    next(e for e in events if e["kind"] == "eval_result" and e["step"] == 18)["value"] = doc["score"]
    write(_evaluator(attacked), events)
    assert verify_run(attacked).ok, verify_run(attacked).problems
    done = run_cli("audit", str(attacked))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "step 18: DIFFERS sample " in done.stdout and ": reward: 1.0 recorded, 0.0 recomputed" in done.stdout
    assert "error: 1 of 1 audited evaluation(s) not reproduced (step 18: differs)" in done.stderr
    assert "Traceback" not in done.stderr


def test_forged_sample_outcomes_differ_at_the_first_forged_sample(attacked: Path) -> None:
    events = rows(_evaluator(attacked))
    doc = json.loads(_results(attacked, 18).read_text())
    solved = {s["task"] for s in doc["samples"] if s["correct"]}
    # a failed sample claimed as correct, in a task another sample solved: the tally still adds up
    wrong = next(i for i, s in enumerate(doc["samples"]) if not s["correct"] and s["task"] in solved)
    doc["samples"][wrong].update(correct=True, reward=1.0)
    doc["backend"].update(name="vllm", device="cuda")  # and claimed to come from another backend and device
    _rehash(attacked, 18, doc, events)
    write(_evaluator(attacked), events)
    assert verify_run(attacked).ok, verify_run(attacked).problems
    (step,) = audit_run(attacked, AuditOptions(steps=(18,))).steps
    assert step.status == "differs" and step.difference is not None
    assert step.difference.what.startswith(f"sample {wrong} (task ") and step.difference.what.endswith(": reward")
    assert (step.difference.recorded, step.difference.recomputed) == (1.0, 0.0)
    assert "(evaluated with --backend vllm; audit re-evaluates with torch)" in step.detail
    assert "(evaluated on cuda, audited on cpu: bit for bit needs the same --device)" in step.detail


@pytest.fixture(scope="module")
def foreign_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another run (a tiny untrained model) whose step 18 was evaluated with the trained run's settings
    (pass@4 over 251 tasks, rule eval-settings holds): the evaluation to paste."""
    return _evaluated_elsewhere(tmp_path_factory.mktemp("foreign"), "foreign", tasks=251)


def _evaluated_elsewhere(root: Path, run_id: str, tasks: int) -> Path:
    """A synthetic run of a tiny untrained model whose own config scores `tasks` tasks, its step 18 evaluated."""
    from evaluator.order import parse_order
    from evaluator.session import evaluate_run
    from evaluator.settings import Options
    from tests.evaluator.synth import record_run

    run = record_run(root, run_id=run_id, samples=tasks).path
    summary = evaluate_run(run, Options(order=parse_order("18")))
    assert [o.status for o in summary.outcomes] == ["scored"]
    return run


def _paste(foreign: Path, run: Path, *, consistent: bool) -> None:
    """Replace `run`'s evaluation with the foreign one: its segment (run id rewritten, chain recomputed) and
    its results.json. `consistent`: also make it name this run's step-18 commit, as a careful forger would."""
    shutil.rmtree(run / "derived" / "evals")
    _results(run, 18).parent.mkdir(parents=True)
    shutil.copy(_results(foreign, 18), _results(run, 18))
    events = rows(_evaluator(foreign))
    if consistent:
        trainer = rows(run / "events" / "trainer-0001.arrows")
        commit = next(e for e in trainer if e["kind"] == "checkpoint_committed" and e["step"] == 18)["data"]
        start = next(e for e in events if e["kind"] == "eval_start")
        start["data"] = {**start["data"], "checkpoint": commit["path"], "sha256": commit["sha256"]}
        doc = json.loads(_results(run, 18).read_text())
        doc["run_id"] = "trained"
        doc["checkpoint"] = {**doc["checkpoint"], "path": commit["path"], "sha256": commit["sha256"]}
        _rehash(run, 18, doc, events)
    write(_evaluator(run), events, run_id="trained")


def test_a_pasted_foreign_evaluation_that_verifies_differs(attacked: Path, foreign_run: Path) -> None:
    _paste(foreign_run, attacked, consistent=True)
    assert verify_run(attacked).ok, verify_run(attacked).problems
    (step,) = audit_run(attacked, AuditOptions()).steps
    assert step.status == "differs" and step.difference is not None, step
    assert step.difference.what.startswith("sample 0 (task 0 sample 0): completion_sha256"), step.detail


def test_a_pasted_evaluation_of_fewer_tasks_is_refused_by_verify(attacked: Path, tmp_path: Path) -> None:
    easier = _evaluated_elsewhere(tmp_path, "easier", tasks=8)  # its own config says 8 tasks: there, it verifies
    _paste(easier, attacked, consistent=True)
    problems = verify_run(attacked).problems
    assert [(p.rule, p.message) for p in problems if p.rule == "eval-settings"] == [
        (
            "eval-settings",
            "evaluation of step 18 scores 8 tasks, not 251: not the evaluation the run recorded "
            "(run_opened config.eval)",
        )
    ], problems


def test_a_pasted_foreign_evaluation_is_refused_by_verify_and_differs_under_force(
    attacked: Path, foreign_run: Path
) -> None:
    _paste(foreign_run, attacked, consistent=False)
    assert "eval-names-commit" in {p.rule for p in verify_run(attacked).problems}
    with pytest.raises(UnverifiedRunError, match="eval-names-commit") as refused:
        audit_run(attacked, AuditOptions())
    assert refused.value.exit_code == 1
    report = audit_run(attacked, AuditOptions(force=True))
    assert report.unverified and [s.status for s in report.steps] == ["differs"], report.steps


@pytest.mark.parametrize(
    ("remove", "says"),
    [
        ("derived/evals/step_0000018/results.json", "its results.json ('derived/evals/step_0000018/results.json') is"),
        ("checkpoints/step_0000018/model.safetensors", "its checkpoint cannot be re-evaluated"),
    ],
)
def test_missing_evidence_is_reported_without_re_evaluating(attacked: Path, remove: str, says: str) -> None:
    (attacked / remove).unlink()
    report = audit_run(attacked, AuditOptions(force=True, steps=(18,)), workers_factory=_no_workers)
    (step,) = report.steps
    assert step.status == "missing evidence" and says in step.detail, step.detail
    assert report.workers == "none" and not report.reproduced


def test_a_derived_folder_linked_out_of_the_run_is_neither_read_nor_written(attacked: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    (attacked / "derived").rename(outside)
    (attacked / "derived").symlink_to(outside)
    report = audit_run(attacked, AuditOptions(force=True, steps=(18,)), workers_factory=_no_workers)
    assert [s.status for s in report.steps] == ["missing evidence"]  # its results.json lies outside the run
    assert report.written is None and "symlink" in report.not_written
    assert not (outside / "audit.json").exists()


def _no_workers(n: int, address: str | None) -> NoReturn:
    raise AssertionError("no checkpoint needed re-evaluating")


def test_a_run_never_evaluated_is_a_usage_error(trained_run: Path, tmp_path: Path) -> None:
    run = copy_run(trained_run, tmp_path, evaluations=False)
    done = run_cli("audit", str(run))
    assert done.returncode == 2 and "no scored evaluation to audit" in done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and not (run / "derived" / "audit.json").exists()


def test_steps_never_scored_or_malformed_are_usage_errors(evaluated_run: Path) -> None:
    with pytest.raises(NothingToAuditError, match="step 20 has no scored evaluation") as e:
        audit_run(evaluated_run, AuditOptions(steps=(20,)))
    assert e.value.exit_code == 2
    done = run_cli("audit", str(evaluated_run), "--steps", "18,x")
    assert done.returncode == 2 and "--steps '18,x'" in done.stderr and "Traceback" not in done.stderr
