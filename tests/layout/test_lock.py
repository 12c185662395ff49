"""requirements.lock (what .ci/setup installs, `bash .ci/lock` regenerates) pins every requirement of
pyproject.toml that the lock's extras bring, at a version the requirement allows: a pyproject change that
was not locked fails here, not on a new machine."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.helpers import REPO


def locked() -> dict[str, Version]:
    """Each package the lock pins, by its canonical name."""
    pins = {}
    for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if m := re.match(r"^([A-Za-z0-9._-]+)==(\S+)", line):
            pins[canonicalize_name(m[1])] = Version(m[2])
    return pins


def locked_extras() -> list[str]:
    return re.findall(r"--extra (\w+)", (REPO / ".ci" / "lock").read_text(encoding="utf-8"))


def unmet(requirements: list[str], pins: dict[str, Version]) -> list[str]:
    """The requirements `pins` leaves out or pins at a version they do not allow."""
    out = []
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        version = pins.get(canonicalize_name(req.name))
        if version is None or not req.specifier.contains(version, prereleases=True):
            out.append(f"{text} (locked: {version})")
    return out


def test_the_lock_pins_every_requirement_at_an_allowed_version() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = locked_extras()
    assert {"train", "dev", "report", "harness"} <= set(extras), extras
    requirements = project["dependencies"] + [r for e in extras for r in project["optional-dependencies"][e]]
    assert unmet(requirements, locked()) == [], "run `bash .ci/lock` and commit requirements.lock"


def test_torch_is_locked_as_the_cpu_build() -> None:
    assert str(locked()["torch"]).endswith("+cpu")


def test_the_check_sees_a_missing_or_disallowed_pin() -> None:
    pins = {"duckdb": Version("1.2.0"), "torch": Version("2.13.0+cpu")}
    assert unmet(["duckdb>=1.0", "torch==2.13.0"], pins) == []
    assert unmet(["duckdb>=2", "rich>=13"], pins) == ["duckdb>=2 (locked: 1.2.0)", "rich>=13 (locked: None)"]
