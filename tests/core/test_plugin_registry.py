"""The generic table plugins are registered in (recorder.plugin_registry): a name held once, the entries of
installed packages' entry points loaded once and only when asked for, a broken one named with its package,
and "module:attr" names resolved on use. The packages here are dist-info folders on sys.path, as pip leaves
them; nothing is installed."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from recorder.plugin_registry import Registry, RegistryError, resolve
from tests.helpers import REPO

GROUP = "recorder.test_plugin_registry"


@dataclass(frozen=True)
class Entry:
    name: str
    aliases: tuple[str, ...] = ()


FIRST = Entry("first", aliases=("one",))
LOADS: list[str] = []  # the names of the entry-point modules, as each is imported


def _table() -> Registry[Entry]:
    return Registry("test entry", Entry, lambda e: (e.name, *e.aliases), group=GROUP)


def _install(site: Path, package: str, points: dict[str, str], module: str | None = None) -> None:
    """A distribution `package` whose entry points of GROUP are `points`; `module`: the source of a module
    named after the package, beside it."""
    info = site / f"{package}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")
    if module is not None:
        (site / f"{package}.py").write_text(module)


def test_a_name_is_held_once_and_an_alias_finds_its_entry() -> None:
    table = _table()
    table.register(FIRST)
    assert table.get("one") is FIRST and table.all() == (FIRST,) and table.names() == ("first", "one")
    with pytest.raises(ValueError, match="test entry one: already in the table"):
        table.register(Entry("other", aliases=("one",)))
    with pytest.raises(ValueError, match="is not a Entry"):
        table.register("first")  # type: ignore[arg-type]
    assert table.all() == (FIRST,)
    with pytest.raises(KeyError, match="'missing': not one of first, one"):
        table.get("missing")


def test_an_installed_package_s_entries_load_once_when_a_name_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "from tests.core.test_plugin_registry import LOADS, Entry\nLOADS.append(__name__)\nTEAM = Entry('team')\n"
    _install(tmp_path, "team_entries", {"team": "team_entries:TEAM"}, module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "team_entries", raising=False)
    LOADS.clear()
    table = _table()
    table.register(FIRST)
    assert table.get("first") is FIRST and LOADS == []  # held: nothing installed is loaded
    assert table.get("team").name == "team" and LOADS == ["team_entries"]
    assert [e.name for e in table.all()] == ["first", "team"] and LOADS == ["team_entries"]  # once
    assert table.find("nowhere") is None and LOADS == ["team_entries"]


@pytest.mark.parametrize(
    ("target", "module", "said"),
    [
        ("broken_entries:TEAM", "raise RuntimeError('no GPU here')\n", "cannot be loaded (RuntimeError: no GPU here)"),
        ("broken_entries:TEAM", "TEAM = 'team'\n", "is not a Entry"),
        ("broken_entries:TEAM", "from tests.core.test_plugin_registry import FIRST as TEAM\n", "first, one: already"),
    ],
)
def test_a_broken_entry_point_is_named_with_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, module: str, said: str
) -> None:
    _install(tmp_path, "broken_entries", {"team": target}, module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_entries", raising=False)
    table = _table()
    table.register(FIRST)
    with pytest.raises(RegistryError) as refused:
        table.all()
    message = str(refused.value)
    assert message.startswith(f"entry point team = {target} ([{GROUP}] of broken_entries 1.0): "), message
    assert said in message and "\n" not in message
    assert table._entries == [FIRST]  # the table as it was, and the next lookup names the entry point again
    with pytest.raises(RegistryError, match="entry point team"):
        table.get("team")


def test_a_module_attr_name_is_resolved_on_use_or_named() -> None:
    assert resolve(f"{__name__}:FIRST", Entry, "plugin p") is FIRST
    for target, said in (
        ("no_such_module_here:X", "names nothing"),
        (f"{__name__}:MISSING", "names nothing"),
        (f"{__name__}:GROUP", "is not a Entry"),
        (__name__, "names nothing"),
    ):
        with pytest.raises(RegistryError, match=f"plugin p: '{target}' {said}"):
            resolve(target, Entry, "plugin p")


def test_a_shipped_format_is_read_without_asking_the_installed_packages() -> None:
    """Events and verify read a shipped format's name without scanning the installed packages (an import of
    importlib.metadata and a walk of every dist-info): only a name no shipped plugin holds asks them."""
    probe = (
        "import sys\n"
        "from recorder.checkpoints.formats import CheckpointFormat, recorded_format\n"
        "from recorder.store.codec import Mismatch, decode\n"
        "from recorder.store.kinds import EVENTS\n"
        "decode('dcp-archive', CheckpointFormat, 'format', EVENTS)\n"
        "recorded_format('torch-dcp')\n"
        "print('importlib.metadata' in sys.modules)\n"
        "try:\n"
        "    decode('saves', CheckpointFormat, 'format', EVENTS)\n"
        "except Mismatch:\n"
        "    print('importlib.metadata' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr
