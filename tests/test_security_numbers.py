"""Numbers from files, options and arrays that would reach a kernel, and text that would switch
a mode or merge what is distinct: each refused in one line naming where it came from, or read
as the learner reads it (docs/security.md)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite.cli.main import main
from pyvw_lite.io.model_io import load_model, save_model

RATINGS = "".join(f"{1 if (u + m) % 3 else -1} |u u{u} |i i{m}\n"
                  for u in range(12) for m in range(0, 36, 2))


@pytest.fixture
def dyadic_model(tmp_path):
    """A signed dyadic model (logistic, --dyad ui) and its data file."""
    data = tmp_path / "d.vw"
    data.write_text(RATINGS)
    model = tmp_path / "m.pvw"
    _, err, code = run_workspace(["-d", str(data), "--dyad", "ui", "--loss_function",
                                  "logistic", "-f", str(model), "--quiet"])
    assert code == 0, err
    return data, model


def test_a_model_whose_latent_scale_takes_the_rate_below_its_bound_is_refused(
        dyadic_model, tmp_path, capsys):
    """A stored ``dyad_rate_scale`` of 1e-300 is inside (0, 1] but takes the latent rate to
    3e-302, where the flow gives NaN: it was loaded and 1999 of 2000 predictions were NaN with
    exit 0.  The bound a decaying pass stops at is applied at load."""
    data, model = dyadic_model
    saved = load_model(str(model))
    hostile = tmp_path / "tiny.pvw"
    for scale, refused in ((1e-300, True), (1e-9 / 0.03 * 0.999, True), (1e-9 / 0.03, False)):
        saved.state["dyad_rate_scale"] = scale
        save_model(str(hostile), saved, "0")
        code = main(["-d", str(data), "-i", str(hostile), "--quiet", "-p",
                     str(tmp_path / "p.txt")])
        err = capsys.readouterr().err
        if refused:
            assert code == 1 and err.count("\n") == 1, err
            assert str(hostile) in err and "latent rate scale" in err, err
            assert not (tmp_path / "p.txt").exists()
        else:
            assert code == 0, err
            assert "nan" not in (tmp_path / "p.txt").read_text()


@pytest.mark.parametrize("argv, needle", [
    (["-l", "1e8", "--loss_function", "logistic", "--dyad", "ui"], "'--learning_rate': 1e+08"),
    (["-l", "1e300"], "'--learning_rate': 1e+300"),
    (["-l", "-1"], "'--learning_rate': -1"),
    (["-l", "20", "--dyad", "ui", "--dyad_rate", "10"], "'-l 20 --dyad_rate 10'"),
    (["--sgd", "--initial_t", "1e300"], "'--initial_t': 1e+300"),
    (["--initial_t", "1e308"], "'--initial_t': 1e+308")])
def test_rates_beyond_where_updates_stay_finite_are_refused(tmp_path, argv, needle, capsys):
    """-l 1e8 --loss_function logistic --dyad ui predicted NaN for 79 of 200 examples with
    exit 0: -l is bounded, and under --dyad so is its product with --dyad_rate."""
    data = tmp_path / "d.vw"
    data.write_text(RATINGS)
    with warnings.catch_warnings():  # refused before the value reaches an array
        warnings.simplefilter("error")
        assert main(["-d", str(data), "-p", str(tmp_path / "p.txt"), "--quiet", *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "p.txt").exists()


def test_a_rate_stored_in_a_model_is_bounded_and_named(dyadic_model, tmp_path, capsys):
    """-l 1e300 in a model's stored options (digest valid) predicted NaN for 194 of 200."""
    data, model = dyadic_model
    saved = load_model(str(model))
    saved.options = [*saved.options, "--learning_rate", "1e300"]
    hostile = tmp_path / "fast.pvw"
    save_model(str(hostile), saved, "0")
    assert main(["-d", str(data), "-i", str(hostile), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1e+300" in err and str(hostile) in err, err


def test_a_loss_that_stops_being_finite_stops_the_run_naming_the_rates(tmp_path, monkeypatch,
                                                                      capsys):
    """The backstop behind the bounds: a batch whose loss is not finite (here forced on the
    kernel's output) stops the run with one line naming the example and the rates, exit 1,
    no -p written; the check runs once per batch on the kernel's outputs."""
    from pyvw_lite.learner.core import Learner
    data = tmp_path / "d.vw"
    data.write_text(RATINGS)
    real = Learner._run_kernel

    def poisoned(self, batch, rows, holdout, training):
        pred, raw, loss, nfeat = real(self, batch, rows, holdout, training)
        loss[3] = np.nan
        return pred, raw, loss, nfeat

    monkeypatch.setattr(Learner, "_run_kernel", poisoned)
    out = tmp_path / "p.txt"
    assert main(["-d", str(data), "--dyad", "ui", "-p", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{data}:4: learning diverged" in err, err
    assert "-l 0.5 with --dyad_rate 0.09" in err and not out.exists()


@pytest.mark.parametrize("odd", ["nan", "inf", "1e39"])
@pytest.mark.parametrize("where", ["-p", "--versus"])
def test_one_odd_prediction_never_switches_evaluate_to_comparing_text(tmp_path, odd, where,
                                                                     capsys):
    """A single ``nan``, ``inf`` or ``1e39`` in -p (or --versus) made evaluate compare every
    prediction as text: 0/1 loss 0.425 became 0.935 with exit 0, and 1e39 a class name.  The
    first labelled line decides that labels are numbers; the odd line is refused, located."""
    rng = np.random.default_rng(4)
    labels = rng.integers(1, 4, 200)
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{y} |a x{i % 5}\n" for i, y in enumerate(labels)))
    guesses = np.where(rng.random(200) < 0.6, labels, rng.integers(1, 4, 200)).astype(str)
    good = tmp_path / "p.txt"
    good.write_text("\n".join(guesses) + "\n")
    guesses[7] = odd
    bad = tmp_path / "odd.txt"
    bad.write_text("\n".join(guesses) + "\n")
    pair = ["-p", str(bad)] if where == "-p" else ["-p", str(good), "--versus", str(bad)]
    assert main(["evaluate", "-d", str(data), *pair]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, (out, err)
    assert f"{bad}:8: '{odd}' is not a number within float32" in err, err
    assert main(["evaluate", "-d", str(data), "-p", str(bad), "--names"]) == 0  # as text: said
    assert "examples = 200" in capsys.readouterr().out


def test_evaluate_reads_names_from_the_first_labelled_line_and_numbers_from_its_own(tmp_path,
                                                                                    capsys):
    """Named labels are text whatever a prediction holds; one odd label before the first
    number decides nothing (it is refused where numbers are read)."""
    data = tmp_path / "d.vw"
    data.write_text("cat |a x\ndog |a y\ncat |a z\n")
    predictions = tmp_path / "p.txt"
    predictions.write_text("cat\n1e39\ncat\n")
    assert main(["evaluate", "-d", str(data), "-p", str(predictions)]) == 0
    assert "errors = 1" in capsys.readouterr().out
    data.write_text("inf |a x\n1 |a y\n-1 |a z\n")
    predictions.write_text("1\n1\n-1\n")
    assert main(["evaluate", "-d", str(data), "-p", str(predictions)]) == 1
    assert f"{data}:1: 'inf' is not a number within float32" in capsys.readouterr().err


def test_convert_back_keeps_tasks_whose_tags_hold_unicode_white_space_apart(tmp_path, capsys):
    """A VW file written by another tool may tag examples ``t\\u00a0x``: the learner keeps that
    tag whole in -p, and --back split the line with str.split(), giving three tasks as ``t``.
    It splits where the learner does (ASCII spaces), so the round trip keeps them apart."""
    import csv
    import json
    tags = ["t\u00a0x", "t\u00a0y", "t\u2028z", "plain"]
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{1 + k % 2} '{tag} |a f{k}\n" for k, tag in enumerate(tags)),
                    encoding="utf-8")
    predictions = tmp_path / "p.txt"
    assert main(["-d", str(data), "--oaa", "2", "-p", str(predictions), "--quiet"]) == 0
    assert predictions.read_text(encoding="utf-8").count("\n") == 4  # U+2028 ends no line
    label_map = tmp_path / "map.json"
    label_map.write_text(json.dumps({"format": "pyvw-lite label map 1", "labels": ["a", "b"]}))
    out = tmp_path / "labels.csv"
    assert main(["convert", str(predictions), "--back", "--map", str(label_map),
                 "-o", str(out)]) == 0
    with open(out, encoding="utf-8", newline="") as handle:
        assert [row["task"] for row in csv.DictReader(handle)] == tags


def test_estimators_apply_the_readers_rules_for_numbers_beyond_float32():
    """VWRegressor().fit with one target of 1e300 predicted NaN for all 200 rows (a
    RuntimeWarning only); one sample_weight of 1e39 took a classifier from 0.995 to 0.56
    accuracy.  Arrays follow the text reader's rules: refused, naming the entry."""
    from pyvw_lite.api.sklearn import VWClassifier, VWRegressor
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = X @ [1.0, -2.0, 0.5]
    huge = y.copy()
    huge[5] = 1e300
    with pytest.raises(ValueError, match=r"y\[5\] = 1e\+300"):
        VWRegressor().fit(X, huge)
    with pytest.raises(ValueError, match=r"y\[5\] = 1e\+300"):
        VWRegressor().partial_fit(X, huge)
    weights = np.ones(200)
    weights[199] = 1e39
    with pytest.raises(ValueError, match=r"sample_weight\[199\] = 1e\+39"):
        VWClassifier().fit(X, y > 0, sample_weight=weights)
    wide = X.copy()
    wide[26, 1] = 4e38
    with pytest.raises(ValueError, match=r"X\[26, 1\] = 4e\+38"):
        VWRegressor().fit(wide, y)
    model = VWRegressor().fit(X, y)
    with pytest.raises(ValueError, match=r"X\[26, 1\] = 4e\+38"):
        model.predict(wide)
    edge = y.copy()
    edge[5] = 3e38  # within float32: learned, and every prediction finite
    assert np.isfinite(VWRegressor().fit(X, edge).predict(X)).all()


def test_crowd_skills_beyond_float32_are_refused():
    """Two skills of 1e308 summed to inf and the vote to NaN."""
    from pyvw_lite.api.crowd import MajorityVote
    import pandas as pd
    answers = pd.DataFrame({"task": ["a", "a", "b"], "worker": ["w1", "w2", "w1"],
                            "label": [1, 1, 0]})
    with pytest.raises(ValueError, match="'w1'"):
        MajorityVote().fit(answers, skills={"w1": 1e308, "w2": 1e308})


@pytest.mark.parametrize("executor", [None, "processes:2"])
def test_a_file_with_cr_line_ends_is_read_line_by_line(tmp_path, executor, capsys):
    """CR-only line ends (old Mac, some exporters) were one example: ``number of examples =
    1``, one prediction, exit 0.  A lone CR ends a line, as convert and crowd read it; the
    predictions are those of the same file with LF ends."""
    lines = RATINGS.splitlines()
    outputs = []
    for end in ("\n", "\r", "\r\n"):
        data = tmp_path / f"d{len(outputs)}.vw"
        data.write_bytes(end.join(lines).encode() + end.encode())
        out = tmp_path / f"p{len(outputs)}.txt"
        argv = ["-d", str(data), "-p", str(out), "--quiet", "-q", "ui"]
        assert main(argv + (["--executor", executor] if executor else [])) == 0
        outputs.append(out.read_text())
    assert outputs[0].count("\n") == len(lines)
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]


def test_a_crlf_split_between_chunks_ends_one_line():
    """A chunk that ends on the CR of a CRLF leaves it for the next chunk: one line end, never
    an empty line between."""
    import io
    from pyvw_lite.io.source import LineChunks
    for end in (b"\r\n", b"\r", b"\n"):
        text = end.join(f"{k} |a x{k}".encode() for k in range(40)) + end
        for size in range(3, 12):
            source = LineChunks(None, chunk_bytes=size, first_bytes=size)
            source._open = lambda text=text: (io.BytesIO(text), True)
            got = [bytes(buf[s:e]).decode() for buf, starts, ends, _ in source
                   for s, e in zip(starts, ends)]
            assert [line.rstrip("\r") for line in got] == [f"{k} |a x{k}" for k in range(40)]


def test_an_example_whose_interactions_would_explode_is_skipped_and_named(tmp_path, capsys):
    """One 60 MB line under -q aa asked for about 1e15 pairs and ran for hours.  The features
    an example's interactions generate are bounded (2^26, counted from namespace sizes before
    anything is expanded): the example is skipped with a warning naming its line."""
    from pyvw_lite.learners.gd import MAX_INTERACTION_FEATURES
    wide = 9000  # 81 million pairs
    assert wide * wide > MAX_INTERACTION_FEATURES > 2000 * 2000
    data = tmp_path / "d.vw"
    data.write_text("1 |a x y\n-1 |a " + " ".join(f"f{k}" for k in range(wide)) + "\n"
                    "1 |a " + " ".join(f"f{k}" for k in range(2000)) + "\n-1 |a y z\n")
    out = tmp_path / "p.txt"
    assert main(["-d", str(data), "-q", "aa", "-p", str(out), "--progress", "1000"]) == 0
    log, err = capsys.readouterr()
    assert f"[warning] {data}:2: its interactions would generate 8.1e+07 features" in log, log
    assert "skipped examples = 1" in err and "number of examples = 3" in err, err
    assert out.read_text().count("\n") == 3
    assert main(["-d", str(data), "-q", "aa", "--strict_parse", "--quiet"]) == 1


EXTREMES = [1e300, -1e300, 1e39, -1e39, 3.4e38, float("nan"), float("inf"), -float("inf"),
            -0.0, 0.0, 1e-300, 5e-324, 1.0, -1.0, 7.0]


def _finite_or_refused(action) -> None:
    """``action`` either raises a ValueError with a message (the documented refusal) or
    returns outputs that are all finite numbers."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a refusal is the answer; NumPy's notes are not
        try:
            outputs = action()
        except ValueError as exc:
            assert str(exc).strip(), repr(exc)
            return
    for values in outputs:
        values = np.asarray(values, dtype=np.float64)
        assert np.isfinite(values).all(), values


def test_python_entry_point_fuzz_refuses_or_stays_finite(tmp_path):
    """Seeded fuzz of the Python entry points: Workspace option strings with extreme numbers
    and output paths (with and without the -i model), the scikit-learn estimators, the online
    API and the crowd API with extreme arrays.  Every case raises a ValueError with a message
    or succeeds with finite outputs.  (Outputs over inputs: tests/test_security.py.)"""
    from pyvw_lite.api.crowd import MajorityVote
    from pyvw_lite.api.online import OnlineLearner
    from pyvw_lite.api.sklearn import VWClassifier, VWRegressor
    from pyvw_lite.workspace import Workspace
    import pandas as pd
    rng = np.random.default_rng(20261129)
    data = tmp_path / "d.vw"
    data.write_text(RATINGS)
    model = tmp_path / "m.pvw"
    Workspace(f"-d {data} --dyad ui -f {model} --quiet").run()
    lines = RATINGS.splitlines()[:40]

    def extreme():
        return rng.choice(EXTREMES)

    numeric = ["-l", "--power_t", "--initial_t", "--l1", "--l2", "--dyad_rate", "--dyad_l2",
               "--decay_learning_rate", "--min_prediction", "--max_prediction"]
    outputs = ["-f", "-p", "--readable_model", "-r", "--invert_hash"]
    for case in range(24):
        args = ["--quiet"] + (["--dyad", "ui"] if case % 2 else ["-q", "ui"])
        for _ in range(rng.integers(1, 3)):
            args += [str(rng.choice(numeric)), repr(float(extreme()))]
        if case % 3 == 0:
            args += ["-i", str(model)] if case % 2 else []
            args += [str(rng.choice(outputs)), str(tmp_path / f"o{case}")]

        def learn(args=args):
            ws = Workspace(args)
            pred = ws.learn(lines)
            ws.finish()
            return [pred]
        _finite_or_refused(learn)
    X = rng.normal(size=(60, 3))
    for case in range(8):
        Xc, y, w = X.copy(), X @ [1.0, -2.0, 0.5], np.ones(60)
        for array in rng.choice(3, size=rng.integers(1, 3)):
            target = (Xc.ravel(), y, w)[array]
            target[rng.integers(target.size)] = extreme()
        regressor = VWRegressor(passes=2)
        _finite_or_refused(lambda: [regressor.fit(Xc, y, sample_weight=w).predict(X)])
        classifier = VWClassifier(passes=2)
        _finite_or_refused(lambda: [classifier.fit(Xc, y > 0, sample_weight=w)
                                    .predict_proba(X)])
        online = OnlineLearner("--loss_function logistic")
        _finite_or_refused(lambda: [online.learn_many([{"a": {"x": v}} for v in Xc[:, 0]],
                                                      np.sign(y) + (y == 0),
                                                      weights=w)])
        skills = {"w1": extreme(), "w2": 1.0}
        answers = pd.DataFrame({"task": ["a", "a", "b"], "worker": ["w1", "w2", "w1"],
                                "label": [1, 0, 0]})
        _finite_or_refused(lambda: [MajorityVote().fit_predict_proba(answers, skills=skills)
                                    .to_numpy()])


def _cli(args):
    """(exit code, stderr) of the command line ``args``, run in this process."""
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(args))
    return code, err.getvalue()


def _binary_data(path, lines=200):
    rng = np.random.default_rng(11)
    path.write_text("".join(f"{1 if rng.random() < 0.5 else -1} |rater r_{rng.integers(10)} "
                            f"|task t_{rng.integers(30)}\n" for _ in range(lines)))
    return path


@pytest.mark.parametrize("option,value", [("--power_t", "-50"), ("--power_t", "2"),
                                          ("--constant", "1e39"), ("--initial_t", "-1"),
                                          ("--decay_learning_rate", "1e300"),
                                          ("--decay_learning_rate", "0")])
def test_rate_options_that_overflow_the_updates_are_refused_and_keep_the_model(
        tmp_path, option, value):
    """A rate option outside the range where updates stay finite is refused by name before
    anything is learned, so -f over the -i model keeps the model that was there."""
    data = _binary_data(tmp_path / "d.vw")
    model = tmp_path / "m.pvw"
    _, err, code = run_workspace(["-d", str(data), "-f", str(model), "--quiet"])
    assert code == 0, err
    before = model.read_bytes()
    code, err = _cli(["-d", str(data), "-i", str(model), "-f", str(model), option, value,
                      "--passes", "2", "-c", "-k"])
    assert code == 1 and f"option '{option}'" in err and "Traceback" not in err, err
    assert model.read_bytes() == before
    _, err, code = run_workspace(["-d", str(data), "-i", str(model), "-t", "--quiet"])
    assert code == 0, err


def test_a_model_with_weights_that_are_not_finite_is_never_written(tmp_path):
    """The last guard: whatever made a weight NaN or infinite, -f is not written with it (the
    next -i would refuse it) and the error says why."""
    from pyvw_lite.learner.checks import Diverged
    from pyvw_lite.workspace import Workspace
    out = tmp_path / "m.pvw"
    ws = Workspace(f"-f {out} --quiet")
    ws.learn(["1 |rater r_1 |task t_9", "-1 |rater r_2 |task t_9"])
    ws.learner.weights[np.flatnonzero(ws.learner.weights[:, 0])[:1], 0] = np.nan
    with pytest.raises(Diverged, match="not all finite"):
        ws.finish()
    assert not out.exists()


@pytest.mark.parametrize("label", ["1_0", "\u0661", " 1"])
def test_evaluate_reads_numbers_as_the_learner_does(tmp_path, label):
    """A label Python's float() takes but the learner's parser does not (digit groups, other
    scripts' digits) is refused in a numbers file, not read as a number."""
    data = _binary_data(tmp_path / "d.vw", 20)
    predictions = tmp_path / "p.txt"
    _, err, code = run_workspace(["-d", str(data), "--binary", "-p", str(predictions),
                                  "--quiet"])
    assert code == 0, err
    lines = data.read_text().splitlines()
    lines[5] = label + " " + lines[5].split(" ", 1)[1]
    odd = tmp_path / "odd.vw"
    odd.write_text("\n".join(lines) + "\n")
    code, err = _cli(["evaluate", "-p", str(predictions), "-d", str(odd)])
    if label == " 1":  # a leading space is VW's empty label field: the line is unlabelled
        assert code == 0, err
    else:
        assert code != 0 and "odd.vw:6" in err, err


@pytest.mark.parametrize("tag", ["a%FEb", "a%FFb", "q%0D", "a%00b"])
def test_convert_back_refuses_a_tag_that_decodes_to_no_csv_id(tmp_path, tag):
    """``a%FEb`` and ``a%FFb`` escape bytes that are no UTF-8: decoded leniently both became
    ``a\\ufffdb``, one task; a CR or NUL would break the CSV row. Each is refused, located."""
    import json
    predictions = tmp_path / "p.txt"
    predictions.write_text(f"1 ok\n2 {tag}\n")
    label_map = tmp_path / "map.json"
    label_map.write_text(json.dumps({"format": "pyvw-lite label map 1", "labels": ["x", "y"]}))
    out = tmp_path / "labels.csv"
    code, err = _cli(["convert", str(predictions), "--back", "--map", str(label_map),
                      "-o", str(out)])
    assert code != 0 and "p.txt:2" in err and "Traceback" not in err, err
    assert not out.exists()



@pytest.mark.parametrize("output", ["-r", "--readable_model", "--invert_hash"])
def test_a_raw_score_that_overflows_stops_the_run_before_any_output(tmp_path, output):
    """Labels of 1e30 and a feature of 1e15 at -l 1e6 (all within the bounds) overflow the raw
    score to inf while the prediction is clipped to the label range: -r, --readable_model and
    --invert_hash were written with inf, exit 0."""
    data = tmp_path / "big.vw"
    data.write_text("1e30 |a x:1e15\n" * 30 + "|a x:1\n")
    out = tmp_path / "out.txt"
    code, err = _cli(["--sgd", "-l", "1e6", "-d", str(data), output, str(out), "--quiet"])
    assert code == 1 and "big.vw:2: learning diverged" in err, err
    assert not out.exists()
