"""A zero-shot result whose score was edited to -5.0 or 1e308, its digest recomputed and signed again with
the writer's own key (so `collect --trust` accepts who wrote it), states no accuracy: it is skipped and named,
never shown as a score."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from recorder.results import binding
from recorder.results.zero_shot import ZeroShotResults, scored_code, scored_manifest, zero_shot_from_json
from recorder.signing import load_signer
from tests.helpers import run_cli
from tests.zero_shot.test_bound_results import _forge, _rows, keys, results

__all__ = ["keys", "results"]  # the fixtures: two honest results signed by alice


def _signed_with(path: Path, score: float, key: Path) -> None:
    """Rewrite the piqa score and bind it again as `recorder.results.binding.bind` does, signed with `key`
    (the steps spelled out: the document type itself no longer holds such a score)."""
    doc = zero_shot_from_json(path.read_bytes())
    assert isinstance(doc, ZeroShotResults)
    object.__setattr__(doc, "scores", {"piqa": score})
    signer = load_signer(key)
    unsigned = binding.ResultBinding(
        checkpoint_manifest=scored_manifest(doc),
        code=binding.code_sha256(scored_code(doc)),
        digest="",
        public_key=signer.public_key_hex,
    )
    object.__setattr__(doc, "binding", unsigned)
    digest = hashlib.sha256(binding.DOMAIN + doc.to_json()).hexdigest()
    signature = signer.sign_message(binding.DOMAIN + bytes.fromhex(digest))
    object.__setattr__(doc, "binding", dataclasses.replace(unsigned, digest=digest, signature=signature))
    path.write_bytes(doc.to_json())


@pytest.mark.parametrize("score", [-5.0, 1e308])
def test_a_score_outside_the_accuracy_range_is_not_shown(results: Path, keys: Path, score: float) -> None:
    forged = _forge(results, {})
    _signed_with(forged, score, keys / "alice")
    assert json.loads(forged.read_text())["scores"] == {"piqa": score}
    done = run_cli("collect", str(results), "--trust", str(keys / "alice.pub"), "--all")  # both honest rows
    assert "Traceback" not in done.stderr, done.stderr
    assert [r.split()[2] for r in _rows(done.stdout)] == ["0.5000", "0.5000"], done.stdout
    said = " ".join(done.stdout.split())
    assert f"skipped {forged}: " in said and "is no accuracy (a share of examples, in [0, 1])" in said, said
