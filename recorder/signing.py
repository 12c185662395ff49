"""Optional Ed25519 signatures: a writer given a key signs its segment's closing record, and each point at
which it makes the segment durable.

A signed segment opens with `segment_opened` (seq 0), which records the writer's public key, so the key is
chained into every later digest. `close()` computes the `segment_closed` record's digest as it would be
unsigned, signs `DOMAIN + that digest`, and records the signature in the same record. `recorder verify`
recomputes that digest from the events it reads: a segment rewritten and rechained after signing no longer
matches its signature.

A writer killed before it closes signs nothing at close, so it also signs as it goes: at each fsync (after
a critical event, and at each group commit) it appends a `chain_signed` record, signed the same way under
CHAIN_DOMAIN. What a killed writer's segment holds up to its last `chain_signed` is vouched for by the key;
what follows it is not, and a resuming writer adopts nothing past it (recorder.store.adoption).

What a signature proves: the holder of that private key closed a segment holding exactly these events. It
does not prove the events are true: a key holder can write, or rewrite and re-sign, its own history.

The key comes from `RECORDER_SIGNING_KEY` (a path) or from `--signing-key` on train, eval and import (which
sets it for the process, so workers and adapters see it too). `cryptography` is imported only when a key is
used or a signed segment is read (`pip install recorder[sign]`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from recorder.errors import InputError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SIGNING_KEY_ENV = "RECORDER_SIGNING_KEY"
ALGORITHM: Final = "ed25519"
DOMAIN = b"recorder segment_closed v1\n"  # what is signed is never mistaken for another protocol's message
CHAIN_DOMAIN = b"recorder chain_signed v1\n"  # a durable point's signature is never a closing record's
PUBLIC_KEY_HEX = 64
SIGNATURE_HEX = 128


class SigningKeyError(InputError):
    """A key file that is missing, unreadable or not an Ed25519 key."""


def _crypto_missing(e: ImportError) -> SigningKeyError:
    return SigningKeyError(f"signatures need the `cryptography` package ({e}): pip install 'recorder[sign]'")


def fingerprint(public_key_hex: str) -> str:
    """A short name for a public key, as printed: `ed25519:` and 16 hex digits of its SHA-256."""
    try:
        raw = bytes.fromhex(public_key_hex)
    except ValueError:
        raw = public_key_hex.encode()
    return f"{ALGORITHM}:{hashlib.sha256(raw).hexdigest()[:16]}"


def signed_message(unsigned_digest: bytes, domain: bytes = DOMAIN) -> bytes:
    """The bytes a closing record's signature covers (a chain_signed record's: with CHAIN_DOMAIN)."""
    return domain + unsigned_digest


@dataclass(frozen=True)
class Signer:
    """A loaded private key: signs closing digests, and names its public key."""

    key: Ed25519PrivateKey
    path: Path

    @property
    def public_key_hex(self) -> str:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        return self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    def sign(self, unsigned_digest: bytes, domain: bytes = DOMAIN) -> str:
        return self.key.sign(signed_message(unsigned_digest, domain)).hex()

    def sign_message(self, message: bytes) -> str:
        """A signature of `message` as given (its caller puts its own domain in front)."""
        return self.key.sign(message).hex()


def load_signer(path: Path | str) -> Signer:
    """The Ed25519 private key at `path` (PEM PKCS#8, as `recorder keygen` writes, or OpenSSH)."""
    path = Path(path)
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_ssh_private_key
    except ImportError as e:
        raise _crypto_missing(e) from e
    data = _read_key_file(path, "signing key")
    try:
        key = (load_ssh_private_key if b"OPENSSH PRIVATE KEY" in data else load_pem_private_key)(data, password=None)
    except (ValueError, TypeError) as e:
        raise SigningKeyError(f"{path}: not an unencrypted private key ({e}); make one with `recorder keygen`") from e
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path}: a {type(key).__name__}, not an Ed25519 key; make one with `recorder keygen`")
    return Signer(key, path)


def signer_from_environment() -> Signer | None:
    """The key `RECORDER_SIGNING_KEY` names, or None when it is unset or empty."""
    path = os.environ.get(SIGNING_KEY_ENV)
    if not path:
        return None
    try:
        return load_signer(path)
    except SigningKeyError as e:
        raise SigningKeyError(f"{SIGNING_KEY_ENV}: {e}") from e


def use_signing_key(path: Path) -> Signer:
    """`--signing-key PATH`: check the key now (before anything is written), then sign every segment this
    process and its workers open, through the environment."""
    signer = load_signer(path)
    os.environ[SIGNING_KEY_ENV] = str(path.resolve())
    return signer


def signature_valid(public_key_hex: str, signature_hex: str, unsigned_digest: bytes, domain: bytes = DOMAIN) -> bool:
    """Whether `signature_hex` is the key's signature of the closing digest, or with CHAIN_DOMAIN of a
    chain_signed record's (False for malformed input)."""
    return message_signature_valid(public_key_hex, signature_hex, signed_message(unsigned_digest, domain))


def message_signature_valid(public_key_hex: object, signature_hex: object, message: bytes) -> bool:
    """Whether `signature_hex` is the key's signature of `message` (False for malformed input)."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as e:
        raise _crypto_missing(e) from e
    if not isinstance(public_key_hex, str) or not isinstance(signature_hex, str):
        return False
    if len(public_key_hex) != PUBLIC_KEY_HEX or len(signature_hex) != SIGNATURE_HEX:
        return False
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))
        key.verify(bytes.fromhex(signature_hex), message)
    except (ValueError, InvalidSignature):
        return False
    return True


def generate(private_path: Path) -> Path:
    """Write a new private key to `private_path` (mode 0600, never over an existing file) and its public key
    to `private_path.pub` (OpenSSH format, one line); returns the public key's path."""
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
            PublicFormat,
        )
    except ImportError as e:
        raise _crypto_missing(e) from e
    public_path = private_path.with_name(private_path.name + ".pub")
    for p in (private_path, public_path):
        if os.path.lexists(p):
            raise SigningKeyError(f"{p}: already exists; keygen never overwrites a key (choose another -o)")
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH) + f" {private_path.name}\n".encode()
    _write_new(private_path, private, 0o600)
    _write_new(public_path, public, 0o644)
    return public_path


def _write_new(path: Path, data: bytes, mode: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except OSError as e:
        raise SigningKeyError(f"{path}: cannot create it ({e.strerror})") from e
    try:
        os.fchmod(fd, mode)  # the umask must not widen nor narrow what a private key allows
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def load_trusted(paths: Iterable[Path]) -> dict[str, str]:
    """Public key (hex) -> the name it is reported under (the file's name), for `verify --trust`."""
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            PublicFormat,
            load_pem_public_key,
            load_ssh_public_key,
        )
    except ImportError as e:
        raise _crypto_missing(e) from e
    trusted: dict[str, str] = {}
    for path in paths:
        data = _read_key_file(path, "public key")
        try:
            key = (load_pem_public_key if data.lstrip().startswith(b"-----") else load_ssh_public_key)(data)
        except (ValueError, TypeError) as e:
            raise SigningKeyError(
                f"{path}: not a public key ({e}); give the KEY.pub that `recorder keygen` wrote"
            ) from e
        if not isinstance(key, Ed25519PublicKey):
            raise SigningKeyError(f"{path}: a {type(key).__name__}, not an Ed25519 public key")
        trusted.setdefault(key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex(), path.name)
    return trusted


def _read_key_file(path: Path, what: str) -> bytes:
    try:
        if not path.is_file():  # a directory, FIFO or device is never opened: a FIFO would block
            found = "not a regular file" if os.path.lexists(path) else "no such file"
            raise SigningKeyError(f"{path}: {found}; give a {what} file")
        if path.stat().st_size > 64 * 1024:
            raise SigningKeyError(f"{path}: too large for a {what} file")
        return path.read_bytes()
    except OSError as e:
        raise SigningKeyError(f"{path}: cannot read the {what} ({e.strerror})") from e


@dataclass(frozen=True)
class SignatureState:
    """How one segment is signed, as `verify` reports it; `trusted` when signed by a key given to --trust."""

    text: str
    trusted: bool


def signature_state(
    signed_by: str | None,
    opened_with: str | None,
    bad: bool,
    trusted: Mapping[str, str] | None,
    adopted_by: str | None = None,
) -> SignatureState:
    """The report for one segment: signed by a trusted key (by name), by an untrusted key, unsigned, or a
    bad signature. `signed_by`: the key whose signature verified; `opened_with`: the key segment_opened
    recorded (set also for a segment whose writer did not close). `trusted` None: no key was given to trust,
    so a signature is named by its key's fingerprint alone. `adopted_by`: the key whose signed manifest
    lists this unclosed segment as adopted by a resumed writer (recorder.store.adoption), as verify accepted it."""
    if bad:
        return SignatureState("bad signature", False)
    if signed_by is None and adopted_by is not None:
        name = trusted.get(adopted_by) if trusted is not None else None
        return SignatureState(f"adopted on resume, listed by {name or fingerprint(adopted_by)}", name is not None)
    if signed_by is not None and trusted is None:
        return SignatureState(f"signed by {fingerprint(signed_by)}", False)
    if signed_by is not None and trusted is not None:
        name = trusted.get(signed_by)
        if name is not None:
            return SignatureState(f"signed by {name}", True)
        return SignatureState(f"signed by an untrusted key ({fingerprint(signed_by)})", False)
    if opened_with is not None:
        return SignatureState(f"unsigned (opened with {fingerprint(opened_with)}; its writer did not close)", False)
    return SignatureState("unsigned", False)
