"""The code a scoring process actually imported, beyond what git and the model code's provenance record.

Two ways code runs unrecorded in a process that writes scores:
- startup hooks: Python imports `sitecustomize` and `usercustomize` from anywhere on `sys.path` before the
  command starts (a `PYTHONPATH` folder with a sitecustomize.py can rewrite every accuracy), and runs the
  `import` lines of every `.pth` file in a site folder. A hook from outside the Python installation, or a
  `.pth` file no installed distribution lists, is foreign startup code: the scores are refused
  (`foreign_startup`).
- a module file written into site-packages after the install (git_dirty covers only the project's tree).
  Every imported module's file is hashed and compared with the RECORD of the distribution that installed
  it (pip and uv write each file's sha256 there): a file no RECORD lists, or whose bytes differ from it, is
  named (`imported_environment`), and the digest of all of them is recorded with the result.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

HOOKS = ("sitecustomize", "usercustomize")


@dataclass(frozen=True, slots=True)
class ImportedEnvironment:
    """Every imported module file outside the model code: how many, their digest, and the ones no install
    vouches for (not in any distribution's RECORD, or changed since)."""

    modules: int
    sha256: str
    unrecorded: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"modules": self.modules, "sha256": self.sha256, "unrecorded": self.unrecorded, "changed": self.changed}


def _installation() -> list[Path]:
    """The Python installation's own library folders (the standard library), where its hooks belong."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(_plain(paths[k]) for k in ("stdlib", "platstdlib") if k in paths))


def _site_dirs() -> list[Path]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(_plain(paths[k]) for k in ("purelib", "platlib") if k in paths))


def foreign_startup() -> list[str]:
    """One line per startup hook from outside the installation and per `.pth` file no distribution lists."""
    out = []
    home = _installation()
    for name in HOOKS:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None) if module is not None else None
        if module is None:
            continue
        where = _plain(file) if isinstance(file, str) else None
        if where is None or not any(where.is_relative_to(h) for h in home):
            out.append(f"{name} imported at start-up from {file or 'no file'} (outside the Python installation)")
    recorded = _recorded()
    for site in _site_dirs():
        for pth in sorted(site.glob("*.pth")):
            if _plain(pth) not in recorded:
                out.append(f"{pth}: a .pth file no installed distribution lists (its import lines run at start-up)")
    return out


def _plain(path: object) -> Path:
    """An absolute path with `..` folded, links not followed (a stat per RECORD entry would take minutes)."""
    return Path(os.path.normpath(os.path.abspath(str(path))))


@cache
def _recorded() -> dict[Path, str]:
    """{file: its sha256 as urlsafe base64 without padding} from every installed distribution's RECORD."""
    from importlib import metadata

    out: dict[Path, str] = {}
    for dist in metadata.distributions():
        for f in dist.files or ():
            if f.hash is not None and f.hash.mode == "sha256":
                out[_plain(dist.locate_file(f))] = f.hash.value
            else:
                out.setdefault(_plain(dist.locate_file(f)), "")
    return out


def imported_environment(model_code: Path | None = None) -> ImportedEnvironment:
    """The module files this process imported (model code and the standard library's own excepted from the
    comparison, not from the digest), each hashed and held to its distribution's RECORD."""
    recorded = _recorded()
    sites = _site_dirs()
    skip = _plain(model_code) if model_code is not None else None
    lines, unrecorded, changed = [], [], []
    for name, module in sorted(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        path = _plain(file)
        if skip is not None and path.is_relative_to(skip):
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        digest = hashlib.sha256(data)
        lines.append(f"{name} {path} {digest.hexdigest()}\n")
        if not any(path.is_relative_to(s) for s in sites):
            continue
        want = recorded.get(path)
        if want is None:
            unrecorded.append(str(path))
        elif want and base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() != want:
            changed.append(str(path))
    total = hashlib.sha256("".join(lines).encode()).hexdigest()
    return ImportedEnvironment(len(lines), total, unrecorded, changed)
