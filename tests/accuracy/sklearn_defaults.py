"""How VWClassifier's and VWRegressor's defaults were chosen: on data that is not scored.

Each candidate (a JSON dict of estimator parameters) is scored by its gap to the better of
scikit-learn's LogisticRegression / LinearRegression on raw and on standardised features, over
shuffled 3-fold cross-validation (accuracy; R²), on generated data with columns rescaled over
six orders of magnitude, linnerud, and real sets shipped inside PyPI packages (palmerpenguins,
statsmodels: used when installed, left out with a note otherwise).  One JSON line per candidate.

    python tests/accuracy/sklearn_defaults.py clf '{"passes": [10], "learning_rate": [0.5, 2.0]}'
    python tests/accuracy/sklearn_defaults.py reg '{"scale_features": [false, true]}'
"""
import itertools
import json
import sys
import warnings

import numpy as np
from sklearn.datasets import load_linnerud, make_classification, make_regression
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pyvw_lite.api.sklearn import VWClassifier, VWRegressor


def rescale(X, rng):
    """Each column plus N(0, 3) of its spread, times 10^U(-3, 3)."""
    offset = rng.normal(0, 3, X.shape[1]) * X.std(axis=0)
    return (X + offset) * 10.0 ** rng.uniform(-3, 3, X.shape[1])


def packaged_sets(kind):
    """Real sets shipped in palmerpenguins and statsmodels, as (X, y), where installed."""
    out = {}
    try:
        import statsmodels.api as sm
        from palmerpenguins import load_penguins
    except ImportError:
        print("note: palmerpenguins or statsmodels not installed: generated data and linnerud "
              "only", file=sys.stderr)
        return out
    p = load_penguins().dropna()
    body = p[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]]
    d = sm.datasets
    if kind == "clf":
        fair = d.fair.load_pandas().data
        spector = d.spector.load_pandas().data
        anes = d.anes96.load_pandas().data
        mode = d.modechoice.load_pandas().data.query("choice == 1")
        rand = d.randhie.load_pandas().data
        islands = p["island"].str.get_dummies().to_numpy(float)
        out.update(penguins_species=(body, p["species"]),
                   penguins_sex=(np.column_stack([body, islands]), p["sex"]),
                   fair_affair=(fair.drop(columns="affairs"), fair["affairs"] > 0),
                   spector=(spector.drop(columns="GRADE"), spector["GRADE"]),
                   anes96_vote=(anes.drop(columns=["vote", "PID"]), anes["vote"]),
                   modechoice=(mode[["ttme", "invc", "invt", "gc", "hinc", "psize"]],
                               mode["mode"]),
                   randhie_any=(rand.drop(columns="mdvis"), rand["mdvis"] > 0))
    else:
        star = d.star98.load_pandas().data
        out.update(penguins_mass=(body.iloc[:, :3], body["body_mass_g"]),
                   star98=(star.drop(columns=["NABOVE", "NBELOW"]),
                           star["NABOVE"] / (star["NABOVE"] + star["NBELOW"])))
        for name, target, drop in (("longley", "TOTEMP", []), ("stackloss", "STACKLOSS", []),
                                   ("statecrime", "murder", []), ("fair", "affairs", []),
                                   ("ccard", "AVGEXP", []), ("engel", "foodexp", []),
                                   ("macrodata", "unemp", ["year", "quarter"]),
                                   ("heart", "survival", [])):
            frame = getattr(d, name).load_pandas().data
            out[name] = (frame.drop(columns=[target, *drop]), frame[target])
    return {name: (np.asarray(X, float), np.asarray(y)) for name, (X, y) in out.items()}


def data_sets(kind):
    out = {}
    for seed in range(4):
        if kind == "clf":
            rng = np.random.default_rng(100 + seed)
            for n, k in ((300, 2), (600, 3), (900, 4)):
                X, y = make_classification(n, 12, n_informative=6, n_redundant=2, n_classes=k,
                                           n_clusters_per_class=1, random_state=seed)
                X = rescale(X, rng)
                order = np.argsort(y, kind="stable")  # bundled data often comes sorted
                out[f"synth{seed}_k{k}"] = (X, y)
                out[f"synth{seed}_k{k}_sorted"] = (X[order], y[order])
        else:
            rng = np.random.default_rng(200 + seed)
            for n in (200, 800):
                X, y = make_regression(n, 10, n_informative=6, noise=20.0,
                                       bias=rng.normal(0, 100), random_state=seed)
                out[f"synth{seed}_n{n}"] = (rescale(X, rng), y)
    if kind == "reg":
        linnerud = load_linnerud()
        for j, name in enumerate(linnerud.target_names):
            out[f"linnerud_{name}"] = (linnerud.data, linnerud.target[:, j])
    out.update(packaged_sets(kind))
    return out


def score(model, X, y, kind):
    if kind == "clf":
        return cross_val_score(model, X, y, cv=StratifiedKFold(3, shuffle=True,
                                                              random_state=0)).mean()
    return cross_val_score(model, X, y, cv=KFold(3, shuffle=True, random_state=0),
                           scoring="r2").mean()


def main(kind, grid):
    warnings.simplefilter("ignore")  # lbfgs stopping at max_iter on raw columns
    sets = data_sets(kind)
    base = LogisticRegression(max_iter=1000) if kind == "clf" else LinearRegression()
    best = {name: max(score(base, X, y, kind),
                      score(make_pipeline(StandardScaler(), base), X, y, kind))
            for name, (X, y) in sets.items()}
    estimator = VWClassifier if kind == "clf" else VWRegressor
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values))
        gaps = {name: score(estimator(**params), X, y, kind) - best[name]
                for name, (X, y) in sets.items()}
        g = np.array(list(gaps.values()))
        worst = min(gaps, key=gaps.get)
        print(json.dumps({"params": params, "sets": len(g), "mean_gap": round(g.mean(), 4),
                          "median_gap": round(float(np.median(g)), 4),
                          "within_0.03": int((g >= -0.03).sum()),
                          "worst": [worst, round(gaps[worst], 4)],
                          "gaps": {k: round(v, 4) for k, v in gaps.items()}}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2] if len(sys.argv) > 2 else "{}"))
