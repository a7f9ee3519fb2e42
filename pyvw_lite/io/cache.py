"""Binary cache of parsed examples (``-c``, ``--cache_file``, ``-k``).

A cache holds the parser's output, block by block, as raw arrays: later passes (and later runs)
skip tokenising and hashing entirely.  Hashes are stored unmasked, so one cache serves every
``-b``; the header records what the hashes depend on (seed, ``--hash`` mode, label parsing) and
the source file's size and time, and a cache that does not match is rebuilt.
"""
from __future__ import annotations

import json
import os
import struct
from typing import BinaryIO, Iterator

import numpy as np

from .atomic import atomic_write
from .vw_text import (EX_INT_COLUMNS, LAB_END, LAB_START, SEG_NAME_END, SEG_NAME_START, TAG_END,
                      TAG_START, ParsedBatch)

MAGIC = b"PYVW-LITE CACHE\n"
FORMAT = 1
_BLOCK = struct.Struct("<qqqq")  # rows, segments, features, text bytes


def gather_spans(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """Concatenate ``buf[s:e]`` for every span (vectorised); returns the blob and new starts."""
    lengths = ends - starts
    new_starts = np.cumsum(lengths) - lengths
    index = np.repeat(starts - new_starts, lengths) + np.arange(int(lengths.sum()))
    return buf[index], new_starts


def source_signature(path: str | None) -> dict:
    if path in (None, "-"):
        return {}
    info = os.stat(path)
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}


class CacheWriter:
    """Writes parsed batches (examples only) to a cache file, atomically on close."""

    def __init__(self, path: str, settings: dict):
        self._context = atomic_write(path)
        self._handle: BinaryIO = self._context.__enter__()
        header = json.dumps({"format": FORMAT, **settings}, sort_keys=True).encode("utf-8")
        self._handle.write(MAGIC + struct.pack("<I", len(header)) + header)

    def write(self, batch: ParsedBatch, rows: np.ndarray, keep_label_text: bool = False) -> None:
        """Cache the example ``rows`` of a batch.  Their features stay in the batch's arrays,
        which are stored whole (the parser already dropped those of malformed lines)."""
        if rows.size == 0:
            return
        ex_int = batch.ex_int[rows].copy()
        pieces = []
        cursor = 0
        spans = [(TAG_START, TAG_END)] + ([(LAB_START, LAB_END)] if keep_label_text else [])
        for col_start, col_end in spans:
            present = ex_int[:, col_start] >= 0
            starts = ex_int[present, col_start]
            ends = ex_int[present, col_end]
            blob, new_starts = gather_spans(batch.buf, starts, ends)
            ex_int[present, col_start] = new_starts + cursor
            ex_int[present, col_end] = new_starts + cursor + (ends - starts)
            pieces.append(blob)
            cursor += blob.size
        if not keep_label_text:
            ex_int[:, LAB_START] = -1
            ex_int[:, LAB_END] = -1
        text = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
        seg = batch.seg.copy()
        seg[:, SEG_NAME_START] = -1
        seg[:, SEG_NAME_END] = -1
        handle = self._handle
        handle.write(_BLOCK.pack(rows.size, seg.shape[0], batch.feat_hash.size, text.size))
        handle.write(np.ascontiguousarray(ex_int, dtype="<i8").tobytes())
        handle.write(np.ascontiguousarray(batch.ex_float[rows], dtype="<f8").tobytes())
        handle.write(np.ascontiguousarray(seg, dtype="<i8").tobytes())
        handle.write(np.ascontiguousarray(batch.feat_hash, dtype="<u4").tobytes())
        handle.write(np.ascontiguousarray(batch.feat_value, dtype="<f4").tobytes())
        handle.write(text.tobytes())

    def close(self) -> None:
        self._context.__exit__(None, None, None)

    def abort(self) -> None:
        try:
            self._context.__exit__(RuntimeError, RuntimeError("aborted"), None)
        except RuntimeError:
            pass


def read_settings(path: str) -> dict | None:
    """The cache header, or None if the file is not a (readable) pyvw-lite cache."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(MAGIC)) != MAGIC:
                return None
            (size,) = struct.unpack("<I", handle.read(4))
            return json.loads(handle.read(size).decode("utf-8"))
    except (OSError, struct.error, ValueError):
        return None


class CacheReader:
    """Iterate the cached batches of a cache file."""

    def __init__(self, path: str):
        self.path = path
        self.total_bytes = os.path.getsize(path)
        self.bytes_read = 0

    def __iter__(self) -> Iterator[ParsedBatch]:
        with open(self.path, "rb") as handle:
            handle.read(len(MAGIC))
            (size,) = struct.unpack("<I", handle.read(4))
            handle.read(size)
            while True:
                head = handle.read(_BLOCK.size)
                if not head:
                    break
                if len(head) != _BLOCK.size:
                    raise ValueError(f"{self.path}: truncated cache file; rebuild it with -k")
                n_rows, n_seg, n_feat, n_text = _BLOCK.unpack(head)
                ex_int = _read(handle, "<i8", n_rows * EX_INT_COLUMNS, self.path).reshape(n_rows, EX_INT_COLUMNS)
                ex_float = _read(handle, "<f8", n_rows * 3, self.path).reshape(n_rows, 3)
                seg = _read(handle, "<i8", n_seg * 5, self.path).reshape(n_seg, 5)
                feat_hash = _read(handle, "<u4", n_feat, self.path)
                feat_value = _read(handle, "<f4", n_feat, self.path)
                text = _read(handle, "u1", n_text, self.path)
                self.bytes_read = handle.tell()
                yield ParsedBatch(buf=text, ex_int=ex_int, ex_float=ex_float, seg=seg,
                                  feat_hash=feat_hash, feat_value=feat_value, feat_span=None,
                                  first_line=0, source=self.path,
                                  line_bounds=np.zeros((n_rows, 2), np.int64))


def _read(handle: BinaryIO, dtype: str, count: int, path: str) -> np.ndarray:
    array = np.fromfile(handle, dtype=dtype, count=count)
    if array.size != count:
        raise ValueError(f"{path}: truncated cache file; rebuild it with -k")
    return array
