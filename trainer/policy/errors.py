"""The policy's exceptions: one base, small subclasses. The policy stands alone (the evaluator imports it
without the trainer), so its errors live here and the trainer's build on the same core classes."""

from __future__ import annotations

from recorder.errors import DataError, InputError, RecorderError


class PolicyError(RecorderError):
    """Base of every error the policy raises on purpose: a model, tokenizer, task or checkpoint it cannot use."""


class ModelError(PolicyError):
    """A model that cannot be built or loaded (no usable tokenizer, not a causal LM, a missing package file)."""


class KernelChoiceError(PolicyError, InputError):
    """A RECORDER_CPU_KERNELS value other than auto, native or pinned."""


class TaskError(PolicyError, InputError):
    """A task spec or verifier that cannot be used."""


class TokenizerError(PolicyError, InputError):
    """Text the tokenizer cannot encode, or a tokenizer.json it cannot read."""


class CheckpointError(PolicyError, DataError):
    """A checkpoint that could not be written or read (disk full, permission, missing or altered file)."""


class ShardMismatchError(CheckpointError):
    """A shard that is missing, added, or whose size or sha256 differs from the committed manifest."""


class UnsafeMetadataError(CheckpointError, InputError):
    """A DCP `.metadata` naming a global outside the allow list: refused before any of it ran."""

    exit_code = 2


class ModelCodeError(PolicyError, InputError):
    """A `--model-code`/`--model-factory` that cannot build the model: a bad spec, a failed import, a
    module shadowed from outside the tree, a model whose names do not match the checkpoint's."""


class FactoryCallError(ModelCodeError):
    """The team's factory raised while it built the model (its own code's failure, with the cause chained)."""


class ExportTargetError(PolicyError, InputError):
    """`recorder export-hf -o DIR`: a directory that already holds files (nothing is overwritten)."""
