"""river-style online learning: ``learn_one`` / ``predict_one`` / ``predict_proba_one``, plus
``learn_many`` / ``predict_many``, which hand a whole batch to one kernel call.

An example ``x`` is a dict of namespaces (``{"rater": {"r_1": 1.0}, "task": {"t_9": 1.0}}``),
a flat dict of features (default namespace), or VW feature text (``"|rater r_1 |task t_9"``).
A string value is a category: ``{"color": "red"}`` is the feature ``color=red`` with value 1.
A binary label may be a bool (river's convention): ``True`` is 1, ``False`` is -1 (a logistic
model's ``--logistic_min``, 0 with ``--logistic_min 0``).
A malformed example raises :class:`pyvw_lite.workspace.ParseError` (a ``ValueError``) unless
the learner is made with ``strict_parse=False``.

    >>> from pyvw_lite.api.online import OnlineLearner
    >>> model = OnlineLearner("--loss_function logistic")
    >>> for _ in range(20):
    ...     model.learn_one({"f": {"good": 1.0}}, 1)
    ...     model.learn_one({"f": {"bad": 1.0}}, -1)
    >>> model.predict_one({"f": {"good": 1.0}}) > 0
    True
    >>> round(sum(model.predict_proba_one({"f": {"bad": 1.0}}).values()), 6)
    1.0
"""
from __future__ import annotations

import warnings
from typing import Any, Iterable, Mapping

import numpy as np

from ..reductions.scorer import logistic

__all__ = ["OnlineLearner", "features_text"]

Example = Mapping[str, Any] | str


def _name(text: Any) -> str:
    """A feature or namespace name with VW's syntax characters replaced."""
    return "".join("_" if c in ":| \t\r\n" else c for c in str(text))


def features_text(x: Example) -> str:
    if isinstance(x, str):
        return x if x.lstrip().startswith("|") else "| " + x
    if all(isinstance(value, Mapping) for value in x.values()):
        groups = x.items()
    else:
        groups = [("", x)]
    parts = []
    for namespace, features in groups:
        items = " ".join(_feature(f, v) for f, v in features.items())
        parts.append(f"|{_name(namespace)} {items}")
    return " ".join(parts) or "|"  # no features at all: still an example (the constant)


def _feature(name: Any, value: Any) -> str:
    """``name:value``; a string value is a category: feature ``name=value`` with value 1."""
    if isinstance(value, str):
        return f"{_name(name)}={_name(value)}"
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"feature {name!r}: value {value!r} is neither a number nor a "
                         "string") from None
    return f"{_name(name)}:{number!r}"


class OnlineLearner:
    """A learner configured by VW options (``"--oaa 5 -q rt"`` or keywords), one example at a time
    or in batches."""

    def __init__(self, options: str = "", **keywords):
        from ..workspace import Workspace
        # a malformed example (a label that is not a number, a NaN value) raises ParseError
        # naming it: the CLI's skip-and-warn would drop it silently here, where nothing is shown
        keywords.setdefault("strict_parse", True)
        self.workspace = Workspace(options, quiet=True, **keywords)
        self._told_zero = False

    def _line(self, x: Example, y: Any = None, weight: float = 1.0) -> str:
        if isinstance(y, (bool, np.bool_)):
            y = self._binary_label(bool(y))
        label = "" if y is None else f"{y} {float(weight)!r} "
        return label + features_text(x)

    def _binary_label(self, positive: bool) -> float:
        """A bool label (river's binary convention) as the binary label it stands for."""
        ws = self.workspace
        if ws.reduction is not None:
            raise ValueError(f"label {positive!r}: a bool label is for a binary model; this one "
                             f"has {ws.reduction.classes} classes")
        return self._binary_labels[positive]

    @property
    def _binary_labels(self) -> tuple[float | int, float | int]:
        """The negative and positive binary labels: -1 and 1, or a logistic model's
        --logistic_min and --logistic_max (integers when integral, as users write them)."""
        ws = self.workspace
        if ws.loss_name != "logistic":
            return -1, 1
        return tuple(int(v) if float(v).is_integer() else v
                     for v in (ws.options.logistic_min, ws.options.logistic_max))

    def _check_labels(self, labels) -> None:
        """A logistic label 0 under the default range is VW's soft label ½ (the command line
        says so in an [info] line): warn once, since a river user's 0/1 labels mean classes."""
        ws = self.workspace
        if ws.loss_name != "logistic" or ws.options.logistic_min != -1.0 or self._told_zero:
            return
        if any(not isinstance(y, (bool, np.bool_)) and isinstance(y, (int, float, np.number))
               and y == 0 for y in labels):
            self._told_zero = True
            warnings.warn("a logistic label 0 is a soft label, probability 1/2 of class 1 (as "
                          "in VW); for 0/1 labels pass logistic_min=0, or use True/False",
                          UserWarning, stacklevel=3)

    def learn_one(self, x: Example, y: Any, weight: float = 1.0) -> None:
        self._check_labels((y,))
        self.workspace.learn(self._line(x, y, weight))

    def learn_many(self, X: Iterable[Example], y: Iterable[Any],
                   weights: Iterable[float] | None = None) -> np.ndarray:
        """Learn a batch in order; returns the progressive predictions (one per example: NaN,
        or None for a class, where ``strict_parse=False`` skipped a malformed one)."""
        X, y = list(X), list(y)
        self._check_labels(y)
        weights = [1.0] * len(X) if weights is None else list(weights)
        if not len(X) == len(y) == len(weights):
            raise ValueError(f"learn_many got {len(X)} examples, {len(y)} labels and "
                             f"{len(weights)} weights; they must be as many")
        return self._aligned(self.workspace.learn,
                             [self._line(x, label, w) for x, label, w in zip(X, y, weights)])

    def predict_one(self, x: Example) -> Any:
        value = self.predict_many([x])[0]
        return value.item() if isinstance(value, np.generic) else value

    def predict_many(self, X: Iterable[Example]) -> np.ndarray:
        """One prediction per example (NaN, or None for a class, for a skipped one)."""
        return self._aligned(lambda batch: self.workspace.predict_with_scores(batch)[0],
                             [self._line(x) for x in X])

    def _aligned(self, method, lines: list[str]) -> np.ndarray:
        """``method``'s outputs placed at their examples' positions."""
        ws = self.workspace
        if not lines:
            return self._outputs(np.zeros(0))
        values = self._outputs(method(ws.parse(lines)))
        if ws.last_rows.size == len(lines):
            return values
        out = np.full(len(lines), None if values.dtype == object else np.nan, dtype=values.dtype)
        out[ws.last_rows] = values
        return out

    def predict_proba_one(self, x: Example) -> dict[Any, float]:
        ws = self.workspace
        pred, scores = ws.predict_with_scores([self._line(x)])
        if ws.reduction is None:
            positive = float(logistic(np.array([scores[0]]))[0])
            low, high = self._binary_labels
            return {high: positive, low: 1.0 - positive}
        if scores.ndim != 2:
            raise ValueError("probabilities need --oaa or --sft")
        probabilities = logistic(scores[0])
        probabilities /= probabilities.sum()
        return {self._label(c): float(p) for c, p in enumerate(probabilities)}

    def _label(self, c: int) -> int | str:
        """Class ``c`` as the caller writes labels: its name under --named_labels, else the
        integer VW prints (so ``predict_one(x) == y`` holds for integer labels)."""
        reduction = self.workspace.reduction
        text = reduction.label_text(int(c))
        return text if reduction.names is not None else int(text)

    def _outputs(self, pred: np.ndarray) -> np.ndarray:
        if self.workspace.reduction is None:
            return pred
        return np.array([self._label(c) for c in pred], dtype=object)

    def save(self, path: str) -> None:
        self.workspace.save(path)
