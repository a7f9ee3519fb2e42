"""What the multiclass reductions share: label reading (VW's rules), reporting, and the
label-range bookkeeping of their binary sub-problems.

Labels are integers ``1..K`` (VW switches to ``0..K-1`` from the first 0 it sees before a K,
and confirms ``1..K`` at a K; ``--indexing`` fixes it; ``--ect`` always reads ``1..K``, as VW's)
or names given by ``--named_labels a,b,c``.  A label that is not an integer is a malformed
example (skipped with a located warning).  A label that names no class (out of range, or not
among the names) is warned of, predicted and counted as a mistake, and learned per reduction as
VW 9.11.9 does: ``--oaa`` learns it as no class's example (every class -1), the trees not at
all.
"""
from __future__ import annotations

import numpy as np

from ..io.vw_text import LAB_END, LAB_START, LABEL, NLABEL, ParsedBatch
from ..jit import kernel
from ..learners.gd import (P_CLASS_STRIDE, P_FIXED_RANGE, P_LOSS, P_ODE_SOLVER, P_TRAINING,
                           T_SUM, class_scores, prefetch_example)
from ..options import OptionError, Options
from .tree import bracket

UNLABELLED = -1
INVALID = -2
SKIPPED = "example skipped"  # what a report says happened to its example (when not fatal)
FATAL = "fatal"  # a report that stops the run whatever --strict_parse says


def class_buffers(n_classes: int, mask: int, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A score per class and the slot offset of each class or node, ``(c · P_C) & mask`` (SPEC
    §D.5, with the model's class stride ``P_C``: 1 unless an older model kept SPEC's spread
    constant, see ``learners.gd.CLASS_STRIDE``; --vw_layout scales the feature hashes by W
    instead).  Made here, not in the kernels: the example loops run
    without numba's reference counting (``_nrt=False``), which costs an atomic operation per
    array a call touches, so every buffer they use comes from the caller."""
    stride = int(params[P_CLASS_STRIDE])
    offsets = (np.arange(n_classes, dtype=np.int64) * stride) & mask
    return np.empty(n_classes), offsets


@kernel(inline="always")
def class_loop_settings(params):
    """``(training, loss, solver, fixed_range)`` of the multiclass example loops."""
    return (params[P_TRAINING] != 0.0, np.int64(params[P_LOSS]), np.int64(params[P_ODE_SOLVER]),
            params[P_FIXED_RANGE] != 0.0)


@kernel(inline="always")
def score_example(e, starts, weights, slots, values, offsets, mask, initials, scores):
    """Example ``e`` of a linear multiclass loop: prefetches the next example's rows, scores
    every class and returns the example's ``(first, last)``."""
    first = starts[e]
    last = starts[e + 1]
    if e + 2 < starts.shape[0]:
        prefetch_example(weights, slots, last, starts[e + 2], offsets[0], offsets[-1], mask)
    class_scores(weights, slots, values, first, last, offsets, mask, initials[e], scores)
    return first, last


@kernel(inline="always")
def predicted_class(scores, e, out_pred, out_scores, record_scores):
    """Argmax of the class scores (ties to the lowest class) into ``out_pred[e]``."""
    best = 0
    for c in range(scores.shape[0]):
        if scores[c] > scores[best]:
            best = c
        if record_scores:
            out_scores[e, c] = scores[c]
    out_pred[e] = best
    return best


@kernel(inline="always")
def starts_training(training, truth, held_out, importance, state):
    """Whether a multiclass example trains; if so it counts once in the schedule's time."""
    if not (training and truth >= 0 and held_out == 0 and importance > 0.0):
        return False
    state[T_SUM] += importance
    return True


def requested(options: Options, *names: str) -> bool:
    """Whether a reduction option was asked for: set, or given at all (``--oaa 0`` is an error
    the reduction reports, not a silent binary run)."""
    return any(getattr(options, name) or name in options.given for name in names)


MAX_CLASSES = 1 << 16  # every class is a sub-model: each holds a share of the 2^b weights


class MulticlassReduction:
    name = ""
    # a label outside the classes: "none", learned as no class's example (every class's -1);
    # "predict", predicted but not learned (VW's --ect); either way counted as a mistake
    out_of_range = "predict"

    def __init__(self, options: Options, classes: int, flag: str = ""):
        if not 1 <= classes <= MAX_CLASSES:
            raise OptionError(f"option '--{flag or self.name}': needs 1 to {MAX_CLASSES} "
                              f"classes (got {classes})")
        self.classes = classes
        self.names: list[str] | None = None
        if options.named_labels:
            self.names = [name for name in options.named_labels.split(",")]
            if len(self.names) != classes or len(set(self.names)) != classes or "" in self.names:
                raise OptionError(f"option '--named_labels': {options.named_labels!r} must name "
                                  f"{classes} distinct labels")
            if any(character in name for name in self.names for character in " \t\n\r|"):
                # a label is one token of a line: a space or line break in a name (set by a
                # model file too) would add lines to -p
                raise OptionError(f"option '--named_labels': {options.named_labels!r}: a label "
                                  "name holds no space, tab, line break or '|'")
            self.name_index = {name.encode(): k for k, name in enumerate(self.names)}
        self.indexing = options.indexing  # None: detected from the data, as VW does

    @property
    def parse_label_number(self) -> bool:
        return self.names is None

    def class_labels(self, classes: np.ndarray) -> np.ndarray:
        """Class indices as the data writes them, as VW's predictions print them: the names of
        --named_labels (an object array), else 1..K (0..K-1 once 0-based indexing is known)."""
        classes = np.asarray(classes).astype(np.int64)
        if self.names is not None:
            return np.array(self.names, dtype=object)[classes]
        return classes + (0 if self.indexing == 0 else 1)

    def label_text(self, value: int) -> str:
        if value < 0:
            return "unknown"
        if self.names is not None:
            return self.names[value]
        return str(value + (0 if self.indexing == 0 else 1))

    @staticmethod
    def _token(batch: ParsedBatch, row: int) -> bytes:
        return bytes(batch.buf[batch.ex_int[row, LAB_START]:batch.ex_int[row, LAB_END]])

    def label_as_read(self, batch: ParsedBatch, row: int) -> str:
        """A row's label as written (for one that names no class)."""
        if self.names is not None:
            return self._token(batch, row).decode("utf-8", "replace")
        return f"{batch.ex_float[row, LABEL]:g}"

    def _outcome(self) -> str:
        """What happens to an example whose label names no class (it is never predicted)."""
        return ("learned as no class's example" if self.out_of_range == "none"
                else "predicted, not learned")

    def classes_of(self, batch: ParsedBatch, rows: np.ndarray, log, where) -> np.ndarray:
        """Class index 0..K-1 per row, K for a label that names no class (marked in
        ``batch.out_of_range``), ``UNLABELLED`` or ``INVALID``, each problem reported as
        ``log(row, text, outcome)``.

        Indexing is decided in stream order, as VW does: rows before the first 0 or K keep the
        default 1..K, rows from it on use what it showed.  Reports come in row order."""
        labelled = batch.ex_int[rows, NLABEL] > 0
        result = np.full(rows.size, UNLABELLED, dtype=np.int64)
        batch.out_of_range = np.zeros(batch.ex_int.shape[0], dtype=bool)
        if self.names is not None:
            for k in np.flatnonzero(labelled):
                row = rows[k]
                index = self.name_index.get(self._token(batch, row))
                if index is None:  # VW: "Missing named label", then a label out of range
                    token = self.label_as_read(batch, row)
                    if token.isdigit() and int(token) <= self.classes:  # VW: loss 0, in silence
                        log(row, f"label {token!r} is a class number, not one of "
                                 f"--named_labels {','.join(self.names)}: write the names in "
                                 "the data, or leave out --named_labels to read numbers", FATAL)
                    log(row, f"label {token!r} is not one of "
                             f"--named_labels {','.join(self.names)}", self._outcome())
                    result[k] = self.classes
                    batch.out_of_range[row] = True
                else:
                    result[k] = index
            return result
        values = batch.ex_float[rows, LABEL]
        integral = labelled & (values == np.floor(values))
        reports = [(k, f"multiclass label {values[k]:g} is not an integer", SKIPPED)
                   for k in np.flatnonzero(labelled & ~integral)]
        result[labelled & ~integral] = INVALID
        positions = np.flatnonzero(integral)
        integers = values[positions].astype(np.int64)
        offsets = np.full(integers.size, 0 if self.indexing == 0 else 1, dtype=np.int64)
        if self.indexing is None:
            found = np.flatnonzero((integers == 0) | (integers == self.classes))
            if found.size:
                first = int(found[0])
                self.indexing = 0 if integers[first] == 0 else 1
                offsets[first:] = self.indexing
                reports.append((int(positions[first]), None, None))
        index = integers - offsets
        for k in np.flatnonzero((index < 0) | (index >= self.classes)):
            low, high = offsets[k], self.classes - 1 + offsets[k]
            text = f"label {integers[k]} is not in {{{low},{high}}}"
            index[k] = self.classes  # no class's index: never predicted
            batch.out_of_range[rows[positions[k]]] = True
            reports.append((int(positions[k]), text, self._outcome()))
        result[positions] = index
        for k, text, outcome in sorted(reports, key=lambda report: report[0]):
            if text is None:
                value = integers[np.searchsorted(positions, k)]
                where(f"[info] label {value} found -- labels are now considered "
                      f"{self.indexing}-indexed.")
            else:
                log(rows[k], text, outcome)
        return result

    @property
    def models(self) -> int:
        raise NotImplementedError

    @property
    def slot_sets(self) -> int:
        """How many sets of weight slots the reduction uses (one per class; a tree's per-node
        scorers override it): ``set c`` of a feature lives at its slot plus ``c``'s offset."""
        return self.classes

    def run(self, ws, starts, slots, values, classes, importances, initials, holdout, out_pred,
            out_scores, batch=None, rows=None):
        raise NotImplementedError

    def kernels(self, dyadic: bool) -> tuple:
        """The example loops :meth:`run` calls (to tell whether a run compiles first)."""
        raise NotImplementedError


class TreeReduction(MulticlassReduction):
    """A reduction over the tournament bracket: one binary sub-model per internal node."""

    def __init__(self, options: Options, classes: int, flag: str = ""):
        super().__init__(options, classes, flag)
        self.tree = bracket(classes)

    @property
    def models(self) -> int:
        return max(1, self.classes - 1)
