"""Seeded train/test split of text lines, plain or ``.gz`` (SPEC §G): a line goes to the test
file iff ``murmur3_32(line bytes without the newline, seed) < fraction * 2**32``.

The decision depends on the line alone, so it is deterministic, independent of order, and the
same line always lands on the same side.  The report counts how many raters and tasks of the
test lines also occur in training (the seed's experiment needs both sides to share them).
"""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass

import numpy as np

from ..io.atomic import atomic_write
from ..io.hashing import murmur_ranges
from ..io.source import LineChunks

# the value part stops at the next '|', so a line of '|rater:|rater:...' is matched in linear
# time (with \S* each start re-scanned the rest of the line: quadratic, 24 s for 112 KB)
_NAMESPACE = re.compile(rb"\|(rater|task)(?::[^|\s]*)?\s+([^|\s]+)")


@dataclass
class SplitReport:
    train_lines: int
    test_lines: int
    test_raters: int
    test_raters_in_train: int
    test_tasks: int
    test_tasks_in_train: int

    def overlaps(self) -> list[tuple[str, int, int]]:
        """``(raters|tasks, seen in training, in test)`` for the rater-task namespaces the test
        lines have (none for other data)."""
        return [(what, seen, total) for what, seen, total in (
            ("raters", self.test_raters_in_train, self.test_raters),
            ("tasks", self.test_tasks_in_train, self.test_tasks)) if total]


def split_file(path: str, train: str, test: str, test_fraction: float = 1 / 16, seed: int = 0
               ) -> SplitReport:
    """Split ``path`` (``-``: standard input) into ``train`` and ``test``, streaming: memory
    holds one chunk of lines and the rater and task names, however large the file (a ``.gz``
    bomb included).  Both outputs are written atomically; a damaged ``.gz`` writes neither."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"--test_fraction must lie strictly between 0 and 1, not {test_fraction}")
    threshold = int(test_fraction * 2 ** 32)
    counts = [0, 0]  # train, test
    names = {side: {b"rater": set(), b"task": set()} for side in (0, 1)}
    with atomic_write(train) as train_out, atomic_write(test) as test_out:
        sinks = [_text_sink(train_out, train), _text_sink(test_out, test)]
        for buf, starts, ends, _ in LineChunks(path):
            data = buf.tobytes()
            ends = np.where((ends > starts) & (buf[np.maximum(ends - 1, 0)] == 13), ends - 1,
                            ends)  # CRLF
            keep = ends > starts  # blank lines carry no example
            starts, ends = starts[keep], ends[keep]
            to_test = murmur_ranges(buf, starts, ends, seed & 0xFFFFFFFF) < threshold
            for s, e, side in zip(starts.tolist(), ends.tolist(), to_test.tolist()):
                line = data[s:e]
                sinks[side].write(line + b"\n")
                counts[side] += 1
                for name, feature in _NAMESPACE.findall(line):
                    names[side][name].add(feature)
        for sink in sinks:
            sink.close()
    report = SplitReport(train_lines=counts[0], test_lines=counts[1], test_raters=0,
                         test_raters_in_train=0, test_tasks=0, test_tasks_in_train=0)
    for namespace, total, shared in ((b"rater", "test_raters", "test_raters_in_train"),
                                     (b"task", "test_tasks", "test_tasks_in_train")):
        setattr(report, total, len(names[1][namespace]))
        setattr(report, shared, len(names[1][namespace] & names[0][namespace]))
    return report


class _Plain:
    def __init__(self, handle):
        self.handle = handle
        self.write = handle.write

    def close(self) -> None:
        pass


def _text_sink(handle, name: str):
    """Where the lines of one side go: a ``.gz`` name gets gzip data (which ``-d`` reads)."""
    if name.endswith(".gz"):
        return gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0)
    return _Plain(handle)
