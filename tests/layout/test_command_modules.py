"""One command (or one noun's few commands) per module in recorder/cli/, each small enough to read in one
sitting: no command module is over 400 lines. What grows goes into a module of its own (a command), or a
`_`-prefixed helper the commands share."""

from __future__ import annotations

from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "recorder" / "cli"
LIMIT = 400


def long_command_modules(folder: Path, limit: int = LIMIT) -> dict[str, int]:
    """{module: lines} of each command module (not `_`-prefixed) in `folder` over `limit` lines."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[path.name] = lines
    return found


def test_no_command_module_is_over_400_lines() -> None:
    assert long_command_modules(CLI) == {}


def test_the_check_finds_a_long_command_module(tmp_path: Path) -> None:
    (tmp_path / "fits.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "_helper.py").write_text("x = 1\n" * (LIMIT + 1))  # a helper is held by its functions' length
    assert long_command_modules(tmp_path) == {"long.py": LIMIT + 1}
