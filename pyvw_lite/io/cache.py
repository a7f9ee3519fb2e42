"""Binary cache of parsed examples (``-c``, ``--cache_file``, ``-k``).

A cache holds the parser's output block by block in a compact columnar form: later passes (and
later runs) skip tokenising and hashing entirely.  Hashes are stored unmasked, so one cache
serves every ``-b``; the header records what the hashes depend on (seed, ``--hash`` mode), the
source file's size and time and the SHA-256 of its text, and a cache that does not match is
rebuilt.

A cache is checked, never trusted: the header and every block carry a CRC-32, a footer counts
the blocks and examples, and every count is checked against the bytes it describes, so a
damaged or cut cache is a :class:`CacheError` naming the file (rebuild it with ``-k``), never
wrong examples.  A run opens its cache once and reads every pass through that one handle: a
cache another run replaces by name meanwhile is not read (issue 25).  A file that is not a
pyvw-lite cache is never overwritten.

File layout (little-endian)::

    b"PYVW-LITE CACHE\n", uint32 n, JSON header (n bytes), uint32 CRC-32 of the JSON
    block*    int64 × 5: rows, segments, features, flags, body bytes; body; uint32 CRC-32 of
              the 40 head bytes and the body
    footer    int64 × 5: -1, examples, blocks, 0, 0; uint32 CRC-32 of those 40 bytes

A block's body, columns that hold only their default left out::

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

import contextlib
import json
import os
import re
import stat
import struct
import zlib
from typing import BinaryIO, Iterator

import numpy as np

from .atomic import named_error, temporary_beside
from .vw_text import (EX_INT_COLUMNS, FEAT_END, FEAT_START, INITIAL, LABEL, LAB_END, LAB_START,
                      NLABEL, OK, SEG_BYTE, SEG_COLUMNS, SEG_END, SEG_FEND, SEG_FSTART,
                      SEG_NAME_END, SEG_NAME_START, SEG_START, STATUS, TAG_END, TAG_START, WEIGHT,
                      ParsedBatch)

MAGIC = b"PYVW-LITE CACHE\n"
SUFFIX = ".pvwcache"  # -c's cache is DATA.pvwcache: VW's own -c cache is DATA.cache
FORMAT = 5  # 5: the text's SHA-256; 4: CRC-32 on the header and every block, a footer
TEXT = "text"  # the header's key of the SHA-256 of the text the cache was made from
_NO_TEXT = "0" * 64  # its placeholder until the text has been read to its end
_BLOCK = struct.Struct("<qqqqq")
_TOKEN_BREAKS = np.frombuffer(b" \t\n|", dtype=np.uint8)
_CRC = struct.Struct("<I")
FLAG_WEIGHT, FLAG_INITIAL, FLAG_VALUE, FLAG_TAG = 1, 2, 4, 8
FLAG_LABEL_TEXT = 256  # label tokens kept for --named_labels
_KNOWN_FLAGS = FLAG_WEIGHT | FLAG_INITIAL | FLAG_VALUE | FLAG_TAG | FLAG_LABEL_TEXT | (0xF << 4)
_COUNT_DTYPES = ("<u1", "<u2", "<u4")
FLAG_COUNT_SHIFT = 4  # bits 4-5: nseg dtype, bits 6-7: nfeat dtype
_MAX_HEADER = 1 << 20


class CacheError(ValueError):
    """A cache that cannot be read (damaged, cut short) or a file that is not a cache; the
    message names the file and the way out."""


def _count_dtype(counts: np.ndarray) -> int:
    top = int(counts.max()) if counts.size else 0
    return 0 if top < 1 << 8 else (1 if top < 1 << 16 else 2)


def gather_spans(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """Concatenate ``buf[s:e]`` for every span (vectorised); returns the blob and new starts."""
    lengths = ends - starts
    new_starts = np.cumsum(lengths) - lengths
    index = np.repeat(starts - new_starts, lengths) + np.arange(int(lengths.sum()))
    return buf[index], new_starts


def stands_for(settings: dict | None, wanted: dict, text_digest) -> bool:
    """Whether a cache whose header holds ``settings`` stands for the text now: made under the
    ``wanted`` settings, from the text whose SHA-256 ``text_digest()`` gives (read only when
    everything else matches; ``text_digest`` None: not checked, as for standard input).  A
    file of the same size and time that holds other text (``cp -p``) has another digest."""
    if settings is None or {k: v for k, v in settings.items() if k != TEXT} != wanted:
        return False
    return text_digest is None or settings.get(TEXT) == text_digest()


def source_signature(path: str | None) -> dict:
    if path in (None, "-"):
        return {}
    info = os.stat(path)
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}


class CacheWriter:
    """Writes parsed batches (their examples) to a cache file, atomically on close.

    The file is written under a temporary name beside the target and renamed when complete;
    :meth:`close` returns a :class:`CacheReader` on the very file written, so the later passes
    read this run's examples even if another run replaces the cache by name meanwhile."""

    def __init__(self, path: str, settings: dict):
        refuse_foreign(path)
        self.path = path
        fd, self._temporary = temporary_beside(path)
        self._handle: BinaryIO = os.fdopen(fd, "w+b")
        # the text's digest is known at the end: a placeholder of its length until then
        self._header = json.dumps({"format": FORMAT, **settings, TEXT: _NO_TEXT},
                                  sort_keys=True).encode("utf-8")
        self._examples = self._blocks = 0
        self._write(MAGIC + struct.pack("<I", len(self._header)) + self._header
                    + _CRC.pack(zlib.crc32(self._header)))

    def _write(self, data: bytes) -> None:
        """Write to the temporary file; a failure (a full disk) removes it and names the cache."""
        try:
            self._handle.write(data)
        except BaseException as exc:
            self.abort()
            if isinstance(exc, OSError):
                raise named_error(exc, self.path) from None
            raise

    def _write_block(self, head: tuple, body: bytes) -> None:
        packed = _BLOCK.pack(*head, len(body))
        self._write(packed + body + _CRC.pack(zlib.crc32(body, zlib.crc32(packed))))

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
        out = [batch.ex_float[rows, LABEL].astype("<f4").tobytes(),
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
        self._write_block((rows.size, seg.shape[0], feat_index.size, flags), b"".join(out))
        self._examples += rows.size
        self._blocks += 1

    def close(self, text_digest: str) -> "CacheReader":
        """Finish the file with ``text_digest`` (the SHA-256, hex, of the text its examples
        were read from; "" when unknown: the cache then matches no text) in its header, put it
        in place, and return a reader on it (the same open file)."""
        packed = _BLOCK.pack(-1, self._examples, self._blocks, 0, 0)
        self._write(packed + _CRC.pack(zlib.crc32(packed)))
        placeholder = f'"{TEXT}": "{_NO_TEXT}"'.encode()
        text_digest = text_digest or _NO_TEXT
        if not re.fullmatch(r"[0-9a-f]{64}", text_digest):
            raise ValueError(f"not a SHA-256 in hex: {text_digest!r}")
        header = self._header.replace(placeholder, f'"{TEXT}": "{text_digest}"'.encode(), 1)
        try:
            self._handle.seek(len(MAGIC) + 4)
            self._handle.write(header + _CRC.pack(zlib.crc32(header)))
            self._handle.seek(0, os.SEEK_END)
            self._handle.flush()
            os.fsync(self._handle.fileno())
            os.replace(self._temporary, self.path)
        except BaseException as exc:
            self.abort()
            if isinstance(exc, OSError):
                raise named_error(exc, self.path) from None
            raise
        return CacheReader(self.path, handle=self._handle)

    def abort(self) -> None:
        """Close and remove the temporary file (closing may fail on a full disk: it goes
        anyway)."""
        with contextlib.suppress(OSError):
            self._handle.close()
        with contextlib.suppress(OSError):
            os.unlink(self._temporary)


def refuse_foreign(path: str, option: str = "--cache_file") -> None:
    """A cache may replace a pyvw-lite cache (of any version, even a damaged one) or an empty
    file, never anything else: a data file or a model named by mistake is kept (VW refuses the
    same).  ``option`` names how the user named the cache (``-c`` or ``--cache_file``)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError:
        return  # not reachable: writing it fails with its own message
    if not stat.S_ISREG(mode):  # /dev/null reads empty, a FIFO blocks: neither is a cache
        raise CacheError(f"{option} {path} exists and is not a regular file; it is not "
                         "used as a cache (name a file)")
    try:
        with open(path, "rb") as handle:
            start = handle.read(64)
    except OSError:
        return  # not readable: writing it fails with its own message
    if start and start[:len(MAGIC)] != MAGIC:
        version = vw_cache_version(start)
        what = f"is VW {version}'s cache" if version else "is not a pyvw-lite cache"
        raise CacheError(f"{option} {path} exists and {what}; it is not overwritten (remove it "
                         "or name another cache file)")


def vw_cache_version(start: bytes) -> str | None:
    """VW's version when ``start`` (a file's first bytes) opens a VW cache: VW writes the
    length of its version string as a uint64, then the string (NUL-terminated)."""
    if len(start) < 10:
        return None
    size = int.from_bytes(start[:8], "little")
    text = start[8:8 + size]
    if not 2 <= size <= len(start) - 8 or text[-1:] != b"\0":
        return None
    version = text[:-1].decode("ascii", "replace")
    return version if re.fullmatch(r"\d+(\.\d+)+", version) else None


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


def _read_header(path: str, handle: BinaryIO) -> dict | None:
    """The header of an open cache, or None when it is no (intact) pyvw-lite cache header."""
    if handle.read(len(MAGIC)) != MAGIC:
        return None
    size_bytes = handle.read(4)
    if len(size_bytes) != 4:
        return None
    (size,) = struct.unpack("<I", size_bytes)
    if size > _MAX_HEADER:
        return None
    text = handle.read(size)
    crc = handle.read(_CRC.size)
    if len(text) != size or len(crc) != _CRC.size or _CRC.unpack(crc)[0] != zlib.crc32(text):
        return None
    try:
        settings = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: [[[[...]]]]
        return None
    return settings if isinstance(settings, dict) else None


def open_cache(path: str) -> tuple[dict | None, "CacheReader | None"]:
    """The settings of the cache at ``path`` and a reader holding it open (both None when it is
    not a readable cache of this format: it is then rebuilt, or refused if it is no cache)."""
    try:
        handle = open(path, "rb")
    except OSError:
        return None, None
    settings = _read_header(path, handle)
    if settings is None or settings.get("format") != FORMAT:
        handle.close()
        return settings, None
    return settings, CacheReader(path, handle=handle)


class CacheReader:
    """Iterate the cached batches of a cache file, pass after pass, through one open handle."""

    def __init__(self, path: str, handle: BinaryIO | None = None):
        self.path = path
        self._handle = handle if handle is not None else open(path, "rb")
        self._handle.seek(0)
        if _read_header(path, self._handle) is None:
            raise CacheError(f"{path}: damaged cache header; rebuild it with -k")
        self._data_start = self._handle.tell()
        self.total_bytes = os.fstat(self._handle.fileno()).st_size
        self.bytes_read = 0

    def close(self) -> None:
        self._handle.close()

    def _damaged(self, what: str) -> CacheError:
        return CacheError(f"{self.path}: damaged cache ({what}); rebuild it with -k")

    def __iter__(self) -> Iterator[ParsedBatch]:
        handle = self._handle
        handle.seek(self._data_start)
        examples = blocks = 0
        while True:
            head = handle.read(_BLOCK.size)
            if len(head) != _BLOCK.size:
                raise CacheError(f"{self.path}: truncated cache file (no footer); rebuild it "
                                 "with -k")
            n, n_seg, n_feat, flags, size = _BLOCK.unpack(head)
            if n == -1:
                crc = handle.read(_CRC.size)
                if len(crc) != _CRC.size or _CRC.unpack(crc)[0] != zlib.crc32(head) \
                        or (n_seg, n_feat) != (examples, blocks) or handle.read(1):
                    raise self._damaged("footer")
                return
            if min(n, n_seg, n_feat, size) < 0 or flags & ~_KNOWN_FLAGS \
                    or size > self.total_bytes - handle.tell() \
                    or 5 * n + 2 * n_seg + 4 * n_feat > size:  # the smallest body they need
                raise self._damaged(f"block {blocks + 1} header")
            body = handle.read(size)
            crc = handle.read(_CRC.size)
            if len(body) != size or len(crc) != _CRC.size:
                raise CacheError(f"{self.path}: truncated cache file; rebuild it with -k")
            if _CRC.unpack(crc)[0] != zlib.crc32(body, zlib.crc32(head)):
                raise self._damaged(f"checksum of block {blocks + 1}")
            try:
                batch = self._block(body, n, n_seg, n_feat, flags)
            except (ValueError, IndexError, struct.error):
                raise self._damaged(f"block {blocks + 1}") from None
            examples += n
            blocks += 1
            self.bytes_read = handle.tell()
            yield batch

    def _block(self, body: bytes, n: int, n_seg: int, n_feat: int, flags: int) -> ParsedBatch:
        at = 0

        def read(dtype, count):
            nonlocal at
            array = np.frombuffer(body, dtype=dtype, count=count, offset=at)
            at += array.nbytes
            return array

        ex_float = np.zeros((n, 3), dtype=np.float64)
        ex_float[:, LABEL] = read("<f4", n)
        nlabel = read("<u1", n)
        ex_float[:, WEIGHT] = read("<f4", n) if flags & FLAG_WEIGHT else 1.0
        if flags & FLAG_INITIAL:
            ex_float[:, INITIAL] = read("<f4", n)
        nseg = read(_COUNT_DTYPES[(flags >> FLAG_COUNT_SHIFT) & 3], n).astype(np.int64)
        seg_byte = read("<u1", n_seg)
        nfeat = read(_COUNT_DTYPES[(flags >> (FLAG_COUNT_SHIFT + 2)) & 3], n_seg).astype(np.int64)
        feat_hash = read("<u4", n_feat).copy()
        feat_value = read("<f4", n_feat).copy() if flags & FLAG_VALUE \
            else np.ones(n_feat, np.float32)
        if int(nseg.sum()) != n_seg or int(nfeat.sum()) != n_feat:
            raise ValueError("counts disagree")
        # what a text line must pass to be cached: a forged block (its CRC recomputed) holds
        # no example the parser would not have given
        if not (np.isfinite(ex_float).all() and np.isfinite(feat_value).all()
                and (ex_float[:, WEIGHT] >= 0.0).all() and (nlabel <= 3).all()):
            raise ValueError("a label, weight or value no text example has")
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
                (blob_size,) = struct.unpack_from("<q", body, at)
                at += 8
                blob = read("u1", blob_size)
                present = lengths >= 0
                sizes = np.where(present, lengths, 0)
                if int(sizes.sum()) != blob_size:
                    raise ValueError("span sizes disagree")
                ends = np.cumsum(sizes) + sum(piece.size for piece in pieces)
                ex_int[:, start_col] = np.where(present, ends - sizes, -1)
                ex_int[:, end_col] = np.where(present, ends, -1)
                pieces.append(blob)
        if at != len(body):
            raise ValueError("block size disagrees")
        text = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
        if np.isin(text, _TOKEN_BREAKS).any():  # a tag or label token never holds these
            raise ValueError("a tag or label with a space, a tab, '|' or a line break")
        zeros = np.zeros(n, np.int64)
        return ParsedBatch(buf=text, ex_int=ex_int, ex_float=ex_float, seg=seg,
                           feat_hash=feat_hash, feat_value=feat_value, feat_span=None,
                           first_line=0, source=self.path, line_starts=zeros, line_ends=zeros)
