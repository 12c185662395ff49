"""The checkpoint formats, one row each: the one table that the events, verify, the evaluator, the importers
and the command line read (torch-free, so verify stays so).

A row is a format as `checkpoint_committed.format` records it: which reader of `trainer.policy.checkpoints`
loads it (its `READERS` row: how a directory is recognised and read), whether its series was trained
elsewhere and imported where it lies, how verify checks its files, where its weights lie in the committed
directory, and in which dtype its fingerprint was computed. A new format is a reader plus a row here; one
the project does not ship is added while the process runs by `register_format` (with its reader's row,
`trainer.policy.checkpoints.readers.register_reader`, and, for an imported series, its importer's,
`recorder.adapters.series_importers.register_importer`). Nothing outside the tables asks a format's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from recorder.codec import names_from_table

# As recorded in checkpoint_committed.format (None: a commit recorded before the field, the trainer's file).
CheckpointFormat = Literal[
    "safetensors",
    "safetensors-adapter",
    "safetensors-index",
    "torch-dcp",
    "nemo-rl-mcore",
    "nemo-rl-hf",
    "dcp-archive",
    "dcp-snapshot",
]
# The readers (trainer.policy.checkpoints.readers.READERS), named as detection reports a directory.
ReaderName = Literal["mcore-torch-dist", "torch-dcp", "recorder", "safetensors-dir", "torch-save", "hf-safetensors"]
# How `recorder verify` checks a commit's files: the trainer's weights file, its shards against the manifest,
# an imported series' shards where they lie, or not until the checkpoint is evaluated.
FileCheck = Literal["weights-file", "shards", "imported-shards", "when-evaluated"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedFormat:
    """One checkpoint format as recorded (see the module's docstring)."""

    name: CheckpointFormat
    reader: ReaderName | None  # None: another library's file the recorder does not load itself (TRL's adapters)
    imported: bool  # trained elsewhere, evaluated where it lies, checked by the manifest recorded at import
    files: FileCheck
    weights_dir: str = ""  # where the weights lie in the committed directory ("" : the directory itself)
    fingerprint_in_run_dtype: bool = False  # fingerprinted by the trainer in the run's dtype (else at import)
    single_file: bool = False  # sha256 and bytes are those of the one weights file


FORMATS: tuple[RecordedFormat, ...] = (
    RecordedFormat(
        name="safetensors",
        reader="recorder",
        imported=False,
        files="weights-file",
        fingerprint_in_run_dtype=True,
        single_file=True,
    ),
    RecordedFormat(name="torch-dcp", reader="torch-dcp", imported=False, files="shards", fingerprint_in_run_dtype=True),
    RecordedFormat(name="safetensors-adapter", reader=None, imported=False, files="when-evaluated"),
    RecordedFormat(name="safetensors-index", reader=None, imported=False, files="when-evaluated"),
    RecordedFormat(
        name="nemo-rl-mcore",
        reader="mcore-torch-dist",
        imported=True,
        files="when-evaluated",
        weights_dir="policy/weights",
    ),
    RecordedFormat(
        name="nemo-rl-hf", reader="hf-safetensors", imported=True, files="when-evaluated", weights_dir="policy/weights"
    ),
    RecordedFormat(name="dcp-archive", reader="torch-dcp", imported=True, files="imported-shards"),
    RecordedFormat(name="dcp-snapshot", reader="torch-dcp", imported=True, files="imported-shards"),
)
# A commit recorded before `format` was: the trainer's single safetensors file.
UNRECORDED: CheckpointFormat = "safetensors"


def register_format(row: RecordedFormat) -> None:
    """Add a format the project does not ship: events may then record its name (`checkpoint_committed.format`
    is read against this table), and verify and the evaluator treat it as its row says. A name already in
    the table is refused (a row is never replaced)."""
    global FORMATS
    if any(f.name == row.name for f in FORMATS):
        raise ValueError(f"checkpoint format {row.name!r}: already in the table")
    FORMATS = (*FORMATS, row)


names_from_table(CheckpointFormat, lambda: tuple(f.name for f in FORMATS))


def recorded_format(name: str | None) -> RecordedFormat:
    """The row of a recorded format name (None: a commit from before the field, the trainer's file)."""
    wanted = UNRECORDED if name is None else name
    found = next((f for f in FORMATS if f.name == wanted), None)
    if found is None:  # a payload's Literal admits only the table's names: a row is missing
        raise KeyError(f"checkpoint format {name!r}: not one of {', '.join(f.name for f in FORMATS)}")
    return found


IMPORTED_FORMATS: tuple[CheckpointFormat, ...] = tuple(f.name for f in FORMATS if f.imported)
