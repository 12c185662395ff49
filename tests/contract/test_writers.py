"""Every writer of events against the writer contract (tests/contract/writer_contract.py), each on a tiny run."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from recorder.store.reader import Segment, read_segment
from recorder.store.run import RunDir
from recorder.store.segment import list_segments
from tests.contract.writer_contract import WriterContract

T0_MS = 1_780_000_000_000
# GBS 1280 puts the validation start at step 6 (CEIL(2.5 + 3840/1280)): a whole run, checkpoints and all, in
# seven short steps of the tiny model.
TINY = [
    "warmup.enabled=false",
    "num_prompts_per_step=320",
    "num_generations_per_prompt=4",
    "micro_batch_size=320",
    "updates_per_rollout=1",
    "max_new_tokens=2",
]


def _small_model() -> Any:
    from trainer.policy.model import ModelConfig

    return ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


def _keeping_threads(train: Any) -> Any:
    """Run `train()`, then give torch back the thread count the trainer pinned."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    try:
        return train()
    finally:
        torch.set_num_threads(threads)


class TestTrainer(WriterContract):
    """`recorder train` (GRPOTrainer) on a tiny model, checkpoints included."""

    writer = "trainer"

    def record(self, root: Path) -> RunDir:
        from trainer.config import load_config
        from trainer.loop import GRPOTrainer

        trainer = GRPOTrainer(load_config(sets=TINY), root=root, run_id="trained", model_cfg=_small_model())
        return _keeping_threads(trainer.run).run


class TestResumedTrainer(WriterContract):
    """`recorder train --resume` on a run whose trainer died after step 6's checkpoint: its segment is cut
    there, at an event's end, as a SIGKILL leaves it (each event is one write), and the later checkpoint is
    gone. The resumed session's own segment keeps the contract."""

    writer = "trainer"

    def record(self, root: Path) -> RunDir:
        import shutil

        from trainer.config import load_config
        from trainer.loop import GRPOTrainer
        from trainer.resume import plan_resume

        trainer = GRPOTrainer(load_config(sets=TINY), root=root, run_id="killed", model_cfg=_small_model())
        run = _keeping_threads(trainer.run).run
        (segment,) = [read_segment(p) for p in list_segments(run.events)]
        cut = next(i for i, e in enumerate(segment.events()) if e.kind == "checkpoint_committed")
        with open(segment.path, "r+b") as f:
            f.truncate(segment.offsets[cut + 1])
        shutil.rmtree(run.checkpoints / "step_0000007")
        _keeping_threads(GRPOTrainer.resuming(plan_resume(run.path)).run)
        return run

    def own_segments(self, run: RunDir) -> list[Segment]:
        first, resumed = list_segments(run.events)
        assert not read_segment(first).closed  # the killed session's, as the crash left it
        return [read_segment(resumed)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class TestRankSegments(WriterContract):
    """A data-parallel rank's own segment (`trainer-rank0`), from DataParallelTrainer in a gloo group of one."""

    writer = "trainer-rank0"

    def record(self, root: Path) -> RunDir:
        import torch.distributed as dist

        from trainer.config import load_config
        from trainer.parallel.data_parallel import DataParallelTrainer
        from trainer.parallel.distributed import Ranks

        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
        trainer = DataParallelTrainer(
            load_config(sets=TINY), ranks=Ranks(0, 1), root=root, run_id="ranks", model_cfg=_small_model()
        )
        return _keeping_threads(trainer.run).run  # run() leaves the group


class TestTrlCallback(WriterContract):
    """RecorderCallback inside a real TRL GRPOTrainer run (a tiny random Llama, a checkpoint every step)."""

    writer = "trainer"

    def record(self, root: Path) -> RunDir:
        pytest.importorskip("trl")
        from tests.adoption.test_trl_callback import record_trl_run

        run, _ = record_trl_run(root)
        return run


class TestHarness(WriterContract):
    """The zero-shot harness (`recorder eval --harness lm-eval`) scoring two checkpoints on its shipped data."""

    writer = "harness"

    def record(self, root: Path) -> RunDir:
        from evaluator.harness.run_session import HarnessOptions, evaluate_harness
        from evaluator.harness.taskset import SHIPPED_DATA
        from tests.evaluator.synth import record_run

        run = record_run(root, steps=19, samples=2)
        summary = evaluate_harness(run.path, HarnessOptions(tasks=["arc_easy"], data_dir=SHIPPED_DATA, examples=4))
        assert not summary.failures, summary.failures
        return run


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
        from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
        from tests.adoption import nemo_layout

        for step in (18, 19, 20):
            nemo_layout.write_checkpoint(root / "ckpt", step, T0_MS + step * 60_000)
        import_checkpoints(root / "ckpt", root / "runs" / "nemo", fingerprint=checkpoint_fingerprinter(None))
        return RunDir.open(root / "runs" / "nemo")


class TestDcpImporter(WriterContract):
    writer = "import-dcp"

    def record(self, root: Path) -> RunDir:
        from recorder.adapters.dcp import import_checkpoints
        from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
        from tests.checkpoints.test_dcp_import import write_snapshots

        series = write_snapshots(root / "job")
        import_checkpoints(
            series, root / "runs" / "fsdp", fingerprint=checkpoint_fingerprinter(None), global_batch_size=256
        )
        return RunDir.open(root / "runs" / "fsdp")


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


class TestSignedDcpImporter(TestDcpImporter):
    signed = True


class TestSignedMllogDropIn(TestMllogDropIn):
    signed = True
