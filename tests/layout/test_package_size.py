"""No package root holds more than 15 modules (its __init__ counted): a folder a reader takes in at a glance,
grouped into subpackages that say what they hold (docs/design.md, section 6)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("recorder", "replay", "trainer", "evaluator", "schemas")
MOST = 15


def crowded(roots: list[Path], most: int = MOST) -> dict[str, int]:
    """Each package folder under `roots` holding more than `most` modules, with its count."""
    out = {}
    for root in roots:
        for init in sorted(root.rglob("__init__.py")):
            n = len(list(init.parent.glob("*.py")))
            if n > most:
                out[str(init.parent.relative_to(root.parent))] = n
    return out


def test_no_package_root_holds_more_than_fifteen_modules() -> None:
    assert crowded([ROOT / p for p in PACKAGES if (ROOT / p).is_dir()]) == {}


def test_the_check_finds_a_crowded_package(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for i in range(16):
        (pkg / f"m{i}.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    assert crowded([pkg]) == {"pkg": 17}
