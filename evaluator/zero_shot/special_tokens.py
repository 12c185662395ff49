"""A tokenizer's end-of-text and padding tokens: as its own files say them (a tokenizer_config.json), else as
the team declares them (`[tool.recorder] eos_token`, `pad_token`: a bare tokenizer.json names no role for its
special tokens). Both saying different tokens is refused, and so is a tokenizer with no EOS at all: the
holdout loss ends every document with it, and an empty context is scored after it."""

from __future__ import annotations

from typing import Any

from trainer.policy.errors import TokenizerError

DECLARED = "in the model code's pyproject.toml [tool.recorder]"


def with_special_tokens(tok: Any, *, eos: str | None, pad: str | None, where: str) -> Any:
    """`tok` with the declared EOS and padding set where its files name none; padding is the EOS when
    neither says it (padding fills the right of a row and never reaches a scored position)."""
    hf = getattr(tok, "hf", None)
    if hf is not None:
        for role, declared in (("eos", eos), ("pad", pad)):
            if declared is not None:
                _declare(hf, role, declared, where)
        tok.eos_id = hf.eos_token_id
        tok.bos_id = hf.bos_token_id if hf.bos_token_id is not None else hf.eos_token_id
        tok.pad_id = hf.pad_token_id if hf.pad_token_id is not None else hf.eos_token_id
    elif eos is not None or pad is not None:
        raise TokenizerError(
            f"{where}: the tokenizer's EOS and padding are its own; remove eos_token/pad_token {DECLARED}"
        )
    if getattr(tok, "eos_id", None) is None:
        raise TokenizerError(
            f"{where}: the tokenizer names no end-of-text (EOS) token: declare it, eos_token = 'TOKEN' {DECLARED}"
        )
    return tok


def framed_with_bos(tok: Any, *, where: str) -> Any:
    """`tok`, marked so that each scored request begins with its BOS (`[tool.recorder] bos = true`: the team
    frames every document so, in training and in its own scoring); TokenizerError when it names no BOS."""
    hf = getattr(tok, "hf", None)
    if hf is None or hf.bos_token_id is None:
        raise TokenizerError(f"{where}: bos = true {DECLARED}, but the tokenizer names no BOS token")
    tok.bos_id = hf.bos_token_id
    tok.frames_with_bos = True  # read by evaluator.harness.loglik.encode_pair
    return tok


def _declare(hf: Any, role: str, token: str, where: str) -> None:
    said = getattr(hf, f"{role}_token", None)
    if said is not None and said != token:
        raise TokenizerError(
            f"{where}: its files name {said!r} as the {role.upper()} token, {role}_token {DECLARED} names {token!r}: "
            "remove the declaration, or correct it"
        )
    ident = hf.convert_tokens_to_ids(token)
    if not isinstance(ident, int) or hf.convert_ids_to_tokens(ident) != token:
        raise TokenizerError(f"{where}: no token {token!r} in the tokenizer ({role}_token {DECLARED})")
    setattr(hf, f"{role}_token", token)
