"""The provenance of `--model-code` binds the code that ran: each attack starts from an honest committed tree.

A planted `__pycache__` file does not run, a module that rewrites its own file is recorded with the bytes that
ran, an edit hidden by `git update-index --assume-unchanged` and an ignored module the tree imports are dirty
(the second named), compiled code in the tree, a link out of it, a module of it loaded otherwise and a module
from outside it abort naming the file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import marshal
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from recorder.checkpoints.team_code.model_code import CodeProvenance, code_provenance, import_from_tree
from trainer.policy.errors import ModelCodeError

CLEAN = b"def scale():\n    return 1\n"
HIDDEN = b"HIDDEN = True\n\n\ndef scale():\n    return 2\n"
MODEL = "from {pkg}.layers import scale\n\n\ndef build(config):\n    return scale()\n"
_names = itertools.count()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, capture_output=True, check=True
    )
    return done.stdout.decode()


def _committed_tree(tmp_path: Path, layers: bytes = CLEAN, extra: dict[str, str] | None = None) -> tuple[Path, str]:
    """(ROOT, package name): a package `model.py` + `layers.py`, committed; the name is new to this process."""
    pkg = f"prov_team_{next(_names)}"
    root = tmp_path / "code"
    (root / pkg).mkdir(parents=True)
    (root / pkg / "__init__.py").write_text("")
    (root / pkg / "model.py").write_text(MODEL.format(pkg=pkg))
    (root / pkg / "layers.py").write_bytes(layers)
    for name, text in (extra or {}).items():
        (root / name.format(pkg=pkg)).write_text(text.format(pkg=pkg))
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "model")
    return root, pkg


def _import(root: Path, pkg: str) -> tuple[int, CodeProvenance]:
    """(what the factory returns, the provenance) through the recorder's import of the tree."""
    build = import_from_tree(root, f"{pkg}.model:build", "--model-factory")
    return build({}), code_provenance(root.resolve(), f"{pkg}.model:build")


def _plain_python_scale(root: Path, pkg: str) -> str:
    """What `scale()` is when Python imports the tree itself (the precondition: the attack is live)."""
    code = f"import sys; sys.path.insert(0, {str(root)!r}); from {pkg}.layers import scale; print(scale())"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def _plant_pyc(source: Path, hidden: bytes, *, unchecked_hash: bool) -> None:
    """Bytecode of `hidden` where Python looks for `source`'s cache, its header claiming `source`'s current
    mtime and size (timestamp form) or its hash, never to be checked (unchecked-hash form)."""
    code = compile(hidden, str(source), "exec")
    if unchecked_hash:
        header = (0b01).to_bytes(4, "little") + importlib.util.source_hash(source.read_bytes())
    else:
        st = source.stat()
        header = (0).to_bytes(4, "little") + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        header += (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(importlib.util.MAGIC_NUMBER + header + marshal.dumps(code))


@pytest.mark.parametrize("unchecked_hash", [False, True], ids=["timestamp", "unchecked-hash"])
def test_a_planted_pyc_with_the_clean_sources_stamp_does_not_run(tmp_path: Path, unchecked_hash: bool) -> None:
    root, pkg = _committed_tree(tmp_path)
    _plant_pyc(root / pkg / "layers.py", HIDDEN, unchecked_hash=unchecked_hash)
    assert _plain_python_scale(root, pkg) == "2"  # Python's own loader runs the hidden code
    pycache = sorted(p.name for p in (root / pkg / "__pycache__").iterdir())

    value, prov = _import(root, pkg)

    assert value == 1 and not hasattr(sys.modules[f"{pkg}.layers"], "HIDDEN")
    assert dict(prov.files)[f"{pkg}/layers.py"] == _sha(CLEAN)
    assert prov.git_dirty is False and prov.modified == () and prov.untracked == ()
    assert sorted(p.name for p in (root / pkg / "__pycache__").iterdir()) == pycache  # no bytecode written


def test_a_module_that_rewrites_its_own_file_records_the_bytes_that_ran(tmp_path: Path) -> None:
    root, pkg = _committed_tree(tmp_path)
    layers = root / pkg / "layers.py"
    rewriting = HIDDEN + b"\nimport pathlib\npathlib.Path(__file__).write_bytes(" + repr(CLEAN).encode() + b")\n"
    layers.write_bytes(rewriting)

    value, prov = _import(root, pkg)

    assert value == 2 and layers.read_bytes() == CLEAN  # it ran, then put the clean file back
    assert _git(root, "status", "--porcelain") == ""  # git sees nothing
    assert dict(prov.files)[f"{pkg}/layers.py"] == _sha(rewriting)
    assert prov.git_dirty is True and prov.modified == (f"{pkg}/layers.py",)


def test_an_edit_hidden_by_assume_unchanged_is_dirty(tmp_path: Path) -> None:
    root, pkg = _committed_tree(tmp_path)
    (root / pkg / "layers.py").write_bytes(HIDDEN)
    _git(root, "update-index", "--assume-unchanged", f"{pkg}/layers.py")
    assert _git(root, "status", "--porcelain") == ""

    value, prov = _import(root, pkg)

    assert value == 2 and dict(prov.files)[f"{pkg}/layers.py"] == _sha(HIDDEN)
    assert prov.git_dirty is True and prov.modified == (f"{pkg}/layers.py",) and prov.untracked == ()


def test_an_ignored_module_the_tree_imports_is_dirty_and_named(tmp_path: Path) -> None:
    local = "try:\n    from {pkg}.layers_local import scale\nexcept ImportError:\n    from {pkg}.layers import scale\n"
    model = "from {pkg}.settings import scale\n\n\ndef build(config):\n    return scale()\n"
    extra = {".gitignore": "*_local.py\n", "{pkg}/settings.py": local, "{pkg}/model.py": model}
    root, pkg = _committed_tree(tmp_path, extra=extra)
    (root / pkg / "layers_local.py").write_bytes(HIDDEN)  # a local override git ignores
    assert _git(root, "status", "--porcelain", "--untracked-files=all") == ""

    value, prov = _import(root, pkg)

    assert value == 2 and dict(prov.files)[f"{pkg}/layers_local.py"] == _sha(HIDDEN)
    assert prov.git_dirty is True and prov.untracked == (f"{pkg}/layers_local.py",) and prov.modified == ()
    assert prov.to_dict()["untracked"] == [f"{pkg}/layers_local.py"]


def test_compiled_code_in_the_tree_is_refused_naming_it(tmp_path: Path) -> None:
    root, pkg = _committed_tree(tmp_path)
    source = root / pkg / "fast.py"
    source.write_bytes(HIDDEN)
    compiled = root / pkg / "fast.pyc"
    compiled.write_bytes(importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(compile(HIDDEN, str(source), "exec")))
    source.unlink()  # a sourceless module: Python runs fast.pyc itself
    (root / pkg / "model.py").write_text(f"from {pkg}.fast import scale\n\n\ndef build(config):\n    return scale()\n")
    with pytest.raises(ModelCodeError, match=rf"module {pkg}\.fast: .*fast\.pyc .*compiled code"):
        _import(root, pkg)


def test_a_module_linked_out_of_the_tree_is_refused_naming_it(tmp_path: Path) -> None:
    root, pkg = _committed_tree(tmp_path)
    outside = tmp_path / "elsewhere.py"
    outside.write_bytes(HIDDEN)
    (root / pkg / "layers.py").unlink()
    (root / pkg / "layers.py").symlink_to(outside)
    with pytest.raises(ModelCodeError, match=rf"module {pkg}\.layers: .*layers\.py links out of --model-code"):
        _import(root, pkg)


def test_a_module_of_the_tree_loaded_before_is_refused(tmp_path: Path) -> None:
    root, pkg = _committed_tree(tmp_path)
    sys.path.insert(0, str(root))
    try:
        importlib.import_module(f"{pkg}.layers")  # Python's own loader: it may have run from bytecode
    finally:
        sys.path.remove(str(root))
    with pytest.raises(ModelCodeError, match=rf"module {pkg}(\.layers)? .* was loaded before the recorder"):
        _import(root, pkg)


def test_a_module_from_outside_the_tree_aborts_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helper = f"prov_helper_{next(_names)}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{helper}.py").write_bytes(HIDDEN)
    root, pkg = _committed_tree(tmp_path)
    (root / pkg / "layers.py").write_text(f"from {helper} import scale\n")
    _git(root, "commit", "-qam", "helper")
    monkeypatch.syspath_prepend(str(elsewhere))  # a directory on PYTHONPATH
    with pytest.raises(ModelCodeError, match=rf"module {helper} is imported from {elsewhere}.*outside --model-code"):
        _import(root, pkg)


def test_a_module_imported_after_the_build_is_recorded_from_its_source(tmp_path: Path) -> None:
    root, pkg = _committed_tree(tmp_path, extra={"{pkg}/late.py": "VALUE = 3\n"})
    _plant_pyc(root / pkg / "late.py", b"VALUE = 4\n", unchecked_hash=True)
    _, before = _import(root, pkg)
    assert f"{pkg}/late.py" not in dict(before.files)
    assert importlib.import_module(f"{pkg}.late").VALUE == 3  # the model imports it while it runs
    after = code_provenance(root.resolve(), f"{pkg}.model:build")
    assert dict(after.files)[f"{pkg}/late.py"] == _sha(b"VALUE = 3\n") and after.git_dirty is False


def test_a_tree_removed_after_its_import_leaves_other_imports_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, pkg = _committed_tree(tmp_path)
    _import(root, pkg)
    shutil.rmtree(root)  # the finder stays registered for the process
    other = f"prov_other_{next(_names)}"
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / f"{other}.py").write_text("VALUE = 5\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    assert importlib.import_module(other).VALUE == 5
