"""Byte sources read in chunks of whole lines: plain files, ``.gz`` files and standard input."""
from __future__ import annotations

import hashlib
import io
import os
import stat
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np

from .vw_text import split_lines

CHUNK_BYTES = 4 << 20
MAX_LINE_BYTES = 64 << 20  # a line is one example or answer row: far below this
FIRST_CHUNK_BYTES = 128 << 10


GZIP_MAGIC = b"\x1f\x8b"
# A tool that keeps all of a file (crowd answers, evaluate's labels) refuses gzip data that
# decompresses past BOMB_FLOOR at more than BOMB_RATIO times its compressed size: text
# compresses 3-20x, a run of one byte ~1000x (3 MB of newlines are 3 GB).  The learner and
# split stream, in flat memory, and have no such bound.
BOMB_FLOOR = 256 << 20
BOMB_RATIO = 100


class GzipBomb(ValueError):
    """Gzip data that decompresses past the bound of a tool that keeps all of it."""


def is_regular_file(path: str) -> bool:
    """False for a pipe, ``<(command)`` or a device: those can be read only once, in one go."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class GzipReader:
    """A ``.gz`` file decompressed chunk by chunk, members one after another (as ``gzip`` reads
    them), that keeps what a damaged file still holds: where the compressed data is cut short
    or corrupt, reading ends and :attr:`damage` says why (the ``gzip`` module raises instead,
    losing the block it was decompressing).  :meth:`tell` is the compressed position.
    ``source``: a path, or a binary stream (standard input, a pipe), which the owner closes."""

    def __init__(self, source, owned: bool | None = None, bounded: bool = False):
        """``bounded``: raise :class:`GzipBomb` past ``BOMB_FLOOR`` decompressed bytes at more
        than ``BOMB_RATIO`` times the compressed bytes read."""
        self.bounded = bounded
        self.produced = 0
        self.owned = isinstance(source, str) if owned is None else owned
        self.raw = open(source, "rb", buffering=0) if isinstance(source, str) else source
        self.inflate = zlib.decompressobj(wbits=31)
        self.in_member = False  # a member has started and not yet ended
        self.position = 0
        self.pending = b""
        self.tail = b""  # compressed bytes read and not yet decompressed
        self.ended = False
        self.damage: str | None = None

    def tell(self) -> int:
        return self.position

    def close(self) -> None:
        if self.owned:
            self.raw.close()

    def _feed(self, data: bytes, limit: int = 1 << 62) -> bytes:
        """Decompress ``data`` into at most ``limit`` bytes; the compressed bytes left over
        wait in :attr:`tail` (a run of one byte inflates ~1000x: 256 KiB read would be 256 MiB
        at once)."""
        out = []
        produced = 0
        while data and produced < limit:
            if not self.in_member:
                data = data.lstrip(b"\0")  # gzip allows zero padding between members
                if not data:
                    break
                self.inflate = zlib.decompressobj(wbits=31)
                self.in_member = True
            piece = self.inflate.decompress(data, limit - produced)
            out.append(piece)
            produced += len(piece)
            if self.inflate.eof:
                self.in_member = False
                data = self.inflate.unused_data
            else:
                data = self.inflate.unconsumed_tail
        self.tail = data
        return b"".join(out)

    def _salvage(self, chunk: bytes) -> bytes:
        """What ``chunk`` decompresses to before the step (of 16 bytes) that fails."""
        parts = []
        for start in range(0, len(chunk), 16):
            try:
                parts.append(self._feed(chunk[start:start + 16]))
            except zlib.error:
                break
        self.tail = b""
        return b"".join(parts)

    def read(self, size: int) -> bytes:
        parts = [self.pending]
        have = len(self.pending)
        while have < size and not self.ended:
            if self.tail:
                chunk = self.tail
            else:
                chunk = self.raw.read(256 << 10)
                self.position += len(chunk)
                if not chunk:
                    self.ended = True
                    if self.in_member:
                        self.damage = "compressed data ends early (a truncated file?)"
                    break
            state = (self.inflate.copy(), self.in_member)
            try:
                piece = self._feed(chunk, size - have)
            except zlib.error as exc:
                # again in small steps from before the chunk: keep what precedes the damage
                self.inflate, self.in_member = state
                parts.append(self._salvage(chunk))
                self.ended = True
                self.damage = f"corrupt compressed data ({exc})"
                break
            parts.append(piece)
            have += len(piece)
            self.produced += len(piece)
            if self.bounded and self.produced > max(BOMB_FLOOR, BOMB_RATIO * self.position):
                raise GzipBomb(f"gzip data decompresses to more than {BOMB_RATIO} times its "
                               f"size (over {self.produced >> 20} MiB from "
                               f"{max(self.position >> 10, 1)} KiB): refused as a "
                               "decompression bomb; decompress it yourself if it is real")
        data = b"".join(parts)
        self.pending = data[size:]
        return data[:size]


def read_whole(path: str) -> bytes:
    """A file's bytes, ``.gz`` decompressed; a damaged ``.gz`` raises ``ValueError`` naming the
    file (for the tools that need all of a file or nothing).  ``-`` reads standard input,
    decompressed when it is gzip data."""
    if path == "-":
        data, name = sys.stdin.buffer.read(), "standard input"
    else:  # read once: a pipe (<(zcat ...), a FIFO) cannot be opened again
        with open(path, "rb") as handle:
            data, name = handle.read(), path
    if data[:2] != GZIP_MAGIC:  # gzip data is told by its bytes, not by the name
        return data
    reader = GzipReader(io.BytesIO(data), bounded=True)
    try:
        data = reader.read(1 << 62)
    except GzipBomb as exc:
        raise GzipBomb(f"{name}: {exc}") from None
    finally:
        reader.close()
    if reader.damage:
        raise ValueError(f"{name}: {reader.damage}")
    return data


def gzip_damage(path: str) -> str | None:
    """Why the gzip data in regular file ``path`` is damaged (None when it is intact or not
    gzip): the whole file is decompressed and dropped, so a caller can refuse it before it
    learns anything from it (``--strict_parse``; gzip's CRC-32 comes at a member's end)."""
    if not is_regular_file(path):
        return None
    with open(path, "rb") as handle:
        if handle.read(2) != GZIP_MAGIC:
            return None
    reader = GzipReader(path)
    try:
        while reader.read(1 << 24):
            pass
    finally:
        reader.close()
    return reader.damage


class _Prefixed:
    """A binary stream whose first bytes, read already, are given back first."""

    def __init__(self, stream, head: bytes, owned: bool):
        self.stream, self.head, self.owned = stream, head, owned
        self.unread = head

    def read(self, size: int = -1) -> bytes:
        if not self.unread:
            return self.stream.read(size)
        first, self.unread = self.unread, b""
        if size is not None and 0 <= size <= len(first):
            first, self.unread = first[:size], first[size:]
            return first
        rest = self.stream.read(-1 if size is None or size < 0 else size - len(first))
        return first + rest

    def close(self) -> None:
        if self.owned:
            self.stream.close()


class LineChunks:
    """Iterate ``(buf, line_starts, line_ends, first_line)`` over a source, whole lines per chunk.

    Reads start at ``first_bytes`` and double up to ``chunk_bytes``: the learner waits for the
    first chunk alone (later ones are parsed while it learns), so a small one starts learning
    sooner (~0.1 s on a 1M-line file) and large ones keep the per-chunk overhead low.
    ``bytes_read`` and ``total_bytes`` (None when unknown) feed the progress bar.

    A damaged ``.gz`` file gives the lines before the damage; an unterminated last line there is
    dropped (it may be cut mid-example), and ``damaged`` gets a message naming the file and the
    last line read (without it, the message is raised as a ValueError).

    The text read is digested on the way (SHA-256, :meth:`text_digest`): a cache made from it
    records what it stands for.
    """

    def __init__(self, path: str | None, chunk_bytes: int = CHUNK_BYTES,
                 first_bytes: int = FIRST_CHUNK_BYTES,
                 damaged: Callable[[str], None] | None = None,
                 byte_range: tuple[int, int, int] | None = None, bounded: bool = False):
        """``byte_range``: ``(start, end, first line number)`` of whole lines of a plain file
        (a shard, distributed/learn.py: range_shards), read alone.  ``bounded``: gzip data
        past the bomb bound (``BOMB_RATIO``) is a :class:`GzipBomb` naming the file, for a
        caller that keeps every line."""
        self.bounded = bounded
        self.path = path
        self.byte_range = byte_range
        self.damaged = damaged
        self.name = path if path not in (None, "-") else "<stdin>"
        self.chunk_bytes = chunk_bytes
        self.first_bytes = min(first_bytes, chunk_bytes)
        self.bytes_read = 0
        self.total_bytes = None
        self._digest = hashlib.sha256()
        self.reached_end = False  # the last iteration read the text to its end
        if path not in (None, "-"):
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: no such file")
            if os.path.isdir(path):
                raise IsADirectoryError(f"{path}: is a directory, expected a data file")
            if is_regular_file(path):  # a pipe's size is not known before its end
                self.total_bytes = os.path.getsize(path)

    def _open(self):
        """The byte stream (decompressed when it holds gzip data) and whether to close it.  The
        source is opened once and its first bytes peeked, not read: a pipe (``-d <(zcat x)``)
        gives its bytes once."""
        if self.path in (None, "-"):
            stream, owned = sys.stdin.buffer, False
        elif self.total_bytes is not None:  # a regular file: unbuffered reads (5-8% faster)
            stream = open(self.path, "rb", buffering=0)
            if os.pread(stream.fileno(), 2, 0) == GZIP_MAGIC:
                return GzipReader(stream, owned=True, bounded=self.bounded), True
            return stream, True
        else:
            stream, owned = open(self.path, "rb"), True
        peek = getattr(stream, "peek", None)
        if peek is None:  # a stream that cannot peek (io.BytesIO): its first bytes go first
            stream, owned = _Prefixed(stream, stream.read(2), owned), True
            head = stream.head
        else:
            head = peek(2)[:2]
        if head == GZIP_MAGIC:
            return GzipReader(stream, owned=owned, bounded=self.bounded), True
        return stream, owned

    def _open_text(self):
        """(stream, whether to close it, bytes left or None, first line number)."""
        if self.byte_range is not None:
            start, end, line_no = self.byte_range
            handle = open(self.path, "rb", buffering=0)
            handle.seek(start)
            return handle, True, end - start, line_no
        return (*self._open(), None, 1)

    def text_digest(self) -> str:
        """SHA-256 (hex) of the text: of what the last iteration read when it read to the end,
        else of the text read afresh now (a .gz decompressed, up to any damage); "" when that
        cannot be known (standard input or a pipe not read to the end: it cannot be read
        again)."""
        if self.reached_end:
            return self._digest.hexdigest()
        if self.total_bytes is None:
            return ""
        digest = hashlib.sha256()
        handle, owned, left, _ = self._open_text()
        try:
            while left is None or left > 0:
                block = handle.read(1 << 20 if left is None else min(1 << 20, left))
                if not block:
                    break
                digest.update(block)
                left = None if left is None else left - len(block)
        finally:
            if owned:
                handle.close()
        return digest.hexdigest()

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
        handle, owned, left, line_no = self._open_text()
        self._digest, self.reached_end = hashlib.sha256(), False
        compressed = handle if isinstance(handle, GzipReader) else None
        try:
            carry = b""
            size = self.first_bytes
            while True:
                try:
                    block = handle.read(size if left is None else min(size, left))
                except GzipBomb as exc:
                    raise GzipBomb(f"{self.name}: {exc}") from None
                if left is not None:
                    left -= len(block)
                self._digest.update(block)
                size = min(2 * size, self.chunk_bytes)
                if block:
                    # progress counts file bytes: compressed ones for a .gz
                    self.bytes_read = compressed.tell() if compressed is not None \
                        else self.bytes_read + len(block)
                final = not block
                if final and compressed is not None and compressed.damage:
                    self._report_damage(compressed.damage, line_no - 1, bool(carry))
                    carry = b""  # possibly cut mid-example
                data = carry + block if carry else block
                if not data:
                    break
                buf = np.frombuffer(data, dtype=np.uint8)
                starts, ends, consumed = split_lines(buf, final, cr=True)
                if starts.shape[0]:
                    yield buf, starts, ends, line_no
                    line_no += starts.shape[0]
                carry = bytes(data[consumed:]) if consumed < len(data) else b""
                if len(carry) > MAX_LINE_BYTES:  # no example is this long; memory would grow
                    raise ValueError(f"{self.name}:{line_no}: a line longer than "
                                     f"{MAX_LINE_BYTES >> 20} MiB (no newline in the data?)")
                if final:
                    self.reached_end = True
                    break
        finally:
            if owned:
                handle.close()

    def _report_damage(self, damage: str, last_line: int, partial: bool) -> None:
        message = (f"{self.name}: {damage} after line {last_line}"
                   + ("; the unterminated line after it and" if partial else ";")
                   + " whatever followed is lost")
        if self.damaged is None:
            raise ValueError(message)
        self.damaged(message)


def prefetch(iterator: Iterator, enabled: bool = True) -> Iterator:
    """Produce the next item in a background thread while the caller works on this one.

    The parser and learner kernels release the GIL, so parsing overlaps learning on two cores.
    """
    if not enabled:
        yield from iterator
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(next, iterator, None)
        while True:
            item = future.result()
            if item is None:
                return
            future = pool.submit(next, iterator, None)
            yield item
