"""Import a NeMo-RL deferred-evaluation checkpoint series as `weight_update` and `checkpoint_committed` events.

NeMo-RL (grpo.deferred_evaluation) saves a native checkpoint after every step from `grpo.val_start_at` on
and publishes each by renaming `tmp_step_N` to `step_N`:

    CHECKPOINT_ROOT/step_N/training_info.json   current_step, consumed_samples (in PROMPTS),
                                                training_step_end_time_ms (end of the step's weight update)
    CHECKPOINT_ROOT/step_N/config.yaml          the run's config (grpo.num_generations_per_prompt, ...)
    CHECKPOINT_ROOT/step_N/policy/weights/      the MCore weights (a directory of files)

Samples are prompts x num_generations_per_prompt. The weights are a directory, so `sha256` is that of its
`sha256sum`-style manifest (one "<sha256>  <relative path>" line per file, sorted by path) and `bytes` the
sum of the file sizes. Every checkpoint is fingerprinted by the function the caller passes in (the CLI passes
recorder.checkpoints.fingerprinter's, which loads it through recorder.checkpoints: Hugging Face
safetensors in
`policy/weights[/model]/`, format `nemo-rl-hf`, or Megatron-Core `torch_dist` in `policy/weights/iter_*/`,
format `nemo-rl-mcore`, and records the mean log-likelihood of a task spec's dev split, or of fixed texts, in
float32), which the evaluator recomputes before scoring. The Megatron weights' files are hashed while they are
loaded and their manifest recorded with the commit (its root is the same sha256). Without a fingerprint
function, Megatron weights are recorded with fingerprint {} and Hugging Face ones are refused. NeMo-RL does
not record how long saving blocked training: it is written as null, with `source: "nemo-rl"` saying who wrote
them; `save_end_ns` is the newest file modification time of the checkpoint (when its write finished, as the
file system saw it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from recorder.adapters.log_series_join import SeriesStep
from recorder.adapters.series_import import (
    INT64_MAX,
    AlreadyImportedError,
    Fingerprinter,
    LoadedFiles,
    SeriesCommit,
    check_log_agrees,
    left_out_warning,
    loaded_files,
    refuse_if_strict,
    step_problems,
    write_series,
    written_ns,
)
from recorder.checkpoints.megatron import megatron_saves
from recorder.checkpoints.megatron.megatron_saves import Iteration, UnfinishedSaveError
from recorder.errors import DataError, InputError
from recorder.provenance import provenance
from recorder.rules import BENCHMARK, RULESET
from recorder.store.kinds import RunOpened
from recorder.store.run import RunDir
from recorder.store.run_files import tree_digest
from recorder.untrusted.tree_walk import files_under
from recorder.untrusted.untrusted_files import IrregularFileError, first_irregular, read_json

__all__ = ["AlreadyImportedError", "Fingerprinter", "import_checkpoints"]
SOURCE: Final = "nemo-rl"
FORMAT: Final = "nemo-rl-mcore"
HF_FORMAT: Final = "nemo-rl-hf"
NS_PER_MS = 1_000_000
MissingShards = Callable[[Path], list[str]]  # a folder -> the shard files its .metadata names that are missing
INFO: Final = "training_info.json"


class NemoImportError(InputError):
    """Base of the errors of a NeMo-RL checkpoint import."""


class NoCheckpointsError(NemoImportError):
    """A checkpoint root without any published `step_N` directory."""


class CheckpointLayoutError(NemoImportError):
    """A `step_N` directory that lacks a file NeMo-RL writes, or whose files disagree with it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NemoCheckpoint:
    """One published NeMo-RL checkpoint, as its files describe it."""

    step: int
    path: Path
    prompts: int
    samples: int
    weight_update_ms: int
    config: dict[str, Any]
    hf: bool = False  # the weights are a Hugging Face safetensors directory (evaluable by the recorder)
    iteration: Iteration | None = None  # the Megatron-Core iteration folder that holds the weights


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A `step_N` directory not imported, named with why: its save did not finish, or it is not a plain
    tree of the series' own files (a link)."""

    path: Path
    why: str
    unfinished: bool = True  # its save did not finish (else `why` says what it is and the way to import it)

    @property
    def said(self) -> str:
        return f"its save did not finish: {self.why}" if self.unfinished else self.why


def discover(root: Path) -> list[Path]:
    """The published `step_N` directories, by step. `tmp_step_N` (an unfinished save) is never one."""
    if not root.is_dir():
        raise NoCheckpointsError(f"{root}: no such checkpoint directory")
    found = [
        p
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith("step_") and p.name.removeprefix("step_").isdigit()
    ]
    if not found and megatron_saves.iteration_folders(root):
        raise NoCheckpointsError(
            f"{root}: a Megatron-LM save directory (iter_*/, {megatron_saves.TRACKER}), not a checkpoint series: "
            "import-checkpoints reads NeMo-RL's checkpointing.checkpoint_dir (step_N/, each with "
            "training_info.json, config.yaml and policy/weights/iter_*/) and FSDP2 torch DCP series"
        )
    if not found:
        raise NoCheckpointsError(
            f"{root}: no step_N checkpoint directories (NeMo-RL's checkpointing.checkpoint_dir), fsdp2_epoch_N/ "
            "archives or snapshots/step_N/ (torch DCP): point at the folder that holds them"
        )
    return sorted(found, key=lambda p: int(p.name.removeprefix("step_")))


def irregular_step(path: Path) -> str | None:
    """Why step directory `path` is not a plain tree of the series' own files (None: it is), with the way to
    import it: a link may lead to another step's weights or to files that change after they are hashed, so
    the step is left out, never followed."""
    why = first_irregular(path)
    if why is None:
        return None
    fix = (
        "replace the link by a copy of what it points to (cp -rL)"
        if "symlink" in why
        else "make it a plain tree of the regular files the save wrote"
    )
    return (
        f"{why}: a step is imported only as a plain tree of regular files in the series; to import it, {fix} "
        "and import again into a new run"
    )


def _load_json(path: Path) -> dict[str, Any]:
    try:  # a regular file of at most JSON_LIMIT: a FIFO, a symlink or a sparse giant is named, never read
        loaded = read_json(path)
    except FileNotFoundError as e:
        raise CheckpointLayoutError(f"{path}: missing (NeMo-RL writes it with every checkpoint)") from e
    except IrregularFileError as e:
        raise CheckpointLayoutError(str(e)) from e
    if not isinstance(loaded, dict):
        raise CheckpointLayoutError(f"{path}: expected a JSON object")
    return loaded


def _load_yaml(path: Path) -> dict[str, Any]:
    import yaml

    from recorder.adapters.safe_yaml import load_plain_yaml

    try:
        loaded = load_plain_yaml(path)
    except FileNotFoundError as e:
        raise CheckpointLayoutError(f"{path}: missing (NeMo-RL writes it with every checkpoint)") from e
    except yaml.YAMLError as e:
        raise CheckpointLayoutError(f"{path}: not YAML ({e})") from e
    if not isinstance(loaded, dict):
        raise CheckpointLayoutError(f"{path}: expected a mapping")
    return loaded


def _positive_int(info: dict[str, Any], key: str, path: Path, limit: int = INT64_MAX) -> int:
    value = info.get(key)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise CheckpointLayoutError(f"{path}: {key} must be a positive integer, got {value!r}")
    if value > limit:
        raise CheckpointLayoutError(f"{path}: {key} {value} is larger than the recorder can store (at most {limit})")
    return value


def _is_hf(weights: Path) -> bool:
    return (weights / "config.json").is_file() or (weights / "model" / "config.json").is_file()


def unfinished_save(path: Path, missing_shards: MissingShards | None = None) -> str | None:
    """Why the save of `step_N` directory `path` did not finish, from its files (None: nothing says so): no
    training_info.json, or a Megatron-Core save without its iteration folder, that folder's `.metadata`, or
    a shard it names (`missing_shards`, which reads the `.metadata`)."""
    info_path = path / "training_info.json"
    if not os.path.lexists(info_path):
        return f"{info_path}: missing (NeMo-RL writes it with every checkpoint)"
    weights = path / "policy" / "weights"
    if not weights.is_dir() or _is_hf(weights):
        return None
    try:
        return megatron_saves.unfinished(weights, _load_json(info_path), info_path, missing_shards)
    except megatron_saves.IterationChoiceError as e:
        raise CheckpointLayoutError(str(e)) from e
    except DataError as e:  # a .metadata that cannot be read
        raise CheckpointLayoutError(f"{path}: {e}") from e


def read_checkpoint(path: Path) -> NemoCheckpoint:
    """Read and check one `step_N` directory."""
    step = int(path.name.removeprefix("step_"))
    info_path = path / "training_info.json"
    info = _load_json(info_path)
    if _positive_int(info, "current_step", info_path) != step:
        raise CheckpointLayoutError(
            f"{info_path}: current_step {info['current_step']} differs from the directory's step {step}"
        )
    prompts = _positive_int(info, "consumed_samples", info_path)
    update_ms = _positive_int(info, "training_step_end_time_ms", info_path, INT64_MAX // NS_PER_MS)
    config = _load_yaml(path / "config.yaml")
    generations = (config.get("grpo") or {}).get("num_generations_per_prompt")
    if not isinstance(generations, int) or isinstance(generations, bool) or not 0 < generations <= INT64_MAX // prompts:
        raise CheckpointLayoutError(
            f"{path / 'config.yaml'}: grpo.num_generations_per_prompt must be a positive integer, got {generations!r}"
        )
    weights = path / "policy" / "weights"
    if not weights.is_dir():
        raise CheckpointLayoutError(f"{weights}: missing (the MCore weights directory)")
    hf = _is_hf(weights)
    try:
        iteration = None if hf else megatron_saves.choose_iteration(weights, info, info_path)
    except megatron_saves.IterationChoiceError as e:
        raise CheckpointLayoutError(str(e)) from e
    return NemoCheckpoint(
        step=step,
        path=path,
        prompts=prompts,
        samples=prompts * generations,
        weight_update_ms=update_ms,
        config=config,
        hf=hf,
        iteration=iteration,
    )


def global_batch_size(config: dict[str, Any]) -> int:
    """In samples: policy.train_global_batch_size, else grpo.num_prompts_per_step x num_generations_per_prompt."""
    gbs = (config.get("policy") or {}).get("train_global_batch_size")
    if gbs is None:
        grpo = config.get("grpo") or {}
        prompts, generations = grpo.get("num_prompts_per_step"), grpo.get("num_generations_per_prompt")
        if isinstance(prompts, int) and isinstance(generations, int):
            gbs = prompts * generations
    if not isinstance(gbs, int) or gbs <= 0:
        raise CheckpointLayoutError(
            "config.yaml: neither policy.train_global_batch_size nor "
            "grpo.num_prompts_per_step x grpo.num_generations_per_prompt gives the "
            "global batch size"
        )
    return gbs


def series_problems(checkpoints: list[NemoCheckpoint], gbs: int, left: list[LeftOut] | None = None) -> list[str]:
    """Departures from the rule: the series must start at the validation start and have no gaps. A gap the
    import made by leaving out a step whose save did not finish (`left`) is named as that, with why."""
    steps = [c.step for c in checkpoints]
    named = {int(s.path.name.removeprefix("step_")): s.said for s in left or []}
    gaps = set(range(steps[0], steps[-1] + 1)) - set(steps) if steps else set()
    said = [f"step {n} left out, {why}" for n, why in sorted(named.items()) if n in gaps]
    if not said or gaps - set(named):
        said.append("was keep_top_k pruning them?")
    return step_problems([(c.step, c.samples) for c in checkpoints], gbs, "; ".join(said))


@dataclass(frozen=True)
class NemoImportReport:
    run: RunDir
    checkpoints: list[NemoCheckpoint]
    global_batch_size: int
    problems: list[str]
    evaluated: bool  # the run already holds evaluation results (e.g. from NeMo-RL's own evaluator's mllog)
    warnings: list[str] = field(default_factory=list)  # shard files and iteration folders left out, named
    left_out: list[LeftOut] = field(default_factory=list)  # steps whose save did not finish: not imported


def import_checkpoints(
    root: Path,
    into: Path,
    *,
    writer: str = "import-nemo",
    fingerprint: Fingerprinter | None = None,
    strict: bool = False,
    missing_shards: MissingShards | None = None,
) -> NemoImportReport:
    """Append a weight_update and a checkpoint_committed per checkpoint to the run `into` (created if missing).

    A new run also gets run_opened (from the first checkpoint's config.yaml); train_stop is added at the final
    checkpoint's step (NeMo-RL saves the final step unconditionally) unless the run already has one.
    `strict`: a series that breaks the rule is refused (SeriesNotCompliantError) before anything is written.
    `missing_shards`: the shard files an iteration folder's `.metadata` names that are not there
    (recorder.checkpoints.torch_dcp.dcp_listing.missing_shards), so that a save missing one is left out before
    any weights are loaded (else it is found while loading).
    Each checkpoint is recorded with `fingerprint(path)`, the record the evaluator recomputes and the manifest
    of Megatron-Core weights (recorder.checkpoints.fingerprinter.checkpoint_fingerprinter gives it); the import
    never loads weights itself.
    """
    found = discover(root)  # before a byte is read: a step that is not a plain tree is left out, named
    left = [LeftOut(p, why, unfinished=False) for p in found if (why := irregular_step(p)) is not None]
    steps = [p for p in found if p not in {s.path for s in left}]
    left += [LeftOut(p, why) for p in steps if (why := unfinished_save(p, missing_shards)) is not None]
    checkpoints = [read_checkpoint(p) for p in steps if p not in {s.path for s in left}]
    if checkpoints:  # a series that is not the imported training log's is refused before a byte is loaded
        facts = [SeriesStep(c.step, c.samples, c.weight_update_ms * NS_PER_MS, c.path / INFO) for c in checkpoints]
        check_log_agrees(into, global_batch_size(checkpoints[0].config), facts)
        gbs = global_batch_size(checkpoints[0].config)
        refuse_if_strict(root, series_problems(checkpoints, gbs, left), strict)
    made: list[tuple[NemoCheckpoint, tuple[dict[str, Any], LoadedFiles | None]]] = []
    for c in checkpoints:  # every one before anything is written
        try:
            made.append((c, _fingerprint(c, fingerprint)))
        except UnfinishedSaveError as e:  # its .metadata names a shard that was never written
            left.append(LeftOut(c.path, f"{e} (the save did not finish)"))
    if not made:
        raise NoCheckpointsError(f"{root}: no finished checkpoint: " + "; ".join(s.why for s in left))
    checkpoints = [c for c, _ in made]
    gbs = global_batch_size(checkpoints[0].config)
    problems = series_problems(checkpoints, gbs, left)
    refuse_if_strict(root, problems, strict)  # again: a step whose shards were missing may have left a gap
    commits = [_series_commit(c, record, loaded) for c, (record, loaded) in made]
    run, kinds = write_series(into, writer, _run_opened(checkpoints[0], gbs), commits)
    warnings = [
        left_out_warning(c.path, loaded.left_out) for c, (_, loaded) in made if loaded is not None and loaded.left_out
    ] + [_passed_over(c) for c in checkpoints if c.iteration is not None and c.iteration.passed_over]
    left.sort(key=lambda s: int(s.path.name.removeprefix("step_")))
    return NemoImportReport(run, checkpoints, gbs, problems, "eval_result" in kinds, warnings, left)


def _passed_over(c: NemoCheckpoint) -> str:
    """The line naming the iteration folders of `c` that hold no part of its checkpoint."""
    assert c.iteration is not None
    folders = ", ".join(str(p) for p in c.iteration.passed_over)
    return (
        f"{folders}: left out of step {c.step} (never read): {c.iteration.recorded_by} names "
        f"{c.iteration.folder.name}, the iteration its checkpoint is"
    )


def _run_opened(first: NemoCheckpoint, gbs: int) -> RunOpened:
    mlperf = (first.config.get("logger") or {}).get("mlperf") or {}
    return RunOpened(
        benchmark=mlperf.get("benchmark", BENCHMARK),
        ruleset=RULESET,
        division=mlperf.get("division"),
        global_batch_size=gbs,
        config=first.config,
        provenance=provenance(),
        resumed_from=None,
        source=SOURCE,
    )


def _fingerprint(c: NemoCheckpoint, fingerprint: Fingerprinter | None) -> tuple[dict[str, Any], LoadedFiles | None]:
    """(the fingerprint record of `c`, the manifest of its Megatron-Core weights and the files loading read
    besides them, or None)."""
    if fingerprint is None:
        if not c.hf:
            return {}, None
        raise NemoImportError(
            f"{c.path}: Hugging Face weights are recorded with their fingerprint, and no fingerprint function "
            "was given (recorder.checkpoints.fingerprinter.checkpoint_fingerprinter, as `recorder "
            "import-checkpoints` uses)"
        )
    try:
        record, manifest = fingerprint(c.path)
    except UnfinishedSaveError:
        raise
    except DataError as e:
        raise CheckpointLayoutError(f"{c.path}: its weights cannot be loaded to fingerprint: {e}") from e
    # every file of the weights is in the manifest; the step's config.yaml, the config.json and tokenizer
    # (wherever they were found) are the files loading read besides them
    return record, None if manifest is None else loaded_files(manifest)


def _series_commit(c: NemoCheckpoint, fingerprint: dict[str, Any], loaded: LoadedFiles | None) -> SeriesCommit:
    manifest = loaded.manifest if loaded is not None else None
    # the Megatron weights' manifest root is their tree digest: hashed once, while they were loaded
    sha256, size = (
        (manifest["root"], sum(s["bytes"] for s in manifest["shards"]))
        if manifest
        else tree_digest(c.path / "policy" / "weights")
    )
    return SeriesCommit(
        step=c.step,
        samples=c.samples,
        path=c.path,
        weight_update_ns=c.weight_update_ms * NS_PER_MS,
        save_end_ns=written_ns(files_under(c.path)),
        sha256=sha256,
        bytes=size,
        fingerprint=fingerprint,
        format=HF_FORMAT if c.hf else FORMAT,
        dtype=_dtype(c.config),
        source=SOURCE,
        prompts=c.prompts,
        manifest=manifest,
        files=loaded.files if loaded is not None else None,
        record=c.path / INFO,
    )


def _section(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    return value if isinstance(value, dict) else {}


def _dtype(config: dict[str, Any]) -> str | None:
    """The precision the rollouts were generated in, which the rule evaluates in: NeMo-RL's
    `policy.generation.vllm_cfg.precision` ("bfloat16", "fp8"), not `policy.precision` (training's, which
    may be fp32 while vLLM samples in bf16); `policy.precision` only where the generation section names none
    (a generation backend that samples with the training weights)."""
    policy = _section(config, "policy")
    generation = _section(policy, "generation")
    vllm = _section(generation, "vllm_cfg")
    for precision in (vllm.get("precision"), generation.get("precision"), policy.get("precision")):
        if isinstance(precision, str) and precision:
            return precision
    return None
