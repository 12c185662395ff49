"""Tokenizers behind one small interface: `encode`, `decode`, `vocab_size`, `bos_id/eos_id/pad_id`,
`to_json`/`from_json` (saved in every checkpoint as tokenizer.json).

`CharTokenizer` is the built-in task's: one id per character. `HFTokenizer` wraps a transformers tokenizer
for pretrained models (SmolLM2); `from_json` dispatches on the "type" field.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from trainer.policy.errors import TokenizerError

CHARS = "0123456789+-*/= "
SPECIALS = ("<pad>", "<bos>", "<eos>")


class Tokenizer(Protocol):
    vocab_size: int
    bos_id: int
    eos_id: int
    pad_id: int

    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...
    def to_json(self) -> str: ...


class CharTokenizer:
    """Ids 0..2 are <pad>, <bos>, <eos>; then one id per character of `chars`."""

    def __init__(self, chars: str = CHARS) -> None:
        if len(set(chars)) != len(chars):
            raise TokenizerError(f"duplicate characters in tokenizer alphabet {chars!r}")
        self.chars = chars
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2
        self.vocab_size = len(SPECIALS) + len(chars)
        self._ids = {c: i + len(SPECIALS) for i, c in enumerate(chars)}

    def encode(self, text: str) -> list[int]:
        """Ids of `text`, no special tokens. Unknown characters are an error, never silently dropped."""
        try:
            return [self._ids[c] for c in text]
        except KeyError as e:
            raise TokenizerError(f"character {e.args[0]!r} in {text!r} is not in the alphabet {self.chars!r}") from e

    def decode(self, ids: list[int]) -> str:
        """Text of `ids` up to the first <eos>; <pad> and <bos> are skipped."""
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            if i >= len(SPECIALS):
                out.append(self.chars[i - len(SPECIALS)])
        return "".join(out)

    def to_json(self) -> str:
        return json.dumps({"type": "char", "chars": self.chars, "specials": list(SPECIALS)}, sort_keys=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharTokenizer) and other.chars == self.chars


class HFTokenizer:
    """A transformers tokenizer (e.g. SmolLM2's) behind the same interface."""

    def __init__(self, hf: Any) -> None:
        self.hf = hf
        self.vocab_size = len(hf)
        self.eos_id = hf.eos_token_id
        self.bos_id = hf.bos_token_id if hf.bos_token_id is not None else hf.eos_token_id
        self.pad_id = hf.pad_token_id if hf.pad_token_id is not None else hf.eos_token_id

    def encode(self, text: str) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        ids = list(ids)
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        return str(self.hf.decode(ids, skip_special_tokens=True))

    def to_json(self) -> str:
        return str(self.hf.backend_tokenizer.to_str())


def from_json(text: str) -> Tokenizer:
    """The tokenizer a tokenizer.json describes: ours ("type": "char") or a Hugging Face tokenizers file."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise TokenizerError(f"tokenizer.json is not JSON: {e}") from e
    if obj.get("type") == "char":
        return CharTokenizer(obj["chars"])
    try:
        from tokenizers import Tokenizer as RawTokenizer
        from transformers import PreTrainedTokenizerFast

        hf = PreTrainedTokenizerFast(tokenizer_object=RawTokenizer.from_str(text))
    except Exception as e:  # tokenizers raises its own exception types for malformed files
        raise TokenizerError(f"tokenizer.json is neither a char tokenizer nor a Hugging Face tokenizer: {e}") from e
    specials = obj.get("added_tokens", [])
    names = {t["content"]: t["id"] for t in specials}
    for attr, name in (("eos_token", "<|im_end|>"), ("bos_token", "<|im_start|>"), ("pad_token", "<|im_end|>")):
        if name in names:
            setattr(hf, attr, name)
    return HFTokenizer(hf)
