"""VWClassifier() and VWRegressor() with their defaults on raw features against scikit-learn's
LogisticRegression() and LinearRegression() on the same folds (issue 40), as a markdown table.

Classification: accuracy, StratifiedKFold(3, shuffle=True, random_state=0).  Regression: R² of
cross_val_score, KFold(3, shuffle=True, random_state=0).  ``python tests/accuracy/sklearn_raw.py``
"""
import warnings

from sklearn import datasets
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

from pyvw_lite.api.sklearn import VWClassifier, VWRegressor


def main() -> None:
    warnings.simplefilter("ignore", ConvergenceWarning)  # lbfgs on raw wine: sklearn's default
    print("| data (raw) | score | VWClassifier() / VWRegressor() | scikit-learn | difference |")
    print("|---|---|---|---|---|")
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    for name in ("iris", "wine", "breast_cancer", "digits"):
        X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        ours = cross_val_score(VWClassifier(), X, y, cv=folds).mean()
        theirs = cross_val_score(LogisticRegression(), X, y, cv=folds).mean()
        print(f"| {name} | accuracy | {ours:.4f} | {theirs:.4f} (LogisticRegression) | "
              f"{ours - theirs:+.4f} |")
    X, y = datasets.load_diabetes(return_X_y=True, scaled=False)
    folds = KFold(3, shuffle=True, random_state=0)
    ours = cross_val_score(VWRegressor(), X, y, cv=folds, scoring="r2").mean()
    theirs = cross_val_score(LinearRegression(), X, y, cv=folds, scoring="r2").mean()
    print(f"| diabetes (scaled=False) | R² | {ours:.4f} | {theirs:.4f} (LinearRegression) | "
          f"{ours - theirs:+.4f} |")


if __name__ == "__main__":
    main()
