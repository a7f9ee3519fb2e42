"""Byte sources read in chunks of whole lines: plain files, ``.gz`` files and standard input."""
from __future__ import annotations

import gzip
import os
import sys
from typing import Iterator

import numpy as np

from .vw_text import split_lines

CHUNK_BYTES = 4 << 20
FIRST_CHUNK_BYTES = 128 << 10


class LineChunks:
    """Iterate ``(buf, line_starts, line_ends, first_line)`` over a source, whole lines per chunk.

    Reads start at ``first_bytes`` and double up to ``chunk_bytes``: the learner waits for the
    first chunk alone (later ones are parsed while it learns), so a small one starts learning
    sooner (~0.1 s on a 1M-line file) and large ones keep the per-chunk overhead low.
    ``bytes_read`` and ``total_bytes`` (None when unknown) feed the progress bar.
    """

    def __init__(self, path: str | None, chunk_bytes: int = CHUNK_BYTES,
                 first_bytes: int = FIRST_CHUNK_BYTES):
        self.path = path
        self.name = path if path not in (None, "-") else "<stdin>"
        self.chunk_bytes = chunk_bytes
        self.first_bytes = min(first_bytes, chunk_bytes)
        self.bytes_read = 0
        self.total_bytes = None
        if path not in (None, "-"):
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: no such file")
            if os.path.isdir(path):
                raise IsADirectoryError(f"{path}: is a directory, expected a data file")
            self.total_bytes = os.path.getsize(path)

    def _open(self):
        if self.path in (None, "-"):
            return sys.stdin.buffer, False
        with open(self.path, "rb") as probe:
            magic = probe.read(2)
        if magic == b"\x1f\x8b":
            return gzip.open(self.path, "rb"), True
        return open(self.path, "rb", buffering=0), True

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
        handle, owned = self._open()
        compressed = getattr(handle, "fileobj", None) if isinstance(handle, gzip.GzipFile) else None
        try:
            carry = b""
            line_no = 1
            size = self.first_bytes
            while True:
                block = handle.read(size)
                size = min(2 * size, self.chunk_bytes)
                if block:
                    # progress counts file bytes: compressed ones for a .gz
                    self.bytes_read = compressed.tell() if compressed is not None \
                        else self.bytes_read + len(block)
                final = not block
                data = carry + block if carry else block
                if not data:
                    break
                buf = np.frombuffer(data, dtype=np.uint8)
                starts, ends, consumed = split_lines(buf, final)
                if starts.shape[0]:
                    yield buf, starts, ends, line_no
                    line_no += starts.shape[0]
                carry = bytes(data[consumed:]) if consumed < len(data) else b""
                if final:
                    break
        finally:
            if owned:
                handle.close()
