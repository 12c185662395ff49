"""The holdout check: the loss training logged, recomputed in its numerics."""
