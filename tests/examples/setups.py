"""The files a doc's console example starts from, where the doc says in words how they came about ("a writer
killed mid-append", "a second weight_update pasted in, its digests recomputed"): `python -m
tests.examples.setups SCENARIO PATH`, run by a `<!-- console: before: ... -->` line above the example, in the
example's directory. Each scenario builds its files with the recorder's own writers and the forgery kit of
tests/integrity (byte-perfect rechaining), as the tests of that behaviour do.
"""

from __future__ import annotations

import argparse
import gzip
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CORPUS

RCP_LOG = CORPUS / "qwen35_397b_grpo_rcp" / "GBS256" / "seed_1.out"


def team_birch(path: Path) -> None:
    """A dense team's repository outside the FSDP2 layouts (tests/fixtures/team_birch, with its declaration),
    and the project's shipped task records as `<task>.jsonl` exports under its eval/tasks/."""
    from tests.fixtures import team_tree

    shutil.copytree(team_tree.REPO / "tests/fixtures/team_birch", path, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(team_tree.REPO / "evaluator/harness/tasks/data", path / "eval/tasks")


def crashed(path: Path) -> None:
    """A run whose writer was killed mid-append: four complete events, then half of the fifth."""
    from recorder.store.reader import read_run
    from recorder.store.run import RunDir
    from tests.kit.synthetic import record_run

    whole = record_run(path.parent / f".{path.name}-whole", path.name, steps=2, evals=[])
    segment = next(whole.events.glob("trainer-*.arrows"))
    offsets = read_run(whole.path).segments[0].offsets
    cut = (offsets[4] + offsets[5]) // 2
    run = RunDir.create(path.parent, path.name)
    (run.events / segment.name).write_bytes(segment.read_bytes()[:cut])
    shutil.rmtree(whole.path.parent)


def tampered(path: Path) -> None:
    """A closed run with one byte of an event's value changed, the digests left as they were."""
    from tests.kit.synthetic import record_run

    run = record_run(path.parent, path.name, steps=2, evals=[])
    segment = next(run.events.glob("trainer-*.arrows"))
    data = bytearray(segment.read_bytes())
    at = data.index(b"tiny") if b"tiny" in data else len(data) // 2
    data[at] ^= 0x01
    segment.write_bytes(bytes(data))


def gzipped(path: Path) -> None:
    """A real result file, gzip-compressed as a results archive holds it."""
    path.write_bytes(gzip.compress(RCP_LOG.read_bytes()))


def result_file(path: Path) -> None:
    """A real result file (a reference convergence log of the benchmark)."""
    shutil.copyfile(RCP_LOG, path)


def rewritten(path: Path) -> None:
    """A run imported with the key `alice`, then its run_stop moved 60 s earlier and the chain recomputed."""
    import subprocess
    import sys

    from tests.integrity import forge

    subprocess.run(
        [Path(sys.executable).parent / "recorder", "import", str(RCP_LOG), "--root", str(path.parent)]
        + ["--run-id", path.name, "--signing-key", "alice"],
        check=True,
        capture_output=True,
    )
    segment = next((path / "events").glob("import-*.arrows"))

    def earlier(events: list[forge.Row]) -> list[forge.Row]:
        for event in events:
            if event["kind"] == "run_stop":
                event["time_ns"] -= 60 * 10**9
        return events

    forge.rewrite(segment, earlier)


def _mllogger(path: Path) -> tuple[Any, logging.Logger]:
    """mlperf_logging's own logger, appending to `path`."""
    from mlperf_logging.mllog import mllog as reference

    logger = logging.getLogger(f"examples-mllog-{path}")
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.FileHandler(path))
    return reference.MLLogger(logger=logger), logger


def nemo_mllog(path: Path) -> None:
    """A NeMo-RL deferred-evaluation run's mllog: the training side as tests/evaluator/nemo_run.py writes it
    (the closed GBS-256 configuration, 20 steps, no run_stop), then its deferred evaluator's lines in step
    order (18 scores 0.65, 19 passes with 0.72) and the run_stop backdated to step 19's weight update
    (docs/design.md's worked example: updates 1080, 1142, 1204 s after run_start)."""
    from tests.evaluator.nemo_run import T0_MS, update_ms, write_training_mllog

    saved = {18: 1_080_000, 19: 1_142_000, 20: 1_204_000}  # each step's tracked_stats once its update is done
    write_training_mllog(
        path, final_step=20, times=lambda step: T0_MS + saved[step] if step in saved else update_ms(step)
    )
    log, logger = _mllogger(path)
    now = T0_MS + 1_300_000
    for step, accuracy in ((18, 0.65), (19, 0.72)):
        meta = {"samples_count": step * 256, "step": step}
        log.start(key="eval_start", metadata=meta, time_ms=now)
        now += 60_000
        log.event(key="eval_accuracy", value=accuracy, metadata={"samples_count": step * 256}, time_ms=now)
        log.end(key="eval_stop", metadata=meta, time_ms=now)
    log.end(key="run_stop", metadata={"status": "success", "samples_count": 19 * 256}, time_ms=T0_MS + 1_142_000)
    for handler in logger.handlers:
        handler.close()


def nemo_series(path: Path) -> None:
    """A NeMo-RL checkpoint series, steps 18 to 20 with the weights megatron-core wrote (the golden dense
    series), their weight updates those of docs/design.md's worked example."""
    from tests.adoption import nemo_layout
    from tests.kit.sample_series import T0_MS

    for step, seconds in ((18, 1080), (19, 1142), (20, 1204)):
        nemo_layout.write_checkpoint(path, step, T0_MS + seconds * 1000)


def fsdp2_job(path: Path) -> None:
    """An FSDP2 job's run directory with `snapshots/step_18/` and `step_19/` written by torch DCP (a tiny
    Llama), no meta files, the shards' times a minute apart."""
    import os

    from tests.checkpoints import fixtures
    from tests.kit import sample_series

    for step in (18, 19):
        tok = sample_series.tokenizer()
        snap = fixtures.write_snapshot(path, step, tok, sample_series.model(len(tok), step, hidden_size=16))
        ns = (sample_series.T0_MS + step * 60_000) * 1_000_000
        for f in snap.iterdir():
            os.utime(f, ns=(ns, ns))


def tiny_llama(path: Path) -> None:
    """A tiny random Llama saved as a Hugging Face directory, with a BPE tokenizer and a chat template."""
    from tests.kit import sample_series

    tok = sample_series.tokenizer()
    sample_series.model(len(tok), 0).save_pretrained(path)
    tok.save_pretrained(path)


def smollm2_nemo(path: Path) -> None:
    """A NeMo-RL run's files with SmolLM2-135M-Instruct's weights (tests/evaluator/nemo_run.py): the
    training mllog `mlperf_training.log` (stopped after step 20) and `checkpoints/step_18` to `step_20`, in
    the folder `path`."""
    from tests.evaluator.nemo_run import write_training_mllog
    from tests.kit.sample_series import write_smollm2_series

    path.mkdir(parents=True, exist_ok=True)
    write_training_mllog(path / "mlperf_training.log", final_step=20)
    write_smollm2_series(path / "checkpoints", (18, 19, 20))


def hf_series(path: Path) -> None:
    """A NeMo-RL series with Hugging Face weights and its tokenizer (a tiny random Llama): `step_18` only, its
    weight update at step 18 of tests/kit/sample_series's run."""
    from tests.kit import sample_series

    sample_series.write_series(path, {18: sample_series.update_ms(18)})


def hf_series_18_20(path: Path) -> None:
    """The same series with steps 18, 19 and 20, a minute apart."""
    from tests.kit import sample_series

    sample_series.write_series(path, {step: sample_series.update_ms(step) for step in (18, 19, 20)})


EVALUATOR = """import json, pathlib, sys, time
step = int(pathlib.Path(sys.argv[1]).name.removeprefix("step_"))
time.sleep({delay} if step == 18 else 0)
accuracy = {{18: 0.71, 19: 0.74}}.get(step, 0.70)
pathlib.Path(sys.argv[2]).write_text(json.dumps({{"accuracy": accuracy, "samples": 251}}))
"""


def command_evaluator(path: Path) -> None:
    """A submitter's own evaluation command for `--backend command` (`python3 ev.py {checkpoint} {out}`):
    step 18 scores 0.71, step 19 0.74, any other 0.70."""
    path.write_text(EVALUATOR.format(delay=0))


def command_evaluator_slow_18(path: Path) -> None:
    """The same command, taking 20 s longer on step 18 than on the others."""
    path.write_text(EVALUATOR.format(delay=20))


def evaluated(path: Path) -> None:
    """The default `recorder train` run (checkpoints 18 and 19), every checkpoint evaluated (`eval --all`)."""
    import subprocess
    import sys

    recorder = Path(sys.executable).parent / "recorder"
    path.parent.parent.mkdir(parents=True, exist_ok=True)  # train makes its root, never the folders above it
    train = [recorder, "train", "--root", str(path.parent), "--run-id", path.name]
    subprocess.run(train, check=True, capture_output=True)
    subprocess.run([recorder, "eval", str(path), "--all"], check=True, capture_output=True)


def second_evaluation(path: Path) -> None:
    """An evaluated run, then a second evaluation of step 18 pasted in as a new evaluator segment with a lower
    score (0.5): its results file copied to results2.json with that score, every digest recomputed."""
    import hashlib
    import json

    from tests.integrity import forge

    evaluated(path)
    again = [dict(e) for e in forge.rows(forge.evaluator_segment(path)) if e["step"] == 18]
    for e in again:
        e["time_ns"] += 10 * 60 * 10**9
        if e["kind"] == "eval_result":
            source = path / e["data"]["results"]
            copy = source.with_name("results2.json")
            doc = json.loads(source.read_text())
            doc["score"] = 0.5
            copy.write_text(json.dumps(doc))
            rel = str(copy.relative_to(path))
            digest = hashlib.sha256(copy.read_bytes()).hexdigest()
            e["value"] = 0.5
            e["data"] = {**e["data"], "results": rel, "results_sha256": digest}
    forge.write(path / "events" / "evaluator-0002.arrows", again)


def second_update(path: Path) -> None:
    """An evaluated run, then a second `weight_update` for step 18 dated 60 s before `run_start`, inserted
    after the first, the trainer's chain recomputed."""
    from tests.integrity import forge

    evaluated(path)

    def insert(events: list[forge.Row]) -> list[forge.Row]:
        start = forge.first_event(events, "run_start")
        update = forge.first_event(events, "weight_update", 18)
        at = events.index(update) + 1
        return [*events[:at], {**update, "time_ns": start["time_ns"] - 60 * 10**9}, *events[at:]]

    forge.rewrite(forge.trainer_segment(path), insert)


def audit_runs(path: Path) -> None:
    """Three copies of one evaluated run `trained` under `path`: `r1` as recorded; `r2` with step 18's score
    rewritten to 0.81 in its event and its results.json, the file rehashed and the chain recomputed; `r3` with
    another run's evaluation of step 18 pasted in, renamed to this run and its step-18 commit."""
    import hashlib
    import json

    from tests.integrity import forge
    from tests.integrity.test_audit import _evaluated_elsewhere, _paste

    evaluated(path / ".original" / "trained")
    for name in ("r1", "r2", "r3"):
        shutil.copytree(path / ".original" / "trained", path / name, symlinks=True)
    shutil.rmtree(path / ".original")

    r2 = path / "r2"
    events = forge.rows(forge.evaluator_segment(r2))
    result = next(e for e in events if e["kind"] == "eval_result" and e["step"] == 18)
    results = r2 / result["data"]["results"]
    doc = json.loads(results.read_text())
    doc["score"] = result["value"] = 0.81
    results.write_text(json.dumps(doc))
    result["data"] = {**result["data"], "results_sha256": hashlib.sha256(results.read_bytes()).hexdigest()}
    forge.write(forge.evaluator_segment(r2), events)

    foreign = _evaluated_elsewhere(path.parent / f".{path.name}-foreign", "foreign", tasks=251)
    _paste(foreign, path / "r3", consistent=True)
    shutil.rmtree(foreign.parent)


def killed(path: Path) -> None:
    """A small `recorder train` run of 21 steps whose process group was SIGKILLed once it printed step 20."""
    from tests.reliability.test_resume import _train_until

    _train_until(path.parent, path.name, "step 20/")


def altered_evaluator(path: Path) -> None:
    """One byte of the existing run `path`'s first evaluation changed (in its eval_result's key), the digests
    left as they were."""
    segment = path / "events" / "evaluator-0001.arrows"
    data = bytearray(segment.read_bytes())
    data[data.index(b"accuracy")] ^= 0x01
    segment.write_bytes(bytes(data))


def clock_back(path: Path) -> None:
    """A trainer whose wall clock was set back an hour between its 5th and 6th step."""
    import time

    from recorder.store.log import LogWriter
    from recorder.store.run import RunDir

    run = RunDir.create(path.parent, path.name)
    now = [time.time_ns()]

    def clock() -> int:
        now[0] += 1_000_000
        return now[0]

    with LogWriter(run, "trainer", clock=clock) as w:
        for step in range(1, 10):
            if step == 6:
                now[0] -= 3600 * 10**9
            w.append("step_metrics", step=step, samples_count=step, data={"loss": 1.0})


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "crashed": crashed,
    "tampered": tampered,
    "gzipped": gzipped,
    "result-file": result_file,
    "rewritten": rewritten,
    "nemo-mllog": nemo_mllog,
    "nemo-series": nemo_series,
    "fsdp2-job": fsdp2_job,
    "tiny-llama": tiny_llama,
    "smollm2-nemo": smollm2_nemo,
    "hf-series": hf_series,
    "evaluated": evaluated,
    "killed": killed,
    "altered-evaluator": altered_evaluator,
    "clock-back": clock_back,
    "audit-runs": audit_runs,
    "second-evaluation": second_evaluation,
    "second-update": second_update,
    "hf-series-18-20": hf_series_18_20,
    "command-evaluator": command_evaluator,
    "command-evaluator-slow-18": command_evaluator_slow_18,
    "team-birch": team_birch,
}


def main() -> None:
    parser = argparse.ArgumentParser(description="Lay out the files a doc's console example starts from.")
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("path", type=Path)
    args = parser.parse_args()
    args.path.parent.mkdir(parents=True, exist_ok=True)
    SCENARIOS[args.scenario](args.path)


if __name__ == "__main__":
    main()
