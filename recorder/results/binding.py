"""What binds a zero-shot results.json to what it scored: the checkpoint's manifest hash, the model code's
provenance hash, the document's own digest, and, when the writer held a key, its signature of that digest.

A results.json is a file anyone can write beside another: a second one with better scores and a later time
would be what `recorder collect` shows. So every result is written with a `binding`, and collect shows a
result only when it verifies (`check`):

- `digest` is the sha256 of DOMAIN and the document's bytes as written with `digest` empty and no
  `signature`: a score, a time or a label edited by hand no longer matches it;
- `checkpoint_manifest` is the manifest root (sha256 over the shards' sha256, recorder/checkpoints/
  manifest.py) of the checkpoint that was loaded and scored, or a recorder step's weights sha256, and must be
  the one the document records; `code` is the sha256 of the canonical JSON of the model code's provenance;
- `signature` (with `public_key`): the Ed25519 signature of DOMAIN and the digest by the key the writer held
  (`--signing-key`, RECORDER_SIGNING_KEY; recorder.signing). Given trusted keys (collect's `--trust`,
  RECORDER_TRUST), a result is shown only when one of them signed it.

What a digest alone cannot catch: whoever rewrites the file can recompute it. Only a signature by a key the
reader trusts says who wrote the scores; that is what `--trust` is for.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from recorder.results.document import Document, Part
from recorder.signing import Signer, fingerprint, message_signature_valid
from recorder.store import canonical

DOMAIN = b"recorder zero-shot result v1\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultBinding(Part):
    """A result's binding: what it scored, the code it ran, its own digest and, when signed, the signature."""

    checkpoint_manifest: str  # sha256: the scored checkpoint's manifest root (a recorder step: its weights')
    code: str | None  # sha256 of the model code's provenance as recorded; None when none was recorded
    digest: str  # sha256 of DOMAIN + the document as written with digest "" and no signature
    public_key: str | None = None  # the Ed25519 key (hex) that signed it
    signature: str | None = None


D = TypeVar("D", bound=Document)


def code_sha256(code: Mapping[str, Any] | None) -> str | None:
    return None if code is None else hashlib.sha256(canonical.dumps(dict(code)).encode()).hexdigest()


def _digest(doc: Document, binding: ResultBinding) -> str:
    unsigned = dataclasses.replace(binding, digest="", signature=None)
    return hashlib.sha256(DOMAIN + dataclasses.replace(doc, binding=unsigned).to_json()).hexdigest()  # type: ignore[call-arg]


def bind(doc: D, checkpoint_manifest: str, code: Mapping[str, Any] | None, signer: Signer | None) -> D:
    """`doc` with its binding: digest, and signature when `signer` is given."""
    key = signer.public_key_hex if signer is not None else None
    binding = ResultBinding(checkpoint_manifest=checkpoint_manifest, code=code_sha256(code), digest="", public_key=key)
    digest = _digest(doc, binding)
    signature = signer.sign_message(DOMAIN + bytes.fromhex(digest)) if signer is not None else None
    return dataclasses.replace(doc, binding=dataclasses.replace(binding, digest=digest, signature=signature))  # type: ignore[call-arg]


def check(
    doc: Document,
    binding: ResultBinding | None,
    scored_manifest: str,
    code: Mapping[str, Any] | None,
    trusted: Mapping[str, str] | None,
) -> str | None:
    """Why `doc` does not verify (None when it does). `scored_manifest`: the manifest hash the document
    records for its checkpoint; `trusted`: the keys a reader trusts (None: none given)."""
    if binding is None:
        return "not bound to what it scored (no binding: edited, or written before results were bound)"
    if _digest(doc, binding) != binding.digest:
        return "its digest does not match its content: edited after it was written"
    if binding.checkpoint_manifest != scored_manifest:
        return "bound to another checkpoint manifest than the one it records"
    if binding.code != code_sha256(code):
        return "bound to other model code than the provenance it records"
    signed = binding.signature is not None or binding.public_key is not None
    if signed and not message_signature_valid(
        binding.public_key, binding.signature, DOMAIN + bytes.fromhex(binding.digest)
    ):
        return "bad signature: its key did not sign this digest"
    if trusted is not None:
        if not signed:
            return "unsigned, and only results signed by a trusted key are shown (--trust)"
        assert binding.public_key is not None
        if binding.public_key not in trusted:
            return f"signed by {fingerprint(binding.public_key)}, not by a trusted key (--trust)"
    return None
