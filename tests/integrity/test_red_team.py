"""Forgeries of a real trained and evaluated run, one or more per rule of the writers', timeline's, clocks' and
evaluations' families, each with its digest chain recomputed (the bytes verify). Each is refused by verify
with its rule, segment and seq, and so by every command that gives a verdict (replay, score and eval refuse
a run that fails verify); the writers' forgeries also leave replay's facts unchanged when it is forced past
verify, because replay reads only the facts their writers may record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from recorder.store.catalogue import catalogue, may_write
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from replay.checkers.preflight import verified
from replay.derive import derive_run
from replay.errors import UnverifiedRunError
from tests.helpers import run_cli
from tests.integrity.forge import Row, event, rows, write
from tests.integrity.forge import first_event as _first
from tests.integrity.forge import in_evaluator as _in_evaluator
from tests.integrity.forge import in_trainer as _in_trainer
from tests.integrity.forge import trainer_segment as _trainer

S = 1_000_000_000
GBS = 256


def _early_update_18(run: Path) -> Row:
    """Step 18's weight update, dated right after step 2's: a run that trained eight times faster."""
    events = rows(_trainer(run))
    return {**_first(events, "weight_update", 18), "time_ns": _first(events, "weight_update", 2)["time_ns"] + S // 10}


# -- writers own kinds -------------------------------------------------------------------------------------


def update_in_a_rank_segment(run: Path) -> None:
    update = _early_update_18(run)
    write(run / "events" / "trainer-rank0-0001.arrows", [{**update, "writer": "trainer-rank0"}])


def update_in_an_evaluator_segment(run: Path) -> None:
    update = _early_update_18(run)
    write(run / "events" / "evaluator-0002.arrows", [{**update, "writer": "evaluator"}])


def train_stop_from_the_evaluator(run: Path) -> None:
    stop = {**_first(rows(_trainer(run)), "train_stop"), "writer": "evaluator", "step": 18, "samples_count": 18 * GBS}
    write(run / "events" / "evaluator-0002.arrows", [stop])


def update_from_another_importer(run: Path) -> None:
    """A writer that may record weight updates (the NeMo-RL import), but is not this run's writer."""
    write(run / "events" / "import-nemo-0001.arrows", [{**_early_update_18(run), "writer": "import-nemo"}])


def imported_from_self_declared(events: list[Row]) -> None:
    opened = _first(events, "run_opened")
    opened["data"] = {**opened["data"], "provenance": {**opened["data"]["provenance"], "imported_from": "x.log"}}


# -- physically possible timelines -------------------------------------------------------------------------


def a_second_commit_in_another_session(run: Path) -> None:
    commit = {**_first(rows(_trainer(run)), "checkpoint_committed", 18)}
    commit["time_ns"] -= S // 10
    write(run / "events" / "trainer-0002.arrows", [commit])


def run_start_after_the_first_step_began(events: list[Row]) -> None:
    start, block = _first(events, "run_start"), _first(events, "block_start")
    start["time_ns"] = block["time_ns"] + S // 5  # still before step 1's weight update


def a_second_run_start(events: list[Row]) -> list[Row]:
    update = _first(events, "weight_update", 1)
    at = events.index(update) + 1
    later = {**_first(events, "run_start"), "time_ns": update["time_ns"] + 1, "mono_ns": update["mono_ns"] + 1}
    return [*events[:at], later, *events[at:]]


def _commit_18(events: list[Row], **changes: int) -> None:
    commit = _first(events, "checkpoint_committed", 18)
    commit["data"] = {**commit["data"], **changes}


def save_ends_before_it_begins(events: list[Row]) -> None:
    commit = _first(events, "checkpoint_committed", 18)["data"]
    _commit_18(events, save_end_ns=commit["save_begin_ns"] - 1)


def save_blocks_an_hour(events: list[Row]) -> None:
    _commit_18(events, blocked_ns=3600 * S)


def samples_count_wrong(events: list[Row]) -> None:
    _first(events, "weight_update", 5)["samples_count"] += 1


def step_19_recorded_as_18(events: list[Row]) -> list[Row]:
    kept = [e for e in events if not (e["step"] == 18 and e["kind"] != "block_stop")]
    for e in kept:
        if e["step"] == 19 and e["kind"] in ("weight_update", "step_metrics", "checkpoint_committed"):
            e["step"] = 18
    return kept


def cut_after_step_18s_commit(events: list[Row]) -> list[Row]:
    return events[: events.index(_first(events, "checkpoint_committed", 18)) + 1]


def completed_at_step_18(events: list[Row]) -> list[Row]:
    cut = cut_after_step_18s_commit(events)
    stop = {**_first(events, "train_stop"), "step": 18, "samples_count": 18 * GBS}
    return [*cut, stop]


def update_dated_before_its_work(events: list[Row]) -> None:
    """Step 10's update dated 1 ms after step 9's metrics, its monotonic time moved alike: no time to generate."""
    update, metrics = _first(events, "weight_update", 10), _first(events, "step_metrics", 9)
    shift = update["time_ns"] - metrics["time_ns"] - 1_000_000
    update["time_ns"] -= shift
    update["mono_ns"] -= shift


# -- the clocks --------------------------------------------------------------------------------------------


def evaluation_dated_back(events: list[Row]) -> None:
    """Step 19's evaluation dated 5 s earlier than recorded, before step 18's (wall clock only)."""
    for e in events:
        if e["step"] == 19:
            e["time_ns"] -= 5 * S


def wall_clock_compressed_4x(run: Path) -> None:
    """Every wall time of the training compressed 4x around run_start, with the commits' times alike."""
    events = rows(_trainer(run))
    t0 = _first(events, "run_start")["time_ns"]

    def squeeze(t: int) -> int:
        return t0 + (t - t0) // 4 if t > t0 else t

    for e in events:
        e["time_ns"] = squeeze(e["time_ns"])
        if e["kind"] == "checkpoint_committed":
            d = e["data"]
            e["data"] = {**d, **{k: squeeze(d[k]) for k in ("weight_update_ns", "save_begin_ns", "save_end_ns")}}
    write(_trainer(run), events)


# -- one reading of every evaluation -----------------------------------------------------------------------


def keyless_decoy_result(events: list[Row]) -> list[Row]:
    real = _first(events, "eval_result", 18)
    at = events.index(real)
    return [*events[:at], {**real, "key": None, "value": 0.99}, *events[at:]]


def stray_early_eval_start(events: list[Row]) -> list[Row]:
    start = _first(events, "eval_start", 19)
    return [{**start, "time_ns": events[0]["time_ns"] - 1, "mono_ns": events[0]["mono_ns"] - 1}, *events]


def config_eval_redefined(events: list[Row]) -> None:
    opened = _first(events, "run_opened")
    config = opened["data"]["config"]
    opened["data"] = {**opened["data"], "config": {**config, "eval": {**config["eval"], "k": 32, "temperature": 1.0}}}


def eval_sampled_hotter_everywhere(events: list[Row]) -> None:
    """config.eval and the run's own mllog lines both say temperature 1.0: consistent with each other (so
    eval-config holds), but not the benchmark's evaluation, which the run claims by its target and tasks."""
    config_eval_redefined(events)
    opened = _first(events, "run_opened")
    config = opened["data"]["config"]
    opened["data"]["config"] = {**config, "eval": {**config["eval"], "k": 4}}
    for e in events:
        if e["kind"] == "mllog_config" and e["key"] == "generation_validation_rollout_temperature":
            e["value"] = 1.0


CASES: list[tuple[Callable[[Path], None], str, str]] = [
    (update_in_a_rank_segment, "kind-writer", "trainer-rank0-0001.arrows"),
    (update_in_an_evaluator_segment, "kind-writer", "evaluator-0002.arrows"),
    (train_stop_from_the_evaluator, "kind-writer", "evaluator-0002.arrows"),
    (update_from_another_importer, "run-writer", "import-nemo-0001.arrows"),
    (_in_trainer(imported_from_self_declared), "imported-from", "trainer-0001.arrows"),
    (a_second_commit_in_another_session, "update-before-commit", "trainer-0002.arrows"),
    (_in_trainer(run_start_after_the_first_step_began), "run-start-first", "trainer-0001.arrows"),
    (_in_trainer(a_second_run_start), "one-run-start", "trainer-0001.arrows"),
    (_in_trainer(save_ends_before_it_begins), "save-window", "trainer-0001.arrows"),
    (_in_trainer(save_blocks_an_hour), "save-window", "trainer-0001.arrows"),
    (_in_trainer(samples_count_wrong), "step-samples", "trainer-0001.arrows"),
    (_in_trainer(step_19_recorded_as_18), "step-samples", "trainer-0001.arrows"),
    (_in_trainer(cut_after_step_18s_commit), "train-stop-recorded", "trainer-0001.arrows"),
    (_in_trainer(completed_at_step_18), "train-stop-recorded", "trainer-0001.arrows"),
    (_in_trainer(update_dated_before_its_work), "step-window", "trainer-0001.arrows"),
    (_in_evaluator(evaluation_dated_back), "wall-order", "evaluator-0001.arrows"),
    (wall_clock_compressed_4x, "clock-agreement", "trainer-0001.arrows"),
    (_in_evaluator(keyless_decoy_result), "eval-result-key", "evaluator-0001.arrows"),
    (_in_evaluator(stray_early_eval_start), "one-evaluation-open", "evaluator-0001.arrows"),
    (_in_trainer(config_eval_redefined), "eval-config", "trainer-0001.arrows"),
    (_in_trainer(eval_sampled_hotter_everywhere), "benchmark-eval", "trainer-0001.arrows"),
]


# -- variations: the same rules attacked again, other ways ------------------------------------------------


def update_in_a_second_trainer_session(run: Path) -> None:
    """The run's own writer name, in a session of its own: not a session that trained steps 1..17."""
    write(run / "events" / "trainer-0002.arrows", [_early_update_18(run)])


def an_importer_declares_the_run(run: Path) -> None:
    """A run_opened with imported_from by the importer's writer, beside the trainer's."""
    opened = _first(rows(_trainer(run)), "run_opened")
    provenance = {**opened["data"]["provenance"], "imported_from": "x.log"}
    forged = {**opened, "writer": "import", "data": {**opened["data"], "provenance": provenance}}
    write(run / "events" / "import-0001.arrows", [forged])


def both_clocks_compressed_4x(events: list[Row]) -> None:
    """Wall and monotonic clocks compressed alike, commits too: the steps no longer fit their own durations."""
    t0, m0 = _first(events, "run_start")["time_ns"], _first(events, "run_start")["mono_ns"]
    for e in events:
        if e["time_ns"] > t0:
            e["time_ns"], e["mono_ns"] = t0 + (e["time_ns"] - t0) // 4, m0 + (e["mono_ns"] - m0) // 4
        if e["kind"] == "checkpoint_committed":
            d = e["data"]
            e["data"] = {
                **d,
                **{k: t0 + (d[k] - t0) // 4 for k in ("weight_update_ns", "save_begin_ns", "save_end_ns")},
            }


def evaluation_of_19_relabelled_18(events: list[Row]) -> list[Row]:
    kept = [e for e in events if e["step"] != 18]
    for e in kept:
        if e["step"] == 19:
            e["step"] = 18
    return kept


def train_stop_deleted(events: list[Row]) -> list[Row]:
    return [e for e in events if e["kind"] != "train_stop"]


def evaluation_dated_back_on_both_clocks(events: list[Row]) -> None:
    for e in events:
        if e["step"] == 19:
            e["time_ns"] -= 5 * S
            e["mono_ns"] -= 5 * S


def update_in_the_evaluators_own_segment(events: list[Row]) -> list[Row]:
    template = _first(events, "eval_start", 18)
    update = {**template, "kind": "weight_update", "data": {}, "time_ns": template["time_ns"] - 1}
    return [update, *events]


def metrics_in_a_rank_segment(run: Path) -> None:
    metrics = {**_first(rows(_trainer(run)), "step_metrics", 18), "writer": "trainer-rank1"}
    write(run / "events" / "trainer-rank1-0001.arrows", [metrics])


VARIATIONS: list[tuple[Callable[[Path], None], str, str]] = [
    (update_in_a_second_trainer_session, "session-steps", "trainer-0002.arrows"),
    (an_importer_declares_the_run, "one-run-opened", "trainer-0001.arrows"),
    (_in_trainer(both_clocks_compressed_4x), "step-window", "trainer-0001.arrows"),
    (_in_evaluator(evaluation_of_19_relabelled_18), "step-samples", "evaluator-0001.arrows"),
    (_in_trainer(train_stop_deleted), "train-stop-recorded", "trainer-0001.arrows"),
    (_in_evaluator(evaluation_dated_back_on_both_clocks), "mono-order", "evaluator-0001.arrows"),
    (_in_evaluator(update_in_the_evaluators_own_segment), "kind-writer", "evaluator-0001.arrows"),
    (metrics_in_a_rank_segment, "kind-writer", "trainer-rank1-0001.arrows"),
]
CASES += VARIATIONS


@pytest.mark.parametrize(("attack", "rule", "segment"), CASES, ids=[f"{c[1]}:{c[0].__qualname__}" for c in CASES])
def test_each_forgery_is_refused_by_its_rule(
    attacked: Path, attack: Callable[[Path], None], rule: str, segment: str
) -> None:
    attack(attacked)
    problems = verify_run(attacked).problems
    named = [p for p in problems if p.rule == rule]
    assert named, problems
    assert named[0].segment == segment and named[0].seq is not None, named
    with pytest.raises(UnverifiedRunError):  # what replay, score and eval call before they give a verdict
        verified(attacked, force=False)


def _minutes(run: Path) -> float | None:
    return derive_run(read_run(RunDir.open(run)).events, "6.1.0", "official").minutes


@pytest.mark.parametrize(
    "attack", [update_in_a_rank_segment, update_in_an_evaluator_segment, update_from_another_importer]
)
def test_replay_forced_past_verify_reads_only_the_run_writers_facts(
    evaluated_run: Path, attacked: Path, attack: Callable[[Path], None]
) -> None:
    attack(attacked)
    assert _minutes(attacked) == _minutes(evaluated_run)


def test_for_every_kind_a_writer_the_catalogue_does_not_name_is_refused(attacked: Path) -> None:
    """The catalogue is the one source: each kind, recorded by a writer its entry does not name, is refused
    with rule kind-writer in that writer's segment."""
    template = _first(rows(_trainer(attacked)), "run_start")
    forged: dict[str, str] = {}
    for n, kind in enumerate(sorted(catalogue())):
        writer = next((w for w in ("trainer-rank0", "evaluator", "trainer", "import") if not may_write(w, kind)), None)
        if writer is None:
            # any writer opens, signs and closes its segment
            assert kind in ("segment_opened", "chain_signed", "segment_closed"), kind
            continue
        segment = f"{writer}-{n + 10:04d}.arrows"
        write(attacked / "events" / segment, [event(kind, template["time_ns"] + n, {**template, "writer": writer})])
        forged[segment] = kind
    named = {p.segment for p in verify_run(attacked).problems if p.rule == "kind-writer"}
    assert named == set(forged), sorted(set(forged) - named)


def test_the_decoy_does_not_move_the_audited_step(attacked: Path) -> None:
    from evaluator.attempts import attempts, scored

    _in_evaluator(keyless_decoy_result)(attacked)
    chosen = scored(attempts(read_run(RunDir.open(attacked)).events))
    assert chosen[18].result is not None and chosen[18].result.key == "accuracy"


def test_replay_and_score_refuse_a_compressed_run(attacked: Path) -> None:
    wall_clock_compressed_4x(attacked)
    (attacked / "derived" / "scores.jsonl").unlink(missing_ok=True)
    done = run_cli("replay", str(attacked), "--check")
    assert done.returncode == 1 and "[rule clock-agreement]" in done.stderr, done.stdout + done.stderr
    scored = run_cli("score", str(attacked))
    assert scored.returncode != 0 and "success" not in scored.stdout.lower(), scored.stdout + scored.stderr
    assert "Traceback" not in done.stderr + scored.stderr


def test_the_config_rule_names_what_differs(attacked: Path) -> None:
    _in_trainer(config_eval_redefined)(attacked)
    problem = next(p for p in verify_run(attacked).problems if p.rule == "eval-config")
    assert "eval.temperature 1.0, the mllog line generation_validation_rollout_temperature 0.1" in problem.message
    assert json.dumps(problem.seq) == "0"


def test_the_hotter_evaluation_breaks_no_other_rule_and_is_reported_by_no_command_as_a_pass(attacked: Path) -> None:
    _in_trainer(eval_sampled_hotter_everywhere)(attacked)
    problems = verify_run(attacked).problems
    assert {p.rule for p in problems} == {"benchmark-eval"}, problems
    assert "temperature 1.0, not 0.1" in problems[0].message
    for command in ("verify", "replay", "score"):  # refused: the run fails verify
        done = run_cli(command, str(attacked))
        assert done.returncode == 1 and "benchmark-eval" in done.stdout + done.stderr, done.stdout + done.stderr
    table = _wide_cli("evals", str(attacked))  # the events as they are: no pass, no fail
    verdicts = [x.split()[6:8] for x in table.splitlines() if x.split()[:1] in (["18"], ["19"])]
    assert verdicts == [["NOT", "COMPARABLE"]] * 2 and "temperature 1.0, not 0.1" in table, table


def _wide_cli(*args: str) -> str:
    """`recorder ARGS` on a terminal wide enough for every cell on one line, whatever the tests run under."""
    import os
    import shutil
    import subprocess
    import sys

    exe = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
    env = os.environ | {"COLUMNS": "400"}
    done = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def test_an_adopted_segment_appended_to_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A signed run whose trainer died before it closed, its open segment adopted by a resumed writer (as
    `recorder train --resume` does; tests/integrity/test_adoption.py kills and resumes a real trainer), then
    one event appended to that segment, rechained."""
    import os
    import subprocess
    import sys

    from recorder.signing import SIGNING_KEY_ENV, load_signer
    from recorder.store.adoption import adopt, adoptable
    from recorder.store.log import LogWriter
    from tests.integrity.forge import write_open

    assert run_cli("keygen", "-o", str(tmp_path / "key")).returncode == 0
    monkeypatch.setenv(SIGNING_KEY_ENV, str(tmp_path / "key"))
    run = RunDir.create(tmp_path, "killed")
    killed = (  # the writer dies after its appends: no closing record, so no signature
        "import os, sys; from recorder.store.log import LogWriter; from recorder.store.kinds import RunStart; "
        "w = LogWriter(sys.argv[1], 'trainer'); w.append(RunStart()); w.append(RunStart()); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", killed, str(run.path)], check=True, env=dict(os.environ))
    signer = load_signer(tmp_path / "key")
    adopt(run, signer, adoptable(run, verify_run(run, untrusted_ok=True).segments, "trainer", signer.public_key_hex))
    LogWriter(run, "trainer").close()  # the resumed session's own segment, signed
    assert verify_run(run).ok, verify_run(run).problems
    segment = run.events / "trainer-0001.arrows"
    events = rows(segment)
    fact = next(e for e in reversed(events) if e["kind"] == "run_start")  # the last fact, not its signature
    write_open(segment, [*events, {**fact, "time_ns": events[-1]["time_ns"] + 1}])
    problems = verify_run(run).problems
    assert [(p.rule, p.segment, p.seq) for p in problems] == [("adopted-segment", segment.name, len(events))]
