"""The checkpoint formats, one plugin each: the one table that the events, verify, the evaluator, the importers
and the command line read (torch-free, so verify stays so).

A plugin (`FormatPlugin`) is one format family as one object: the rows its commits record
(`checkpoint_committed.format`: whether its series was trained elsewhere and imported where it lies, how verify
checks its files, where its weights lie in the committed directory, in which dtype its fingerprint was
computed), the reader that detects and loads its directories (a row of `recorder.checkpoints.readers`)
and the importer of its series (a row of `recorder.adapters.series_importers`), those two named as
"module:attr" strings resolved on use, so this table imports no torch. The shipped plugins are registered
below; a package a team installs adds its own through the `recorder.checkpoints.formats` entry-point group
(recorder.plugin_registry), and code may `PLUGINS.register` one while the process runs. Nothing outside the tables
asks a format's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from recorder.plugin_registry import Registry
from recorder.store.codec import names_from_table

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
# The readers (a plugin's reader row, recorder.checkpoints.readers), named as detection reports a directory.
ReaderName = Literal["mcore-torch-dist", "torch-dcp", "recorder", "safetensors-dir", "torch-save", "hf-safetensors"]
# How `recorder verify` (and `recorder evals`, before showing a score) checks a commit's files, every time: the
# trainer's weights file, its shards against the manifest, an imported series' weights where they lie (its
# manifest's shards, else the tree digest of its weights directory), or the one file another library's
# callback hashed (`weights_file`).
FileCheck = Literal["weights-file", "shards", "imported-shards", "committed-file"]


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
    weights_file: str = "model.safetensors"  # the file a "weights-file" or "committed-file" commit hashed


# A plugin's reader or importer that takes any directory: asked after every other plugin's (it names what a
# directory lacks).
Role = Literal["reader", "importer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FormatPlugin:
    """One checkpoint format family as one object (see the module's docstring)."""

    name: str
    recorded: tuple[RecordedFormat, ...] = ()  # its names as commits record them, with their file checks
    reader: str | None = None  # "module:attr" of its recorder.checkpoints.readers.Reader (detection)
    importer: str | None = None  # "module:attr" of its recorder.adapters.series_importers.SeriesImporter
    asked_last: tuple[Role, ...] = ()  # the roles in which it takes any directory


def _names(plugin: FormatPlugin) -> tuple[str, ...]:
    return (plugin.name, *(f.name for f in plugin.recorded))


# Looked up by a plugin's name or by any name it records; a name held once across every plugin.
PLUGINS: Registry[FormatPlugin] = Registry(
    "checkpoint format", FormatPlugin, _names, group="recorder.checkpoints.formats"
)
_READERS = "recorder.checkpoints.readers"
_IMPORTERS = "recorder.adapters.series_importers"
PLUGINS.register(
    FormatPlugin(
        name="nemo-rl",
        recorded=(
            RecordedFormat(
                name="nemo-rl-mcore",
                reader="mcore-torch-dist",
                imported=True,
                files="imported-shards",
                weights_dir="policy/weights",
            ),
            RecordedFormat(
                name="nemo-rl-hf",
                reader="hf-safetensors",
                imported=True,
                files="imported-shards",
                weights_dir="policy/weights",
            ),
        ),
        reader=f"{_READERS}:MCORE",
        importer=f"{_IMPORTERS}:NEMO",
        asked_last=("importer",),  # it claims any folder, and names what one that holds no series lacks
    )
)
PLUGINS.register(
    FormatPlugin(
        name="fsdp2-dcp",
        recorded=(
            RecordedFormat(name="dcp-archive", reader="torch-dcp", imported=True, files="imported-shards"),
            RecordedFormat(name="dcp-snapshot", reader="torch-dcp", imported=True, files="imported-shards"),
        ),
        reader=f"{_READERS}:TORCH_DCP",
        importer=f"{_IMPORTERS}:FSDP2_DCP",
    )
)
PLUGINS.register(
    FormatPlugin(
        name="recorder",
        recorded=(
            RecordedFormat(
                name="safetensors",
                reader="recorder",
                imported=False,
                files="weights-file",
                fingerprint_in_run_dtype=True,
                single_file=True,
            ),
            RecordedFormat(
                name="torch-dcp", reader="torch-dcp", imported=False, files="shards", fingerprint_in_run_dtype=True
            ),
        ),
        reader=f"{_READERS}:RECORDER",
    )
)
# A team's weights outside every layout above (zero-shot reads them; no series records them): a safetensors
# folder whose config the team's declaration names, and a torch.save file.
PLUGINS.register(FormatPlugin(name="safetensors-folder", reader=f"{_READERS}:SAFETENSORS_DIR"))
PLUGINS.register(FormatPlugin(name="torch-save-file", reader=f"{_READERS}:TORCH_SAVE"))
PLUGINS.register(
    FormatPlugin(
        name="hugging-face",
        recorded=(  # TRL's adapter and sharded files: the recorder does not load them itself
            RecordedFormat(
                name="safetensors-adapter",
                reader=None,
                imported=False,
                files="committed-file",
                weights_file="adapter_model.safetensors",
            ),
            RecordedFormat(
                name="safetensors-index",
                reader=None,
                imported=False,
                files="committed-file",
                weights_file="model.safetensors.index.json",
            ),
        ),
        reader=f"{_READERS}:HUGGING_FACE",
        asked_last=("reader",),  # any directory with a config.json is one: it names what one lacks
    )
)
# A commit recorded before `format` was: the trainer's single safetensors file.
UNRECORDED: CheckpointFormat = "safetensors"


def formats() -> tuple[RecordedFormat, ...]:
    """Every recorded format, the shipped plugins' and those registered or installed since."""
    return tuple(f for plugin in PLUGINS.all() for f in plugin.recorded)


def ordered(role: Role) -> tuple[FormatPlugin, ...]:
    """The plugins in the order their `role` rows are asked: as registered, those that take any directory
    last."""
    plugins = PLUGINS.all()
    return tuple(sorted(plugins, key=lambda p: role in p.asked_last))


def declared_format(name: str) -> CheckpointFormat:
    """A recorded name a plugin declares, typed as the table's names: what it is once the plugin is
    registered (events and lookups accept only the names the table holds, names_from_table)."""
    return cast(CheckpointFormat, name)


def declared_reader(name: str) -> ReaderName:
    """A reader's name a plugin declares, typed as the readers' names (see `declared_format`)."""
    return cast(ReaderName, name)


names_from_table(CheckpointFormat, lambda: tuple(f.name for f in formats()))


def recorded_format(name: str | None) -> RecordedFormat:
    """The row of a recorded format name (None: a commit from before the field, the trainer's file)."""
    wanted = UNRECORDED if name is None else name
    plugin = PLUGINS.find(wanted)
    found = next((f for f in plugin.recorded if f.name == wanted), None) if plugin is not None else None
    if found is None:  # a payload's Literal admits only the table's names: a row is missing
        raise KeyError(f"checkpoint format {name!r}: not one of {', '.join(f.name for f in formats())}")
    return found
