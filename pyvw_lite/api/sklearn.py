"""scikit-learn estimators (optional extra ``pyvw-lite[sklearn]``).

Their VW parameters come from the option table (same names, types and defaults as the command
line), ``fit`` learns ``passes`` online passes over the data, ``partial_fit`` keeps learning,
and ``X`` (dense or sparse) goes to the kernels without any text: column ``j`` is feature ``j``.

Three habits of a scikit-learn estimator are on by default, chosen on data other than the
data they are judged on (docs/python.md): ``scale_features`` standardises each column with the
mean and standard deviation of the data ``fit`` sees (as a ``StandardScaler`` in a pipeline
would; sparse ``X`` is scaled, not centred) and applies them in ``predict``; ``shuffle`` learns
each pass in a new random order of the rows, seeded by ``random_seed`` (as ``SGDClassifier``
does); ``passes`` is 10.  ``shuffle=False, scale_features=False, passes=1`` is VW's raw
behaviour: the rows in the given order, the features as given, one pass.

    >>> import numpy as np
    >>> from pyvw_lite.api.sklearn import VWClassifier
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]] * 50)
    >>> y = np.array(["yes", "no"] * 50)
    >>> VWClassifier(passes=3).fit(X, y).predict([[1.0, 0.0]]).tolist()
    ['yes']
"""
from __future__ import annotations

import inspect
import math

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ..learners.gd import P_TRAINING
from ..options import BY_NAME, FLAG
from .arrays import check_numbers, matrix_batch

__all__ = ["VWClassifier", "VWRegressor"]

# options that make sense for a numeric matrix (no namespaces, no files)
LEARNING_OPTIONS = ("loss_function", "learning_rate", "power_t", "initial_t", "bit_precision",
                    "noconstant", "sgd", "adaptive", "normalized", "invariant", "random_seed")


# VW's default update is adaptive, normalized and invariant at once: the parameters say so
DEFAULT_UPDATE = ("adaptive", "normalized", "invariant")


def _signature(extra: dict[str, object], loss_default: str) -> inspect.Signature:
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name in LEARNING_OPTIONS:
        default = loss_default if name == "loss_function" else \
            True if name in DEFAULT_UPDATE else BY_NAME[name].default
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                            default=default))
    for name, default in extra.items():
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                            default=default))
    return inspect.Signature(parameters)


def _feature_scaling(X, sample_weight, wanted: bool):
    """``(mean, scale)`` per column of ``X`` (weighted by ``sample_weight``), or ``(None, None)``
    when not ``wanted``.  A constant column keeps scale 1; a sparse ``X`` keeps mean 0."""
    if not wanted or X.shape[0] == 0:
        return None, None
    weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    weights = weights / weights.sum()
    if hasattr(X, "tocsr"):
        mean = np.zeros(X.shape[1])
        spread = np.asarray(abs(X).max(axis=0).todense()).ravel()
        safe = np.where(spread > 0, spread, 1.0)
        square = np.asarray(X.multiply(1.0 / safe).power(2).T @ weights).ravel()
    else:
        mean = weights @ X
        centred = X - mean
        spread = np.abs(centred).max(axis=0)
        safe = np.where(spread > 0, spread, 1.0)
        square = weights @ (centred / safe) ** 2
    scale = safe * np.sqrt(square)  # divided by the largest value first: no overflow
    return mean, np.where((scale > 0) & np.isfinite(scale), scale, 1.0)


class _VWEstimator(BaseEstimator):
    """Shared machinery; ``__init__`` only stores the parameters (scikit-learn's contract)."""

    _extra: dict[str, object] = {"passes": 10, "shuffle": True, "scale_features": True}
    _loss_default = "squared"

    def __init__(self, **params):
        for name, value in params.items():
            setattr(self, name, value)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        signature = _signature(cls._extra, cls._loss_default)

        def __init__(self, **params):
            bound = signature.bind(self, **params)
            bound.apply_defaults()
            for name, value in list(bound.arguments.items())[1:]:
                setattr(self, name, value)
        __init__.__signature__ = signature
        cls.__init__ = __init__

    def _options(self) -> dict:
        """The learner's options: ``sgd=True`` is the plain update whatever the other three
        say; else the update flags that are on (all three: VW's default; none: ``--sgd``)."""
        options = {"quiet": True}
        for name in LEARNING_OPTIONS:
            value = getattr(self, name)
            if name == "sgd" or name in DEFAULT_UPDATE:
                continue
            if BY_NAME[name].kind == FLAG:
                if value:
                    options[name] = True
            elif value != BY_NAME[name].default or name == "loss_function":
                options[name] = value
        chosen = [name for name in DEFAULT_UPDATE if getattr(self, name)]
        if self.sgd or not chosen:
            options["sgd"] = True
        elif len(chosen) < len(DEFAULT_UPDATE):
            options.update(dict.fromkeys(chosen, True))
        return options

    @staticmethod
    def _checked_weights(sample_weight, rows: int):
        """``sample_weight`` as one finite, non-negative float per row (a scalar weights every
        row), or None."""
        if sample_weight is None:
            return None
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.ndim == 0:
            sample_weight = np.full(rows, float(sample_weight))
        if sample_weight.shape != (rows,):
            raise ValueError(f"sample_weight has shape {sample_weight.shape}; X has "
                             f"{rows} rows, so it must have shape ({rows},)")
        check_numbers("sample_weight", sample_weight, weights=True)
        if sample_weight.size and not np.any(sample_weight > 0):
            raise ValueError("sample_weight is all zero: there is nothing to learn")
        return sample_weight

    def _start(self, X, sample_weight) -> None:
        """A new learner, and the feature scaling ``scale_features`` asks for, taken from the
        first ``X`` learned (weighted by ``sample_weight``): all of it in ``fit``, the first
        batch in ``partial_fit`` (to stream raw features pass ``scale_features=False``)."""
        from ..workspace import Workspace
        self.workspace_ = Workspace(**self._workspace_options())
        self.feature_mean_, self.feature_scale_ = _feature_scaling(X, sample_weight,
                                                                   self.scale_features)

    def _scaled_features(self, X):
        """``X`` as the learner sees it: ``(X - feature_mean_) / feature_scale_``."""
        if getattr(self, "feature_mean_", None) is None:  # also a model fitted before scaling
            return X
        with np.errstate(over="ignore", invalid="ignore"):
            if hasattr(X, "tocsr"):  # sparse: scaled only, so that zeros stay zeros
                scaled = X.multiply(1.0 / self.feature_scale_).tocsr()
            else:
                scaled = (X - self.feature_mean_) / self.feature_scale_
        # values within float32 can leave it once centred and scaled by the training columns
        check_numbers("X after scale_features (minus the training mean, over its spread)",
                      scaled)
        return scaled

    def _learn(self, X, targets, sample_weight, first: bool):
        check_numbers("X", X)
        sample_weight = self._checked_weights(sample_weight, X.shape[0])
        if first:
            self._start(X, sample_weight)
        return self.workspace_.learn(matrix_batch(self._scaled_features(X), targets,
                                                  sample_weight))

    def _learn_passes(self, X, targets, sample_weight):
        """``fit``: ``passes`` passes over one data set (its later passes repeat examples), each
        in a new random order of the rows with ``shuffle`` (seeded by ``random_seed``)."""
        passes = self._passes()
        check_numbers("X", X)
        sample_weight = self._checked_weights(sample_weight, X.shape[0])
        self._start(X, sample_weight)
        X = self._scaled_features(X)
        rng = np.random.default_rng(self.random_seed)
        for k in range(passes):
            if k:
                self.workspace_.repeat_pass()
            order = rng.permutation(X.shape[0]) if self.shuffle else slice(None)
            self.workspace_.learn(matrix_batch(
                X[order], targets[order], None if sample_weight is None else sample_weight[order]))

    def _workspace_options(self) -> dict:
        return self._options()

    def _passes(self) -> int:
        """``passes``, a whole number of at least 1 (0 or -1 returned unfitted, in silence)."""
        passes = self.passes
        if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 1:
            raise ValueError(f"passes={passes!r}: a whole number of at least 1")
        return int(passes)

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self, "workspace_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        check_numbers("X", X)
        return self.workspace_.predict_with_scores(matrix_batch(self._scaled_features(X)))[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class VWRegressor(RegressorMixin, _VWEstimator):
    """Linear regression with VW's adaptive, normalized, importance-invariant updates.

    >>> import numpy as np
    >>> from pyvw_lite.api.sklearn import VWRegressor
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> model = VWRegressor(passes=5).fit(X, X @ [1.0, -2.0, 0.5])
    >>> float(model.score(X, X @ [1.0, -2.0, 0.5])) > 0.9
    True
    """

    _extra = {"passes": 10, "shuffle": True, "scale_features": True, "scale_target": True}

    def _start_target(self, y, sample_weight) -> None:
        """With ``scale_target`` (the default) the learner sees ``(y − mean)/sd`` of the first
        ``y`` it learns from (weighted by ``sample_weight``) and predictions are mapped back,
        so a target far from 0 or with a large spread (diabetes: mean 152, sd 77) needs no
        tuned learning rate, as ``LinearRegression`` needs none; ``False`` learns ``y`` as
        given, as the command line does."""
        self.target_mean_, self.target_scale_ = 0.0, 1.0
        if not self.scale_target or y.size == 0:
            return
        weights = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if weights is not None and weights.ndim == 0:
            weights = np.full(y.shape, float(weights))
        if weights is not None and (weights.shape != y.shape or not np.sum(weights) > 0):
            return  # a wrong shape is refused, with its shape named, when learning starts
        with np.errstate(over="ignore", invalid="ignore"):
            mean = float(np.average(y, weights=weights))
            spread = float(np.sqrt(np.average((y - mean) ** 2, weights=weights)))
        if not (math.isfinite(mean) and math.isfinite(spread)):
            raise ValueError("y: its mean and spread overflow float64, so scale_target cannot "
                             "standardise it: divide y by a power of ten first")
        self.target_mean_ = mean
        self.target_scale_ = spread if spread > 0 else 1.0

    def _scaled(self, y):
        return (y - self.target_mean_) / self.target_scale_

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True)
        check_numbers("y", y)
        self._start_target(y, sample_weight)
        self._learn_passes(X, self._scaled(y), sample_weight)
        return self

    def partial_fit(self, X, y, sample_weight=None):
        first = not hasattr(self, "workspace_")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True,
                             reset=first)
        check_numbers("y", y)
        if first:
            self._start_target(y, sample_weight)
        self._learn(X, self._scaled(y), sample_weight, first=first)
        return self

    def predict(self, X):
        scores = np.asarray(self._scores(X))  # checks that the model is fitted
        return self.target_mean_ + self.target_scale_ * scores


class VWClassifier(ClassifierMixin, _VWEstimator):
    """Binary or multiclass classification: logistic loss for two classes, a multiclass
    reduction (``reduction="oaa"``, ``"ect"`` or ``"sft"``) for more.

    ``predict_proba`` (``calibrate=True``, the default) is the softmax of the class scores times
    one factor ``probability_scale_`` (for two classes: the logistic of the scaled score), the
    factor fitted inside ``fit`` by log loss on scores of two internal folds (each scored by a
    model learned on the other), so it keeps ``predict``'s class and never sees data outside
    ``fit``'s.  ``calibrate=False`` skips those two extra fits and gives probabilities only where
    the learner is trained for them (logistic loss, two classes or ``reduction="oaa"``: VW's
    ``--probabilities``); ``reduction="ect"`` scores no class and has no ``predict_proba``.
    """

    _extra = {"passes": 10, "shuffle": True, "scale_features": True, "reduction": "sft",
              "calibrate": True}
    _loss_default = "logistic"

    def _workspace_options(self) -> dict:
        options = self._options()
        if len(self.classes_) > 2:
            if self.reduction not in ("oaa", "ect", "sft"):
                raise ValueError(f"reduction={self.reduction!r}: choose 'oaa', 'ect' or 'sft'")
            options[self.reduction] = len(self.classes_)
        return options

    def _targets(self, y) -> np.ndarray:
        """±1 for two classes, else 1..K (the learner's multiclass labels)."""
        index = np.minimum(np.searchsorted(self.classes_, y), len(self.classes_) - 1)
        if np.any(self.classes_[index] != y):
            raise ValueError("y holds labels that were not in `classes`")
        return np.where(index == 1, 1.0, -1.0) if len(self.classes_) <= 2 else index + 1.0

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        kind = type_of_target(y)
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"Unknown label type: {kind!r}; VWClassifier needs binary or "
                             "multiclass targets")
        self.classes_ = np.unique(y)
        self.probability_scale_ = self._fitted_scale(X, y, sample_weight)
        self._learn_passes(X, self._targets(y), sample_weight)
        return self

    def _fitted_scale(self, X, y, sample_weight) -> float | None:
        """With ``calibrate``, the factor ``a`` of ``softmax(a · scores)`` of least log loss on
        out-of-fold scores: two stratified folds of ``X`` (seeded by ``random_seed``), each
        scored by a ``calibrate=False`` copy learned on the other.  None without ``calibrate``,
        without class scores (``ect``, more than two classes) or with a class seen once."""
        from scipy.optimize import minimize_scalar
        from sklearn.model_selection import StratifiedKFold
        if not self.calibrate or (len(self.classes_) > 2 and self.reduction == "ect") \
                or len(self.classes_) < 2 or np.unique(y, return_counts=True)[1].min() < 2:
            return None
        weights = self._checked_weights(sample_weight, X.shape[0])
        weights = np.ones(X.shape[0]) if weights is None else weights
        scores = np.zeros((X.shape[0], len(self.classes_)))
        inner = type(self)(**{**self.get_params(), "calibrate": False})
        folds = StratifiedKFold(2, shuffle=True, random_state=self.random_seed)
        for learn, held in folds.split(X, y):
            part = inner.fit(X[learn], y[learn], weights[learn])
            scores[held] = _class_columns(part.decision_function(X[held]), len(self.classes_))
        truth = scores[np.arange(len(y)), np.searchsorted(self.classes_, y)]
        spread = scores - scores.max(axis=1, keepdims=True)

        def log_loss(a):
            total = np.log(np.exp(a * spread).sum(axis=1)) - a * (truth - scores.max(axis=1))
            return weights @ total / weights.sum()
        scale = 1.0 / max(np.abs(spread).max(), 1e-12)  # a in scores' units: a·spread <= 1e4
        return float(minimize_scalar(log_loss, bounds=(0.0, 1e4 * scale), method="bounded",
                                     options={"xatol": 1e-6 * scale}).x)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        first = not hasattr(self, "workspace_")
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            self.classes_ = np.unique(classes)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, reset=first)
        if first:
            self.probability_scale_ = None  # partial_fit fits no calibration (fit does)
        self._learn(X, self._targets(y), sample_weight, first=first)
        return self

    def decision_function(self, X):
        """The score (two classes) or the class scores (more; with ``reduction="ect"``, whose
        tournament scores no class, 1 for the winner and 0 for the others)."""
        check_is_fitted(self, "workspace_")
        if len(self.classes_) <= 2:
            return self._scores(X)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        check_numbers("X", X)
        return self._class_scores(X)

    def _class_scores(self, X) -> np.ndarray:
        ws = self.workspace_.learner
        batch = matrix_batch(self._scaled_features(X))
        batch.classes = np.full(batch.ex_int.shape[0], -1, dtype=np.int64)
        scores = np.empty((batch.ex_int.shape[0], len(self.classes_)))
        rows = np.arange(batch.ex_int.shape[0])
        for first, count, starts, slots, values, _ in ws.expand(batch, rows):
            part = slice(first, first + count)
            predicted = np.empty(count, dtype=np.int64)
            saved = ws.state.copy(), ws.params.copy()
            ws.params[P_TRAINING] = 0.0
            ws.reduction.run(ws, starts, slots, values, batch.classes[part],
                             batch.ex_float[part, 1].copy(), batch.ex_float[part, 2].copy(),
                             np.ones(count, np.uint8), predicted, scores[part])
            ws.state[:], ws.params[:] = saved
        return scores

    def predict(self, X):
        check_is_fitted(self, "workspace_")
        if len(self.classes_) <= 2:
            scores = self._scores(X)
            return self.classes_[(scores > 0).astype(int) if len(self.classes_) == 2
                                 else np.zeros(len(scores), dtype=int)]
        return self.classes_[np.asarray(self._scores(X), dtype=int)]

    def _has_probabilities(self) -> bool:
        """predict_proba's availability: class scores (two classes, ``oaa``, ``sft``) that are
        calibrated, or learned for it (logistic loss, two classes or ``oaa``)."""
        binary = hasattr(self, "classes_") and len(self.classes_) <= 2
        if not binary and self.reduction not in ("oaa", "sft"):
            return False
        if hasattr(self, "classes_"):
            if getattr(self, "probability_scale_", None) is not None:
                return True
        elif self.calibrate:
            return True
        return self.loss_function == "logistic" and (binary or self.reduction == "oaa")

    @available_if(_has_probabilities)
    def predict_proba(self, X):
        """Class probabilities, columns in ``classes_`` order: ``softmax(probability_scale_ ·
        decision_function(X))`` when ``fit`` calibrated them, else the logistic of the score
        (two classes) or the normalised logistics of the class scores (``oaa``)."""
        from ..reductions.scorer import logistic
        check_is_fitted(self, "workspace_")
        if len(self.classes_) == 1:
            return np.ones((len(self.decision_function(X)), 1))
        scores = _class_columns(self.decision_function(X), len(self.classes_))
        scale = getattr(self, "probability_scale_", None)
        if scale is not None:
            exponent = np.exp(scale * (scores - scores.max(axis=1, keepdims=True)))
            return exponent / exponent.sum(axis=1, keepdims=True)
        if len(self.classes_) == 2:
            positive = logistic(scores[:, 1] - scores[:, 0])
            return np.column_stack([1.0 - positive, positive])
        probabilities = logistic(scores)
        return probabilities / probabilities.sum(axis=1, keepdims=True)


def _class_columns(scores: np.ndarray, classes: int) -> np.ndarray:
    """Class scores as one column per class: a binary score ``s`` as ``(-s/2, s/2)``, whose
    softmax is ``(1 - logistic(s), logistic(s))``."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1 and classes == 2:
        return np.column_stack([-0.5 * scores, 0.5 * scores])
    return scores
