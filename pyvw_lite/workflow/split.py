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
from ..io.source import read_whole
from ..io.vw_text import split_lines

_NAMESPACE = re.compile(rb"\|(rater|task)(?::\S*)?\s+([^|\s]+)")


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


def _first_features(lines: list[bytes], namespace: bytes) -> set[bytes]:
    found = set()
    for line in lines:
        for name, feature in _NAMESPACE.findall(line):
            if name == namespace:
                found.add(feature)
    return found


def split_file(path: str, train: str, test: str, test_fraction: float = 1 / 16, seed: int = 0
               ) -> SplitReport:
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"--test_fraction must lie strictly between 0 and 1, not {test_fraction}")
    data = read_whole(path)
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    starts, ends, _ = split_lines(buf, True)
    ends = np.where((ends > starts) & (buf[np.maximum(ends - 1, 0)] == 13), ends - 1, ends)  # CRLF
    keep = ends > starts  # blank lines carry no example
    starts, ends = starts[keep], ends[keep]
    hashes = murmur_ranges(buf, starts, ends, seed & 0xFFFFFFFF)
    to_test = hashes < int(test_fraction * 2 ** 32)
    lines = [data[s:e] for s, e in zip(starts.tolist(), ends.tolist())]
    test_lines = [line for line, flag in zip(lines, to_test.tolist()) if flag]
    train_lines = [line for line, flag in zip(lines, to_test.tolist()) if not flag]
    for out, chosen in ((train, train_lines), (test, test_lines)):
        text = b"\n".join(chosen) + b"\n" if chosen else b""
        with atomic_write(out) as handle:  # a .gz name gets gzip data, which -d reads
            handle.write(gzip.compress(text, mtime=0) if out.endswith(".gz") else text)
    report = SplitReport(train_lines=len(train_lines), test_lines=len(test_lines), test_raters=0,
                         test_raters_in_train=0, test_tasks=0, test_tasks_in_train=0)
    for namespace, total, shared in ((b"rater", "test_raters", "test_raters_in_train"),
                                     (b"task", "test_tasks", "test_tasks_in_train")):
        in_test = _first_features(test_lines, namespace)
        in_train = _first_features(train_lines, namespace)
        setattr(report, total, len(in_test))
        setattr(report, shared, len(in_test & in_train))
    return report
