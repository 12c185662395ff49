"""The README's and docs' commands given wrong paths, bytes, modes and options: each is refused with exit 2
(the input is wrong) and exactly one line that starts with `error:`, names what was wrong, and carries no
traceback; stdout stays empty. Names whose bytes are not UTF-8 among them: refused by name, shown escaped.
A root holding a run folder with such a name still answers for its other runs, naming the odd one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.shell import make_root, run_main

ODD = os.fsdecode(b"run-\xff\xfe")  # a name whose bytes are not UTF-8, as Python hands it from argv
SHOWN = "run-\\xff\\xfe"  # ... and as the error shows it


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("bad-inputs")
    root = make_root(base / "runs")
    (base / "a-file").write_text("not a run\n")
    return {
        "root": str(root),
        "run": str(root / "worked"),
        "file": str(base / "a-file"),
        "base": str(base),
        "long": str(base / ("a" * 5000)),  # longer than any filesystem's names and paths
    }


# (id, argv with {root} {run} {file} {base} {odd}, a phrase of the error line)
CASES: list[tuple[str, list[str], str]] = [
    # options that do not exist: the closest one named
    ("misspelt option", ["replay", "{run}", "--interpretaton", "official"], "did you mean --interpretation?"),
    ("misspelt --set", ["train", "--sett", "max_steps=2"], "did you mean --set?"),
    ("misspelt --wide", ["runs", "--root", "{root}", "--wdie"], "did you mean --wide?"),
    ("unknown top option", ["--loud"], "no such option --loud"),
    ("misspelt command", ["verfy", "{run}"], "no such command verfy; did you mean verify"),
    ("unknown command", ["frobnicate"], "no such command frobnicate"),
    # missing arguments and values
    ("verify no run", ["verify"], "missing argument RUN_DIR"),
    ("eval no run", ["eval"], "missing argument RUN_DIR"),
    ("evals no run", ["evals"], "missing argument RUN_DIR"),
    ("replay no run", ["replay"], "missing argument RUN_DIR"),
    ("events no run", ["events"], "missing argument RUN_DIR"),
    ("score no run", ["score"], "missing argument RUN_DIRS"),
    ("import no file", ["import"], "missing argument PATHS"),
    ("keygen no -o", ["keygen"], "missing option -o / --output"),
    ("--trust no value", ["verify", "{run}", "--trust"], "option --trust requires an argument"),
    ("--root no value", ["runs", "--root"], "option --root requires an argument"),
    # values of the wrong kind or out of range, named by the option given
    ("--workers two", ["eval", "{run}", "--workers", "two"], "invalid value for --workers"),
    ("--nproc 0", ["train", "--nproc", "0"], "invalid value for --nproc"),
    ("--nproc x", ["train", "--nproc", "x"], "invalid value for --nproc"),
    ("--timeout -1", ["query", "--root", "{root}", "SELECT 1", "--timeout", "-1"], "invalid value for --timeout"),
    ("--fingerprint maybe", ["eval", "{run}", "--fingerprint", "maybe"], "invalid value for --fingerprint"),
    ("--dtype fp64", ["eval", "{run}", "--dtype", "fp64"], "invalid value for --dtype"),
    ("--backend tf", ["eval", "{run}", "--backend", "tf"], "invalid value for --backend"),
    ("events --format yaml", ["events", "{run}", "--format", "yaml"], "invalid value for --format"),
    ("verify --format csv", ["verify", "{run}", "--format", "csv"], "invalid value for --format"),
    ("runs --format csv", ["runs", "--root", "{root}", "--format", "csv"], "invalid value for --format"),
    ("evals --format xml", ["evals", "{run}", "--format", "xml"], "invalid value for --format"),
    ("replay --format xml", ["replay", "{run}", "--format", "xml"], "invalid value for --format"),
    ("query --format xml", ["query", "--root", "{root}", "SELECT 1", "--format", "xml"], "invalid value for --format"),
    ("--steps -18", ["eval", "{run}", "--harness", "lm-eval", "--steps", "-18"], "--steps '-18'"),
    ("--steps x", ["eval", "{run}", "--harness", "lm-eval", "--steps", "x"], "--steps 'x'"),
    ("--order -18", ["eval", "{run}", "--order", "-18"], "--order '-18'"),
    ("--steps without --harness", ["eval", "{run}", "--steps", "18"], "add --harness lm-eval"),
    # modes that do not go together or do not exist
    ("replay -i nope", ["replay", "{run}", "-i", "nope"], "unknown interpretation"),
    ("score --ruleset 9", ["score", "{run}", "--ruleset", "9.9.9"], "unknown ruleset"),
    ("replay --compare -o", ["replay", "{run}", "--compare", "-o", "{base}/x.txt"], "--compare"),
    ("verify --require-signed", ["verify", "{run}", "--require-signed"], "--require-signed needs"),
    ("train --set no =", ["train", "--set", "nokey", "--root", "{base}/t"], "expected KEY=VALUE"),
    ("train --config missing", ["train", "--config", "{base}/nope.toml", "--root", "{base}/t"], "no such file"),
    ("query DELETE", ["query", "--root", "{root}", "DELETE FROM events"], "read-only"),
    # paths that are missing, or not what the command reads
    ("verify missing", ["verify", "{base}/nope"], "no such run directory"),
    ("evals missing", ["evals", "{base}/nope"], "no such run directory"),
    ("replay missing", ["replay", "{base}/nope"], "no such run directory"),
    ("events missing", ["events", "{base}/nope"], "no such run directory"),
    ("eval missing", ["eval", "{base}/nope"], "no such run directory"),
    ("report missing", ["report", "{base}/nope"], "no such run directory"),
    ("verify a file", ["verify", "{file}"], "not a directory"),
    ("runs missing root", ["runs", "--root", "{base}/nope"], "no such root directory"),
    ("import missing", ["import", "{base}/nope.log", "--root", "{base}/i"], "cannot read the mllog"),
    ("train --resume missing", ["train", "--resume", "{base}/nope"], "no such run directory"),
    ("train --root /proc", ["train", "--root", "/proc/nowhere/runs"], "--root /proc/nowhere/runs"),
    ("train --root a file", ["train", "--root", "{file}"], "is not a folder"),
    ("train --root under a file", ["train", "--root", "{file}/runs"], "is not a folder"),
    ("replay -o /proc", ["replay", "{run}", "-o", "/proc/nope/x.txt"], "does not exist"),
    # a root that is a file, or under a folder that does not exist: said as such, nothing made
    ("import --root a file", ["import", "--root", "{file}", "{file}"], "is not a folder"),
    ("runs --root a file", ["runs", "--root", "{file}"], "a-file: not a folder"),
    ("query --root a file", ["query", "--root", "{file}", "SELECT 1"], "a-file: not a folder"),
    ("compact --root a file", ["compact", "--root", "{file}"], "a-file: not a folder"),
    ("plot --root a file", ["plot", "--root", "{file}"], "a-file: not a folder"),
    ("train --root missing folder", ["train", "--root", "{base}/nope/runs"], "nope does not exist; create it first"),
    ("import --root missing folder", ["import", "--root", "{base}/nope/r", "{file}"], "does not exist; create it"),
    # numbers out of range
    ("train lr inf", ["train", "--set", "learning_rate=inf", "--root", "{base}/t"], "inf is not a finite number"),
    ("train steps 1e23", ["train", "--set", "max_steps=1e23", "--root", "{base}/t"], "1e+23 is not an integer"),
    # a path of 5,000 characters
    ("verify long path", ["verify", "{long}"], "too long for the filesystem"),
    ("replay long path", ["replay", "{long}"], "too long for the filesystem"),
    ("runs long root", ["runs", "--root", "{long}"], "too long for the filesystem"),
    ("train long root", ["train", "--root", "{long}"], "too long for the filesystem"),
    # names whose bytes are not UTF-8: refused by name, escaped
    ("replay odd name", ["replay", "{base}/{odd}"], SHOWN),
    ("evals odd name", ["evals", "{base}/{odd}"], SHOWN),
    ("events odd name", ["events", "{base}/{odd}"], SHOWN),
    ("eval odd name", ["eval", "{base}/{odd}"], SHOWN),
    ("score odd name", ["score", "{base}/{odd}"], SHOWN),
    ("import odd file", ["import", "{base}/{odd}.log", "--root", "{base}/i"], SHOWN),
    ("train --root odd", ["train", "--root", "{base}/{odd}"], SHOWN),
    ("train --run-id odd", ["train", "--run-id", "{odd}", "--root", "{base}/t"], SHOWN),
    ("runs --root odd", ["runs", "--root", "{base}/{odd}"], SHOWN),
    ("query --root odd", ["query", "--root", "{base}/{odd}", "SELECT 1"], SHOWN),
]


@pytest.mark.parametrize(("args", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_error_line_exit_2(places: dict[str, str], args: list[str], said: str) -> None:
    argv = [a.format(odd=ODD, **places) for a in args]
    r = run_main(*argv)
    assert "Traceback" not in r.out + r.err, r.err
    errors = [line for line in r.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.err
    assert said in errors[0], r.err
    assert r.code == 2, r
    assert r.out == "", r.out


def test_an_honest_run_under_a_folder_named_in_other_bytes_verifies(tmp_path: Path) -> None:
    """verify reads a run through Python's own file objects, whatever bytes its path holds: no false alarm."""
    from tests.kit.synthetic import record_run

    record_run(tmp_path / ODD, "r1", gbs=256, steps=20, closed=True)
    r = run_main("verify", str(tmp_path / ODD / "r1"))
    assert r.code == 0 and "verify: intact" in r.out and "Traceback" not in r.err, r


def test_a_run_folder_named_in_other_bytes_is_named_and_left_out_of_the_history(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    os.rename(root / "killed", root / ODD)  # its name is no longer UTF-8
    for args in (["runs", "--root", str(root)], ["query", "--root", str(root), "SELECT run_id FROM runs"]):
        r = run_main(*args)
        assert r.code == 0 and "Traceback" not in r.out + r.err, r
        assert "worked" in r.out, r.out  # the other runs still answer
        assert f"{SHOWN}: left out of the history: its name is not UTF-8" in r.err, r.err


def test_a_read_command_never_makes_the_root_it_is_pointed_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "nonexistent" / "x"
    monkeypatch.setenv("RECORDER_ROOT", str(root))
    for args in (["runs"], ["query", "SELECT 1"], ["compact"], ["plot"]):
        r = run_main(*args)
        assert r.code == 2 and r.err.startswith(f"error: {root}: no such root directory"), r
    r = run_main("train")  # train makes a root, never the folders above it
    assert r.code == 2 and "does not exist; create it first" in r.err, r
    assert list(tmp_path.iterdir()) == []
