"""`recorder import-checkpoints` on the torch DCP series an FSDP2 job writes (archives `fsdp2_epoch_N/`,
snapshots `RUN/snapshots/step_N/`), written by real torch.distributed.checkpoint: each checkpoint becomes a
weight update and a commit with the manifest of its shards, `recorder verify` holds, `recorder eval` scores
it sample for sample as the same weights in safetensors, a shard changed after import is named by verify
and refused by eval and audit, and bad input is one `error:` line with nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from recorder.adapters import dcp
from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
from recorder.checkpoints.readers import detect
from recorder.checkpoints.torch_dcp.fsdp2_layout import snapshot_meta
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from tests.checkpoints import fixtures
from tests.cli.shell import run_main
from tests.helpers import run_cli
from tests.kit import sample_series
from tests.zero_shot.conftest import pretraining  # noqa: F401  (the two-rank FSDP2 job, trained once)
from trainer.policy.errors import CheckpointError
from trainer.policy.taskspec import shipped

GBS = 256  # validation start 18
STEPS = (18, 19)
T0_NS = 1_780_000_000_000_000_000
MS = 1_000_000


def _model(step: int) -> tuple[Any, Any]:
    tok = sample_series.tokenizer()
    return tok, sample_series.model(len(tok), step, hidden_size=16, nudge=0.5)


def _touch(directory: Path, ns: int) -> None:
    for f in directory.iterdir():
        os.utime(f, ns=(ns, ns))


def write_snapshots(run: Path, meta: dict[int, dict[str, Any]] | None = None) -> Path:
    """`run/snapshots/step_N/` for STEPS, the shards' times a minute apart; `meta`: a step's snapshot_meta.json."""
    for step in STEPS:
        tok, model = _model(step)
        snap = fixtures.write_snapshot(run, step, tok, model)
        if meta and step in meta:
            (snap / "snapshot_meta.json").write_text(json.dumps(meta[step]))
        _touch(snap, T0_NS + step * 60_000 * MS)
    return run


def write_archives(root: Path, run: Path) -> Path:
    """`root/fsdp2_epoch_N/` holding STEPS, each final_meta.json naming `run` with its step, the ranks that
    wrote it and the end of its weight update."""
    root.mkdir(parents=True)
    for epoch, step in enumerate(STEPS, start=1):
        tok, model = _model(step)
        archive = fixtures.write_fsdp2_archive(run, epoch, tok, model)
        target = root / archive.name
        archive.rename(target)
        meta = {"source": str(run), "step": step, "source_world_size": 2, "weight_update_ms": _update_ms(step)}
        (target / "final_meta.json").write_text(json.dumps(meta))
    return root


def _update_ms(step: int) -> int:
    return T0_NS // MS + step * 60_000


def _events(run: Path, kind: str) -> list[Any]:
    return [e for e in read_run(RunDir.open(run)).events if e.kind == kind]


def test_snapshots_become_commits_with_the_manifest_of_their_shards(tmp_path: Path) -> None:
    series = write_snapshots(tmp_path / "job", meta={19: {"source_world_size": 2}})
    report = dcp.import_checkpoints(
        series, tmp_path / "runs" / "fsdp", fingerprint=checkpoint_fingerprinter(None), global_batch_size=GBS
    )
    assert (report.layout, report.global_batch_size, report.problems) == ("dcp-snapshot", GBS, [])
    run = tmp_path / "runs" / "fsdp"
    updates = _events(run, "weight_update")
    shard_ns = {s: T0_NS + s * 60_000 * MS for s in STEPS}
    assert [(e.step, e.samples_count, e.time_ns) for e in updates] == [(s, s * GBS, shard_ns[s]) for s in STEPS]
    commits = _events(run, "checkpoint_committed")
    assert [e.step for e in commits] == list(STEPS)
    c = commits[1].data
    snap = series / "snapshots" / "step_19"
    assert (run / c["path"]).resolve() == snap.resolve()
    assert (c["format"], c["source"], c["timing"]) == ("dcp-snapshot", "fsdp2", "shard-mtime")
    assert sorted(s["path"] for s in c["manifest"]["shards"]) == [".metadata", "__0_0.distcp"]
    assert c["manifest"]["root"] == c["sha256"]
    assert c["bytes"] == sum(f.stat().st_size for f in (snap / ".metadata", snap / "__0_0.distcp"))
    assert (c["fingerprint"]["texts"], c["fingerprint"]["dtype"]) == ("fixed", "fp32")
    (opened,) = _events(run, "run_opened")
    assert (opened.data["global_batch_size"], opened.data["config"]["source_world_size"]) == (GBS, 1)
    (stop,) = _events(run, "train_stop")
    assert stop.step == 19
    assert verify_run(RunDir.open(run)).ok
    (series / "snapshots").rename(series / "elsewhere")  # a series moved away is not checked, and said so
    report_moved = verify_run(RunDir.open(run))
    assert report_moved.ok and any("step_19 is missing: not checked" in w for w in report_moved.warnings)


def test_a_snapshot_s_meta_is_the_snapshot_meta_json_zero_shot_reads(tmp_path: Path) -> None:
    """Both commands, and detection, read a team snapshot's step from one file, by the team layout's parser; a
    `meta.json` in its place is refused naming the file to rename, not passed over."""
    series = write_snapshots(tmp_path / "job", meta={19: {"step": 190, "source_world_size": 2}})
    into = tmp_path / "runs" / "first"
    report = dcp.import_checkpoints(series, into, fingerprint=checkpoint_fingerprinter(None), global_batch_size=GBS)
    snap = series / "snapshots" / "step_19"
    assert [c.step for c in report.checkpoints][-1] == 190
    assert snapshot_meta(snap) == {"step": 190, "source_world_size": 2}
    (snap / "snapshot_meta.json").rename(snap / "meta.json")
    run = tmp_path / "runs" / "second"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), "--global-batch-size", str(GBS))
    _refused(done, run, f"{snap / 'meta.json'}: a snapshot's meta file is snapshot_meta.json", "rename it")
    with pytest.raises(CheckpointError, match="a snapshot's meta file is snapshot_meta.json"):
        detect(snap)


@pytest.mark.slow  # the default tier imports archives in the two-rank FSDP2 job's test
def test_archives_take_step_and_time_from_their_meta_through_the_cli(tmp_path: Path) -> None:
    series = write_archives(tmp_path / "archives", tmp_path / "job")
    run = tmp_path / "runs" / "fsdp"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), "--global-batch-size", str(GBS))
    assert done.returncode == 0, done.stdout + done.stderr
    commits = _events(run, "checkpoint_committed")
    assert [(e.step, e.samples_count) for e in commits] == [(s, s * GBS) for s in STEPS]
    assert [e.data["weight_update_ns"] for e in commits] == [_update_ms(s) * MS for s in STEPS]
    assert {(e.data["format"], e.data["timing"]) for e in commits} == {("dcp-archive", "meta")}
    (opened,) = _events(run, "run_opened")
    assert opened.data["config"]["source_world_size"] == 2
    assert run_cli("verify", str(run)).returncode == 0


def test_the_global_batch_size_is_asked_for_when_the_layout_gives_no_samples(tmp_path: Path) -> None:
    series = write_snapshots(tmp_path / "job")
    run = tmp_path / "runs" / "fsdp"
    done = run_cli("import-checkpoints", str(series), "--into", str(run))
    _refused(done, run, "--global-batch-size")


def _refused(done: Any, run: Path, *words: str) -> None:
    """Exit 2, one `error:` line holding `words`, and no run written."""
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    text = done.stderr.replace("\n", "")
    assert len(errors) == 1 and all(w in text for w in words), done.stderr
    assert not run.exists()


@pytest.mark.parametrize("damage", ["no checkpoints", "source gone", "no .metadata", "no step", "batch size"])
def test_bad_input_is_one_error_line_naming_the_file_and_nothing_is_written(tmp_path: Path, damage: str) -> None:
    series = write_archives(tmp_path / "archives", tmp_path / "job")
    archive = series / "fsdp2_epoch_2"
    if damage == "no checkpoints":
        series = tmp_path / "empty"
        (series / "snapshots").mkdir(parents=True)
        words: tuple[str, ...] = (f"{series / 'snapshots'}: no step_N/",)
    elif damage == "source gone":
        (tmp_path / "job").rename(tmp_path / "moved")
        words = (f"{series / 'fsdp2_epoch_1' / 'final_meta.json'}: source", "set source to where it is now")
    elif damage == "no .metadata":
        (archive / ".metadata").unlink()
        words = (f"{archive / '.metadata'}: missing", "save it again")
    elif damage == "no step":
        meta = json.loads((archive / "final_meta.json").read_text())
        (archive / "final_meta.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "step"}))
        words = (f"{archive / 'final_meta.json'}: no step", 'add "step": N')
    else:  # the meta and the option disagree: neither silently wins
        meta = json.loads((archive / "final_meta.json").read_text())
        (archive / "final_meta.json").write_text(json.dumps(meta | {"global_batch_size": 2 * GBS}))
        words = (f"{archive / 'final_meta.json'}: global_batch_size is {2 * GBS}, --global-batch-size {GBS}",)
    run = tmp_path / "runs" / "fsdp"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), "--global-batch-size", str(GBS))
    _refused(done, run, *words)


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_shard_changed_after_import_is_named_by_verify_and_refused_by_eval(tmp_path: Path) -> None:
    series = write_archives(tmp_path / "archives", tmp_path / "job")
    run = tmp_path / "runs" / "fsdp"
    # the commands in this process through the CLI's entry point: their exit codes and words are what is read
    done = run_main("import-checkpoints", str(series), "--into", str(run), "--global-batch-size", str(GBS))
    assert done.code == 0, done.out + done.err
    _flip(series / "fsdp2_epoch_1" / "__0_0.distcp")
    done = run_main("verify", str(run))
    assert done.code == 1, done.out + done.err
    assert "commit-sha" in done.out and "step 18's shard __0_0.distcp is not the committed one" in done.out
    task = str(shipped("next-number"))
    done = run_main("eval", str(run), "--task", task, "--order", "18")
    assert done.code == 1 and "shard __0_0.distcp" in done.err.replace("\n", " "), done.out + done.err
    # forced past verification, the evaluator's own check refuses the shard before loading it
    done = run_main("eval", str(run), "--task", task, "--order", "18", "--force")
    assert done.code == 1, done.out + done.err
    done = run_main("evals", str(run))
    assert "HashMismatchError" in done.out and "__0_0.distcp" in done.out.replace("\n", ""), done.out


SPEC = """name = "tiny-count"
data = "data.jsonl"
dev = "dev.jsonl"
prompt = "Continue the count.\\n{prompt}"
k = 2
temperature = 0.7
top_p = 0.95
max_new_tokens = 4
target = 0.69
[verifier]
kind = "numeric"
"""


def _spec(where: Path) -> Path:
    where.mkdir()
    rows = [{"id": f"q{i}", "prompt": f"{i}, {i + 1}, {i + 2},", "answer": str(i + 3)} for i in range(6)]
    (where / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (where / "dev.jsonl").write_text('{"id": "d0", "prompt": "one, two, three,", "answer": "four"}\n')
    (where / "spec.toml").write_text(SPEC)
    return where / "spec.toml"


def _samples(run: Path) -> dict[int, list[dict[str, Any]]]:
    """Per evaluated step, its samples as results.json records them (seed, prompt, completion, outcome)."""
    out = {}
    for e in _events(run, "eval_result"):
        out[e.step] = json.loads((run / e.data["results"]).read_text())["samples"]
    return out


def test_eval_scores_dcp_checkpoints_sample_for_sample_as_their_safetensors(tmp_path: Path) -> None:
    from evaluator.session import evaluate_run
    from evaluator.settings import Options
    from recorder.adapters import nemo

    spec = _spec(tmp_path / "spec")
    snapshots = write_snapshots(tmp_path / "job")
    archives = write_archives(tmp_path / "archives", tmp_path / "job")
    tok = sample_series.tokenizer()
    hf = tmp_path / "hf"
    for step in STEPS:
        sample_series.write_step(hf, step, _update_ms(step), tok, _model(step)[1])
    nemo.import_checkpoints(hf, tmp_path / "runs" / "hf", fingerprint=checkpoint_fingerprinter(spec))
    for series in (snapshots, archives):
        dcp.import_checkpoints(
            series, tmp_path / "runs" / series.name, fingerprint=checkpoint_fingerprinter(spec), global_batch_size=GBS
        )
    for name in ("hf", "job", "archives"):
        evaluate_run(tmp_path / "runs" / name, Options(task=spec, all=True))
    fsdp, safetensors = _samples(tmp_path / "runs" / "job"), _samples(tmp_path / "runs" / "hf")
    assert sorted(fsdp) == list(STEPS) and all(len(fsdp[s]) == 12 for s in STEPS)
    assert fsdp == safetensors == _samples(tmp_path / "runs" / "archives")
    completions = [[x["completion_sha256"] for x in fsdp[s]] for s in STEPS]
    assert completions[0] != completions[1]  # the steps' weights differ, and so do their completions
    assert run_cli("verify", str(tmp_path / "runs" / "job")).returncode == 0
    # audit re-reads the imported checkpoint where it lies, every shard checked against the commit's manifest
    _flip(snapshots / "snapshots" / "step_19" / "__0_0.distcp")
    done = run_cli("audit", str(tmp_path / "runs" / "job"), "--steps", "19", "--task", str(spec), "--force")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "step 19: MISSING EVIDENCE" in done.stdout and "step_19/__0_0.distcp: shard sha256" in done.stdout


def _letters_spec(where: Path) -> Path:
    """A spec in the job's alphabet (lower-case letters, space and punctuation): its dev split fingerprints."""
    where.mkdir()
    (where / "data.jsonl").write_text('{"id": "q0", "prompt": "the cat sees the", "answer": "dog"}\n')
    (where / "dev.jsonl").write_text('{"id": "d0", "prompt": "the big dog runs over", "answer": " the stone."}\n')
    (where / "spec.toml").write_text(SPEC.replace('kind = "numeric"', 'kind = "exact"'))
    return where / "spec.toml"


@pytest.mark.slow
def test_a_two_rank_fsdp2_job_s_archive_and_snapshots_import_and_verify(
    pretraining: Path,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    """The series torchrun wrote (tests/zero_shot/train_tiny.py: FSDP2 over two gloo ranks): every rank's
    shard is in the manifest and the world size is the job's."""
    for series, into, steps in (
        (pretraining / "run", tmp_path / "snapshots", [10, 20]),
        (pretraining, tmp_path / "archive", [20]),
    ):
        fingerprint = checkpoint_fingerprinter(_letters_spec(tmp_path / f"spec-{into.name}"))
        report = dcp.import_checkpoints(series, into, fingerprint=fingerprint, global_batch_size=1280)
        assert [c.step for c in report.checkpoints] == steps
        commits = _events(into, "checkpoint_committed")
        shards = {s["path"] for c in commits for s in c.data["manifest"]["shards"]}
        assert shards == {".metadata", "__0_0.distcp", "__1_0.distcp"}
        (opened,) = _events(into, "run_opened")
        assert opened.data["config"]["source_world_size"] == 2
        assert verify_run(RunDir.open(into)).ok
