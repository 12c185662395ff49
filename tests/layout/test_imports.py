"""The layout's promises, read from the source: no import cycles, a core that imports only the core, and no
import between parts that the parts table does not allow (docs/design.md, section 6: core, history, replay,
report, adapters, policy, trainer, evaluator, cli), bench to nothing of tests but their kit.

Every import counts, also those inside functions: a lazy import still ties one module to the other. Each check
is also run on a small graph that breaks it, so that no check passes because it cannot fail.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("recorder", "replay", "trainer", "evaluator", "schemas")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an import names (an attribute import resolves to its module)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str) -> set[str]:
    """Project modules that `module` imports, anywhere in its body (TYPE_CHECKING blocks too: a cycle there is
    still a cycle for a reader and for mypy)."""
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # `from recorder.history import plot` names a module
                target = _resolve(f"{node.module}.{alias.name}") or _resolve(node.module)
                if target:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    # A package's own __init__ is imported on the way to any of its modules; that is not a dependency.
    return {m for m in found if not module.startswith(m + ".")}


GRAPH = {m: imports_of(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


CORE_FORBIDDEN = ("replay", "trainer", "evaluator", "typer", "rich", "torch", "duckdb")
OUTSIDE_CORE = (
    "recorder.cli",
    "recorder.history",
    "recorder.report",
    "recorder.adapters",
    "recorder.compat",
    "recorder.checkpoints",
)
# The checkpoint library's modules that describe files without loading them: the formats table and the layouts
# the core (verify's fact checks, the payloads) and the importers read. They import neither torch nor the policy.
CHECKPOINT_FILES = (
    "recorder.checkpoints.formats",
    "recorder.checkpoints.hugging_face.safetensors_header",
    "recorder.checkpoints.megatron.megatron_saves",
    "recorder.checkpoints.torch_dcp.fsdp2_layout",
)


def _third_party(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    "module",
    sorted(
        m for m in MODULES if m.split(".")[0] == "recorder" and not m.startswith(OUTSIDE_CORE) and m != "recorder.cli"
    ),
)
def test_core_imports_only_the_core(module: str) -> None:
    assert _third_party(module).isdisjoint(CORE_FORBIDDEN), _third_party(module) & set(CORE_FORBIDDEN)
    # The core may read the schema files (`schemas`) and the checkpoint files' descriptions, nothing else of the
    # project outside itself.
    outside = sorted(
        m
        for m in GRAPH[module]
        if (m.split(".")[0] not in ("recorder", "schemas") or m.startswith(OUTSIDE_CORE)) and m not in CHECKPOINT_FILES
    )
    assert outside == []


@pytest.mark.parametrize("module", CHECKPOINT_FILES)
def test_the_checkpoint_files_the_core_reads_import_only_the_core(module: str) -> None:
    assert _third_party(module).isdisjoint(CORE_FORBIDDEN), _third_party(module) & set(CORE_FORBIDDEN)
    assert sorted(m for m in GRAPH[module] if m.startswith(OUTSIDE_CORE) and m not in CHECKPOINT_FILES) == []


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@dataclass(frozen=True)
class Part:
    """A named part of the layout: the modules under `modules` (the longest prefix decides) may import the
    parts named in `uses`, and of a part listed in `only` just those modules."""

    name: str
    modules: tuple[str, ...]
    uses: tuple[str, ...] = ()
    only: tuple[tuple[str, tuple[str, ...]], ...] = ()


# The layout as a table (docs/design.md, section 6): an import from one part into another not in its `uses` is a
# crossing. The core is what remains of `recorder` (and `schemas`) once the other parts are taken out.
PARTS = (
    Part("core", ("recorder", "schemas"), uses=("checkpoints",), only=(("checkpoints", CHECKPOINT_FILES),)),
    # The checkpoint library: every format's files, layouts, manifests and readers, and the model they load into.
    Part("checkpoints", ("recorder.checkpoints",), uses=("core", "policy")),
    Part("history", ("recorder.history",), uses=("core",)),
    Part("replay", ("replay",), uses=("core", "checkpoints"), only=(("checkpoints", CHECKPOINT_FILES),)),
    Part("report", ("recorder.report",), uses=("core", "history", "replay")),
    # The importers write mllog lines and look rulesets up exactly as replay does, and derive nothing.
    Part(
        "adapters",
        ("recorder.adapters", "recorder.compat"),
        uses=("core", "replay", "checkpoints"),
        only=(
            ("replay", ("replay.mllog_format", "replay.errors", "replay.rulesets", "replay.ruleset_facts")),
            ("checkpoints", CHECKPOINT_FILES),
        ),
    ),
    Part("policy", ("trainer.policy",), uses=("core", "checkpoints"), only=(("checkpoints", CHECKPOINT_FILES),)),
    Part("trainer", ("trainer",), uses=("core", "policy", "checkpoints")),
    Part("evaluator", ("evaluator",), uses=("core", "policy", "checkpoints")),
    Part(
        "cli",
        ("recorder.cli",),
        uses=("core", "history", "replay", "report", "adapters", "checkpoints", "policy", "trainer", "evaluator"),
    ),
)


def part_of(module: str, parts: tuple[Part, ...] = PARTS) -> Part:
    """The part whose longest prefix holds `module`."""
    prefix, owner = max(
        ((p, part) for part in parts for p in part.modules if _under(module, (p,))), key=lambda pair: len(pair[0])
    )
    return owner


def crossings(graph: dict[str, set[str]], parts: tuple[Part, ...] = PARTS) -> list[tuple[str, str]]:
    """Every (importer, imported) of `graph` that goes from one part into another it may not use."""
    out = []
    for module, imported in graph.items():
        source = part_of(module, parts)
        for target_module in imported:
            target = part_of(target_module, parts)
            if target is source:
                continue
            only = dict(source.only).get(target.name)
            if target.name not in source.uses or (only is not None and not _under(target_module, only)):
                out.append((module, target_module))
    return sorted(out)


def test_every_module_belongs_to_a_part() -> None:
    assert [
        m for m in MODULES if m.split(".")[0] not in ("recorder", "schemas", "replay", "trainer", "evaluator")
    ] == []


def test_no_import_crosses_the_parts_table() -> None:
    assert crossings(GRAPH) == []


def _a_module_of(part: Part) -> str:
    """A module name inside `part` and inside no part nested in it."""
    return f"{part.modules[0]}.zz_probe"


@pytest.mark.parametrize(
    ("source", "target"),
    [(s, t) for s in PARTS for t in PARTS if s is not t and t.name not in s.uses],
    ids=lambda p: p.name,
)
def test_each_forbidden_arrow_is_found(source: Part, target: Part) -> None:
    importer, imported = _a_module_of(source), _a_module_of(target)
    assert crossings({importer: {imported}, imported: set()}) == [(importer, imported)]


def test_a_part_limited_to_some_modules_is_held_to_them() -> None:
    adapters = next(p for p in PARTS if p.name == "adapters")
    graph: dict[str, set[str]] = {_a_module_of(adapters): {"replay.mllog_format", "replay.derive"}}
    assert crossings(graph) == [(_a_module_of(adapters), "replay.derive")]


def test_the_core_reads_checkpoint_files_but_loads_none() -> None:
    probe = "recorder.zz_probe"
    graph: dict[str, set[str]] = {probe: {"recorder.checkpoints.formats", "recorder.checkpoints.load"}}
    assert crossings(graph) == [(probe, "recorder.checkpoints.load")]


BENCH = ROOT / "bench"


def imported_modules(source: str) -> set[str]:
    """The modules a script imports anywhere in its body (inside functions too), as written."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def importing_tests_outside_kit(scripts: list[Path]) -> list[str]:
    """The scripts importing anything of `tests` but its kit (the builders tests and benches share)."""

    def outside_kit(module: str) -> bool:
        return module.split(".")[0] == "tests" and not (module == "tests.kit" or module.startswith("tests.kit."))

    return [p.name for p in scripts if any(outside_kit(m) for m in imported_modules(p.read_text()))]


def product_modules_importing_tests(files: list[Path]) -> list[str]:
    """Product modules importing `tests` at all: an installed wheel has no tests, so no fixture maker either."""
    return [p.name for p in files if any(m.split(".")[0] == "tests" for m in imported_modules(p.read_text()))]


def test_bench_imports_only_the_test_kit() -> None:
    """A bench measures the product; what it shares with the tests lives in tests/kit (tests.kit.synthetic,
    tests.kit.sample_series), so that the rest of the tests can change without a bench breaking."""
    assert importing_tests_outside_kit(sorted(BENCH.glob("*.py"))) == []


def test_the_product_holds_no_test_builder() -> None:
    product = [p for top in ("recorder", "replay", "trainer", "evaluator") for p in (ROOT / top).rglob("*.py")]
    assert product_modules_importing_tests(product) == []


def test_the_kit_checks_find_an_import_of_tests(tmp_path: Path) -> None:
    script = tmp_path / "bench_like.py"
    script.write_text("def series():\n    from tests.evaluator import nemo_run\n    return nemo_run\n")
    kit = tmp_path / "kit_user.py"
    kit.write_text("import json\nfrom tests.kit import sample_series\nimport tests.kit.synthetic\n")
    clean = tmp_path / "clean.py"
    clean.write_text("import json\nfrom evaluator import sweep\n")
    assert importing_tests_outside_kit([script, kit, clean]) == ["bench_like.py"]
    assert product_modules_importing_tests([script, kit, clean]) == ["bench_like.py", "kit_user.py"]
