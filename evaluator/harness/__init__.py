"""Zero-shot evaluation of a run's checkpoints through lm-evaluation-harness (`recorder eval --harness lm-eval`)."""
