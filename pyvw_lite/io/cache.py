"""Binary cache of parsed examples (``-c``, ``--cache_file``, ``-k``).

A cache holds the parser's output block by block in a compact columnar form: later passes (and
later runs) skip tokenising and hashing entirely.  Hashes are stored unmasked, so one cache
serves every ``-b``; the header records what the hashes depend on (seed, ``--hash`` mode) and
the source file's size and time, and a cache that does not match is rebuilt.

Block layout (little-endian), columns that hold only their default are left out::

    header   int64 × 4: rows, segments, features, flags
    label    float32[rows]          label value (0 when unlabelled)
    nlabel   uint8[rows]            number of label tokens (0 = unlabelled)
    weight   float32[rows]          if FLAG_WEIGHT (some importance ≠ 1)
    initial  float32[rows]          if FLAG_INITIAL (some initial ≠ 0)
    nseg     uint8|uint16|uint32[rows]       namespace groups per example
    byte     uint8[segments]        namespace letter
    nfeat    uint8|uint16|uint32[segments]   features per segment
    hash     uint32[features]
    value    float32[features]      if FLAG_VALUE (some value ≠ 1)
    taglen   int32[rows] (-1: none), int64 size, tag bytes      if FLAG_TAG
    lablen   int32[rows] (-1: none), int64 size, label bytes    if FLAG_LABEL_TEXT
"""
from __future__ import annotations

import json
import os
import struct
from typing import BinaryIO, Iterator

import numpy as np

from .atomic import atomic_write
from .vw_text import (EX_INT_COLUMNS, FEAT_END, FEAT_START, INITIAL, LABEL, LAB_END, LAB_START,
                      NLABEL, OK, SEG_BYTE, SEG_COLUMNS, SEG_END, SEG_FEND, SEG_FSTART,
                      SEG_NAME_END, SEG_NAME_START, SEG_START, STATUS, TAG_END, TAG_START, WEIGHT,
                      ParsedBatch)

MAGIC = b"PYVW-LITE CACHE\n"
FORMAT = 3  # 3: an example with an unusable importance weight is kept, unlabelled
_BLOCK = struct.Struct("<qqqq")
FLAG_WEIGHT, FLAG_INITIAL, FLAG_VALUE, FLAG_TAG = 1, 2, 4, 8
FLAG_LABEL_TEXT = 256  # label tokens kept for --named_labels
_COUNT_DTYPES = ("<u1", "<u2", "<u4")
FLAG_COUNT_SHIFT = 4  # bits 4-5: nseg dtype, bits 6-7: nfeat dtype


def _count_dtype(counts: np.ndarray) -> int:
    top = int(counts.max()) if counts.size else 0
    return 0 if top < 1 << 8 else (1 if top < 1 << 16 else 2)


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
    """Writes parsed batches (their examples) to a cache file, atomically on close."""

    def __init__(self, path: str, settings: dict):
        self._context = atomic_write(path)
        self._handle: BinaryIO = self._context.__enter__()
        header = json.dumps({"format": FORMAT, **settings}, sort_keys=True).encode("utf-8")
        self._handle.write(MAGIC + struct.pack("<I", len(header)) + header)

    def write(self, batch: ParsedBatch, rows: np.ndarray, keep_label_text: bool = False) -> None:
        """Cache the example ``rows`` of a batch, in order."""
        if rows.size == 0:
            return
        ex = batch.ex_int[rows]
        seg_index = _ranges(ex[:, SEG_START], ex[:, SEG_END])
        seg = batch.seg[seg_index]
        feat_index = _ranges(seg[:, SEG_FSTART], seg[:, SEG_FEND])
        nseg = (ex[:, SEG_END] - ex[:, SEG_START]).astype(np.int64)
        nfeat = (seg[:, SEG_FEND] - seg[:, SEG_FSTART]).astype(np.int64)
        weight = batch.ex_float[rows, WEIGHT]
        initial = batch.ex_float[rows, INITIAL]
        values = batch.feat_value[feat_index]
        flags = ((FLAG_WEIGHT if np.any(weight != 1.0) else 0)
                 | (FLAG_INITIAL if np.any(initial != 0.0) else 0)
                 | (FLAG_VALUE if np.any(values != 1.0) else 0)
                 | (FLAG_TAG if np.any(ex[:, TAG_START] >= 0) else 0)
                 | (FLAG_LABEL_TEXT if keep_label_text else 0))
        seg_code, feat_code = _count_dtype(nseg), _count_dtype(nfeat)
        flags |= (seg_code << FLAG_COUNT_SHIFT) | (feat_code << (FLAG_COUNT_SHIFT + 2))
        out = [_BLOCK.pack(rows.size, seg.shape[0], feat_index.size, flags),
               batch.ex_float[rows, LABEL].astype("<f4").tobytes(),
               ex[:, NLABEL].astype("<u1").tobytes()]
        if flags & FLAG_WEIGHT:
            out.append(weight.astype("<f4").tobytes())
        if flags & FLAG_INITIAL:
            out.append(initial.astype("<f4").tobytes())
        out.append(nseg.astype(_COUNT_DTYPES[seg_code]).tobytes())
        out.append(seg[:, SEG_BYTE].astype("<u1").tobytes())
        out.append(nfeat.astype(_COUNT_DTYPES[feat_code]).tobytes())
        out.append(batch.feat_hash[feat_index].astype("<u4").tobytes())
        if flags & FLAG_VALUE:
            out.append(values.astype("<f4").tobytes())
        if flags & FLAG_TAG:
            out.append(_span_bytes(batch.buf, ex[:, TAG_START], ex[:, TAG_END]))
        if flags & FLAG_LABEL_TEXT:
            out.append(_span_bytes(batch.buf, ex[:, LAB_START], ex[:, LAB_END]))
        self._handle.write(b"".join(out))

    def close(self) -> None:
        self._context.__exit__(None, None, None)

    def abort(self) -> None:
        try:
            self._context.__exit__(RuntimeError, RuntimeError("aborted"), None)
        except RuntimeError:
            pass


def _span_bytes(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes:
    """Lengths (-1 for none) then the concatenated bytes of optional per-example spans."""
    present = starts >= 0
    blob, _ = gather_spans(buf, starts[present].astype(np.int64), ends[present].astype(np.int64))
    lengths = np.where(present, ends - starts, -1).astype("<i4")
    return lengths.tobytes() + struct.pack("<q", blob.size) + blob.tobytes()


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, e)`` for every pair (vectorised)."""
    starts = starts.astype(np.int64)
    lengths = ends.astype(np.int64) - starts
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))


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
                yield self._block(handle, *_BLOCK.unpack(head))
                self.bytes_read = handle.tell()

    def _block(self, handle: BinaryIO, n: int, n_seg: int, n_feat: int, flags: int) -> ParsedBatch:
        read = lambda dtype, count: _read(handle, dtype, count, self.path)  # noqa: E731
        ex_float = np.zeros((n, 3), dtype=np.float64)
        ex_float[:, LABEL] = read("<f4", n)
        nlabel = read("<u1", n)
        ex_float[:, WEIGHT] = read("<f4", n) if flags & FLAG_WEIGHT else 1.0
        if flags & FLAG_INITIAL:
            ex_float[:, INITIAL] = read("<f4", n)
        nseg = read(_COUNT_DTYPES[(flags >> FLAG_COUNT_SHIFT) & 3], n).astype(np.int64)
        seg_byte = read("<u1", n_seg)
        nfeat = read(_COUNT_DTYPES[(flags >> (FLAG_COUNT_SHIFT + 2)) & 3], n_seg).astype(np.int64)
        feat_hash = read("<u4", n_feat)
        feat_value = read("<f4", n_feat) if flags & FLAG_VALUE else np.ones(n_feat, np.float32)
        seg = np.empty((n_seg, SEG_COLUMNS), dtype=np.int32)
        seg[:, SEG_BYTE] = seg_byte
        seg[:, SEG_NAME_START] = -1
        seg[:, SEG_NAME_END] = -1
        seg_end = np.cumsum(nfeat)
        seg[:, SEG_FSTART] = seg_end - nfeat
        seg[:, SEG_FEND] = seg_end
        ex_int = np.zeros((n, EX_INT_COLUMNS), dtype=np.int32)
        ex_int[:, STATUS] = OK
        ex_int[:, NLABEL] = nlabel
        ex_seg_end = np.cumsum(nseg)
        ex_int[:, SEG_START] = ex_seg_end - nseg
        ex_int[:, SEG_END] = ex_seg_end
        feat_bounds = np.concatenate([[0], seg_end])
        ex_int[:, FEAT_START] = feat_bounds[ex_seg_end - nseg]
        ex_int[:, FEAT_END] = feat_bounds[ex_seg_end]
        pieces = []
        for flag, start_col, end_col in ((FLAG_TAG, TAG_START, TAG_END),
                                         (FLAG_LABEL_TEXT, LAB_START, LAB_END)):
            ex_int[:, start_col] = -1
            ex_int[:, end_col] = -1
            if flags & flag:
                lengths = read("<i4", n).astype(np.int64)
                (blob_size,) = struct.unpack("<q", handle.read(8))
                blob = read("u1", blob_size)
                present = lengths >= 0
                sizes = np.where(present, lengths, 0)
                ends = np.cumsum(sizes) + sum(piece.size for piece in pieces)
                ex_int[:, start_col] = np.where(present, ends - sizes, -1)
                ex_int[:, end_col] = np.where(present, ends, -1)
                pieces.append(blob)
        text = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
        zeros = np.zeros(n, np.int64)
        return ParsedBatch(buf=text, ex_int=ex_int, ex_float=ex_float, seg=seg,
                           feat_hash=feat_hash, feat_value=feat_value, feat_span=None,
                           first_line=0, source=self.path, line_starts=zeros, line_ends=zeros)


def _read(handle: BinaryIO, dtype: str, count: int, path: str) -> np.ndarray:
    array = np.fromfile(handle, dtype=dtype, count=count)
    if array.size != count:
        raise ValueError(f"{path}: truncated cache file; rebuild it with -k")
    return array
