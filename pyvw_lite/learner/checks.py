"""Parsing and example checks of a learner: which rows of a parsed batch it learns from, with
VW's warnings for the ones it skips or only predicts (fatal under ``--strict_parse``)."""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..io.vw_text import (ERR_CODE, ERR_NEGATIVE_IMPORTANCE, LABEL, MALFORMED, NLABEL, OK, STATUS,
                          ParsedBatch, describe_error, parse_buffer, split_lines)
from ..learners import gd
from ..learners.losses import HINGE, LOGISTIC
from ..reductions.multiclass import FATAL, INVALID, UNLABELLED


class ParseError(ValueError):
    """A malformed example under ``--strict_parse`` (the message names file, line and text)."""


class Diverged(ValueError):
    """Learning gave a loss or prediction that is not a finite number: the run stops (the
    message names the example and the rates that drove it there)."""


def check_finite(config, batch: ParsedBatch, rows: np.ndarray, outputs: tuple) -> tuple:
    """The kernels' ``outputs`` (predictions, raw, losses, features) of a batch, or
    :class:`Diverged` when its losses, raw scores or (numeric) predictions are not all finite, naming the
    first such example and the learning rates of ``config``: a NaN prediction is never written
    as one.  Two vectorised passes over a batch's outputs."""
    pred, raw, loss, _ = outputs
    finite = np.isfinite(loss)
    for values in (pred, raw):  # a clipped prediction can hide a raw score that overflowed
        if values.dtype.kind == "f" and values.shape[:1] == finite.shape:
            finite &= np.isfinite(values) if values.ndim == 1 else np.isfinite(values).all(axis=1)
    if finite.all():
        return outputs
    k = int(np.flatnonzero(~finite)[0])
    o = config.options
    rates = f"-l {config.eta:g}"
    if config.dyadic is not None:
        rates += f" with --dyad_rate {config.dyadic.settings['rate']:g}"
    where = f" (given, or stored in {o.initial_regressor})" if o.initial_regressor else ""
    raise Diverged(f"{batch.source}:{batch.first_line + int(rows[k])}: learning diverged (a "
                   f"{'loss' if not np.isfinite(loss[k]) else 'prediction'} that is not a finite "
                   f"number) under {rates}{where}; a smaller -l learns these examples")


class ExampleChecks:
    """The parsing and example checks of a learner of configuration ``config``
    (:class:`~pyvw_lite.learner.configuration.Configuration`); ``log`` writes the learner's log
    lines.  :class:`~pyvw_lite.learner.core.Learner` holds one (``learner.checks``)."""

    def __init__(self, config, log):
        self.config = config
        self.log = log
        self.skipped = 0  # examples skipped, malformed or with an unusable label
        self.told_soft_zero = False  # the note on logistic label 0 is given once
        self.last_rows = np.zeros(0, np.int64)

    def parse(self, lines: str | bytes | Iterable[str | bytes], *, record_spans: bool = False,
              source: str = "<input>") -> ParsedBatch:
        """Parse VW text lines (one string, or an iterable of lines) into a batch."""
        if isinstance(lines, (str, bytes)):
            lines = [lines]
        data = b"\n".join(line.encode("utf-8") if isinstance(line, str) else line for line in lines)
        buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)
        starts, ends, _ = split_lines(buf, final=True)
        if not data:
            starts = ends = np.zeros(1, np.int64)
        return self.parse_chunk(buf, starts, ends, 1, source, record_spans)

    def parse_chunk(self, buf, starts, ends, first_line, source, record_spans=False) -> ParsedBatch:
        """Parse the lines ``starts``/``ends`` of ``buf`` as this learner reads labels."""
        config = self.config
        numeric = config.reduction is None or config.reduction.parse_label_number
        return parse_buffer(buf, starts, ends, hash_seed=config.options.hash_seed,
                            hash_all=config.hash_all, parse_label_number=numeric,
                            record_spans=record_spans, first_line=first_line, source=source)

    def valid_rows(self, batch: ParsedBatch) -> np.ndarray:
        """Rows to learn from; malformed rows are reported (or fatal with --strict_parse).
        ``last_rows`` keeps them: which of its examples the last call answered for."""
        self.last_rows = self._checked_rows(batch)
        return self.last_rows

    def _checked_rows(self, batch: ParsedBatch) -> np.ndarray:
        config = self.config
        status = batch.ex_int[:, STATUS]
        bad = np.flatnonzero(status == MALFORMED)
        for row in bad:
            message = describe_error(batch, int(row))
            if config.options.strict_parse:
                raise ParseError(message)
            self.log(f"[warning] {message}; example skipped")
        self.skipped += bad.size
        rows = self.bounded_rows(batch, np.flatnonzero(status == OK))
        for row in rows[batch.ex_int[rows, ERR_CODE] == ERR_NEGATIVE_IMPORTANCE]:
            self._predict_only(batch, int(row), describe_error(batch, int(row)))
            batch.ex_int[row, ERR_CODE] = 0  # reported once, also when the batch is cached
        if config.reduction is not None:
            return self.multiclass_rows(batch, rows, report=True)
        if config.loss == HINGE and rows.size:
            labelled = batch.ex_int[rows, NLABEL] > 0
            labels = batch.ex_float[rows, LABEL]
            for k in np.flatnonzero(labelled & (labels != 1.0) & (labels != -1.0)):
                row = int(rows[k])  # learned as given, as VW does
                self.log(f"[warning] {batch.source}:{batch.first_line + row}: label "
                         f"{labels[k]:g} is not -1 or 1 as the hinge loss expects")
        if config.loss == LOGISTIC and rows.size:
            self._check_logistic_labels(batch, rows)
        return rows

    def logistic_labels(self, labels: np.ndarray) -> np.ndarray:
        """Labels as the logistic kernels read them: ``--logistic_min`` → -1, ``--logistic_max``
        → 1, a label between them → the soft label in between (VW 9.11.9's reading)."""
        low, high = self.config.options.logistic_min, self.config.options.logistic_max
        if low == -1.0 and high == 1.0:
            return labels
        return 2.0 * (labels - low) / (high - low) - 1.0

    def _check_logistic_labels(self, batch: ParsedBatch, rows: np.ndarray) -> None:
        """A label outside [--logistic_min, --logistic_max], or a soft one where only hard ones
        have an exact step (``--dyad``, ``--active``), is reported; its example is kept as an
        unlabelled one: predicted, not learned (``--strict_parse``: fatal)."""
        labelled = batch.ex_int[rows, NLABEL] > 0
        raw = batch.ex_float[rows, LABEL]
        labels = self.logistic_labels(raw)
        outside = labelled & ~((labels >= -1.0) & (labels <= 1.0))
        soft = labelled & ~outside & (labels != 1.0) & (labels != -1.0)
        config = self.config
        hard_only = config.dyadic is not None or config.active is not None
        o = config.options
        if not self.told_soft_zero and o.logistic_min == -1.0 and np.any(soft & (raw == 0.0)):
            self.told_soft_zero = True  # VW's classic trap, which VW passes over in silence
            self.log("[info] a logistic label 0 is a soft label, probability 1/2 of class 1; "
                     "for 0/1 labels give --logistic_min 0")
        for k in np.flatnonzero(outside | (soft & hard_only)):
            row = int(rows[k])
            where = f"{batch.source}:{batch.first_line + row}"
            if outside[k]:
                text = (f"label {raw[k]:g} is outside [{o.logistic_min:g}, {o.logistic_max:g}], "
                        "the labels of the logistic loss (--logistic_min, --logistic_max)")
            else:
                text = (f"label {raw[k]:g} is a soft label, which "
                        f"{'--dyad' if config.dyadic is not None else '--active'} does not learn")
            self._predict_only(batch, row, f"{where}: {text} (line: {batch.line_text(row)!r})")

    def _predict_only(self, batch: ParsedBatch, row: int, message: str) -> None:
        """Keep an example whose label cannot be learned as an unlabelled one: predicted, not
        learned, with a warning (``--strict_parse``: the message is fatal)."""
        if self.config.options.strict_parse:
            raise ParseError(message)
        self.log(f"[warning] {message}; predicted, not learned")
        batch.ex_int[row, NLABEL] = 0

    def multiclass_rows(self, batch: ParsedBatch, rows: np.ndarray, report: bool) -> np.ndarray:
        """Read class labels into ``batch.classes``; drop (and report) the unusable ones."""
        def log(row, text, outcome):
            where = f"{batch.source}:{batch.first_line + int(row)}"
            if self.config.options.strict_parse or outcome == FATAL:
                raise ParseError(f"{where}: {text} (line: {batch.line_text(int(row))!r})")
            if report:
                self.log(f"[warning] {where}: {text}; {outcome}")

        classes = self.config.reduction.classes_of(batch, rows, log, self.log if report else
                                            (lambda text: None))
        batch.classes = np.full(batch.ex_int.shape[0], UNLABELLED, dtype=np.int64)
        batch.classes[rows] = classes
        keep = classes != INVALID
        skipped = int((~keep).sum())
        if report:
            self.skipped += skipped
        return rows[keep]

    def bounded_rows(self, batch: ParsedBatch, rows: np.ndarray) -> np.ndarray:
        """``rows`` without the examples whose interactions would generate more than
        ``MAX_INTERACTION_FEATURES`` features, each skipped with a warning naming its line
        (``--strict_parse``: fatal).  Counted from namespace sizes, one kernel call a batch."""
        interactions = self.config.interactions
        if not interactions.array.shape[0] or not rows.size:
            return rows
        sizes = np.empty(rows.size)
        gd.interaction_sizes(rows, batch.ex_int, batch.seg, self.config.ignore,
                             interactions.array, interactions.width, sizes)
        big = sizes > gd.MAX_INTERACTION_FEATURES
        for k in np.flatnonzero(big):
            message = (f"{batch.source}:{batch.first_line + int(rows[k])}: its interactions "
                       f"would generate {sizes[k]:.3g} features, more than "
                       f"{gd.MAX_INTERACTION_FEATURES:,} per example")
            if self.config.options.strict_parse:
                raise ParseError(message)
            self.log(f"[warning] {message}; example skipped")
        self.skipped += int(big.sum())
        return rows[~big]

    def prepare_cached(self, batch: ParsedBatch) -> np.ndarray:
        """Rows of a batch read back from the cache (validated when it was written; the
        interactions, which a cache does not record, are bounded again)."""
        rows = self.bounded_rows(batch, np.arange(batch.ex_int.shape[0]))
        return self.multiclass_rows(batch, rows, report=False) if self.config.reduction else rows
