"""Feature hashing identical to Vowpal Wabbit 9.11.9 (SPEC §P.2, VW_FACTS §2).

* ``murmur3_32`` is MurmurHash3 x86 32-bit over raw bytes.
* ``hash_string`` is VW's ``hashstring``: bytes <= 0x20 are trimmed at both ends, an all-digit
  name hashes to ``int(name) + seed`` (mod 2^32), anything else to ``murmur3_32(name, seed)``.
  An empty name therefore hashes to the seed itself, which VW relies on for anonymous features.
* ``--hash all`` skips the digit rule.

All hashes are kept as unsigned 32-bit values: every later use (seeding, masking to ``-b`` bits,
interaction mixing) only reads the low 32 bits, which equal VW's 64-bit arithmetic.
"""
from __future__ import annotations

import numpy as np

from ..jit import kernel

CONSTANT_HASH = 11650396  # VW's constant feature (constant.h)
CONSTANT_NAMESPACE = 128
FNV_PRIME = 16777619  # interaction mixing multiplier
MASK32 = 0xFFFFFFFF


@kernel(inline="always")
def _scramble(k):
    k = (k * 0xCC9E2D51) & 0xFFFFFFFF
    k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
    return (k * 0x1B873593) & 0xFFFFFFFF


@kernel(inline="always")
def _mix(h, k):
    """One 4-byte block ``k`` into the running hash ``h``."""
    h ^= _scramble(k)
    h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
    return (h * 5 + 0xE6546B64) & 0xFFFFFFFF


@kernel(inline="always")
def fmix32(h):
    """murmur3's 32-bit finalizer of ``h`` (0 <= h < 2^32): a bijection on 32 bits that spreads
    every input bit over the output."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


@kernel(inline="always")
def _finalize(h, length):
    return fmix32(h ^ np.int64(length))


@kernel
def murmur3_32(buf, start, end, seed):
    """MurmurHash3 x86_32 of ``buf[start:end]`` (uint8 array); int64 arithmetic kept to 32 bits."""
    h = np.int64(seed) & 0xFFFFFFFF
    length = end - start
    nblocks = length // 4
    for block in range(nblocks):
        i = start + 4 * block
        h = _mix(h, np.int64(buf[i]) | (np.int64(buf[i + 1]) << 8)
                 | (np.int64(buf[i + 2]) << 16) | (np.int64(buf[i + 3]) << 24))
    tail = start + 4 * nblocks
    rest = length & 3
    k = np.int64(0)
    if rest >= 3:
        k ^= np.int64(buf[tail + 2]) << 16
    if rest >= 2:
        k ^= np.int64(buf[tail + 1]) << 8
    if rest >= 1:
        k ^= np.int64(buf[tail])
        h ^= _scramble(k)
    return _finalize(h, length)


@kernel(inline="always")
def murmur3_u32(value, seed):
    """:func:`murmur3_32` of the 4 little-endian bytes of ``value`` (no buffer needed)."""
    return _finalize(_mix(np.int64(seed) & 0xFFFFFFFF, np.int64(value) & 0xFFFFFFFF), 4)


@kernel
def hash_string(buf, start, end, seed, hash_all):
    """VW's ``hashstring`` (or plain murmur3 under ``--hash all``) of ``buf[start:end]``."""
    if hash_all:
        return murmur3_32(buf, start, end, seed)
    while start < end and buf[start] <= 0x20:
        start += 1
    while end > start and buf[end - 1] <= 0x20:
        end -= 1
    value = np.int64(0)
    for i in range(start, end):
        c = buf[i]
        if c < 48 or c > 57:
            return murmur3_32(buf, start, end, seed)
        value = value * 10 + np.int64(c - 48)  # wraps like VW's uint64; only low bits matter
    return (value + seed) & 0xFFFFFFFF


def hash_bytes(data: bytes | str, seed: int = 0, hash_all: bool = False) -> int:
    """Python convenience wrapper: VW's hash of one name (str is UTF-8 encoded)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    return int(hash_string(buf, 0, len(data), seed & MASK32, hash_all))


def murmur_bytes(data: bytes | str, seed: int = 0) -> int:
    """Python convenience wrapper: MurmurHash3 x86_32 of one byte string."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    return int(murmur3_32(buf, 0, len(data), seed & MASK32))


@kernel
def murmur_ranges(buf, starts, ends, seed):
    """MurmurHash3 x86_32 of each ``buf[starts[i]:ends[i]]``."""
    out = np.empty(starts.size, dtype=np.int64)
    for i in range(starts.size):
        out[i] = murmur3_32(buf, starts[i], ends[i], seed)
    return out
