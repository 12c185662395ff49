"""atheris (libFuzzer) targets: the segment reader and the config loader. Run as a script:

    python -m tests.reliability.atheris_targets segment -runs=5000
    python -m tests.reliability.atheris_targets config -runs=5000

Any exception other than a RecorderError is a finding (libFuzzer stops and exits non-zero).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from recorder.errors import RecorderError
    from recorder.store.reader import read_run
    from recorder.verify import verify_run

TMP = Path(tempfile.mkdtemp(prefix="atheris-"))
RUN = TMP / "run"
(RUN / "events").mkdir(parents=True)
SEGMENT = RUN / "events" / "trainer-0001.arrows"


def segment_target(data: bytes) -> None:
    SEGMENT.write_bytes(data)
    for fn in (read_run, verify_run):
        try:
            fn(RUN)
        except RecorderError:
            pass


def config_target(data: bytes) -> None:
    from trainer.config import load_config

    fdp = atheris.FuzzedDataProvider(data)
    suffix = ".json" if fdp.ConsumeBool() else ".toml"
    sets = [fdp.ConsumeUnicodeNoSurrogates(24) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    path = TMP / f"c{suffix}"
    path.write_bytes(fdp.ConsumeBytes(fdp.remaining_bytes()))
    try:
        load_config(path, sets)
    except RecorderError:
        pass


def main() -> None:
    target = {"segment": segment_target, "config": config_target}[sys.argv[1]]
    seed_dir = TMP / "corpus"
    seed_dir.mkdir()
    if sys.argv[1] == "segment":  # start from a real segment so the fuzzer mutates valid structure
        from tests.kit.synthetic import record_run

        run = record_run(TMP / "seed", "s", gbs=256, steps=19)
        (seed_dir / "seg").write_bytes((run.events / "trainer-0001.arrows").read_bytes())
    else:
        (seed_dir / "cfg").write_bytes(b"\x00seed = 3\nmax_steps = 19\n[checkpoint]\nsync = true\n")
    atheris.Setup([sys.argv[0], *sys.argv[2:], str(seed_dir)], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
