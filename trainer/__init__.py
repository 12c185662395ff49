"""GRPO trainer that follows the MLPerf Training v6.1 checkpoint rule and records every fact as an event.

Modules: `task` (built-in verifiable task), `tokenizer`, `model`, `sampling` (batch-invariant rollout core),
`grpo` (pure maths), `checkpoint`, `fingerprint`, `config`, `warmup`, `rollout` (backends), `loop` (recipe).
"""
