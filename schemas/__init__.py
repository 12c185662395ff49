"""The event schema and the event catalogue: data files, loaded by `recorder.store.events`.

They live here, outside any code package, because they are the contract between every writer
(trainer, evaluator, importers) and every reader (replay, history). Versioned; never edited in place
once released: a new version gets a new file and an upcast step.
"""

from importlib import resources


def read_text(name: str) -> str:
    """The text of a schema file shipped in this package (e.g. ``event_v1.toml``)."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
