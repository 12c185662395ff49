"""zero-shot writes each results.json once, with one writer, and reads results back with one reader: in
evaluator/zero_shot/, only outputs.py parses or writes a results document (`write_outputs` builds it,
`verified_results` reads it), and the runner calls the writer once. A recorder run's harness session hands
the document it wrote on in memory (StepOutcome.document); nothing rereads it from disk to write it again.
Read from the source, as the layout tests read it."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ZERO_SHOT = Path(__file__).resolve().parents[2] / "evaluator" / "zero_shot"
READS = {"from_json", "zero_shot_from_json", "from_dict"}
WRITES = {"write_results", "write_output", "write_outputs"}


def _calls(path: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and (f.id == "zero_shot_from_json" or f.id in WRITES):
            found[f.id] += 1
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id.endswith("Results"):
            found[f.attr] += 1  # HarnessResults.from_json(...): a results document's parser
        elif isinstance(f, ast.Attribute) and f.attr in WRITES:
            found[f.attr] += 1
    return found


def test_only_outputs_reads_or_writes_a_results_document() -> None:
    offenders = {
        f"{p.name}: {name}"
        for p in sorted(ZERO_SHOT.glob("*.py"))
        if p.name != "outputs.py"
        for name, n in _calls(p).items()
        if n and (name in READS or (name in WRITES and name != "write_outputs"))
    }
    assert offenders == set()


def test_the_runner_calls_the_writer_once() -> None:
    calls = {p.name: _calls(p)["write_outputs"] for p in ZERO_SHOT.glob("*.py") if _calls(p)["write_outputs"]}
    assert calls == {"runner.py": 1}
