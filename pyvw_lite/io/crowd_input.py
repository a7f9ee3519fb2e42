"""Crowd answers in: crowd-kit's ``task,worker,label`` triples (CSV or TSV), the one-item-per-line
block format of SPEC §P.4, gold files, and plain arrays; worker slots (SPEC §P.5).

Everything becomes a :class:`CrowdData`: ratings grouped by item (item ``i`` owns ratings
``item_start[i]:item_start[i+1]``), label values mapped to ``0..K-1``.  Bad input is a
:class:`CrowdInputError` naming the file, the line and the offending text; a malformed answer
row (or item block) is that error under the default :class:`RowPolicy`, or is skipped with the
same message as a warning (the CLI's default, ``--strict_parse`` makes it fatal).
"""
from __future__ import annotations

import csv
import io
import os
import re
import sys
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from ..jit import kernel
from .hashing import murmur_ranges
from .source import GZIP_MAGIC, is_regular_file, read_whole


# label indices a file may imply (item blocks number them 0..K-1; --n_labels names K): each
# becomes a name, so a rating of 10^9 must not ask for 10^9 of them; the learners' class bound
LABEL_LIMIT = 1 << 16


class CrowdInputError(ValueError):
    """Unusable crowd input; the message names the file and line."""


class RowPolicy:
    """What a malformed answer row does: raise (``strict``) or get skipped with a warning."""

    def __init__(self, strict: bool = True, warn=None):
        self.strict = strict
        self.warn = warn  # callable taking one line of text, or None
        self.skipped = 0

    def reject(self, message: str) -> None:
        if self.strict:
            raise CrowdInputError(message)
        self.skipped += 1
        if self.warn is not None:
            self.warn(f"[warning] {message}; skipped")


STRICT = RowPolicy()


# C0 control characters but tab, and DEL: no id or label holds one (a NUL is a binary file or
# a broken export), and one would be copied into every file that names the id
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _quoted(line: str, limit: int = 200) -> str:
    """A bad row for a message: quoted, and shortened when very long."""
    return repr(line if len(line) <= limit else line[:limit] + "...")


@dataclass
class CrowdData:
    task_names: np.ndarray  # item i's task id (str)
    worker_names: np.ndarray  # worker w's id (str)
    label_names: list[str]  # label value of index k
    item_start: np.ndarray  # int64[I + 1]
    rating_worker: np.ndarray  # int64[R], index into worker_names
    rating_label: np.ndarray  # int64[R], 0..K-1
    gold: np.ndarray  # int64[I], -1 when unknown
    duplicates: int = 0  # repeated (task, worker) pairs, kept
    skipped_lines: int = 0  # item-block lines without ratings
    malformed: int = 0  # malformed rows (or item blocks) skipped
    gold_elsewhere: int = 0  # gold tasks that no answer names
    notes: list[str] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        return self.item_start.size - 1

    @property
    def n_ratings(self) -> int:
        return self.rating_label.size

    @property
    def n_labels(self) -> int:
        return len(self.label_names)

    def ratings_per_item(self) -> np.ndarray:
        return np.diff(self.item_start)


def _sorted_labels(values) -> list[str]:
    """Label values in natural order: numerically when every value is a number."""
    unique = sorted(set(values))
    try:
        return sorted(unique, key=lambda text: (float(text), text))
    except ValueError:
        return unique


def label_index(label_names: list[str]) -> dict[str, int]:
    index = {name: k for k, name in enumerate(label_names)}
    for name, k in list(index.items()):  # "1.0" and "1" name the same numeric label
        try:
            number = float(name)
        except ValueError:
            continue
        if number.is_integer():
            index.setdefault(str(int(number)), k)
    return index


def _check_label_count(n_labels: int | None) -> None:
    if n_labels is not None and n_labels > LABEL_LIMIT:
        raise CrowdInputError(f"--n_labels {n_labels}: more than {LABEL_LIMIT:,} labels")


def choose_labels(observed, n_labels: int | None, where: str) -> list[str]:
    _check_label_count(n_labels)
    names = _sorted_labels(observed)
    if n_labels is None or n_labels == len(names):
        return names
    if n_labels < len(names):
        raise CrowdInputError(f"{where}: {len(names)} distinct labels but --n_labels {n_labels}")
    try:
        values = {int(name) for name in names}
    except ValueError:
        raise CrowdInputError(f"{where}: --n_labels {n_labels} with non-integer labels "
                              f"{names[:3]}: cannot name the unseen classes") from None
    outside = sorted(v for v in values if not 0 <= v < n_labels)
    if outside:
        raise CrowdInputError(f"{where}: label {outside[0]} is outside 0..{n_labels - 1}, the "
                              f"classes --n_labels {n_labels} names")
    return [str(k) for k in range(n_labels)]


def _group_by_item(task_codes: np.ndarray, n_tasks: int):
    """Stable grouping of ratings by item: (order of ratings, item_start)."""
    order = np.argsort(task_codes, kind="stable")
    counts = np.bincount(task_codes, minlength=n_tasks)
    item_start = np.zeros(n_tasks + 1, dtype=np.int64)
    np.cumsum(counts, out=item_start[1:])
    return order, item_start


def _factorize(values: np.ndarray):
    """Codes in order of first appearance, and the unique values (by pandas when it is already
    imported: a dictionary does a million values in a fraction of pandas' import time)."""
    pd = sys.modules.get("pandas")
    if pd is not None:
        codes, uniques = pd.factorize(values, sort=False)
        return codes.astype(np.int64), np.asarray(uniques, dtype=object)
    seen: dict = {}
    codes = np.empty(len(values), dtype=np.int64)
    for position, value in enumerate(values):
        codes[position] = seen.setdefault(value, len(seen))
    return codes, np.array(list(seen), dtype=object)


@kernel
def _repeated_pairs(item_start, rating_worker):
    """Ratings whose (item, worker) pair already occurred earlier in the item's block."""
    repeats = 0
    for i in range(item_start.size - 1):
        workers = np.sort(rating_worker[item_start[i]:item_start[i + 1]])
        for j in range(1, workers.size):
            if workers[j] == workers[j - 1]:
                repeats += 1
    return repeats


DUPLICATE_POLICIES = ("keep", "first", "last", "vote")


def resolve_duplicates(data: CrowdData, policy: str) -> CrowdData:
    """One answer per (task, worker) pair, or all of them (``keep``): ``first`` and ``last`` in
    file order, ``vote`` the pair's most frequent label (a tie: the latest of the tied)."""
    if policy not in DUPLICATE_POLICIES:
        raise ValueError(f"--duplicates must be one of {', '.join(DUPLICATE_POLICIES)}, not "
                         f"{policy!r}")
    if policy == "keep" or data.n_ratings == 0:
        return data
    item = np.repeat(np.arange(data.n_items, dtype=np.int64), data.ratings_per_item())
    pair = item * max(len(data.worker_names), 1) + data.rating_worker
    order = np.arange(data.n_ratings)
    keep = np.zeros(data.n_ratings, dtype=bool)
    if policy == "vote":
        _, pair_id = np.unique(pair, return_inverse=True)
        pairs = int(pair_id.max()) + 1
        votes = np.zeros((pairs, data.n_labels))
        np.add.at(votes, (pair_id, data.rating_label), 1.0)
        latest = np.full((pairs, data.n_labels), -1, dtype=np.int64)
        np.maximum.at(latest, (pair_id, data.rating_label), order)
        tied = votes == votes.max(axis=1, keepdims=True)
        winner = np.where(tied, latest, -1).argmax(axis=1)
        keep[latest[np.arange(pairs), winner]] = True  # the pair's last answer of that label
    else:
        sequence = order[::-1] if policy == "last" else order
        _, first = np.unique(pair[sequence], return_index=True)
        keep[sequence[first]] = True
    return keep_answers(data, keep)


def keep_answers(data: CrowdData, keep: np.ndarray) -> CrowdData:
    """The same items, workers and labels with only the answers where ``keep`` is set."""
    item = np.repeat(np.arange(data.n_items, dtype=np.int64), data.ratings_per_item())
    item_start = np.zeros(data.n_items + 1, dtype=np.int64)
    np.cumsum(np.bincount(item[keep], minlength=data.n_items), out=item_start[1:])
    return CrowdData(task_names=data.task_names, worker_names=data.worker_names,
                     label_names=data.label_names, item_start=item_start,
                     rating_worker=data.rating_worker[keep], rating_label=data.rating_label[keep],
                     gold=data.gold, skipped_lines=data.skipped_lines, malformed=data.malformed,
                     gold_elsewhere=data.gold_elsewhere, notes=data.notes)


class Column:
    """One factorized column: ``codes[row]`` indexes ``values`` (first-appearance order)."""

    def __init__(self, codes: np.ndarray, values: np.ndarray):
        self.codes = codes
        self.values = values

    @classmethod
    def of(cls, sequence) -> "Column":
        return cls(*_factorize(np.asarray(sequence, dtype=object)))

    def missing(self) -> np.ndarray:
        """Rows whose value is missing: None or NaN (pandas gives them code -1) or blank."""
        blank = [k for k, value in enumerate(self.values.tolist()) if value is None
                 or value != value or (isinstance(value, str) and not value.strip())]
        return (self.codes < 0) | np.isin(self.codes, blank)

    def subset(self, keep: np.ndarray) -> "Column":
        """The rows where ``keep`` is set, factorized afresh (first appearance among them)."""
        return Column.of(self.values[self.codes[keep]])


def from_arrays(tasks, workers, labels, *, gold: dict | None = None, n_labels: int | None = None,
                label_names: list[str] | None = None, where: str = "data") -> CrowdData:
    """Triples as three equal-length sequences (any hashable ids; labels compared as text).
    A missing value (None, NaN or blank) is an error naming its row (0-based)."""
    if not (len(tasks) == len(workers) == len(labels)):
        raise CrowdInputError(f"{where}: task, worker and label columns differ in length")
    columns = [Column.of(values) for values in (tasks, workers, labels)]
    for name, column in zip(("task", "worker", "label"), columns):
        missing = column.missing()
        if missing.any():
            row, count = int(np.argmax(missing)), int(missing.sum())
            raise CrowdInputError(f"{where}: row {row}: missing {name}"
                                  + (f" ({count} rows in all)" if count > 1 else ""))
    return from_columns(*columns, gold=gold, n_labels=n_labels, label_names=label_names,
                        where=where)


def from_columns(tasks: Column, workers: Column, labels: Column, *, gold: dict | None = None,
                 n_labels: int | None = None, label_names: list[str] | None = None,
                 where: str = "data", first_line: int = 1, lines: np.ndarray | None = None,
                 rows: RowPolicy = STRICT) -> CrowdData:
    """Factorized triples to CrowdData; ``lines``: each row's file line, or row 0 is at
    ``first_line`` (for messages).  A label outside given ``label_names`` is a malformed row."""
    if tasks.codes.size == 0:
        raise CrowdInputError(f"{where}: no answers")
    label_texts = [str(value) for value in labels.values.tolist()]
    if label_names is None:
        label_names = choose_labels(label_texts, n_labels, where)
    index = label_index(label_names)
    known = np.array([value in index for value in label_texts])
    if not known.all():
        unknown = ~known[labels.codes]
        for row in np.flatnonzero(unknown):
            line = int(lines[row]) if lines is not None else int(row) + first_line
            rows.reject(f"{where}:{line}: unknown label {label_texts[labels.codes[row]]!r} "
                        f"(labels: {', '.join(label_names)})")
        if unknown.all():
            raise CrowdInputError(f"{where}: no answers")
        tasks, workers, labels = (column.subset(~unknown) for column in (tasks, workers, labels))
        label_texts = [str(value) for value in labels.values.tolist()]
    lookup = np.array([index[value] for value in label_texts], dtype=np.int64)
    order, item_start = _group_by_item(tasks.codes, len(tasks.values))
    data = CrowdData(task_names=tasks.values, worker_names=workers.values,
                     label_names=list(label_names), item_start=item_start,
                     rating_worker=workers.codes[order], rating_label=lookup[labels.codes][order],
                     gold=np.full(len(tasks.values), -1, dtype=np.int64),
                     duplicates=0)
    data.duplicates = int(_repeated_pairs(data.item_start, data.rating_worker))
    if gold:
        apply_gold(data, gold, where="gold")
    return data


def known_labels(data: CrowdData, gold: dict, where: str) -> np.ndarray:
    """Each item's label index from ``gold`` (task id -> label text, or (text, line)), -1 for
    items it does not name; a label outside the data's labels is an error at its line."""
    index = label_index(data.label_names)
    position = {name: i for i, name in enumerate(data.task_names.tolist())}
    known = np.full(data.n_items, -1, dtype=np.int64)
    for task, entry in gold.items():
        label, line = entry if isinstance(entry, tuple) else (entry, None)
        if str(label) not in index:
            where_line = f"{where}:{line}" if line else where
            raise CrowdInputError(f"{where_line}: unknown gold label {label!r} for task "
                                  f"{task!r} (labels: {', '.join(data.label_names)})")
        i = position.get(task)
        if i is not None:
            known[i] = index[str(label)]
    return known


def apply_gold(data: CrowdData, gold: dict, where: str) -> int:
    """Mark known items; ``gold`` maps task id to label text.  Returns the number applied.
    Gold of which no task is a task of the answers is refused: it would change nothing, and
    is most often a mismatch (other ids, or ``1`` against ``"1"``)."""
    known = known_labels(data, gold, where)
    matched = int((known >= 0).sum())
    if gold and not matched:
        key, task = next(iter(gold)), data.task_names[0] if data.n_items else None
        kinds = (f"its tasks are {type(key).__name__} ({key!r}, ...), the answers' "
                 f"{type(task).__name__} ({task!r}, ...)") if type(key) is not type(task) \
            else f"its tasks: {key!r}, ...; the answers': {task!r}, ..."
        raise CrowdInputError(f"{where}: none of its {len(gold)} gold tasks is a task of the "
                              f"answers ({kinds})")
    data.gold = np.where(known >= 0, known, data.gold)
    data.gold_elsewhere = len(set(gold) - set(data.task_names.tolist()))
    return matched


_once_read: list = [None, None, b""]  # (sys.stdin, path, bytes) of a source read only once


def _read_all(path: str) -> bytes:
    """Standard input (``-``), a pipe or gzip data, whole and decompressed: EM over the part of
    a damaged file before the damage would give other labels without a word.  Standard input
    and pipes can be read only once, so their bytes are kept for the next reader (the format
    is told before the data is parsed)."""
    if _once_read[:2] == [sys.stdin, path]:
        return _once_read[2]
    try:
        data = read_whole(path)
    except ValueError as exc:
        raise CrowdInputError(str(exc)) from None
    if path == "-" or not is_regular_file(path):
        _once_read[:] = [sys.stdin, path, data]
    return data


def _in_memory(path: str) -> bool:
    """Whether ``path`` is read whole through :func:`_read_all` rather than opened as text."""
    if path == "-" or path.endswith(".gz") or not is_regular_file(path):
        return True
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def _open_text(path: str):
    if path != "-" and not os.path.exists(path):
        raise CrowdInputError(f"{path}: no such file")
    if _in_memory(path):
        return io.TextIOWrapper(io.BytesIO(_read_all(path)), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def read_columns(path: str, required: tuple[str, ...], rows: RowPolicy = STRICT,
                 optional: tuple[str, ...] = ()) -> dict[str, Column]:
    """A CSV/TSV file with a header row; each required column factorized, and each optional
    one (present in the header, but a row may leave it empty)."""
    return read_table(path, required, rows, optional)[0]


def _not_utf8(path: str, name: str) -> CrowdInputError:
    """The error for a file that is not UTF-8, naming its first bad line and byte."""
    if _in_memory(path):
        data = _read_all(path)
    else:
        with open(path, "rb") as handle:
            data = handle.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        text = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16's byte-order mark
            return CrowdInputError(f"{name}:1: UTF-16 text, not UTF-8 (it starts with UTF-16's "
                                   "byte-order mark); convert it, e.g. iconv -f utf-16 -t utf-8")
        return CrowdInputError(f"{name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} "
                               f"at column {exc.start - start + 1}; line: {_quoted(text)}); "
                               "convert it, e.g. iconv -f latin1 -t utf-8")
    return CrowdInputError(f"{name}: not UTF-8 text")


def _nfc(column: Column) -> Column:
    """One value per text, however its accents are composed (NFC): 'é' typed as one code point
    and as 'e' plus a combining accent print alike, so they are one label, task or worker."""
    values = column.values.tolist()
    normal = [unicodedata.normalize("NFC", v) if isinstance(v, str) else v for v in values]
    if normal == values:
        return column
    merged = Column.of(normal)
    codes = np.where(column.codes >= 0, merged.codes[column.codes.clip(0)], -1)
    return Column(codes, merged.values)


def _header(first_line: str, delimiter: str, name: str) -> list[str]:
    """The header's column names, quoted or not (``QUOTE_ALL`` writes ``"task","worker"``); a
    name given twice is an error, as either column could be meant."""
    header = [column.strip() for column in next(csv.reader([first_line.rstrip("\r\n")],
                                                           delimiter=delimiter), [])]
    seen = set()
    for column in header:
        if column in seen and column:
            raise CrowdInputError(f"{name}:1: the header names column {column!r} twice "
                                  f"(header: {first_line.strip()!r})")
        seen.add(column)
    return header


def read_table(path: str, required: tuple[str, ...], rows: RowPolicy = STRICT,
               optional: tuple[str, ...] = ()) -> tuple[dict[str, Column], np.ndarray | None]:
    """:func:`read_columns` and each row's file line (None: row ``r`` is on line ``r + 2``).

    A row with the wrong number of fields or an empty required value goes to ``rows``: a file
    with one is read again by the csv module, which knows every row's line.  Text that is not
    UTF-8 is an error naming its line; values are compared in NFC form."""
    name = "<stdin>" if path == "-" else path
    try:
        columns, lines = _read_table(path, name, required, rows, optional)
    except UnicodeDecodeError:
        raise _not_utf8(path, name) from None
    return {column: _nfc(values) for column, values in columns.items()}, lines


# From this size on a CSV is read by pandas when installed: importing pandas costs what the csv
# module spends on about 2 MB of answers (csv 0.15-0.35 s a MB, pandas 0.03-0.07 s a MB and 0.5 s
# to import, on s4_Relevance and cifar10n).  Both read alike (tests/test_startup.py).
PANDAS_FROM_BYTES = 2_000_000


def _pandas_for(source):
    """pandas, when it is installed and ``source`` (a path or the bytes read) is large enough to
    repay importing it; else None (the csv module reads the file)."""
    size = len(source.getbuffer()) if isinstance(source, io.BytesIO) else os.path.getsize(source)
    if size < PANDAS_FROM_BYTES and "pandas" not in sys.modules:
        return None
    try:
        import pandas as pd
    except ImportError:
        return None
    return pd


def _read_table(path, name, required, rows, optional):
    if path != "-" and not os.path.exists(path):
        raise CrowdInputError(f"{path}: no such file")
    if _in_memory(path):
        source = io.BytesIO(_read_all(path))  # gzip data is decompressed
        first_line = source.readline().decode("utf-8-sig")
        source.seek(0)
    else:
        with _open_text(path) as handle:
            first_line = handle.readline()
        source = path
    if not first_line.strip():
        what = "is empty" if not first_line else "starts with an empty line"
        raise CrowdInputError(f"{name}:1: the file {what}; expected a header line naming the "
                              f"columns {', '.join(tuple(required) + tuple(optional))}")
    delimiter = "\t" if "\t" in first_line else ","
    header = _header(first_line, delimiter, name)
    wanted = tuple(required) + tuple(optional)
    missing = [column for column in wanted if column not in header]
    if missing:
        raise CrowdInputError(f"{name}:1: missing column {missing[0]!r} (header: "
                              f"{first_line.strip()!r}; expected {', '.join(wanted)})")
    pd = _pandas_for(source)
    if pd is not None:
        # read as text: ids such as "007" must not become the number 7; every column, as
        # ``usecols`` would drop a row's extra fields (an unquoted comma in a label) silently
        try:
            # blank lines kept as empty rows, so that row r stays on line r + 2
            frame = pd.read_csv(source, sep=delimiter, dtype=str, keep_default_na=False,
                                skipinitialspace=True, skip_blank_lines=False)
        except pd.errors.ParserError:
            frame = None  # a row with extra fields: the csv module below names it
        if frame is not None:
            blank = (frame == "").all(axis=1).to_numpy()
            if blank.any():  # blank lines at the end are dropped; inside, the csv module
                keep = int(np.flatnonzero(~blank)[-1]) + 1 if not blank.all() else 0
                frame = frame.iloc[:keep] if not blank[:keep].any() else None
        if frame is not None:
            frame.columns = [str(column).strip() for column in frame.columns]
            columns = {}
            for column in wanted:
                # values stripped as the csv module's rows are (read_csv's skipinitialspace
                # strips the left side only: 'w1 ' and 'w1' were two workers)
                codes, uniques = pd.factorize(frame[column].str.strip(), sort=False)
                columns[column] = Column(codes.astype(np.int64),
                                         np.asarray(uniques, dtype=object))
            del frame
            control = any(CONTROL.search("\n".join(map(str, columns[column].values)))
                          for column in wanted)  # one search per column: \n is not matched
            if not control and not any(columns[column].missing().any() for column in required):
                return columns, None  # else the csv module below names each bad row
    if isinstance(source, io.BytesIO):
        source.seek(0)
        handle = io.TextIOWrapper(source, encoding="utf-8-sig", newline="")
    else:
        handle = _open_text(path)
    with handle:
        reader = csv.reader(handle, delimiter=delimiter)
        next(reader)
        positions = [header.index(column) for column in wanted]
        values: dict[str, list] = {column: [] for column in wanted}
        lines = []
        for row in _rows(reader, name):
            line_number = reader.line_num
            if not row:
                continue
            text = delimiter.join(row)
            if len(row) != len(header):
                rows.reject(f"{name}:{line_number}: expected {len(header)} fields, got "
                            f"{len(row)} (line: {_quoted(text)})")
                continue
            fields = [row[position].strip() for position in positions]
            bad = next((field for field in fields if CONTROL.search(field)), None)
            if bad is not None:
                rows.reject(f"{name}:{line_number}: a control character "
                            f"({CONTROL.search(bad).group()!r}) in {_quoted(bad, 40)} "
                            f"(line: {_quoted(text)})")
                continue
            if "" in fields[:len(required)]:
                rows.reject(f"{name}:{line_number}: empty {required[fields.index('')]!r} "
                            f"(line: {_quoted(text)})")
                continue
            for column, value in zip(wanted, fields):
                values[column].append(value)
            lines.append(line_number)
    return ({column: Column.of(items) for column, items in values.items()},
            np.array(lines, dtype=np.int64))


def _rows(reader, name: str):
    """A csv reader's rows; a field past the csv module's limit (128 KiB: no id or label is
    that long) is an error naming the file and line, not a traceback."""
    try:
        yield from reader
    except csv.Error as exc:
        raise CrowdInputError(f"{name}:{reader.line_num}: not a usable CSV row "
                              f"({exc})") from None


def read_gold(path: str) -> dict:
    """A truth/gold file: columns ``task,label``; task -> (label, line).  A task may repeat
    with the same label; with another one the file contradicts itself, which is an error."""
    table, lines = read_table(path, ("task", "label"))
    tasks = table["task"].values[table["task"].codes].tolist()
    labels = table["label"].values[table["label"].codes].tolist()
    lines = range(2, len(tasks) + 2) if lines is None else lines.tolist()
    gold: dict = {}
    for line, task, label in zip(lines, tasks, labels):
        first, first_line = gold.setdefault(task, (label, line))
        if first != label:
            raise CrowdInputError(f"{path}:{line}: task {task!r} has label {label!r} here but "
                                  f"{first!r} at line {first_line}")
    return gold


def looks_like_blocks(path: str) -> bool:
    """SPEC §P.4 lines (``item gold worker:rating ...``) rather than a table with a header."""
    try:
        with _open_text(path) as handle:
            for line in handle:
                stripped = line.strip()
                if not stripped or stripped.startswith("#"):
                    continue
                return ":" in stripped and "," not in stripped and "\t" not in stripped
    except UnicodeDecodeError:
        raise _not_utf8(path, "<stdin>" if path == "-" else path) from None
    return False


def read_triples(path: str, *, n_labels: int | None = None, gold_path: str | None = None,
                 label_names: list[str] | None = None, rows: RowPolicy = STRICT) -> CrowdData:
    name = "<stdin>" if path == "-" else path
    table, lines = read_table(path, ("task", "worker", "label"), rows)
    data = from_columns(table["task"], table["worker"], table["label"], n_labels=n_labels,
                        label_names=label_names, where=name, first_line=2, lines=lines,
                        rows=rows)
    data.malformed = rows.skipped
    if gold_path:
        apply_gold(data, read_gold(gold_path), where=gold_path)
    return data


def read_blocks(path: str, *, n_labels: int | None = None, rows: RowPolicy = STRICT
                ) -> CrowdData:
    """SPEC §P.4: ``<item_id> <gold> <worker_id>:<rating> ...``, labels already 0..K-1.

    Each line is one item block in stream order (an id may repeat, e.g. after ``multicat``); a
    malformed block goes to ``rows`` whole.
    """
    name = "<stdin>" if path == "-" else path
    _check_label_count(n_labels)
    tasks, golds, starts = [], [], [0]
    workers, ratings = [], []
    skipped = 0
    with _open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            block = _item_block(fields, n_labels)
            if isinstance(block, str):
                rows.reject(f"{name}:{line_number}: {block} (line: {_quoted(line.strip())})")
                continue
            gold, pairs = block
            if not pairs:
                skipped += 1
                continue
            for worker, value in pairs:
                workers.append(worker)
                ratings.append(value)
            tasks.append(fields[0])
            golds.append(gold)
            starts.append(len(ratings))
    if not ratings:
        raise CrowdInputError(f"{name}: no ratings")
    K = n_labels if n_labels is not None else max(max(ratings), max(golds)) + 1
    if K > LABEL_LIMIT:
        raise CrowdInputError(f"{name}: a rating or gold label of {K - 1} makes {K} labels, more "
                              f"than {LABEL_LIMIT:,}")
    worker_codes, worker_names = _factorize(np.array(workers, dtype=object))
    task_names = np.array(tasks, dtype=object)
    item_start = np.array(starts, dtype=np.int64)
    data = CrowdData(task_names=task_names, worker_names=worker_names,
                     label_names=[str(k) for k in range(K)], item_start=item_start,
                     rating_worker=worker_codes, rating_label=np.array(ratings, dtype=np.int64),
                     gold=np.array(golds, dtype=np.int64), skipped_lines=skipped,
                     malformed=rows.skipped)
    data.duplicates = int(_repeated_pairs(data.item_start, data.rating_worker))
    return data


def _item_block(fields: list[str], n_labels: int | None):
    """``(gold, [(worker, rating), ...])`` of one §P.4 line, or what is wrong with it."""
    if len(fields) < 2:
        return "expected '<item> <gold> <worker>:<rating> ...'"
    try:
        gold = int(fields[1])
    except ValueError:
        return f"gold {fields[1]!r} is not an integer"
    top = (n_labels or 1) - 1
    if gold < -1 or (n_labels is not None and gold >= n_labels):
        return f"gold {gold} outside -1..{top}"
    pairs = []
    for token in fields[2:]:
        worker, colon, rating = token.rpartition(":")
        if not colon or not worker:
            return f"malformed rating {token!r} (expected worker:rating)"
        try:
            value = int(rating)
        except ValueError:
            return f"rating {rating!r} of worker {worker!r} is not an integer"
        if value < 0 or (n_labels is not None and value >= n_labels):
            return f"rating {value} outside 0..{top} (token {token!r})"
        pairs.append((worker, value))
    return gold, pairs


def read_answers(path: str, *, n_labels: int | None = None, gold_path: str | None = None,
                 label_names: list[str] | None = None, rows: RowPolicy = STRICT) -> CrowdData:
    """Triples or item blocks, whichever the file holds (``label_names``: a loaded model's);
    text that is not UTF-8 is an error naming its line."""
    try:
        return _read_answers(path, n_labels, gold_path, label_names, rows)
    except UnicodeDecodeError:
        raise _not_utf8(path, "<stdin>" if path == "-" else path) from None


def _read_answers(path, n_labels, gold_path, label_names, rows) -> CrowdData:
    if looks_like_blocks(path):
        data = read_blocks(path, n_labels=len(label_names) if label_names else n_labels,
                           rows=rows)
        if gold_path:
            apply_gold(data, read_gold(gold_path), where=gold_path)
        return data
    return read_triples(path, n_labels=n_labels, gold_path=gold_path, label_names=label_names,
                        rows=rows)


def hashed_slots(worker_names, bits: int) -> np.ndarray:
    """SPEC §P.5: ``murmur3_32(utf8(worker_id), 0) mod 2**bits`` for every name."""
    encoded = [str(name).encode("utf-8") for name in worker_names]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(item) for item in encoded], out=offsets[1:])
    buffer = np.frombuffer(b"".join(encoded), dtype=np.uint8) if offsets[-1] else np.zeros(1, np.uint8)
    return murmur_ranges(buffer, offsets[:-1], offsets[1:], 0) % (np.int64(1) << bits)
