"""VWClassifier() and VWRegressor() with their defaults on raw features against scikit-learn's
LogisticRegression() and LinearRegression() on the same folds (issue 40), as a markdown table;
then the log loss of VWClassifier().predict_proba against StandardScaler() + LogisticRegression()
on the same folds, as a second table.

Classification: accuracy and log loss, StratifiedKFold(3, shuffle=True, random_state=0).
Regression: R² of cross_val_score, KFold(3, shuffle=True, random_state=0).
``python tests/accuracy/sklearn_raw.py``
"""
import warnings

from sklearn import datasets
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pyvw_lite.api.sklearn import VWClassifier, VWRegressor

SCORES = ("accuracy", "neg_log_loss")


def mean_scores(model, X, y, folds) -> dict:
    done = cross_validate(model, X, y, cv=folds, scoring=SCORES)
    return {name: done[f"test_{name}"].mean() for name in SCORES}


def main() -> None:
    warnings.simplefilter("ignore", ConvergenceWarning)  # lbfgs on raw wine: sklearn's default
    print("| data (raw) | score | VWClassifier() / VWRegressor() | scikit-learn | difference |")
    print("|---|---|---|---|---|")
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    losses = []
    for name in ("iris", "wine", "breast_cancer", "digits"):
        X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        ours = mean_scores(VWClassifier(), X, y, folds)
        theirs = cross_val_score(LogisticRegression(), X, y, cv=folds).mean()
        scaled = mean_scores(make_pipeline(StandardScaler(), LogisticRegression()), X, y, folds)
        print(f"| {name} | accuracy | {ours['accuracy']:.4f} | {theirs:.4f} (LogisticRegression)"
              f" | {ours['accuracy'] - theirs:+.4f} |")
        losses.append((name, -ours["neg_log_loss"], -scaled["neg_log_loss"]))
    X, y = datasets.load_diabetes(return_X_y=True, scaled=False)
    folds = KFold(3, shuffle=True, random_state=0)
    ours = cross_val_score(VWRegressor(), X, y, cv=folds, scoring="r2").mean()
    theirs = cross_val_score(LinearRegression(), X, y, cv=folds, scoring="r2").mean()
    print(f"| diabetes (scaled=False) | R² | {ours:.4f} | {theirs:.4f} (LinearRegression) | "
          f"{ours - theirs:+.4f} |")
    print()
    print("| data (raw) | log loss: VWClassifier() | StandardScaler() + LogisticRegression() | "
          "ratio |")
    print("|---|---|---|---|")
    for name, ours, theirs in losses:
        print(f"| {name} | {ours:.4f} | {theirs:.4f} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
