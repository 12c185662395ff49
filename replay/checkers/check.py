"""The real checkers of mlperf-logging on a derived log: the compliance checker and the RCP checker.

Nothing is re-implemented: the text is written to a file and handed to mlperf-logging's own code, in
process (its messages are collected instead of printed). Every result names the mlperf-logging version,
since a ruleset's checks change between releases of the checker.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import TextIO

from replay.rulesets import KnownRuleset, get_known

# a ruleset as a replay looked it up, or the name a caller outside a replay gives (looked up where it enters)
Ruleset = KnownRuleset | str


@cache
def mlperf_logging_version() -> str:
    return version("mlperf-logging")


@dataclass(frozen=True)
class CheckResult:
    """One checker's verdict on one log (or one set of logs), with its reasons."""

    tool: str
    ruleset: str
    ok: bool
    reasons: tuple[str, ...]
    mlperf_logging: str
    error: str | None = None  # 'checker error: <type>: <message>' when the checker itself raised
    ran: bool = True  # False: not applicable (no RCPs for the benchmark, open division); `reasons` says why
    warnings: tuple[str, ...] = ()  # what the checker warned of (a second run_start), kept with its verdict

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "checker error"
        if not self.ran:
            return "not run"
        return "PASSED" if self.ok else "FAILED"

    def summary(self) -> str:
        """e.g. 'compliance checker (mlperf-logging 4.1.68, training 6.1.0): FAILED: reason; reason'."""
        head = f"{self.tool} (mlperf-logging {self.mlperf_logging}, training {self.ruleset}): "
        if self.error is not None:
            return head + self.error
        warned = f" (warning: {'; '.join(self.warnings)})" if self.warnings else ""
        return head + self.verdict + warned + (": " + "; ".join(self.reasons) if self.reasons else "")


def checker_error(e: BaseException) -> str:
    """How a checker that raised is reported: 'checker error: <type>: <message>'."""
    return f"checker error: {type(e).__name__}: {e}"


@contextmanager
def _quiet() -> Iterator[None]:
    """mlperf-logging reports through the root logger; keep its output off our terminal."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def _reason(message: str) -> str:
    """A checker message without its state dumps: first line, the failed test or code, the line's key."""
    from replay.mllog_format import parse_line

    lines = message.strip().split("\n")
    kept = [lines[0].rstrip(":")]
    if lines[0].startswith("Failed executing") and len(lines) > 1:
        kept.append(lines[1].strip())
    kept += [ln.strip() for ln in lines[1:] if ln.startswith("failed test:")]
    parsed = [p for ln in lines[1:] if (p := parse_line(ln)) is not None]
    if parsed and lines[0].startswith("Failed executing"):
        kept.append(f"(on the '{parsed[0].key}' line)")
    return " ".join(kept)


def compliance(text: str, ruleset: Ruleset = "6.1.0", usage: str = "training") -> CheckResult:
    """`python -m mlperf_logging.compliance_checker --usage training --ruleset RULESET`, in process."""
    return _compliance_written(lambda f: f.write(text), ruleset, usage)


def compliance_lines(lines: Iterable[str], ruleset: Ruleset = "6.1.0", usage: str = "training") -> CheckResult:
    """`compliance` on a log given line by line (without line endings): written to the checker's file as the
    lines are produced, never held whole (the checker's own reading is mlperf-logging's memory)."""
    return _compliance_written(lambda f: f.writelines(line + "\n" for line in lines), ruleset, usage)


def _compliance_written(write: Callable[[TextIO], object], ruleset: Ruleset, usage: str) -> CheckResult:
    with tempfile.TemporaryDirectory(prefix="replay-check-") as tmp, _quiet():
        path = Path(tmp) / "result_0.txt"
        with open(path, "w", encoding="utf-8") as f:
            write(f)
        return compliance_file(path, ruleset, usage)


def _first_long_line(path: Path) -> str | None:
    """Why the checker is not run on `path`: its first line over LINE_LIMIT (read a bounded piece at a time)."""
    from replay.mllog_format import LINE_LIMIT

    with open(path, "rb") as f:
        number, length = 1, 0
        while chunk := f.read(1 << 20):
            for i, piece in enumerate(chunk.split(b"\n")):
                if i:
                    number, length = number + 1, 0
                length += len(piece)
                if length > LINE_LIMIT:
                    return (
                        f"line {number} is longer than {LINE_LIMIT:,} bytes: not checked (the compliance "
                        "checker's time grows with the square of a line's length)"
                    )
    return None


def _first_mistyped_line(path: Path, ruleset: KnownRuleset) -> str | None:
    """Why the checker is not run on `path`: its first line whose value has the wrong type (replay.recorded_types);
    lines are at most LINE_LIMIT long here (checked first)."""
    from replay.recorded_types import first_type_problem

    with open(path, encoding="utf-8", errors="replace") as f:
        why = first_type_problem((line.rstrip("\n") for line in f), ruleset)
    return None if why is None else f"{why}: the checker would compare it as it is; not checked"


def compliance_file(path: Path, ruleset: Ruleset, usage: str = "training") -> CheckResult:
    """The compliance checker on a file as it is: its verdict, or the exception it raised as a verdict."""
    from mlperf_logging.compliance_checker import mlp_compliance

    from replay.checkers.checker_configs import parsed_once

    known = ruleset if isinstance(ruleset, KnownRuleset) else get_known(ruleset)
    ruleset = known.name
    too_long = _first_long_line(path)
    if too_long is not None:  # the checker would take hours on it: not run, and the log does not pass
        return CheckResult("compliance checker", ruleset, False, (too_long,), mlperf_logging_version())
    mistyped = _first_mistyped_line(path, known)
    if mistyped is not None:  # the checker reads `true` as 1: its verdict would rest on a value it misread
        return CheckResult("compliance checker", ruleset, False, (mistyped,), mlperf_logging_version())

    with _quiet(), parsed_once(mlp_compliance):
        del mlp_compliance.enqueued_configs[:]  # a module-level queue: left over by an earlier failure
        checker = mlp_compliance.make_checker(usage, ruleset, False, False)
        try:
            valid, _, _, _ = mlp_compliance.main(str(path), f"{usage}_{ruleset}/common.yaml", checker)
        except Exception as e:  # the checker's own eval/exec of YAML code raises on logs it did not foresee
            del mlp_compliance.enqueued_configs[:]
            return CheckResult("compliance checker", ruleset, False, (), mlperf_logging_version(), checker_error(e))
    messages = [*checker.not_overwritable, *checker.overwritable.values()]
    warnings = tuple(_reason(m) for m in checker.warnings.values())  # a pass with warnings is not a clean pass
    return CheckResult(
        "compliance checker",
        ruleset,
        bool(valid),
        tuple(_reason(m) for m in messages),
        mlperf_logging_version(),
        warnings=warnings,
    )


def rcp(texts: Sequence[str], ruleset: str = "6.1.0", usage: str = "training") -> CheckResult:
    """mlperf-logging's RCP checker (`check_directory`, pruned RCPs) on a set of result logs.

    The checker olympic-averages a set of runs (3 for qwen35_397b_grpo); a single run is checked as that
    many identical copies of itself, which the reasons say.
    """
    from mlperf_logging.rcp_checker import rcp_checker

    from replay.checkers.rcp_data import prepared_once

    notes: list[str] = []
    files = list(texts)
    if len(files) == 1:
        benchmark = _benchmark_of(files[0])
        copies = rcp_checker.submission_runs[usage].get(benchmark, 1) if benchmark else 1
        if copies > 1:
            files = files * copies
            notes.append(f"one run checked as {copies} identical copies (the RCP checker averages a set of runs)")
    with tempfile.TemporaryDirectory(prefix="replay-rcp-") as tmp, _quiet(), prepared_once(rcp_checker):
        for i, text in enumerate(files):
            (Path(tmp) / f"result_{i}.txt").write_text(text, encoding="utf-8")
        try:
            ok, message, _ = rcp_checker.check_directory(tmp, usage, ruleset, False, False, rcp_pass="pruned_rcps")
        except Exception as e:  # no benchmark key, a log the checker did not foresee
            return CheckResult("RCP checker", ruleset, False, tuple(notes), mlperf_logging_version(), checker_error(e))
    return CheckResult("RCP checker", ruleset, bool(ok), (str(message), *notes), mlperf_logging_version())


def rcp_not_run(ruleset: str, why: str) -> CheckResult:
    """The RCP checker's row where it does not apply (the reason says why)."""
    return CheckResult("RCP checker", ruleset, True, (why,), mlperf_logging_version(), ran=False)


def _benchmark_of(text: str) -> str | None:
    from replay.mllog_format import parse_line

    for line in text.splitlines():
        p = parse_line(line)
        if p is not None and p.key == "submission_benchmark":
            value = p.get("value")
            return value if isinstance(value, str) else None
    return None
