"""Crowd answers to rater-task VW lines, and VW predictions back to labels.

One answer becomes one line ``<k> '<task> |rater r_<worker> |task t_<task>`` with the label
mapped to ``1..K`` (VW's multiclass labels); the tag carries the task id so predictions map back.
Extra columns become namespaces of their own: a numeric column ``c`` gives ``|c c:<value>``,
any other ``|c c_<value>``.  The label map is a small JSON file written next to the lines.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field

import numpy as np

from ..io.atomic import atomic_write
from ..io.crowd_input import (STRICT, Column, CrowdData, CrowdInputError, RowPolicy,
                              choose_labels, label_index, looks_like_blocks, read_blocks,
                              read_columns)
from .evaluate import label_fields, split_prediction

MAP_FORMAT = "pyvw-lite label map 1"


# VW syntax characters in an id, and '%' itself, are percent-encoded: distinct ids stay distinct
# features ("a b" and "a_b" were one task), and a tag maps back to its exact id.
_ESCAPED = {character: f"%{ord(character):02X}" for character in "%:| \t'\r\n\v\f"}


def _escaped(character: str) -> str:
    if character in _ESCAPED:
        return _ESCAPED[character]
    if character.isspace():  # U+00A0, U+2028, \x1c..: str.split() breaks a line there too
        return "".join(f"%{byte:02X}" for byte in character.encode("utf-8"))
    return character


def vw_token(text: str) -> str:
    """An id as a VW feature name or tag: ``%``, ``:``, ``|``, ``'`` and white space (any
    that ``str.split`` splits on) percent-encoded (``q 1`` -> ``q%201``); :func:`from_vw_token`
    reverses it."""
    text = str(text)
    if not any(character in _ESCAPED or character.isspace() for character in text):
        return text
    return "".join(_escaped(character) for character in text)


def from_vw_token(token: str) -> str:
    """The id a :func:`vw_token` came from; a ValueError where its escapes are no UTF-8 (two
    such tokens would decode to one replacement character: one id) or it holds a NUL or CR."""
    if "%" in token:
        from urllib.parse import unquote
        try:
            token = unquote(token, errors="strict")
        except UnicodeDecodeError:
            raise ValueError(f"{token!r} escapes bytes that are no UTF-8 text") from None
    if "\0" in token or "\r" in token:  # CSV readers (ours too) end a line at a lone CR
        raise ValueError(f"{token!r} holds a NUL or CR character, which a CSV row cannot")
    return token


@dataclass
class ConvertReport:
    lines: int
    labels: list[str]
    tasks: int
    workers: int
    clashes: list[str]  # extra namespaces whose first letter is r or t (as -q rt sees them)
    left_out: dict[str, int] = field(default_factory=dict)  # column -> non-finite cells


def _numeric(values: list) -> bool:
    try:
        np.asarray(values, dtype=float)
    except ValueError:
        return False
    return True


def crowd_to_vw(answers: str, out: str, label_map: str | None = None,
                features: tuple[str, ...] = (), n_labels: int | None = None,
                shuffle_seed: int | None = None, rows: RowPolicy = STRICT) -> ConvertReport:
    """Write VW lines for every answer in ``answers`` (input order, or shuffled with a seed);
    ``rows`` says what a malformed answer does (raise, or skip it with a warning)."""
    for reserved in ("rater", "task"):
        if reserved in features:
            raise CrowdInputError(f"--features: {reserved!r} is already a namespace")
    clashes = [name for name in features if name[:1] in ("r", "t")]
    if looks_like_blocks(answers):
        if features:
            raise CrowdInputError(f"{answers}: item blocks have no extra columns for --features")
        columns = _block_columns(read_blocks(answers, rows=rows))
    else:
        columns = read_columns(answers, ("task", "worker", "label"), rows,
                               optional=tuple(features))
    if columns["label"].codes.size == 0:
        raise CrowdInputError(f"{answers}: no answers")
    label_names = choose_labels([str(v) for v in columns["label"].values.tolist()], n_labels,
                                 answers)
    index = label_index(label_names)
    label_of_value = np.array([index[str(value)] + 1 for value in columns["label"].values.tolist()])
    labels = label_of_value[columns["label"].codes].astype(str)
    tasks = np.array([vw_token(value) for value in columns["task"].values.tolist()], dtype=object)
    workers = np.array([vw_token(value) for value in columns["worker"].values.tolist()],
                       dtype=object)
    task = tasks[columns["task"].codes]
    parts = [labels.astype(object) + " '" + task + " |rater r_"
             + workers[columns["worker"].codes] + " |task t_" + task]
    left_out = {}
    for name in features:  # an empty cell leaves the example without that namespace
        column = columns[name]
        empty = np.zeros(column.values.size, dtype=bool)
        empty[np.unique(column.codes[column.missing()])] = True
        values = column.values.tolist()
        numeric = _numeric([value for value, blank in zip(values, empty) if not blank])
        if numeric:  # nan, inf, 1e400: no value a learner can use, so left out like a blank
            bad = ~empty & ~np.isfinite(np.array([0.0 if blank else float(value) for value, blank
                                                  in zip(values, empty)]))
            # float() reads Arabic-Indic and full-width digits; VW reads them as a string value
            bad |= ~empty & np.array([not str(value).strip().isascii() for value in values])
            if bad.any():
                left_out[name] = int(np.isin(column.codes, np.flatnonzero(bad)).sum())
                empty |= bad
        # a number's text stripped: float() reads "\n\n2" as 2, and the line breaks would be
        # written into the VW file as lines of their own
        cells = np.array(["" if blank else f" |{vw_token(name)} {vw_token(name)}:{value.strip()}"
                          if numeric else f" |{vw_token(name)} {vw_token(name)}_{vw_token(value)}"
                          for value, blank in zip(values, empty)], dtype=object)
        codes = np.where(column.codes < 0, column.values.size, column.codes)
        parts.append(np.append(cells, "")[codes])
    lines = parts[0]
    for extra in parts[1:]:
        lines = lines + extra
    if shuffle_seed is not None:
        lines = lines[np.random.default_rng(shuffle_seed).permutation(lines.size)]
    with atomic_write(out, binary=False) as handle:
        for start in range(0, lines.size, 200_000):
            handle.write("\n".join(lines[start:start + 200_000].tolist()) + "\n")
    if label_map:
        with atomic_write(label_map, binary=False) as handle:
            json.dump({"format": MAP_FORMAT, "labels": label_names}, handle, indent=1)
            handle.write("\n")
    return ConvertReport(lines=int(lines.size), labels=label_names,
                         tasks=len(columns["task"].values), workers=len(columns["worker"].values),
                         clashes=clashes, left_out=left_out)


def _block_columns(data: CrowdData) -> dict[str, Column]:
    """Item blocks (SPEC §P.4) as factorized answer columns, one row per rating in file order."""
    item_of = np.repeat(np.arange(data.n_items, dtype=np.int64), data.ratings_per_item())
    tasks = Column.of(data.task_names[item_of])
    return {"task": tasks, "worker": Column(data.rating_worker, data.worker_names),
            "label": Column(data.rating_label,
                            np.asarray(data.label_names, dtype=object))}


def read_label_map(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            content = json.load(handle)
    except (OSError, ValueError, RecursionError) as exc:  # bad JSON, UTF-8, nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise CrowdInputError(f"{path}: not a label map ({reason})") from None
    if not isinstance(content, dict) or content.get("format") != MAP_FORMAT:
        raise CrowdInputError(f"{path}: not a pyvw-lite label map")
    labels = content.get("labels")
    if not (isinstance(labels, list) and labels
            and all(isinstance(name, str) for name in labels)):
        raise CrowdInputError(f"{path}: a label map's 'labels' is a list of label names")
    return labels


def _lines(handle, path: str):
    """The lines of a text file; a byte that is not UTF-8 is an error naming the file."""
    try:
        yield from handle
    except UnicodeDecodeError as exc:
        raise CrowdInputError(f"{path}: not UTF-8 text ({exc.reason})") from None


def predictions_to_labels(predictions: str, label_map: str, out: str) -> int:
    """VW multiclass predictions (``<k> [tag]`` per line) to ``task,label`` rows."""
    names = read_label_map(label_map)
    rows = []
    with open(predictions, encoding="utf-8", errors="strict") as handle:
        for line_number, line in enumerate(_lines(handle, predictions), start=1):
            fields = label_fields(line, example=False)  # as the learner split its tag
            if not fields:
                continue
            prediction, rest = split_prediction(fields)
            try:
                number = float(prediction)
                k = int(number)
                if k != number:  # 2.9 is no class: a regression's output, not a class's
                    raise ValueError
            except (ValueError, OverflowError):  # not a number, not whole; inf or 1e400
                raise CrowdInputError(f"{predictions}:{line_number}: prediction {prediction!r} "
                                      "is not a class number") from None
            if not 1 <= k <= len(names):
                raise CrowdInputError(f"{predictions}:{line_number}: class {k} outside "
                                      f"1..{len(names)} of {label_map}")
            try:
                task = from_vw_token(rest[0]) if rest else str(line_number)
            except ValueError as exc:
                raise CrowdInputError(f"{predictions}:{line_number}: tag {exc}") from None
            rows.append((task, names[k - 1]))
    with atomic_write(out, binary=False) as handle:
        writer = csv.writer(handle, lineterminator="\n")  # quotes an id or label with a comma
        writer.writerow(("task", "label"))
        writer.writerows(rows)
    return len(rows)
