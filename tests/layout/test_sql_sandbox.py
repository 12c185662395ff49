"""The SQL sandbox is its own module: what makes a history query read-only (the one-statement check, and the
connection's lock on files and settings) is in recorder/history/sandbox.py and nowhere else, so a reader of
the views finds no guard there and a change to the guard touches one file."""

from __future__ import annotations

from pathlib import Path

from tests.layout.test_imports import MODULES

SANDBOX = "recorder.history.sandbox"
# What only the sandbox may say to DuckDB: the statement splitter and the settings that lock a connection.
GUARDS = ("extract_statements", "enable_external_access", "lock_configuration", "allowed_paths")


def guarded_outside(modules: dict[str, Path], sandbox: str = SANDBOX) -> list[str]:
    """`module: guard` for each guard a module other than the sandbox names."""
    return [
        f"{module}: {guard}"
        for module, path in sorted(modules.items())
        if module != sandbox
        for guard in GUARDS
        if guard in path.read_text(encoding="utf-8")
    ]


def test_only_the_sandbox_guards_a_query() -> None:
    assert guarded_outside(MODULES) == []
    assert all(guard in MODULES[SANDBOX].read_text(encoding="utf-8") for guard in GUARDS)


def test_a_guard_in_the_views_is_found(tmp_path: Path) -> None:
    views = tmp_path / "views.py"
    views.write_text('con.execute("SET enable_external_access = false")\n')
    assert guarded_outside({"recorder.history.views": views}) == ["recorder.history.views: enable_external_access"]
