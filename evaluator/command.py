"""`--backend command`: the submitter's own evaluation, run once per checkpoint after the integrity checks.

    recorder eval RUN --backend command --command "python my_eval.py --ckpt {checkpoint} --out {out}"

`{checkpoint}` becomes the checkpoint directory and `{out}` a JSON file the command must write:
`{"accuracy": 0.0..1.0, "samples": N, "records": [...]}` (records optional, kept as given). The command runs
without a shell; its command line, exit status and the SHA-256 of its stdout and stderr go into the
results' provenance, or into the `eval_failed` event when it exits non-zero or writes no valid JSON: a
failed command is never a score.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.committed import CommittedCheckpoint, resolve
from evaluator.errors import CommandFailed
from evaluator.results_files import results_dir, write_results
from recorder.provenance import provenance
from recorder.results.evaluation import CommandCheckpoint, CommandResults
from recorder.store.kinds import EvalResult

if TYPE_CHECKING:
    from evaluator.run_facts import RunFacts

OUTPUT = "command-output.json"


def command_line(template: str, checkpoint: Path, out: Path) -> list[str]:
    """The argv of `template` with {checkpoint} and {out} filled in (each argument on its own: no shell)."""
    return [a.replace("{checkpoint}", str(checkpoint)).replace("{out}", str(out)) for a in shlex.split(template)]


@dataclass(frozen=True, slots=True)
class CommandRun:
    """What running the command gave: its exit status and output, or why it could not start."""

    returncode: int | None  # None: it never started (`error` says why)
    stdout: bytes = b""
    stderr: bytes = b""
    error: str = ""


def execute(argv: list[str]) -> CommandRun:
    """Run `argv` here, without a shell. A worker calls this, so that the command gets the worker's
    accelerator (a Ray actor with `num_gpus=1` sees only its own GPU)."""
    try:
        done = subprocess.run(argv, capture_output=True, check=False)
    except OSError as e:
        return CommandRun(None, error=str(e))
    return CommandRun(done.returncode, done.stdout, done.stderr)


def run_command(argv: list[str], where: str, runner: Callable[[list[str]], CommandRun] = execute) -> dict[str, Any]:
    """Run the command (through `runner`: a worker's); -> what provenance records of it. CommandFailed when
    it cannot start or exits non-zero."""
    details: dict[str, Any] = {"command": shlex.join(argv)}
    done = runner(argv)
    if done.returncode is None:
        raise CommandFailed(f"{where}: the evaluation command could not start: {done.error}", details)
    details |= {
        "exit_status": done.returncode,
        "stdout_sha256": hashlib.sha256(done.stdout).hexdigest(),
        "stderr_sha256": hashlib.sha256(done.stderr).hexdigest(),
    }
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or [""])[-1][:200]
        raise CommandFailed(
            f"{where}: the evaluation command exited with status {done.returncode}" + (f" ({last})" if last else ""),
            details,
        )
    return details


def read_output(out: Path, where: str, details: dict[str, Any]) -> tuple[float, int, list[Any] | None]:
    """(accuracy, samples, records) from the command's JSON; CommandFailed naming what is wrong."""

    def fail(why: str) -> CommandFailed:
        return CommandFailed(f"{where}: the evaluation command's {out.name} {why}", details)

    try:
        doc = json.loads(out.read_text())
    except FileNotFoundError:
        raise fail("was not written") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise fail(f"is not JSON ({e})") from e
    if not isinstance(doc, dict):
        raise fail("is not a JSON object")
    acc, samples, records = doc.get("accuracy"), doc.get("samples"), doc.get("records")
    if isinstance(acc, bool) or not isinstance(acc, (int, float)) or not math.isfinite(acc) or not 0 <= acc <= 1:
        raise fail(f"has accuracy {acc!r}: expected a number from 0 to 1")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise fail(f"has samples {samples!r}: expected a positive integer")
    if records is not None and not isinstance(records, list):
        raise fail("has records that are not a list")
    return float(acc), samples, records


def score_with_command(
    facts: RunFacts,
    cp: CommittedCheckpoint,
    template: str,
    checked: tuple[str, dict[str, Any], dict[str, float]],
    *,
    segment: str,
    runner: Callable[[list[str]], CommandRun],
    clock: Callable[[], int],
    start_ns: int,
    t0: float,
) -> tuple[CommandResults, Path, str, list[tuple[str, float, EvalResult]]]:
    """Run the command on a checkpoint that passed the integrity checks (`checked`: weights sha256,
    fingerprint report, timings). -> (results.json's document, its path, its sha256, the eval_result)."""
    digest, fp, timings = checked
    directory = resolve(facts.run.path, cp)
    folder = results_dir(facts.run, cp.step)
    out = folder / OUTPUT
    out.unlink(missing_ok=True)  # a file left by an earlier attempt must not pass for this one's
    t = time.monotonic()
    command = run_command(command_line(template, directory, out), f"step {cp.step}", runner)
    timings["command_s"] = time.monotonic() - t
    accuracy, samples, records = read_output(out, f"step {cp.step}", command)
    timings["total_s"] = time.monotonic() - t0
    target = facts.eval_cfg.target
    doc = CommandResults(
        run_id=facts.run_id,
        step=cp.step,
        samples_count=cp.samples_count,
        metric="accuracy (submitter's command)",
        score=accuracy,
        n_tasks=samples,
        target=target,
        passed=accuracy > target,
        backend={"name": "command"},
        checkpoint=CommandCheckpoint(path=cp.path, sha256=digest, bytes=cp.bytes, weight_update_ns=cp.weight_update_ns),
        fingerprint=fp,
        provenance={**provenance(), "command": command},
        timings={"start_ns": start_ns, "end_ns": clock(), **{k: round(v, 6) for k, v in timings.items()}},
        evaluator_segment=segment,
        records=None if records is None else tuple(records),
    )
    path = folder / "results.json"
    sha = write_results(path, doc)
    return (
        doc,
        path,
        sha,
        [("accuracy", accuracy, EvalResult(metric="command", n=samples, target=target, backend="command"))],
    )
