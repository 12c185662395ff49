"""verify's words say what happened: ALTERED is for bytes that changed. A run no writer ever signed, checked
with `--trust KEY`, is UNTRUSTED (no accepted key vouches for it), never `ALTERED: signed-segments.json:
missing`; a signed run whose list of signed segments was deleted stays ALTERED."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("keys")
    assert run_cli("keygen", "-o", str(where / "alice")).returncode == 0
    return where / "alice"


def test_an_intact_unsigned_run_checked_with_trust_is_untrusted_not_altered(
    key: Path, tmp_path: Path, corpus: Path
) -> None:
    log = corpus / "qwen35_397b_grpo_rcp/GBS256/seed_1.out"
    assert run_cli("import", str(log), "--root", str(tmp_path), "--run-id", "plain").returncode == 0
    done = run_cli("verify", str(tmp_path / "plain"), "--trust", f"{key}.pub")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ALTERED" not in done.stdout and "Traceback" not in done.stderr, done.stdout
    assert "UNTRUSTED: signed-segments.json: missing: no writer of this run signed it" in done.stdout, done.stdout
    assert done.stdout.splitlines()[-1].startswith("verify: UNTRUSTED (")
    assert run_cli("verify", str(tmp_path / "plain")).returncode == 0  # without --trust: intact


def test_a_signed_run_whose_list_of_signed_segments_was_deleted_is_altered(
    key: Path, tmp_path: Path, corpus: Path
) -> None:
    log = corpus / "qwen35_397b_grpo_rcp/GBS256/seed_1.out"
    done = run_cli("import", str(log), "--root", str(tmp_path), "--run-id", "signed", "--signing-key", str(key))
    assert done.returncode == 0, done.stderr
    (tmp_path / "signed" / "signed-segments.json").unlink()
    done = run_cli("verify", str(tmp_path / "signed"), "--trust", f"{key}.pub")
    assert done.returncode == 1 and "ALTERED: signed-segments.json: missing" in done.stdout, done.stdout
