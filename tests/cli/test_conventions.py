"""The conventions users bring from git, uv and the Hugging Face CLI: a usage error is one `error:` line with
the closest option or command (exit 2), `-h` and `-V` work, help speaks in metavars (`N`, `PATH`,
`KEY=VALUE`), shell completion installs, `--format json` prints one document, warnings go to stderr, and
`RECORDER_ROOT` is the root of every command that takes `--root`."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from recorder.cli import app
from tests.cli.shell import make_root, run_main
from tests.helpers import RECORDER, REPO


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_root(tmp_path_factory.mktemp("conventions"))


def one_error(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), text
    assert "Traceback" not in text and "╭" not in text, text
    return lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["replay", "x", "--interpretaton", "official"],
            "error: no such option --interpretaton; did you mean --interpretation?",
        ),
        (["verfy", "x"], "error: no such command verfy; did you mean verify or query?"),
        (["verify"], "error: missing argument RUN_DIR"),
        (
            ["eval", "x", "--workers", "two"],
            "error: invalid value for --workers: Input should be a valid integer, unable to parse string as an integer",
        ),
        (["train", "--nproc", "0"], "error: invalid value for --nproc: Input should be greater than or equal to 1"),
        (
            ["events", "x", "--format", "yaml"],
            "error: invalid value for --format: 'yaml' is not one of 'table', 'json'",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else " ".join(v[:2]),
)
def test_a_usage_error_is_one_line_naming_the_fix(args: list[str], said: str) -> None:
    r = run_main(*args)
    assert r.code == 2, r
    assert one_error(r.err) == said
    assert r.out == ""


def test_h_and_capital_v_are_help_and_version() -> None:
    top, sub, version = run_main("-h"), run_main("replay", "-h"), run_main("-V")
    assert top.code == sub.code == version.code == 0
    assert top.out.startswith("Usage: recorder") and "-h, --help" in top.out
    assert sub.out.startswith("Usage: recorder replay [OPTIONS] RUN_DIR"), sub.out
    assert re.fullmatch(r"recorder \d+\.\d+\.\d+\S*\n", version.out), version.out


def every_help() -> list[tuple[str, str]]:
    group = typer.main.get_command(app)
    names = [name for name, c in group.commands.items() if not c.hidden]  # type: ignore[attr-defined]
    return [("recorder", run_main("--help").out)] + [(n, run_main(n, "--help").out) for n in names]


def test_help_shows_metavars_never_python_types() -> None:
    for name, text in every_help():
        types = re.findall(r"<(?:str|int|float|bool|path|list\[\w+\]|\w+ range)>", text, re.I)  # typer's type names
        assert types == [], f"{name}: {types}"
        assert "{run_dir}" not in text, name
    train = run_main("train", "--help").out
    assert re.search(r"--set KEY=VALUE\s", train) and re.search(r"--nproc N\s", train), train
    assert re.search(r"--root PATH\s", train), train


def test_shell_completion_is_installable_and_completes_commands() -> None:
    # the shell is found among the command's parent processes, so bash runs it as a user's shell does: the
    # `:` after it keeps bash from exec-ing it (a runner started outside any shell would have none)
    script = subprocess.run(
        ["bash", "-c", f"{shlex.quote(RECORDER)} --show-completion; :"], capture_output=True, text=True
    )
    assert script.returncode == 0 and "_RECORDER_COMPLETE=complete_bash" in script.stdout, script
    env = {**os.environ, "_RECORDER_COMPLETE": "complete_bash", "COMP_WORDS": "recorder ver", "COMP_CWORD": "1"}
    done = subprocess.run([RECORDER], capture_output=True, text=True, env=env)
    assert done.stdout.split() == ["verify"], done


@pytest.mark.parametrize(
    ("args", "keys"),
    [
        (["verify", "{root}/worked"], {"run_id", "ok", "verdict", "events", "segments", "warnings", "problems"}),
        (["runs", "--root", "{root}"], {"root", "runs", "untrusted", "unverified", "unchecked", "not_comparable"}),
        (["evals", "{root}/worked"], {"run_id", "pass_means", "not_comparable", "evaluations"}),
        (["replay", "{root}/worked"], {"interpretation", "status", "passing_step", "minutes", "path", "checks"}),
    ],
    ids=["verify", "runs", "evals", "replay"],
)
def test_format_json_is_one_document_on_stdout(root: Path, args: list[str], keys: set[str]) -> None:
    r = run_main(*(a.format(root=root) for a in args), "--format", "json")
    assert r.code == 0, r
    document = json.loads(r.out)  # the whole of stdout: one document
    assert keys <= set(document), sorted(document)


def test_json_documents_carry_the_facts_the_tables_show(root: Path) -> None:
    runs = json.loads(run_main("runs", "--root", str(root), "--format", "json").out)
    worked = next(r for r in runs["runs"] if r["run_id"] == "worked")
    assert worked["passing_step"] == 19 and worked["steps"] == 20
    evals = json.loads(run_main("evals", str(root / "worked"), "--format", "json").out)
    assert [(e["step"], e["accuracy"]) for e in evals["evaluations"]] == [(19, 0.72), (18, 0.70), (20, 0.71)]
    verify = json.loads(run_main("verify", str(root / "worked"), "--format", "json").out)
    assert verify["ok"] is True and verify["verdict"] == "intact"
    assert sum(s["events"] for s in verify["segments"]) == verify["events"]


def test_verify_warnings_go_to_stderr(root: Path) -> None:
    r = run_main("verify", str(root / "worked"))  # its checkpoints are not on disk: warned, not checked
    assert r.code == 0, r
    assert "warning:" in r.err and "warning:" not in r.out, r
    assert r.out.rstrip().endswith("verify: intact"), r.out


def test_recorder_root_is_the_root_of_commands_that_take_one(root: Path) -> None:
    env = {**os.environ, "RECORDER_ROOT": str(root)}
    done = subprocess.run([RECORDER, "runs", "--format", "json"], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done
    assert {r["run_id"] for r in json.loads(done.stdout)["runs"]} == {"killed", "worked"}


def loaded_by(*args: str) -> tuple[int, set[str]]:
    """The exit status of `recorder ARGS` in a fresh interpreter, and the top-level modules it had loaded."""
    probe = (
        "import sys, json\nsys.argv = ['recorder', *json.loads(sys.argv[1])]\nfrom recorder.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]), file=sys.__stdout__)"
    )
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(args)], capture_output=True, text=True, cwd=REPO)
    code, modules = json.loads(done.stdout.strip().splitlines()[-1])
    return code, set(modules)


HEAVY = {"torch", "duckdb", "pyarrow", "numpy", "rich", "ray", "transformers"}


@pytest.mark.parametrize(
    "args",
    [["--help"], ["verify", "--nope"], ["train", "--root", "/proc/nowhere/runs"], ["replay", "-h"]],
    ids=" ".join,
)
def test_nothing_heavy_loads_before_the_arguments_are_checked(args: list[str]) -> None:
    code, modules = loaded_by(*args)
    assert code in (0, 2), code
    assert sorted(HEAVY & modules) == []


def test_a_root_that_cannot_hold_runs_is_refused_before_torch_as_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    for where in ("/proc/nowhere/runs", str(tmp_path / "file"), str(tmp_path / "file" / "runs")):
        r = run_main("train", "--root", where)
        assert r.code == 2, r
        assert one_error(r.err).startswith(f"error: --root {where}: "), r.err
    assert sorted(os.listdir(tmp_path)) == ["file"]  # the check left nothing behind
