"""The files a doc's console example starts from, where the doc says in words how they came about ("a writer
killed mid-append", "a second weight_update pasted in, its digests recomputed"): `python -m
tests.examples.setups SCENARIO PATH`, run by a `<!-- console: before: ... -->` line above the example, in the
example's directory. Each scenario builds its files with the recorder's own writers and the forgery kit of
tests/integrity (byte-perfect rechaining), as the tests of that behaviour do.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CORPUS

RCP_LOG = CORPUS / "qwen35_397b_grpo_rcp" / "GBS256" / "seed_1.out"


def crashed(path: Path) -> None:
    """A run whose writer was killed mid-append: four complete events, then half of the fifth."""
    from recorder.reader import read_run
    from recorder.run import RunDir
    from tests.kit.synthetic import record_run

    whole = record_run(path.parent / f".{path.name}-whole", path.name, steps=2, evals=[])
    segment = next(whole.events.glob("trainer-*.arrows"))
    offsets = read_run(whole.path).segments[0].offsets
    cut = (offsets[4] + offsets[5]) // 2
    run = RunDir.create(path.parent, path.name)
    (run.events / segment.name).write_bytes(segment.read_bytes()[:cut])
    shutil.rmtree(whole.path.parent)


def tampered(path: Path) -> None:
    """A closed run with one byte of an event's value changed, the digests left as they were."""
    from tests.kit.synthetic import record_run

    run = record_run(path.parent, path.name, steps=2, evals=[])
    segment = next(run.events.glob("trainer-*.arrows"))
    data = bytearray(segment.read_bytes())
    at = data.index(b"tiny") if b"tiny" in data else len(data) // 2
    data[at] ^= 0x01
    segment.write_bytes(bytes(data))


def gzipped(path: Path) -> None:
    """A real result file, gzip-compressed as a results archive holds it."""
    path.write_bytes(gzip.compress(RCP_LOG.read_bytes()))


def result_file(path: Path) -> None:
    """A real result file (a reference convergence log of the benchmark)."""
    shutil.copyfile(RCP_LOG, path)


def rewritten(path: Path) -> None:
    """A run imported with the key `alice`, then its run_stop moved 60 s earlier and the chain recomputed."""
    import subprocess
    import sys

    from tests.integrity import forge

    subprocess.run(
        [Path(sys.executable).parent / "recorder", "import", str(RCP_LOG), "--root", str(path.parent)]
        + ["--run-id", path.name, "--signing-key", "alice"],
        check=True,
        capture_output=True,
    )
    segment = next((path / "events").glob("import-*.arrows"))

    def earlier(events: list[forge.Row]) -> list[forge.Row]:
        for event in events:
            if event["kind"] == "run_stop":
                event["time_ns"] -= 60 * 10**9
        return events

    forge.rewrite(segment, earlier)


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "crashed": crashed,
    "tampered": tampered,
    "gzipped": gzipped,
    "result-file": result_file,
    "rewritten": rewritten,
}


def main() -> None:
    parser = argparse.ArgumentParser(description="Lay out the files a doc's console example starts from.")
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("path", type=Path)
    args = parser.parse_args()
    args.path.parent.mkdir(parents=True, exist_ok=True)
    SCENARIOS[args.scenario](args.path)


if __name__ == "__main__":
    main()
