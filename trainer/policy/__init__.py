"""The policy, as both trainer and evaluator see it: model build and load (`model`), tokenizer, sampling,
the checkpoint's files and their fingerprint, and the task. The evaluator imports this package and nothing
else of `trainer`."""

from trainer.policy.errors import CheckpointError as CheckpointError  # what the policy's loaders raise
