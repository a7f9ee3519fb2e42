"""0/1 loss with a binomial confidence interval, per-class precision and recall, and the
confusion matrix: of VW-style predictions against the labels of the data they were made on, or
of crowd labels against a truth file.  Numeric labels with real-valued predictions (ratings,
regression) get MAE and RMSE with 95% intervals instead."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..io.crowd_input import CrowdInputError, read_gold, read_table
from ..io.source import LineChunks
from ..io.arrays import first_beyond_float32

Z_95 = 1.959963984540054


def wilson_interval(errors: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (good at 0, 1 and small n)."""
    if n == 0:
        return math.nan, math.nan
    p = errors / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class PairedDifference:
    """Model B's 0/1 loss minus model A's on the same test examples.

    ``worse`` counts the examples only A gets right, ``better`` those only B gets right; the
    interval is the Wald interval of a paired difference of proportions and ``p_value`` the
    exact two-sided McNemar test (the discordant examples as fair coin flips)."""
    n: int
    worse: int
    better: int
    difference: float
    low: float
    high: float
    p_value: float

    def text(self, name_b: str, name_a: str) -> str:
        return (f"{name_b} minus {name_a}: 0/1 loss {self.difference:+.6f} (95% paired interval "
                f"{self.low:+.6f} .. {self.high:+.6f}) on {self.n} examples\n"
                f"only {name_a} right = {self.worse}, only {name_b} right = {self.better}, "
                f"exact McNemar p = {self.p_value:.4g}")


def paired_difference(hits_a: np.ndarray, hits_b: np.ndarray,
                      z: float = Z_95) -> PairedDifference:
    if len(hits_a) != len(hits_b):
        raise ValueError(f"paired comparison of {len(hits_a)} and {len(hits_b)} examples")
    n = len(hits_a)
    worse = int(np.count_nonzero(hits_a & ~hits_b))
    better = int(np.count_nonzero(~hits_a & hits_b))
    if n == 0:
        return PairedDifference(0, 0, 0, math.nan, math.nan, math.nan, math.nan)
    difference = (worse - better) / n
    spread = math.sqrt(max(0.0, (worse + better) / n - difference * difference) / n)
    return PairedDifference(n, worse, better, difference, difference - z * spread,
                            difference + z * spread, mcnemar_p_value(worse, better))


def mcnemar_p_value(worse: int, better: int) -> float:
    """Exact two-sided McNemar test: P(a count as uneven as this) under Binomial(worse+better,
    1/2), summed in log space so that thousands of discordant pairs stay exact."""
    total, smaller = worse + better, min(worse, better)
    if total == 0 or 2 * smaller == total:
        return 1.0
    log_half = total * math.log(0.5)
    tail = 0.0
    for k in range(smaller + 1):
        tail += math.exp(math.lgamma(total + 1) - math.lgamma(k + 1) - math.lgamma(total - k + 1)
                         + log_half)
    return min(1.0, 2.0 * tail)


@dataclass
class Evaluation:
    classes: list[str]
    confusion: np.ndarray  # rows: truth, columns: prediction
    hits: np.ndarray | None = None  # per scored example: prediction == truth
    notes: list[str] = field(default_factory=list)  # ``name = value`` lines after the loss

    @property
    def n(self) -> int:
        return int(self.confusion.sum())

    @property
    def errors(self) -> int:
        return self.n - int(np.trace(self.confusion))

    @property
    def loss(self) -> float:
        return self.errors / self.n if self.n else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.errors, self.n)

    def precision_recall(self):
        predicted = self.confusion.sum(axis=0)
        actual = self.confusion.sum(axis=1)
        diagonal = np.diag(self.confusion).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return diagonal / predicted, diagonal / actual

    def text(self) -> str:
        low, high = self.interval
        lines = [f"examples = {self.n}", f"errors = {self.errors}",
                 f"0/1 loss = {self.loss:.6f} (95% Wilson interval {low:.6f} .. {high:.6f})",
                 *self.notes, "", f"{'class':<12} {'precision':>10} {'recall':>10} {'support':>8}"]
        precision, recall = self.precision_recall()
        for k, name in enumerate(self.classes):
            lines.append(f"{name:<12} {precision[k]:>10.4f} {recall[k]:>10.4f} "
                         f"{int(self.confusion[k].sum()):>8}")
        if len(self.classes) > PRINTED_CLASSES:
            lines += ["", f"confusion matrix: not printed for {len(self.classes)} classes (more "
                          f"than {PRINTED_CLASSES})"]
            return "\n".join(lines) + "\n"
        width = min(max(7, max(len(name) for name in self.classes) + 1), 24)
        lines += ["", "confusion matrix (row: truth, column: prediction)",
                  " " * 12 + "".join(f"{name[:width - 1]:>{width}}" for name in self.classes)]
        for k, name in enumerate(self.classes):
            lines.append(f"{name:<12}" + "".join(f"{int(v):>{width}}" for v in self.confusion[k]))
        return "\n".join(lines) + "\n"


def confusion_of(truth: list[str], predicted: list[str]) -> Evaluation:
    names = sorted(set(truth) | set(predicted), key=_natural)
    if len(names) > MAX_CLASSES:  # a K x K matrix: 30,000 classes would be 7 GiB
        raise ValueError(f"{len(names)} distinct labels and predictions: more classes than "
                         f"evaluate scores ({MAX_CLASSES}); are these ids rather than labels?")
    index = {name: k for k, name in enumerate(names)}
    matrix = np.zeros((len(names), len(names)), dtype=np.int64)
    rows = np.array([index[v] for v in truth], dtype=np.int64)
    columns = np.array([index[v] for v in predicted], dtype=np.int64)
    np.add.at(matrix, (rows, columns), 1)
    return Evaluation(classes=names, confusion=matrix, hits=rows == columns)


def _natural(text: str):
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def _first_tokens(path: str, scores: bool = False) -> list[tuple[int, str, float]]:
    """``(line, first token, importance)`` of every non-empty line (``""`` for a line without a
    label; importance: the number after a VW label, else 1); with ``scores``, the prediction of
    a ``-p`` line (:func:`split_prediction`)."""
    tokens = []
    for buf, starts, ends, first_line in LineChunks(path, bounded=True):
        data = buf.tobytes()
        filled = np.flatnonzero(ends > starts)  # an empty line holds no token
        for offset, s, e in zip(filled.tolist(), starts[filled].tolist(), ends[filled].tolist()):
            try:
                line = data[s:e].decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{first_line + offset}: not UTF-8 text ({exc.reason} "
                                 f"at column {exc.start + 1})") from None
            fields = label_fields(line, example=not scores)
            if scores and fields:
                fields = [split_prediction(fields)[0]]
            if fields:
                weight = _number(fields[1]) if len(fields) > 1 and not scores else None
                if weight is not None and not 0.0 <= weight <= _FLOAT32_MAX:
                    raise ValueError(f"{path}:{first_line + offset}: importance weight "
                                     f"{fields[1]!r} is negative or beyond float32 (the "
                                     "learner does not learn from such a line either)")
                tokens.append((first_line + offset, fields[0],
                               1.0 if weight is None else weight))
            elif line.strip(" \t\r"):  # an example without a label
                tokens.append((first_line + offset, "", 1.0))
    return tokens


def label_fields(line: str, example: bool = True) -> list[str]:
    """The label fields of an example (label, importance, initial value; its tag left out) as
    the parser reads them: the text before the first ``|``, after its first tab, split at
    ASCII spaces only (U+00A0 or U+2028 stay inside a field); the last field is the tag when
    it starts with ``'`` or touches the ``|``.  With ``example`` false, the fields of a ``-p``
    line the learner wrote (prediction, tag): the line split at ASCII spaces.  The line's end
    (LF, CR) is no part of a field."""
    line = line.rstrip("\r\n")
    if not example:
        return [field for field in line.split(" ") if field]
    section = line.partition("|")[0]
    section = section.split("\t", 1)[1] if "\t" in section else section
    fields = [field for field in section.split(" ") if field]
    if fields and (fields[-1].startswith("'") or not section.endswith(" ")):
        fields.pop()
    return fields


def split_prediction(fields: list[str]) -> tuple[str, list[str]]:
    """A ``-p`` line's prediction and the fields after it (the tag).  A ``--scores`` or
    ``--probabilities`` line (``1:s1 2:s2 ... [tag]``) predicts the class with the largest
    value, the lowest class on ties, as the model did."""
    if len(fields) < 2 or ":" not in fields[1]:
        return fields[0], fields[1:]
    best, best_value, used = fields[0], -math.inf, 0
    for text in fields:
        name, _, value = text.rpartition(":")
        try:
            number = float(value)
        except ValueError:
            break  # the tag
        if not name:
            break
        used += 1
        if number > best_value:
            best, best_value = name, number
    return best, fields[used:]


def _head(token: str) -> str:
    """A label or prediction token without a ``:weight`` suffix."""
    return token.split(":", 1)[0]


_FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_CLASSES = 4096  # the confusion matrix: 128 MiB
PRINTED_CLASSES = 32


# a number as the learner's parser reads one: ASCII digits, a point, an exponent (Python's
# float() also takes "1_0", other scripts' digits and spaces, which the learner refuses)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# what is no class name either: Python's spellings of NaN and the infinities
_NOT_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def _number(text: str) -> float | None:
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _looks_numeric(text: str) -> bool:
    """Whether ``text`` is written as a number (``nan``, ``inf`` and ``1e39`` included): such a
    label is no class name."""
    return bool(_DECIMAL.fullmatch(text) or _NOT_FINITE.fullmatch(text))


def read_as_numbers(labels: list[tuple[str, int, str]], names: bool,
                    threshold: float | None) -> bool:
    """Whether labels and predictions are numbers (else names, compared as text): as the user
    said (``names``; a ``threshold`` is for numbers), else as the first labelled line whose
    label is a number within float32 or no number at all: one odd line decides nothing.
    ``labels``: ``(path, line, label)`` of the labelled examples."""
    if names or threshold is not None:
        return not names
    for _, _, label in labels:
        if not _looks_numeric(label):
            return False
        if first_beyond_float32(np.array([float(label)])) < 0:
            return True
    return True


def numbers_of(rows: list[tuple[str, int, str]], decided: str) -> list[float]:
    """Each text of ``rows`` (``(path, line, text)``) as a number within float32, else a
    ValueError naming its file, line and text and what decided that the texts are numbers."""
    parsed = np.array([float(text) if _DECIMAL.fullmatch(text) else math.nan
                       for _, _, text in rows], dtype=np.float64)
    bad = first_beyond_float32(parsed)
    if bad >= 0:
        path, line, text = rows[bad]
        raise ValueError(f"{path}:{line}: {text!r} is not a number within float32 ({decided}; "
                         "--names compares labels as text)")
    return parsed.tolist()


def _as_classes(y: list[float], p: list[float], threshold: float | None
                ) -> tuple[list[str], list[str], list[str]]:
    """Numeric labels ``y`` and predictions ``p`` as class names, and notes on how they were
    read.

    * Labels -1/1 (or 0/1 with real-valued predictions) are binary: a prediction is its sign,
      or above 0.5 when every prediction lies in [0, 1] (probabilities, ``--link logistic``);
      ``threshold`` overrides both.
    * Integer labels with integer predictions are classes (``--oaa``/``--ect``/``--sft``).
    * Other numbers are regression labels, which have no 0/1 loss: :class:`Regression`.
    """
    values = set(y)
    integral = all(value.is_integer() for value in p)
    classes = integral and any(value not in (-1.0, 0.0, 1.0) for value in p)  # 2, 3, ...
    binary = not classes and (values <= {-1.0, 1.0} or (values <= {0.0, 1.0} and (
        not integral or threshold is not None)))
    if binary:
        notes = []
        if threshold is None:
            threshold = 0.5 if (not integral and all(0.0 <= v <= 1.0 for v in p)) \
                or 0.0 in values else 0.0
            if threshold == 0.5 and -1.0 in values:
                notes.append("predictions read as probabilities (all in [0, 1]): threshold 0.5")
            elif threshold == 0.5 and not all(0.0 <= v <= 1.0 for v in p):
                notes.append("labels 0/1: threshold 0.5, as for squared-loss scores; the "
                             "logits of a logistic model (--logistic_min 0) want --threshold 0")
        negative = "0" if 0.0 in values else "-1"
        return (["1" if v > 0 else negative for v in y],
                ["1" if v > threshold else negative for v in p], notes)
    if all(value.is_integer() and value >= 0 for value in y) and integral:
        return [str(int(v)) for v in y], [str(int(v)) for v in p], []
    raise Regression(np.array(y), np.array(p))


class Regression(Exception):
    """Numeric labels with real-valued predictions: scored by absolute and squared error."""

    def __init__(self, labels: np.ndarray, predictions: np.ndarray):
        super().__init__("regression")
        self.labels, self.predictions = labels, predictions


def mean_interval(values: np.ndarray, z: float = Z_95) -> tuple[float, float, float]:
    """Mean and its normal 95% interval (the examples as independent draws)."""
    mean = float(values.mean())
    half = z * float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else math.nan
    return mean, mean - half, mean + half


@dataclass
class RegressionEvaluation:
    """Errors of real-valued predictions: MAE and RMSE with 95% intervals."""
    errors: np.ndarray  # prediction minus label, per labelled example
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.errors.size)

    def text(self) -> str:
        mae, low, high = mean_interval(np.abs(self.errors))
        mse, mse_low, mse_high = mean_interval(self.errors ** 2)
        return "\n".join([
            f"examples = {self.n}",
            f"MAE = {mae:.6f} (95% interval {low:.6f} .. {high:.6f})",
            f"RMSE = {math.sqrt(mse):.6f} (95% interval {math.sqrt(max(mse_low, 0.0)):.6f} .. "
            f"{math.sqrt(mse_high):.6f})",
            f"MSE = {mse:.6f} (95% interval {mse_low:.6f} .. {mse_high:.6f})",
            f"mean error (prediction - label) = {float(self.errors.mean()):+.6f}",
            *self.notes]) + "\n"


def regression_difference(a: RegressionEvaluation, b: RegressionEvaluation) -> str:
    """Model B's absolute and squared errors minus model A's on the same examples, with paired
    95% intervals (the per-example differences as independent draws)."""
    if a.n != b.n:
        raise ValueError(f"paired comparison of {a.n} and {b.n} examples")
    lines = []
    for name, fa, fb in (("MAE", np.abs(a.errors), np.abs(b.errors)),
                         ("MSE", a.errors ** 2, b.errors ** 2)):
        mean, low, high = mean_interval(fb - fa)
        lines.append(f"{name} {mean:+.6f} (95% paired interval {low:+.6f} .. {high:+.6f})")
    return "; ".join(lines) + f" on {a.n} examples"


def evaluate_predictions(predictions: str, data: str, threshold: float | None = None,
                         names: bool = False) -> Evaluation | RegressionEvaluation:
    """Predictions (``-p`` output, one per example) against the labels of the same examples;
    ``threshold``: where a binary prediction turns positive (default: see :func:`_as_classes`);
    ``names``: compare labels and predictions as text (else :func:`read_as_numbers` decides)."""
    predicted = _first_tokens(predictions, scores=True)
    labelled = _first_tokens(data)
    if len(predicted) != len(labelled):
        raise CrowdInputError(f"{predictions}: {len(predicted)} predictions for {len(labelled)} "
                              f"examples in {data}")
    truth, guesses, weights = [], [], []
    for (line, label, weight), (predicted_line, prediction, _) in zip(labelled, predicted):
        if not label:
            continue  # an unlabelled example has nothing to score
        truth.append((data, line, _head(label)))
        guesses.append((predictions, predicted_line, _head(prediction)))
        weights.append(weight)
    if not truth:
        raise CrowdInputError(f"{data}: no labelled examples to score")
    if not read_as_numbers(truth, names, threshold):
        truth, guesses, notes = [t for _, _, t in truth], [g for _, _, g in guesses], []
    else:
        decided = "--threshold scores numbers" if threshold is not None else \
            f"the first labelled line of {data} has a number for its label"
        try:
            truth, guesses, notes = _as_classes(numbers_of(truth, decided),
                                                numbers_of(guesses, decided), threshold)
        except Regression as numeric:
            return _regression(numeric, predictions, threshold)
    result = confusion_of(truth, guesses)
    weights = np.array(weights)
    if (weights != 1.0).any() and weights.sum() > 0:  # VW's average loss weighs by importance
        weighted = float(weights[~result.hits].sum() / weights.sum())
        notes.append(f"weighted 0/1 loss = {weighted:.6f} (importance weights; the counts "
                     "above give each example one vote)")
    result.notes = notes
    return result


def _regression(numeric: Regression, predictions: str,
                threshold: float | None) -> RegressionEvaluation:
    """The errors of numeric predictions (every number within float32 already)."""
    errors = numeric.predictions - numeric.labels
    if not np.isfinite(errors ** 2).all():
        raise ValueError(f"{predictions}: errors whose squares are not finite")
    ignored = [] if threshold is None else [
        f"--threshold {threshold:g} ignored: the labels are numbers, scored by their errors"]
    return RegressionEvaluation(errors=errors, notes=ignored)


def evaluate_labels(labels: str, truth: str) -> Evaluation:
    """A ``task,label`` file against a ``task,label`` truth file, over the rows whose task the
    truth names; the others are counted.  The labels may name a task several times: crowd
    output has a row per task, ``convert --back`` a row per prediction (each rating of a task),
    and every row is scored against its task's truth."""
    table, _ = read_table(labels, ("task", "label"))
    tasks = table["task"].values[table["task"].codes].tolist()
    guesses = table["label"].values[table["label"].codes].tolist()
    known = read_gold(truth)
    common = [k for k, task in enumerate(tasks) if task in known]
    if not common:
        raise CrowdInputError(f"{truth}: no task in common with {labels}")
    result = confusion_of([known[tasks[k]][0] for k in common], [guesses[k] for k in common])
    labelled = set(tasks)
    scored = {tasks[k] for k in common}
    result.notes = [f"{what} = {count}" for what, count in (
        ("labelled tasks without truth", len(labelled - scored)),
        ("truth tasks not labelled", len(known) - len(scored))) if count]
    if len(labelled) < len(tasks):
        result.notes.append(f"{labels}: {len(tasks)} rows for {len(labelled)} tasks (each row "
                            "scored against its task's truth)")
    return result
