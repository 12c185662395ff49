"""`recorder zero-shot`: lm-eval zero-shot scores of any checkpoint as a pretraining team evaluates it, after a
holdout check that recomputes the checkpoint's own eval loss against the one its training logged."""
