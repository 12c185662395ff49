"""The `--signing-key` and `--untrusted-ok` options of the commands that write or judge events (train, eval,
import, import-checkpoints). Signing itself is recorder.signing's; `verify --trust` is in cli/verify.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from recorder.cli.terminal import panels

SigningKeyOption = Annotated[
    Path | None,
    typer.Option(
        "--signing-key",
        rich_help_panel=panels.SIGNING,
        help="Sign each segment this command writes with this Ed25519 private key (`recorder keygen`). "
        "Default: the key $RECORDER_SIGNING_KEY names, if set.",
    ),
]


UntrustedOkOption = Annotated[
    bool,
    typer.Option(
        "--untrusted-ok",
        rich_help_panel=panels.SIGNING,
        help="Judge a run whose signatures fail its trust (unsigned, another key's, or signed segments "
        "missing); every line carrying a score then says UNTRUSTED.",
    ),
]


def apply_untrusted_ok(flag: bool) -> None:
    """`--untrusted-ok`: every verification this process and its workers run keeps trust problems apart."""
    from recorder.verify.trust import UNTRUSTED_OK_ENV

    if flag:
        os.environ[UNTRUSTED_OK_ENV] = "1"


def apply_signing_key(path: Path | None) -> None:
    """Load the key now, so a bad key file is an error (exit 2) before anything is recorded; every writer
    this process and its workers open then signs with it."""
    from recorder.signing import signer_from_environment, use_signing_key

    if path is not None:
        use_signing_key(path)
    else:
        signer_from_environment()


def apply_key_options(signing_key: Path | None, untrusted_ok: bool) -> None:
    """`--signing-key` and `--untrusted-ok` together, for the commands that take both."""
    apply_signing_key(signing_key)
    apply_untrusted_ok(untrusted_ok)
