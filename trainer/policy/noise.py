"""Stateless sampling noise: Gumbel(0, 1) drawn from a hash of (seed, position, token), on the model's device.

A sample's noise for its t-th new token is a pure function of (its seed, t, token id), computed where the
logits are, one token at a time: nothing is drawn up front, no generator state is carried, and a row never
sees another row's numbers, so a completion cannot depend on the batch it was sampled in.

The hash is murmur3's 32-bit finaliser over int32 tensors: multiplications wrap and right shifts are masked
to act as logical shifts, so CPU and GPU give the same integers. 23 of its bits make a uniform u in (0, 1)
(2^-24 .. 1 - 2^-24, exactly representable in float32: never 0 or 1, so the noise is always finite), and
-log(-log u) is Gumbel(0, 1): argmax(log p + G) samples from p.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

_M1 = 0x85EBCA6B - (1 << 32)  # murmur3 fmix32 constants as signed int32
_M2 = 0xC2B2AE35 - (1 << 32)
_GOLDEN = 0x9E3779B1 - (1 << 32)
_U23 = 1.0 / (1 << 23)


def row_keys(seeds: list[int], device: torch.device | str) -> torch.Tensor:
    """One int32 key per sample from its 63-bit seed (both halves mixed in). -> [B] int32."""
    import torch

    lo = torch.tensor([s & 0xFFFFFFFF for s in seeds], dtype=torch.int64)
    hi = torch.tensor([(s >> 32) & 0xFFFFFFFF for s in seeds], dtype=torch.int64)
    key = _fmix(_as_int32(hi) ^ _GOLDEN)
    return _fmix(key ^ _as_int32(lo)).to(device)


def token_salts(count: int, device: torch.device | str, *, domain: int = 0) -> torch.Tensor:
    """Salts for ids 0..count-1 (id * golden ratio, wrapped; `domain` separates independent draws, e.g. the
    sampler's vocabulary blocks from its tokens). Computed once per generation. -> [count] int32."""
    import torch

    return id_salts(torch.arange(count, device=device), domain=domain)


def id_salts(ids: torch.Tensor, *, domain: int = 0) -> torch.Tensor:
    """`token_salts` for given ids (any shape). -> int32, the shape of ids."""
    import torch

    ids32 = ids.to(torch.int32)
    return ids32 * _GOLDEN if domain == 0 else _fmix(ids32 ^ _fmix(torch.full_like(ids32, domain)))


def gumbel(keys: torch.Tensor, position: int, salts: torch.Tensor) -> torch.Tensor:
    """Gumbel(0, 1) noise float32 for new-token `position` of each row: keys [B], salts [V] (the same ids for
    every row) or [B, S] (each row's own ids) -> [B, V] or [B, S]."""
    import torch

    step_key = _fmix(keys ^ _fmix(torch.full_like(keys, position) ^ _M2))  # [B]
    h = _fmix(step_key.unsqueeze(-1) ^ salts)  # [B, V] int32
    u = (((h >> 9) & 0x7FFFFF).float() + 0.5) * _U23  # (0, 1): with 24 bits, 2^24 - 0.5 rounds to 1
    return -torch.log(-torch.log(u))


def _fmix(h: torch.Tensor) -> torch.Tensor:
    """murmur3's fmix32 on int32 (wrapping multiply; `& mask` turns the arithmetic shift into a logical one)."""
    h = h ^ ((h >> 16) & 0xFFFF)
    h = h * _M1
    h = h ^ ((h >> 13) & 0x7FFFF)
    h = h * _M2
    return h ^ ((h >> 16) & 0xFFFF)


def _as_int32(x: torch.Tensor) -> torch.Tensor:
    """int64 values in [0, 2**32) reinterpreted as int32 (two's complement)."""
    import torch

    return torch.where(x >= (1 << 31), x - (1 << 32), x).to(torch.int32)
