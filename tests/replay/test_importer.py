"""Property: whatever the lines, prefixes, line endings or broken JSON, an imported file replays
(as-recorded) exactly its ':::MLLOG' lines, in order, and every malformed one is reported by line number."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder.adapters.mllog_import import import_file
from recorder.store.reader import read_run
from replay.derive import derive_run
from replay.mllog_format import parse_line

NO_NEWLINE = st.text(alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=20)
PREFIX = st.sampled_from(["", "0: ", "[1,0]<stdout>:", ":::SYSJSON ", "junk "])
RECORD = st.fixed_dictionaries(
    {
        "namespace": st.just(""),
        "time_ms": st.integers(0, 2**44) | st.none(),
        "event_type": st.sampled_from(["POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END"]),
        "key": st.sampled_from(["run_start", "run_stop", "eval_accuracy", "tracked_stats", "global_batch_size", "x"]),
        "value": st.none()
        | st.floats(0, 1)
        | st.integers(0, 5000)
        | st.dictionaries(st.sampled_from("ab"), st.floats(0, 1)),
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "samples_count": st.integers(0, 10**6),
                "step": st.integers(0, 99),
                "status": st.sampled_from(["success", "aborted"]),
            },
        ),
    }
)


@st.composite
def mllog_line(draw: st.DrawFn) -> str:
    prefix = draw(PREFIX)
    body = json.dumps(draw(RECORD))
    if draw(st.booleans()) and draw(st.booleans()):
        body = body[: draw(st.integers(0, len(body) - 1))]  # a truncated, malformed line
    return f"{prefix}:::MLLOG {body}"


LINES = st.lists(st.one_of(mllog_line(), NO_NEWLINE), min_size=1, max_size=25).filter(
    # an mllog holds at least one record (a file of malformed mentions only is refused: test_real_world_logs)
    lambda lines: any((p := parse_line(line)) is not None and p.record is not None for line in lines)
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=LINES, crlf=st.lists(st.booleans(), min_size=25, max_size=25), final_newline=st.booleans())
def test_as_recorded_gives_every_mllog_line_back(
    lines: list[str], crlf: list[bool], final_newline: bool, tmp_path_factory
) -> None:  # type: ignore[no-untyped-def]
    text = "".join(line + ("\r\n" if crlf[i] else "\n") for i, line in enumerate(lines))
    if not final_newline:
        text = text.rstrip("\r\n")
    path = tmp_path_factory.mktemp("imp") / "result_0.txt"
    path.write_bytes(text.encode())
    report = import_file(path, path.parent / "runs")
    expected = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n") if ":::MLLOG" in ln]
    derived = derive_run(read_run(report.run).events, "6.1.0", "as-recorded")
    assert list(derived.lines) == expected
    numbered = [(n, ln) for n, ln in enumerate(text.split("\n"), 1) if ":::MLLOG" in ln]
    malformed = {n for n, _ in report.malformed}
    for n, line in numbered:
        try:
            json.loads(line.split(":::MLLOG", 1)[1])
            assert n not in malformed
        except ValueError:
            assert n in malformed
