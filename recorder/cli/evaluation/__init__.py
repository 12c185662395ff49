"""The evaluation commands: eval, evals, zero-shot and collect, audit."""
