"""results.json, typed: one frozen dataclass per kind of evidence file an evaluation writes.

- `evaluation`: the benchmark evaluator's, `PassAtKResults` (and `CommandResults` for `--backend command`);
- `harness`: a zero-shot harness session's, per scored step, `HarnessResults`;
- `zero_shot`: `recorder zero-shot`'s, per checkpoint `ZeroShotResults`, per step of a recorder run
  `ZeroShotStepResults`;
- `document`: what they share, the encoding (`to_json`, the file's bytes) and the checked parse (`from_json`);
- `claims`: a file read as claims to check, whatever it holds (`EvaluationClaims`: verify, audit).
"""
