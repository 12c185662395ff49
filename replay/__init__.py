"""Replay: the mllog as a pure function of a run's events, re-scored under named interpretations of the rule.

Never imports torch. Entry points: `replay.derive.derive`, `replay.scorekeeping.scores.write_scores`, the CLI in
`recorder.cli.replay` (`recorder replay`, `recorder import`, `recorder score`).
"""
