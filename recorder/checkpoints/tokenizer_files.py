"""A tokenizer read once: its files' bytes held in memory and hashed, and the tokenizer built from those same
bytes, so that what scored is what a result names.

Transformers opens a tokenizer directory by path, file by file, and may open a file again later; a file
changed between the hashing and the loading (or between two loads) would score one tokenizer and record
another. So each file a tokenizer is made of is read once (a regular file, or a link as a Hugging Face cache
makes them, within a size cap), and a directory's tokenizer is loaded from a private copy of exactly those
bytes, removed once it is built.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.untrusted.untrusted_files import read_bounded

# The files transformers reads to build a tokenizer from a directory (config.json: the model type, when the
# tokenizer's own config names no class); weights and everything else beside them are never read.
TOKENIZER_NAMES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.json",
        "vocab.txt",
        "merges.txt",
        "config.json",
        "chat_template.json",
    }
)
TOKENIZER_SUFFIXES = (".model", ".tiktoken", ".jinja")  # sentencepiece, tiktoken, chat templates
CODE_SUFFIX = ".py"  # a tokenizer's own code: read only when its code is trusted (--trust-remote-code)
FILE_LIMIT = 512 * 1024 * 1024  # the largest tokenizer files (a 256k vocabulary) are tens of MB


@dataclass(frozen=True)
class TokenizerFiles:
    """The bytes of one tokenizer: a single tokenizer file, or the tokenizer files of a directory."""

    path: Path  # what was read: the file, or the directory
    files: Mapping[str, bytes]  # name -> bytes (a single file: its own name)
    single: bool

    def manifest(self) -> dict[str, Any]:
        """What a result records: where, and each file's size and sha256."""
        return {
            "path": str(self.path),
            "files": {
                name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                for name, data in sorted(self.files.items())
            },
        }


def read_tokenizer_files(path: Path, *, trust_remote_code: bool = False) -> TokenizerFiles:
    """Every tokenizer file at `path` (a file, or a directory's files by name), each read once."""
    if not path.is_dir():
        return TokenizerFiles(path, {path.name: read_bounded(path, FILE_LIMIT, "tokenizer file", follow=True)}, True)
    wanted = [
        p
        for p in sorted(path.iterdir())
        if p.name in TOKENIZER_NAMES
        or p.name.endswith(TOKENIZER_SUFFIXES)
        or (trust_remote_code and p.name.endswith(CODE_SUFFIX))
    ]
    files = {p.name: read_bounded(p, FILE_LIMIT, "tokenizer file", follow=True) for p in wanted if not p.is_dir()}
    return TokenizerFiles(path, files, False)


def is_own_json(files: TokenizerFiles) -> bool:
    """Whether the bytes are one tokenizer.json to read as such (the policy's own char tokenizer or a
    `tokenizers` file with no tokenizer_config.json beside it), rather than a transformers tokenizer."""
    return files.single or ("tokenizer.json" in files.files and "tokenizer_config.json" not in files.files)


def hf_tokenizer_from(files: TokenizerFiles, *, trust_remote_code: bool = False) -> Any:
    """transformers' tokenizer of exactly these bytes, built from a private copy that is removed after."""
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory(prefix="recorder-tokenizer-") as copy:
        for name, data in files.files.items():
            (Path(copy) / name).write_bytes(data)
        return AutoTokenizer.from_pretrained(copy, trust_remote_code=trust_remote_code, local_files_only=True)
