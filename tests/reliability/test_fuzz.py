"""Hostile input: random bytes, truncations and mutations of real segments, random config files and
--set values, random mllog files. Only the project's typed errors (RecorderError), never a crash or a hang
(hypothesis' deadline bounds each example: generous, since a loaded 2-core machine is slow, but a hang
still fails)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recorder.adapters.mllog_import import import_file
from recorder.errors import RecorderError
from recorder.store.reader import read_run
from recorder.verify import verify_run
from replay.derive import derive_run
from tests.kit.synthetic import record_run
from trainer.config import TrainConfig, load_config

FUZZ = settings(max_examples=60, deadline=30_000, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def real_segment(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    run = record_run(tmp_path_factory.mktemp("seg"), "r", gbs=256, steps=20, evals=[(18, 0.7)])
    return (run.events / "trainer-0001.arrows").read_bytes()


def _run_with(tmp: Path, data: bytes) -> Path:
    run = tmp / f"r{len(list(tmp.iterdir()))}"
    (run / "events").mkdir(parents=True)
    (run / "events" / "trainer-0001.arrows").write_bytes(data)
    return run


def _only_typed_errors(run: Path) -> None:
    """Read, verify and derive: each either answers or raises a RecorderError subclass."""
    try:
        events = read_run(run).events
    except RecorderError:
        events = None
    try:
        verify_run(run)
    except RecorderError:
        pass
    if events is not None:
        try:
            derive_run(events, "6.1.0", "official")
        except RecorderError:
            pass


@FUZZ
@given(data=st.binary(max_size=4096))
def test_random_bytes_segment(data: bytes, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    _only_typed_errors(_run_with(tmp_path_factory.mktemp("rb"), data))


@FUZZ
@given(cut=st.integers(0, 10**6))
def test_truncated_real_segment(real_segment: bytes, cut: int, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    run = _run_with(tmp_path_factory.mktemp("tr"), real_segment[: cut % (len(real_segment) + 1)])
    _only_typed_errors(run)
    # Any truncation, even inside the schema, is a torn tail (or an empty segment), never an altered log.
    assert verify_run(run).ok


@FUZZ
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, 10**6), st.sampled_from(["flip", "insert", "delete", "zero", "ff"]), st.integers(0, 255)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_mutated_real_segment(real_segment: bytes, edits, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    data = bytearray(real_segment)
    for pos, op, byte in edits:
        i = pos % max(1, len(data))
        if op == "flip" and data:
            data[i] ^= 1 << (byte % 8)
        elif op == "insert":
            data[i:i] = bytes([byte])
        elif op == "delete" and data:
            del data[i]
        elif op == "zero":
            data[i : i + 4] = b"\0\0\0\0"
        elif op == "ff":
            data[i : i + 4] = b"\xff\xff\xff\xff"  # a huge length prefix: must not allocate or hang
    _only_typed_errors(_run_with(tmp_path_factory.mktemp("mu"), bytes(data)))


# -- the trainer's config loader --------------------------------------------------------------------------

KEYS = st.sampled_from(
    [
        "seed",
        "model",
        "max_steps",
        "learning_rate",
        "checkpoint.sync",
        "checkpoint",
        "eval.k",
        "eval",
        "warmup.enabled",
        "num_prompts_per_step",
        "a.b.c",
        "",
        ".",
        "eval.k.x",
        "micro_batch_size",
        "threads",
        "config_filename",
    ]
)
VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(-(2**70), 2**70).map(str),
    st.floats().map(repr),
    st.sampled_from(["true", "[1,2]", "{a=1}", '"x"', "inf", "nan", "1e999", "[[[[", "0x10", "-0"]),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)


def _load(path: Path | None, sets: list[str]) -> None:
    try:
        assert isinstance(load_config(path, sets), TrainConfig)
    except RecorderError:
        pass


@FUZZ
@given(sets=st.lists(st.one_of(st.builds(lambda k, v: f"{k}={v}", KEYS, VALUES), st.text(max_size=20)), max_size=6))
@example(sets=["model=~0"])  # `~0` names no user: left as typed, as a shell leaves it
@example(sets=["task=~nosuchuser/spec.toml"])
def test_set_values(sets: list[str]) -> None:
    _load(None, sets)


@FUZZ
@given(obj=JSONISH, suffix=st.sampled_from([".json", ".toml"]))
def test_config_files(obj, suffix: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("cfg") / f"c{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(obj))
    else:
        body = obj if isinstance(obj, dict) else {"seed": obj}
        path.write_text("\n".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in body.items()))
    _load(path, [])


@FUZZ
@given(data=st.binary(max_size=512), suffix=st.sampled_from([".json", ".toml"]))
def test_config_file_random_bytes(data: bytes, suffix: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("cfgb") / f"c{suffix}"
    path.write_bytes(data)
    _load(path, [])


def test_config_deeply_nested_json(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    _load(path, [])


def test_config_is_a_directory(tmp_path: Path) -> None:
    _load(tmp_path, [])


# -- the mllog importer (its property test covers well-formed text; these are raw bytes) ----------------------
@FUZZ
@given(data=st.binary(max_size=2048), marker=st.booleans())
def test_import_random_bytes(data: bytes, marker: bool, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("imp")
    path = tmp / "result_0.txt"
    path.write_bytes((b":::MLLOG " if marker else b"") + data)
    try:
        report = import_file(path, tmp / "runs")
    except RecorderError:
        return
    _only_typed_errors(report.run.path)


def test_config_deeply_nested_toml_and_set(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 100_000 + "]" * 100_000)
    _load(path, [])
    _load(None, ["seed=" + "[" * 100_000])
    _load(None, ["a" + ".a" * 100_000 + "=1"])


# -- atheris (coverage-guided), when it installs -------------------------------------------------------------
@pytest.mark.parametrize("target", ["segment", pytest.param("config", marks=pytest.mark.slow)])
def test_atheris(target: str, tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.reliability.atheris_targets",
            target,
            "-runs=10000",
            "-max_total_time=10",
            f"-artifact_prefix={tmp_path}/",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Done" in r.stderr, r.stderr[-2000:]
