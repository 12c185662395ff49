"""Every writer of events against the writer contract (tests/contract/writer_contract.py), each on a tiny run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recorder.run import RunDir
from tests.contract.writer_contract import WriterContract

T0_MS = 1_780_000_000_000


class TestTrainer(WriterContract):
    """The default run of `recorder train`, shared with the trainer's tests (trained once per session)."""

    writer = "trainer"
    shared_run = "trained_run"


class TestEvaluator(WriterContract):
    writer = "evaluator"

    def record(self, root: Path) -> RunDir:
        from evaluator.order import parse_order
        from evaluator.session import evaluate_run
        from evaluator.settings import Options
        from tests.evaluator.synth import record_run

        run = record_run(root, steps=20, target=-1.0, samples=2)  # random weights score 0.0 > -1: all pass
        evaluate_run(run.path, Options(order=parse_order("descending"), all=True))
        return run


class TestMllogImporter(WriterContract):
    writer = "import"
    durability = "at-close"  # the imported file is the record: one fsync at close

    def record(self, root: Path) -> RunDir:
        from recorder.adapters.mllog_import import import_file
        from replay.mllog_format import INTERVAL_END, INTERVAL_START, POINT_IN_TIME, encode_line

        lines: list[tuple[str, str, Any, dict[str, Any]]] = [
            (POINT_IN_TIME, "submission_benchmark", "qwen35_397b_grpo", {}),
            (POINT_IN_TIME, "global_batch_size", 256, {}),
            (INTERVAL_START, "init_start", None, {}),
            (INTERVAL_END, "init_stop", None, {}),
            (INTERVAL_START, "run_start", None, {}),
            (
                POINT_IN_TIME,
                "tracked_stats",
                {"reward": 0.5, "reduced_train_loss": 0.1},
                {"step": 1, "samples_count": 256},
            ),
            (POINT_IN_TIME, "eval_accuracy", 0.7, {"samples_count": 256}),
            (INTERVAL_END, "run_stop", None, {"status": "success", "samples_count": 256}),
        ]
        log = root / "result_0.txt"
        text = [encode_line(T0_MS + i, kind, key, value, meta) for i, (kind, key, value, meta) in enumerate(lines)]
        log.write_text("\n".join([*text, ":::MLLOG {not json"]) + "\n")
        return import_file(log, root / "runs", "imported").run


class TestNemoImporter(WriterContract):
    writer = "import-nemo"

    def record(self, root: Path) -> RunDir:
        from recorder.adapters.nemo import import_checkpoints
        from tests.adoption import nemo_layout

        for step in (18, 19, 20):
            nemo_layout.write_checkpoint(root / "ckpt", step, T0_MS + step * 60_000)
        import_checkpoints(root / "ckpt", root / "runs" / "nemo")
        return RunDir.open(root / "runs" / "nemo")


class TestMllogDropIn(WriterContract):
    writer = "mllog"

    def record(self, root: Path) -> RunDir:
        from recorder.adapters import mllog as dropin

        run = RunDir.create(root, "dropin")
        logger = dropin.MLLogger(run=run)
        logger.event(key="submission_benchmark", value="qwen35_397b_grpo")
        logger.start(key="run_start")
        logger.event(key="tracked_stats", value={"reward": 0.5}, metadata={"step": 1, "samples_count": 256})
        logger.end(key="run_stop", metadata={"status": "success"})
        logger.close()
        return run


# The same contract, each writer given a signing key (the evaluator's signed session is in
# tests/integrity/test_commit_files.py, which runs it anyway).


class TestSignedMllogImporter(TestMllogImporter):
    signed = True


class TestSignedNemoImporter(TestNemoImporter):
    signed = True


class TestSignedMllogDropIn(TestMllogDropIn):
    signed = True
