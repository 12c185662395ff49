"""One codec: the core reads JSON by its annotations in recorder/store/codec.py alone, and older payloads are upcast
only where the codec's event side reads them (recorder.store.kinds), never by a reader of facts."""

from __future__ import annotations

from pathlib import Path

from tests.layout.test_imports import GRAPH, MODULES, OUTSIDE_CORE

CODEC = "recorder.store.codec"


def readers_of_annotations(sources: dict[str, str]) -> list[str]:
    """Modules that walk type annotations (typing.get_origin), the mark of a type-directed parser."""
    return sorted(m for m, text in sources.items() if "get_origin(" in text)


def importers_of(module: str, graph: dict[str, set[str]]) -> list[str]:
    return sorted(m for m, imported in graph.items() if module in imported)


def _core_sources() -> dict[str, str]:
    core = (m for m in MODULES if m.split(".")[0] == "recorder" and not m.startswith(OUTSIDE_CORE))
    return {m: Path(MODULES[m]).read_text() for m in core}


def test_the_core_has_one_type_directed_parser() -> None:
    assert readers_of_annotations(_core_sources()) == [CODEC]


def test_only_the_codecs_event_side_upcasts() -> None:
    assert importers_of("recorder.store.upcast", GRAPH) == ["recorder.store.kinds"]


def test_the_checks_find_a_second_parser_and_a_second_upcaster() -> None:
    sources = {CODEC: "get_origin(tp)", "recorder.other": "x = typing.get_origin(hint)", "recorder.fine": "x = 1"}
    assert readers_of_annotations(sources) == sorted([CODEC, "recorder.other"])
    graph = {
        "recorder.store.kinds": {"recorder.store.upcast"},
        "evaluator.x": {"recorder.store.upcast"},
        "recorder.store.upcast": set(),
    }
    assert importers_of("recorder.store.upcast", graph) == ["evaluator.x", "recorder.store.kinds"]
