"""What `recorder report` shows of a run, gathered from the history views and the files replay derives.

Nothing here computes a score. Scores and the derived mllog are the files `recorder replay` writes under
`derived/`; when one is missing or older than the run's segments, `replay.run_replay.ensure_derived` writes it
through the same functions `recorder replay` writes with. The RCP checker's verdict on the derived mllog
is kept in `derived/rcp.json` (replay.checkers.rcp_cache), since the checker reads the whole log.

The long series (steps, checkpoints) stay Arrow tables, with only the columns the page uses; the page
thins them (report.series) before any becomes Python rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from recorder.comparability import evaluated_otherwise, scored_with
from recorder.derived_state import verified_unchanged
from recorder.evaluations import BENCHMARK_METRIC, ZERO_SHOT_WRITER
from recorder.history.cache import verify_with_cache
from recorder.history.compact import fresh_manifest
from recorder.report.long_series import CHECKPOINT_COLUMNS, STEP_COLUMNS
from recorder.report.mllog_excerpt import MllogExcerpt, read_excerpt
from recorder.rules import is_standard_target, validation_start_step
from recorder.store.kinds import EvalResult, PayloadError
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir
from recorder.store.signed_segments import adopted_segments, manifest_path
from recorder.verify.proof import audited, proof_words, signatures_proven

if TYPE_CHECKING:
    from recorder.history.views import History
    from replay.rulesets import KnownRuleset
    from replay.scorekeeping.scores_check import RecheckBudget

VERIFIED_UNCHANGED = (
    "verified by `recorder verify` and unchanged in size since (derived/state.json); "
    "`recorder verify` re-reads every event"
)
VERIFIED_AT_COMPACTION = (
    "verified by `recorder compact` (every segment's digest chain) and unchanged in size since; "
    "`recorder verify` re-reads every event"
)


@dataclass
class RunFacts:
    """One run, as the report states it. Times are nanoseconds since the epoch, as recorded."""

    run: RunDir
    verify_problems: list[str]
    verify_warnings: list[str]
    scores: list[dict[str, Any]]
    mllog_name: str
    mllog_path: Path | None
    mllog: MllogExcerpt | None
    mllog_why: str  # why there is no mllog, when there is none
    rcp_ok: bool | None = None
    rcp_summary: str = ""
    facts: dict[str, Any] = field(default_factory=dict)  # the `runs` view's row
    steps: pa.Table = field(default_factory=STEP_COLUMNS.empty_table)  # one row per step, in step order
    checkpoints: pa.Table = field(default_factory=CHECKPOINT_COLUMNS.empty_table)  # one per commit, in step order
    evals: list[dict[str, Any]] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    train_stop: dict[str, Any] | None = None
    imported_from: str | None = None
    open_segments: int = 0
    proof: str = ""  # what the verdict rests on (recorder.verify.proof)
    provenance: dict[str, Any] = field(default_factory=dict)  # run_opened's, of the first session
    config_eval: dict[str, Any] | None = None  # the first run_opened's config.eval (imports record none)
    scored: list[Mapping[str, Any] | None] = field(default_factory=list)  # how each benchmark result was scored

    @cached_property
    def run_id(self) -> str:
        return recorded_run_id(self.run)

    @property
    def headline(self) -> dict[str, Any] | None:
        """The score row of the interpretation the run is scored as (official, or as-recorded if imported)."""
        return next((r for r in self.scores if r["interpretation"] == self.mllog_name), None)

    @property
    def not_comparable(self) -> list[float]:
        """Targets other than the ruleset's that the run recorded or its evaluations were judged by (an
        imported log's evaluations are judged by its own benchmark's target: that is no other target)."""
        imported = self.facts.get("origin") == "imported"
        targets = ({e["target"] for e in self.evals} if not imported else set()) | {self.facts.get("target")}
        return sorted(t for t in targets if t is not None and not is_standard_target(t))

    @property
    def other_evaluation(self) -> list[str]:
        """How the run's evaluation, as recorded and as done, is not the benchmark's (recorder.comparability)."""
        return evaluated_otherwise(self.config_eval, self.scored)

    @property
    def goal(self) -> tuple[str, float] | None:
        """How its evaluations pass: the comparison and the target (the runs view's pass_op and pass_target:
        the target the run recorded, else its benchmark's, from mlperf-logging's ruleset files)."""
        op, target = self.facts.get("pass_op"), self.facts.get("pass_target")
        if target is None:
            return None
        return (op or ">"), float(target)

    @property
    def lower_is_better(self) -> bool:
        return self.goal is not None and self.goal[0].startswith("<")

    @property
    def goal_text(self) -> str:
        """'> 0.69', '<= 0.925'; 'its benchmark's target' when none is known."""
        return "its benchmark's target" if self.goal is None else f"{self.goal[0]} {self.goal[1]:g}"

    @property
    def validation_start(self) -> int | None:
        gbs = self.facts.get("global_batch_size")
        return validation_start_step(gbs) if gbs else None


def gather(run_dir: Path, ruleset: KnownRuleset | None, budget: RecheckBudget) -> RunFacts:
    """Verify the run, make sure replay's derived files are there (its scores re-derived as `budget` allows),
    and read the mllog and the RCP verdict."""
    from replay.run_replay import ensure_derived
    from replay.scorekeeping.scores_check import not_rechecked

    run = RunDir.open(run_dir)
    manifest = fresh_manifest(run)
    verified = verified_unchanged(run)
    compacted = verified if verified is not None else None if manifest is None else int(manifest["events"])
    if compacted is not None:
        # `recorder compact` verified every segment before writing the cache, and the closed segments are
        # unchanged in size since: re-reading a million events (minutes) would add nothing but in-place
        # tampering, which the header says only `recorder verify` rules out.
        note = VERIFIED_UNCHANGED if verified is not None else VERIFIED_AT_COMPACTION
        problems, warnings, open_segments, events = [], [note], 0, compacted
        # compaction, or a verify that found nothing (not even an untrusted key), judged the run's trust
        signed = manifest_path(run).exists()
    else:
        report = verify_with_cache(run)
        problems = [f"UNTRUSTED (judged with --untrusted-ok): {p}" for p in report.untrusted]
        problems += [str(p) for p in report.problems]
        signed = signatures_proven(report)
        adopted = adopted_segments(run)  # open, but their writers are gone (recorder.store.adoption)
        warnings = list(report.warnings)
        open_segments = sum(1 for s in report.segments if not s.closed and s.name not in adopted)
        events = sum(s.events for s in report.segments)
    recheck = budget.take(events)
    if not recheck:
        warnings.append(not_rechecked(events))
    files = ensure_derived(run, ruleset, problems, recheck)
    facts = RunFacts(run, problems, warnings, files.rows, files.interpretation, files.mllog, None, files.why)
    facts.open_segments = open_segments
    headline = facts.headline
    facts.proof = proof_words(signed, audited(run, headline.get("passing_step") if headline else None))
    if files.mllog is not None:
        facts.mllog = read_excerpt(files.mllog)
    return facts


def attach_rcp(facts: RunFacts) -> None:
    """The RCP verdict where `recorder score` runs the checker: a closed run of a benchmark with RCPs."""
    from replay.rulesets import get_known

    if facts.mllog_path is None or not facts.scores:
        return
    ruleset = facts.scores[0]["ruleset"]
    benchmark, division = facts.facts.get("benchmark"), facts.facts.get("division")
    if division == "open" or not get_known(ruleset).has_rcps(benchmark):
        facts.rcp_summary = (
            f"RCP checker: not run ({division} division, {benchmark}: the checker applies to closed runs)"
        )
        return
    from replay.checkers.rcp_cache import cached_rcp

    result, _ = cached_rcp(facts.run, facts.mllog_path, ruleset)
    facts.rcp_ok, facts.rcp_summary = result.ok, result.summary()


def _quote(text: str) -> str:
    return text.replace("'", "''")


def read_views(history: History, facts: RunFacts) -> None:
    """Fill in the run's rows from the history views (one query per view)."""
    where = f"WHERE run_id = '{_quote(facts.run_id)}'"
    q = history.query
    found = q(f"SELECT * FROM runs {where}").to_pylist()
    facts.facts = found[0] if found else {}
    facts.steps = q(f"SELECT {', '.join(STEP_COLUMNS.names)} FROM steps {where} ORDER BY step").cast(STEP_COLUMNS)
    facts.checkpoints = q(f"SELECT {', '.join(CHECKPOINT_COLUMNS.names)} FROM checkpoints {where} ORDER BY step").cast(
        CHECKPOINT_COLUMNS
    )
    facts.evals = q(
        f"SELECT * FROM evals {where} AND (key = 'accuracy' OR status = 'failed') AND writer <> 'harness' "
        "ORDER BY eval_order, result_ns"
    ).to_pylist()
    for r in q(
        f"SELECT kind, data->>'resumed_from' AS source, data->>'resumed_at_step' AS at_step, "
        "data->>'resumed_checkpoint' AS resumed_checkpoint, "
        f"data->>'status' AS status, data->>'reason' AS reason, step, segment, "
        "CASE WHEN writer = 'import' THEN data->'provenance'->>'imported_from' END AS imported_from, "  # the importer's
        f"data->>'provenance' AS provenance, data->'config'->>'eval' AS config_eval FROM events {where} "
        "AND kind IN ('run_opened', 'train_stop') ORDER BY time_ns"
    ).to_pylist():
        if r["kind"] == "run_opened" and r["source"]:
            where_from = r["resumed_checkpoint"] or f"run {r['source']}"
            facts.resumed.append(f"{r['segment']} resumed training after step {r['at_step']} from {where_from}")
        if r["kind"] == "run_opened" and r["imported_from"]:
            facts.imported_from = r["imported_from"]
        if r["kind"] == "run_opened" and r["provenance"] and not facts.provenance:
            facts.provenance = json.loads(r["provenance"])
        if r["kind"] == "run_opened" and r["config_eval"] and facts.config_eval is None:
            found = json.loads(r["config_eval"])
            facts.config_eval = found if isinstance(found, dict) else None
        if r["kind"] == "train_stop":
            facts.train_stop = r
    facts.scored = [
        _scored_with(r["data"])
        for r in q(
            f"SELECT DISTINCT data FROM events {where} AND kind = 'eval_result' AND key = '{BENCHMARK_METRIC}' "
            f"AND writer <> '{ZERO_SHOT_WRITER}'"
        ).to_pylist()
    ]


def _scored_with(data: str | None) -> Mapping[str, Any] | None:
    try:
        found = json.loads(data or "{}")
        return scored_with(EvalResult.from_data(found)) if isinstance(found, dict) else None
    except (ValueError, PayloadError):  # a payload verify refuses: its settings are unknown
        return None
