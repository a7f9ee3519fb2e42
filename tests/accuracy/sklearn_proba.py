"""How VWClassifier's probabilities were chosen, on data that is not scored in docs/python.md.

Each candidate's log loss over shuffled 3-fold cross-validation, as a ratio to the log loss of
StandardScaler() + LogisticRegression(max_iter=1000) on the same folds, on sklearn_defaults.py's
classification sets (generated sets over several seeds, sizes and class counts, rows mixed and
sorted; palmerpenguins and statsmodels' sets when installed); accuracy of the argmax of the
probabilities against VWClassifier().predict; the fit time against VWClassifier(calibrate=False).
One markdown table.  ``python tests/accuracy/sklearn_proba.py``
"""
import time
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn_defaults import data_sets

from pyvw_lite.api.sklearn import VWClassifier
from pyvw_lite.reductions.scorer import logistic


def columns(scores):
    return np.column_stack([-scores / 2, scores / 2]) if scores.ndim == 1 else scores


def normalised_logistic(model, X):
    """The scores' logistics, normalised (VW's --probabilities; sft's predict_proba before)."""
    p = logistic(columns(model.decision_function(X)) * (1.0 if model.classes_.size > 2 else 2.0))
    return p / p.sum(axis=1, keepdims=True)


def scale_and_bias(model, X, y):
    """softmax(a·s + b_k), a and b_k by log loss on two internal folds (a softmax of the
    scores with one more knob per class)."""
    index = np.searchsorted(model.classes_, y)
    scores = np.zeros((len(y), model.classes_.size))
    for learn, held in StratifiedKFold(2, shuffle=True, random_state=0).split(X, y):
        part = VWClassifier(calibrate=False).fit(X[learn], y[learn])
        scores[held] = columns(part.decision_function(X[held]))

    def loss(theta):
        z = theta[0] * scores + theta[1:]
        z -= z.max(axis=1, keepdims=True)
        return np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), index])
    theta = minimize(loss, np.r_[1.0, np.zeros(scores.shape[1])], method="L-BFGS-B").x
    return lambda Xt: softmax(theta[0] * columns(model.decision_function(Xt)) + theta[1:])


def softmax(z):
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


CANDIDATES = (
    ("sft, normalised logistics of the scores (before)", {"calibrate": False}, "logistics"),
    ("oaa, normalised logistics (VW's --probabilities)", {"calibrate": False, "reduction": "oaa"},
     "logistics"),
    ("**sft, softmax(a·scores), a on two internal folds (shipped)**", {}, "shipped"),
    ("oaa, softmax(a·scores), a on two internal folds", {"reduction": "oaa"}, "shipped"),
    ("sft, softmax(a·scores + b_k), on two internal folds", {"calibrate": False}, "bias"),
)


def main():
    warnings.simplefilter("ignore")
    sets = data_sets("clf")
    rows = {label: [] for label, _, _ in CANDIDATES}
    for X, y in sets.values():
        X, y = np.asarray(X, float), np.asarray(y)
        for learn, test in StratifiedKFold(3, shuffle=True, random_state=0).split(X, y):
            reference = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            base = log_loss(y[test], reference.fit(X[learn], y[learn]).predict_proba(X[test]))
            start = time.perf_counter()
            plain = VWClassifier(calibrate=False).fit(X[learn], y[learn])
            plain_seconds = time.perf_counter() - start
            for label, params, kind in CANDIDATES:
                start = time.perf_counter()
                model = VWClassifier(**params).fit(X[learn], y[learn])
                if kind == "logistics":
                    proba = normalised_logistic(model, X[test])
                elif kind == "shipped":
                    proba = model.predict_proba(X[test])
                else:
                    proba = scale_and_bias(model, X[learn], y[learn])(X[test])
                seconds = time.perf_counter() - start
                agree = np.mean(model.classes_[proba.argmax(axis=1)] == plain.predict(X[test]))
                rows[label].append((log_loss(y[test], np.clip(proba, 1e-15, 1),
                                             labels=model.classes_) / base, agree,
                                    seconds / plain_seconds))
    print(f"{len(sets)} sets, 3 folds each")
    print("| candidate | mean log-loss ratio | worst fold | folds within 1.5x | argmax = predict "
          "| fit time |")
    print("|---|---|---|---|---|---|")
    for label, values in rows.items():
        ratio, agree, cost = (np.array(v) for v in zip(*values))
        print(f"| {label} | {ratio.mean():.3f} | {ratio.max():.2f} | {(ratio <= 1.5).sum()}/"
              f"{ratio.size} | {agree.mean():.4f} | {np.median(cost):.1f}x |")


if __name__ == "__main__":
    main()
