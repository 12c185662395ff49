"""`recorder keygen`: an Ed25519 key pair for signing segments."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recorder.cli.terminal.output import console


def keygen(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where the private key goes; KEY.pub beside it.")],
) -> None:
    """Make an Ed25519 key pair for signing segments: KEY (private, mode 0600) and KEY.pub (OpenSSH format).

    Sign with `--signing-key KEY` (or RECORDER_SIGNING_KEY=KEY); check with `recorder verify RUN --trust KEY.pub`.
    Never overwrites a file.
    """
    from recorder.signing import fingerprint, generate, load_trusted

    public = generate(output)
    (key,) = load_trusted([public])
    console.print(f"private key: {output} (keep it secret; mode 0600)")
    console.print(f"public key:  {public} ({fingerprint(key)})")


def register(app: typer.Typer) -> None:
    app.command()(keygen)
