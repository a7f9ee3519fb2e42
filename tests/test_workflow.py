"""The rater-task workflow end to end: convert -> split -> train -> predict -> evaluate, and the
configured experiment."""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from pyvw_lite import datasets
from pyvw_lite.cli.main import main
from pyvw_lite.io.hashing import murmur_bytes
from pyvw_lite.workflow.evaluate import (confusion_of, evaluate_predictions, mcnemar_p_value,
                                         paired_difference, wilson_interval)
from pyvw_lite.workflow.experiment import ConfigError, load_config, run_experiment
from pyvw_lite.workflow.split import split_file

ROOT = Path(__file__).resolve().parents[1]


def cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_convert_quotes_label_names_that_would_read_ambiguously(tmp_path, capsys):
    answers = tmp_path / "a.csv"
    answers.write_text('task,worker,label\nt1,w1,"a, b"\nt1,w2,c\nt2,w1,x=y\n')
    code, _, err = cli(["convert", str(answers), "-o", str(tmp_path / "a.vw")], capsys)
    assert code == 0, err
    assert "labels 1='a, b', 2=c, 3='x=y' ->" in err


def test_convert_writes_labels_tags_features_and_a_map(tmp_path, capsys):
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label,hour,site\nq 1,ann,yes,3.5,x|y\nq 2,bob,no,7,z\n"
                       "q 1,bob,yes,1,x|y\n")
    out, mapping = tmp_path / "a.vw", tmp_path / "a.json"
    code, _, err = cli(["convert", str(answers), "-o", str(out), "--map", str(mapping),
                        "--features", "hour,site"], capsys)
    assert code == 0, err
    assert out.read_text().splitlines() == [  # VW's syntax characters percent-encoded
        "2 'q%201 |rater r_ann |task t_q%201 |hour hour:3.5 |site site_x%7Cy",
        "1 'q%202 |rater r_bob |task t_q%202 |hour hour:7 |site site_z",
        "2 'q%201 |rater r_bob |task t_q%201 |hour hour:1 |site site_x%7Cy"]
    assert json.loads(mapping.read_text())["labels"] == ["no", "yes"]
    assert "3 lines, 2 tasks, 2 raters, labels 1=no, 2=yes" in err
    predictions = tmp_path / "p.txt"
    predictions.write_text("2 q%201\n1 q%202\n")
    back = tmp_path / "back.csv"
    code, _, err = cli(["convert", str(predictions), "--back", "--map", str(mapping), "-o",
                        str(back)], capsys)
    assert code == 0 and back.read_text() == "task,label\nq 1,yes\nq 2,no\n"
    predictions.write_text("3 q_1\n")
    code, _, err = cli(["convert", str(predictions), "--back", "--map", str(mapping), "-o",
                        str(back)], capsys)
    assert code == 1 and "p.txt:1: class 3 outside 1..2" in err


def test_convert_leaves_out_non_finite_feature_values(tmp_path, capsys):
    """'hour:nan' made the learner skip the whole example (a non-finite value)."""
    answers, out = tmp_path / "a.csv", tmp_path / "a.vw"
    answers.write_text("task,worker,label,hour\na,u,x,3\nb,u,y,nan\nc,v,x,inf\nd,v,y,1e400\n"
                       "e,v,y,nan\n")
    code, _, err = cli(["convert", str(answers), "-o", str(out), "--features", "hour"], capsys)
    assert code == 0 and "[warning] 4 non-finite 'hour' values" in err
    assert out.read_text().splitlines()[:2] == ["1 'a |rater r_u |task t_a |hour hour:3",
                                                "2 'b |rater r_u |task t_b"]
    assert "hour" not in "".join(out.read_text().splitlines()[1:])


def test_convert_keeps_ids_distinct_and_maps_them_back_exactly(tmp_path, capsys):
    """'a b' and 'a_b' were both the task t_a_b (one feature for two tasks), and --back wrote
    the mangled id and an unquoted label with a comma (a broken CSV row)."""
    answers = tmp_path / "a.csv"
    answers.write_text('task,worker,label\na b,u,"x, y"\na_b,u,z\n"c,d|e:f\'g%",u,z\n')
    out, mapping = tmp_path / "a.vw", tmp_path / "a.json"
    assert cli(["convert", str(answers), "-o", str(out), "--map", str(mapping)], capsys)[0] == 0
    lines = out.read_text().splitlines()
    assert len({line.split("|task ")[1] for line in lines}) == 3
    predictions = tmp_path / "p.txt"
    predictions.write_text("".join(f"{line.split()[0]} {line.split()[1][1:]}\n" for line in lines))
    back = tmp_path / "back.csv"
    assert cli(["convert", str(predictions), "--back", "--map", str(mapping), "-o", str(back)],
               capsys)[0] == 0
    with open(back, newline="") as handle:
        assert list(csv.reader(handle)) == [["task", "label"], ["a b", "x, y"], ["a_b", "z"],
                                            ["c,d|e:f'g%", "z"]]


def test_convert_leaves_out_a_feature_a_row_does_not_have(tmp_path, capsys):
    """An empty --features cell is a missing feature, not a bad row; an empty label is (skipped
    with a warning, fatal under --strict_parse)."""
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label,hour,site\nq1,ann,yes,3.5,\nq2,bob,no,,z\n"
                       "q1,bob,yes,1,x\n")
    out = tmp_path / "a.vw"
    code, _, err = cli(["convert", str(answers), "-o", str(out), "--features", "hour,site"],
                       capsys)
    assert code == 0, err
    assert out.read_text().splitlines() == [
        "2 'q1 |rater r_ann |task t_q1 |hour hour:3.5",
        "1 'q2 |rater r_bob |task t_q2 |site site_z",
        "2 'q1 |rater r_bob |task t_q1 |hour hour:1 |site site_x"]
    answers.write_text("task,worker,label,hour\nq1,ann,,3\nq2,bob,no,1\n")
    code, _, err = cli(["convert", str(answers), "-o", str(out), "--features", "hour"], capsys)
    assert code == 0 and "a.csv:2: empty 'label' (line: 'q1,ann,,3'); skipped" in err
    assert out.read_text() == "1 'q2 |rater r_bob |task t_q2 |hour hour:1\n"
    code, _, err = cli(["convert", str(answers), "-o", str(out), "--features", "hour",
                        "--strict_parse"], capsys)
    assert code == 1 and "a.csv:2: empty 'label'" in err
    answers.write_text("task,worker,label,hour\nq1,ann,,3\n")
    code, _, err = cli(["convert", str(answers), "-o", str(out)], capsys)
    assert code == 1 and "a.csv: no answers" in err


@pytest.mark.parametrize("make_args, message", [
    (lambda d: [str(d / "t.vw"), "-p", str(d / "t.vw")], "-p {d}/t.vw is the -d file"),
    (lambda d: ["-d", str(d / "t.vw"), "-f", str(d / "t.vw")], "-f {d}/t.vw is the -d file"),
    (lambda d: ["-d", str(d / "t.vw"), "-p", str(d / "t.vw"), "--executor", "serial"],
     "-p {d}/t.vw is the -d file"),
    (lambda d: ["-d", str(d / "t.vw"), "--cache_file", str(d / "t.vw")],
     "--cache_file {d}/t.vw is the -d file"),
    (lambda d: ["-d", str(d / "t.vw"), "-p", str(d / "p.txt"), "-r", str(d / "sub/../p.txt")],
     "-r {d}/sub/../p.txt is the -p file too"),
    (lambda d: ["split", str(d / "t.vw"), "--train", str(d / "a.vw"), "--test", str(d / "a.vw")],
     "--test {d}/a.vw is the --train file too"),
    (lambda d: ["split", str(d / "t.vw"), "--train", str(d / "t.vw"), "--test", str(d / "b.vw")],
     "--train {d}/t.vw is the source file"),
    (lambda d: ["convert", str(d / "a.csv"), "-o", str(d / "a.csv")], "-o {d}/a.csv is the source"),
    (lambda d: ["convert", str(d / "a.csv"), "-o", str(d / "o.vw"), "--map", str(d / "o.vw")],
     "--map {d}/o.vw is the -o file too"),
    (lambda d: ["crowd", str(d / "a.csv"), "-p", str(d / "a.csv")], "-p {d}/a.csv is the answers"),
    (lambda d: ["crowd", str(d / "a.csv"), "--truth", str(d / "truth.csv"), "-f",
                str(d / "truth.csv")], "-f {d}/truth.csv is the --truth file"),
    # an output that cannot be written fails before the run, not after it
    (lambda d: ["-d", str(d / "t.vw"), "-f", str(d / "no/m.pvw")],
     "-f {d}/no/m.pvw: cannot write there (no directory {d}/no)"),
    (lambda d: ["-d", str(d / "t.vw"), "--readable_model", str(d / "sub")],
     "--readable_model {d}/sub is a directory, not a file"),
    (lambda d: ["-d", str(d / "t.vw"), "--passes", "2", "--executor", "serial", "--invert_hash",
                str(d / "no/ih.txt")], "--invert_hash {d}/no/ih.txt: cannot write there"),
    (lambda d: ["crowd", str(d / "a.csv"), "--workers", str(d / "no/w.csv")],
     "--workers {d}/no/w.csv: cannot write there (no directory {d}/no)"),
    (lambda d: ["convert", str(d / "a.csv"), "-o", str(d / "o.vw"), "--map", str(d / "no/m.json")],
     "--map {d}/no/m.json: cannot write there"),
])
def test_no_output_overwrites_an_input_or_another_output(make_args, message, tmp_path, capsys):
    """A typo such as ``-p`` for ``-d`` would replace the data with predictions: refused before
    anything is written, every file left as it was."""
    (tmp_path / "sub").mkdir()
    files = {"t.vw": "1 |rater r_1 |task t_1\n-1 |rater r_2 |task t_1\n",
             "a.csv": "task,worker,label\n1,a,x\n1,b,y\n", "truth.csv": "task,label\n1,x\n",
             "p.txt": "old\n", "a.vw": "old\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    code, _, err = cli(make_args(tmp_path), capsys)
    assert code == 1
    assert message.format(d=tmp_path) in err
    assert {name: (tmp_path / name).read_text() for name in files} == files
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([*files, "sub"])


def test_a_current_cache_in_a_read_only_directory_is_still_read(tmp_path, monkeypatch):
    from pyvw_lite.io.atomic import check_paths
    cache = tmp_path / "t.vw.cache"
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # a read-only directory
    with pytest.raises(ValueError, match="is not writable"):
        check_paths([], [("--cache_file", str(cache))], reusable=("--cache_file",))
    cache.write_bytes(b"cache")
    check_paths([], [("--cache_file", str(cache))], reusable=("--cache_file",))
    with pytest.raises(ValueError, match="is not writable"):
        check_paths([], [("-f", str(cache))], reusable=("--cache_file",))


def test_repeated_special_outputs_and_a_model_saved_over_itself_are_allowed(tmp_path, capsys):
    data = tmp_path / "t.vw"
    data.write_text("1 |rater r_1 |task t_1\n-1 |rater r_2 |task t_1\n")
    model = tmp_path / "m.pvw"
    assert cli(["-d", str(data), "-p", "/dev/null", "-r", "/dev/null", "--quiet"], capsys)[0] == 0
    assert cli(["-d", str(data), "-f", str(model), "--quiet"], capsys)[0] == 0
    assert cli(["-d", str(data), "-i", str(model), "-f", str(model), "--quiet"], capsys)[0] == 0


def test_split_follows_the_hash_rule_and_reports_overlap(tmp_path):
    lines = [f"{k % 3 + 1} |rater r_{k % 7} |task t_{k % 50}" for k in range(2000)]
    source = tmp_path / "all.vw"
    source.write_text("\n".join(lines) + "\n")
    report = split_file(str(source), str(tmp_path / "tr"), str(tmp_path / "te"), 0.25, seed=3)
    test = (tmp_path / "te").read_text().splitlines()
    train = (tmp_path / "tr").read_text().splitlines()
    expected = [line for line in lines if murmur_bytes(line, 3) < 0.25 * 2 ** 32]
    assert test == expected and len(train) + len(test) == 2000
    assert 400 < len(test) < 600
    assert report.test_raters == 7 and report.test_raters_in_train == 7
    assert report.test_tasks_in_train == report.test_tasks == 50
    again = split_file(str(source), str(tmp_path / "tr2"), str(tmp_path / "te2"), 0.25, seed=3)
    assert (tmp_path / "te2").read_text() == (tmp_path / "te").read_text() and again == report
    with pytest.raises(ValueError, match="strictly between"):
        split_file(str(source), str(tmp_path / "a"), str(tmp_path / "b"), 1.0)
    # a .gz source splits as its lines do; a .gz output is gzip data; a cut .gz is an error
    packed = tmp_path / "all.vw.gz"
    packed.write_bytes(gzip.compress(source.read_bytes()))
    assert split_file(str(packed), str(tmp_path / "tr3.gz"), str(tmp_path / "te3"), 0.25,
                      seed=3) == report
    assert gzip.decompress((tmp_path / "tr3.gz").read_bytes()) == (tmp_path / "tr").read_bytes()
    assert (tmp_path / "te3").read_bytes() == (tmp_path / "te").read_bytes()
    cut = tmp_path / "cut.vw.gz"
    cut.write_bytes(packed.read_bytes()[:200])
    with pytest.raises(ValueError, match="cut.vw.gz: compressed data ends early"):
        split_file(str(cut), str(tmp_path / "a"), str(tmp_path / "b"))


def test_wilson_interval_and_confusion():
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson_interval(50, 100)
    assert (low, high) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    assert math.isnan(wilson_interval(0, 0)[0])
    result = confusion_of(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    assert result.confusion.tolist() == [[1, 1], [0, 2]] and result.errors == 1
    precision, recall = result.precision_recall()
    assert precision.tolist() == [1.0, 2 / 3] and recall.tolist() == [0.5, 1.0]


def test_paired_difference_counts_discordant_examples():
    a = np.array([True] * 6 + [False] * 4)
    b = np.array([True] * 3 + [False] * 3 + [True] * 3 + [False])
    paired = paired_difference(a, b)
    # only A right on examples 3..5, only B right on 6..8: equal losses, even split
    assert (paired.worse, paired.better, paired.difference, paired.p_value) == (3, 3, 0.0, 1.0)
    assert paired.low == pytest.approx(-1.959964 * math.sqrt(0.6 / 10)) == -paired.high
    paired = paired_difference(a, ~a)
    assert (paired.worse, paired.better) == (6, 4) and paired.difference == pytest.approx(0.2)
    assert confusion_of(["1", "2", "2"], ["1", "1", "2"]).hits.tolist() == [True, False, True]
    with pytest.raises(ValueError, match="3 and 2 examples"):
        paired_difference(a[:3], a[:2])


@pytest.mark.parametrize("worse,better", [(0, 5), (1, 9), (7, 3), (20, 31), (1500, 1620)])
def test_mcnemar_p_value_is_the_exact_binomial_test(worse, better):
    stats = pytest.importorskip("scipy.stats")
    expected = stats.binomtest(worse, worse + better, 0.5).pvalue
    assert mcnemar_p_value(worse, better) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("flags", [["--scores"], ["--probabilities"]])
def test_evaluate_reads_score_predictions_as_their_argmax(flags, tmp_path):
    """A --scores / --probabilities file scores the class the model predicted (its argmax,
    the lowest class on ties), as the plain -p file of the same run does; data may be .gz."""
    data = tmp_path / "d.vw"
    rng = np.random.default_rng(3)
    data.write_text("".join(f"{rng.integers(1, 4)} t{k}|a x{rng.integers(5)}\n"
                            for k in range(200)))
    plain, scored = tmp_path / "p", tmp_path / "s"
    base = ["-d", str(data), "--oaa", "3", "--quiet"]
    assert main(base + ["-p", str(plain), "--loss_function", "logistic"]) == 0
    assert main(base + flags + ["-p", str(scored), "--loss_function", "logistic"]) == 0
    expected = evaluate_predictions(str(plain), str(data))
    packed = tmp_path / "d.vw.gz"
    packed.write_bytes(gzip.compress(data.read_bytes()))
    result = evaluate_predictions(str(scored), str(packed))
    assert result.errors == expected.errors and 0 < result.errors < 200
    assert np.array_equal(result.confusion, expected.confusion)
    assert np.array_equal(result.hits, expected.hits)


@pytest.mark.parametrize("labels,predictions,threshold,errors,note", [
    ("-1 1 1 -1", "-0.2 0.3 1.7 0.1", None, 1, False),  # scores: by sign
    ("-1 1 1 -1", "0.2 0.7 0.9 0.6", None, 1, True),  # --link logistic: above 0.5 (was 2)
    ("-1 1 1 -1", "0.2 0.7 0.9 0.6", 0.0, 2, False),  # --threshold overrides
    ("0 1 1 0", "0.2 0.7 0.4 0.1", None, 1, False),  # 0/1 labels, real predictions
    # 0/1 labels with scores beyond [0, 1]: 0.5 still, and a note names --threshold 0
    ("0 1 1 0", "-2.5 0.3 3.1 -0.4", None, 1, True),
    ("0 1 1 0", "-2.5 0.3 3.1 -0.4", 0.0, 0, False),
    ("0 1 2 0", "0 1 1 0", None, 1, False),  # 0-indexed classes (0 was read as -1)
    ("1 1 1 1", "1 2 3 1", None, 2, False),  # classes, though every label is 1 (was 0)
    ("cat dog dog", "cat cat dog", None, 1, False),  # --named_labels
])
def test_evaluate_reads_binary_scores_probabilities_and_classes(
        tmp_path, labels, predictions, threshold, errors, note):
    data, scored = tmp_path / "d.vw", tmp_path / "p.txt"
    data.write_text("".join(f"{label} |a x\n" for label in labels.split()))
    scored.write_text("".join(f"{value}\n" for value in predictions.split()))
    result = evaluate_predictions(str(scored), str(data), threshold)
    assert result.errors == errors
    assert any("threshold 0.5" in line for line in result.notes) == note


def test_evaluate_weighs_by_importance_as_vw_does(tmp_path):
    data, scored = tmp_path / "d.vw", tmp_path / "p.txt"
    data.write_text("1 3 'a |f x\n-1 |f y\n1 0.5 'c |f z\n-1 'd |f w\n")
    scored.write_text("-1 a\n-1\n-1 c\n-1 d\n")  # wrong on weights 3 and 0.5 of 5.5
    result = evaluate_predictions(str(scored), str(data))
    assert result.errors == 2 and result.loss == 0.5
    assert result.notes == ["weighted 0/1 loss = 0.636364 (importance weights; the counts above "
                            "give each example one vote)"]
    data.write_text("1 'a |f x\n-1 |f y\n")
    scored.write_text("1 a\n1\n")
    assert evaluate_predictions(str(scored), str(data)).notes == []  # all weights 1: no note


def test_evaluate_scores_regression_labels_by_their_errors(tmp_path):
    """Regression labels have no 0/1 loss: they get absolute and squared errors (this was an
    error before issue 27)."""
    data, scored = tmp_path / "d.vw", tmp_path / "p.txt"
    data.write_text("0.2 |a x\n3.5 |a y\n")
    scored.write_text("0.4\n3.1\n")
    result = evaluate_predictions(str(scored), str(data))
    np.testing.assert_allclose(result.errors, [0.2, -0.4])
    assert "MAE = 0.300000" in result.text()


def test_evaluate_says_a_threshold_is_ignored_for_regression_labels(tmp_path):
    """--threshold turns scores into classes; numeric labels have none, so it is ignored, and
    evaluate says so instead of scoring as if it had been used (issue 40)."""
    data, scored = tmp_path / "d.vw", tmp_path / "p.txt"
    data.write_text("0.2 |a x\n3.5 |a y\n")
    scored.write_text("0.4\n3.1\n")
    text = evaluate_predictions(str(scored), str(data), threshold=0.5).text()
    assert "MAE = 0.300000" in text and "--threshold 0.5 ignored" in text
    assert "ignored" not in evaluate_predictions(str(scored), str(data)).text()


def test_convert_back_reads_score_predictions(tmp_path, capsys):
    """--back maps a --scores line to its argmax class and keeps the tag after the scores."""
    answers, lines, labels_map = tmp_path / "a.csv", tmp_path / "a.vw", tmp_path / "m.json"
    answers.write_text("task,worker,label\nq1,ann,no\nq2,bob,yes\nq3,ann,maybe\n")
    assert cli(["convert", str(answers), "-o", str(lines), "--map", str(labels_map)],
               capsys)[0] == 0
    scores, out = tmp_path / "s.txt", tmp_path / "l.csv"
    scores.write_text("1:0.1 2:0.7 3:0.2 q1\n1:0.5 2:0.5 3:-1 q2\n1:-2 2:-1 3:0 q3\n")
    assert cli(["convert", str(scores), "--back", "--map", str(labels_map), "-o", str(out)],
               capsys)[0] == 0
    assert out.read_text() == "task,label\nq1,no\nq2,maybe\nq3,yes\n"


def test_convert_split_train_predict_evaluate(tmp_path, capsys):
    folder = datasets.folder("act_CF")
    lines, train, test = tmp_path / "cf.vw", tmp_path / "train.vw", tmp_path / "test.vw"
    steps = [["convert", str(folder / "answers.csv"), "-o", str(lines), "--map",
              str(tmp_path / "cf.json"), "--shuffle", "1"],
             ["split", str(lines), "--train", str(train), "--test", str(test)],
             ["-d", str(train), "--sft", "5", "--loss_function", "hinge", "--passes", "3", "-c",
              "--holdout_off", "-f", str(tmp_path / "m.pvw"), "--quiet"],
             ["-d", str(test), "-t", "-i", str(tmp_path / "m.pvw"), "-p", str(tmp_path / "p.txt"),
              "--quiet"]]
    for step in steps:
        code, _, err = cli(step, capsys)
        assert code == 0, (step, err)
    code, out, err = cli(["evaluate", "-p", str(tmp_path / "p.txt"), "-d", str(test)], capsys)
    assert code == 0, err
    n = len(test.read_text().splitlines())
    assert f"examples = {n}" in out
    loss = float(out.split("0/1 loss = ")[1].split()[0])
    constant_loss = 1 - max(np.bincount([int(l.split()[0]) for l in test.read_text().splitlines()])) / n
    assert loss < constant_loss
    # paired comparison against a constant "model" predicting the first class everywhere
    constant = tmp_path / "constant.txt"
    constant.write_text("1\n" * n)
    code, out, err = cli(["evaluate", "-p", str(tmp_path / "p.txt"), "-d", str(test),
                          "--versus", str(constant)], capsys)
    assert code == 0, err
    labels = [int(line.split()[0]) for line in test.read_text().splitlines()]
    guesses = [int(line.split()[0]) for line in (tmp_path / "p.txt").read_text().splitlines()]
    only_constant = sum(g != y == 1 for g, y in zip(guesses, labels))
    only_model = sum(g == y != 1 for g, y in zip(guesses, labels))
    assert f"only {constant} right = {only_constant}, only {tmp_path / 'p.txt'} right = " \
           f"{only_model}" in out
    difference = float(out.split("0/1 loss ")[-1].split()[0])
    assert difference == pytest.approx((only_constant - only_model) / n, abs=1e-6)
    code, _, err = cli(["evaluate", "--labels", str(constant), "--truth", str(test), "--versus",
                        str(constant)], capsys)
    assert code == 1 and "--versus compares two predictions files" in err
    code, _, err = cli(["convert", str(tmp_path / "p.txt"), "--back", "--map",
                        str(tmp_path / "cf.json"), "-o", str(tmp_path / "back.csv")], capsys)
    assert code == 0, err
    # a row per prediction, so a task's ratings repeat it: each row is scored (was refused as
    # a task "with two labels")
    code, out, err = cli(["evaluate", "--labels", str(tmp_path / "back.csv"), "--truth",
                          str(folder / "truth.csv")], capsys)
    assert code == 0 and f"examples = {n}" in out, err
    assert f"{n} rows for " in out
    code, out, err = cli(["crowd", str(folder / "answers.csv"), "--batch", "--quiet", "-p",
                          str(tmp_path / "labels.csv")], capsys)
    assert code == 0, err
    code, out, err = cli(["evaluate", "--labels", str(tmp_path / "labels.csv"), "--truth",
                          str(folder / "truth.csv")], capsys)
    assert code == 0 and "examples = 300" in out
    assert float(out.split("0/1 loss = ")[1].split()[0]) < 0.15


def test_experiment_runs_a_config(tmp_path):
    config = tmp_path / "small.toml"
    config.write_text(f"""
[experiment]
answers = "{datasets.folder('act_CF') / 'answers.csv'}"
test_fraction = 0.25
passes = 2
common = "--loss_function hinge --holdout_off -b 20"
[[models]]
name = "best constant"
constant = true
[[models]]
name = "linear"
args = "--sft {{K}}"
[[models]]
name = "dyadic k=1"
args = "--sft {{K}} --dyad rt --rank 1 -l 1"
""")
    out = []

    class Sink:
        def write(self, text):
            out.append(text)

    result = run_experiment(str(config), str(tmp_path / "work"), with_peer=False, out=Sink(),
                            plot=False)
    names = [r.name for r in result.results]
    assert names == ["best constant", "linear", "dyadic k=1"]
    constant, linear, dyadic = result.results
    # measured: best constant 0.663, linear 0.284, dyadic 0.307 (test 0/1 loss)
    assert linear.loss < 0.32 and dyadic.loss < 0.34 and constant.loss > 0.6
    assert all(r.low <= r.loss <= r.high for r in result.results)
    record = json.loads((tmp_path / "work" / "results.json").read_text())
    assert record["labels"] == ["0", "1", "2", "3", "4"] and len(record["results"]) == 3
    text = "".join(out)
    assert "test 0/1 loss" in text and "minus linear, paired 95%" in text
    assert "; test raters seen in training " in text and ", test tasks seen in training " in text
    assert record["baseline"] == "linear" and record["results"][1]["versus"]["difference"] == 0
    versus = record["results"][2]["versus"]
    assert versus["difference"] == pytest.approx(dyadic.loss - linear.loss)
    assert versus["low"] <= versus["difference"] <= versus["high"]
    config.write_text(config.read_text().replace("[experiment]", "[experiment]\nbaseline = 'x'"))
    with pytest.raises(ConfigError, match="baseline = 'x' names no model"):
        run_experiment(str(config), str(tmp_path / "work"), with_peer=False, out=Sink(),
                       plot=False)


def test_experiment_on_lines_without_raters_or_tasks(tmp_path):
    """A binary experiment on plain VW lines: no '0/0' rater and task overlap in its header."""
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{1 if k % 3 else -1} |f x{k % 5} y{k % 7}\n" for k in range(600)))
    config = tmp_path / "bin.toml"
    config.write_text(f"[experiment]\ndata = '{data}'\ntest_fraction = 0.2\n"
                      "[[models]]\nname = 'linear'\nargs = '--loss_function logistic'\n")
    out = []

    class Sink:
        def write(self, text):
            out.append(text)

    run_experiment(str(config), str(tmp_path / "work"), with_peer=False, out=Sink(), plot=False)
    header = "".join(out).splitlines()[0]
    assert header.endswith(", K = 2") and "0/0" not in header


MODEL = "[[models]]\nname = 'linear'\nargs = '--sft {K}'\n"


def test_experiment_config_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment]\nanswers = 'a'\ndata = 'b'\n")
    with pytest.raises(ConfigError, match="exactly one of"):
        load_config(str(bad))
    bad.write_text("[experiment]\nanswers = 'a'\n[[models]]\nname = 'x'\n")
    with pytest.raises(ConfigError, match=r"\[\[models\]\] 1: needs args = \(or constant"):
        load_config(str(bad))
    bad.write_text("not toml [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(str(bad))


@pytest.mark.parametrize("text, message", [
    ("passes = 'five'\n" + MODEL, r"\[experiment\]: passes = 'five' should be int"),
    ("seed = true\n" + MODEL, "seed = True should be int"),
    ("pases = 2\n" + MODEL, "unknown key 'pases'"),
    ("test_fraction = 1.5\n" + MODEL, "test_fraction = 1.5 must lie strictly between 0 and 1"),
    ("passes = 0\n" + MODEL, "passes = 0 must be at least 1"),
    ("common = \"-b '3\"\n" + MODEL, "common: cannot split"),
    ("baseline = 'lin'\n" + MODEL, "baseline = 'lin' names no model"),
    (MODEL.replace("{K}", "{J}"), r"the only placeholder is \{K\}.*not \{J\}"),
    (MODEL.replace("{K}", "{K} --bogus"), r"\[\[models\]\] 1: unrecognised option '--bogus'"),
    (MODEL + MODEL, "a second model named 'linear'"),
    (MODEL.replace("[[models]]", "[models]"), r"\[models\] must be an array of tables"),
    (MODEL + "[[peer]]\nname = 'vw'\n", r"\[\[peer\]\] 1: needs args =$"),
    (MODEL + "[extra]\nx = 1\n", r"unknown table \[extra\]"),
])
def test_a_bad_config_is_refused_before_any_work(tmp_path, text, message):
    config = tmp_path / "bad.toml"
    config.write_text("[experiment]\nanswers = 'missing.csv'\n" + text)
    with pytest.raises(ConfigError, match=message):
        run_experiment(str(config), str(tmp_path / "work"), with_peer=False, out=io.StringIO(),
                       plot=False)
    assert not (tmp_path / "work").exists()


def test_bundled_configs_parse():
    for path in sorted((ROOT / "configs").glob("*.toml")):
        assert load_config(str(path))["models"]


def test_evaluate_labels_counts_unmatched_tasks_and_refuses_contradictions(tmp_path, capsys):
    labels, truth = tmp_path / "labels.csv", tmp_path / "truth.csv"
    labels.write_text("task,label\na,1\nb,2\nc,1\n")
    truth.write_text("task,label\na,1\n\nb,1\nd,2\nb,1\n")  # b twice, with the same label
    code, out, err = cli(["evaluate", "--labels", str(labels), "--truth", str(truth)], capsys)
    assert code == 0, err
    assert out.splitlines()[:5] == [
        "examples = 2", "errors = 1",
        "0/1 loss = 0.500000 (95% Wilson interval 0.094531 .. 0.905469)",
        "labelled tasks without truth = 1", "truth tasks not labelled = 1"]
    truth.write_text("task,label\na,1\n\nb,1\nd,2\nb,2\n")  # was counted as two examples
    code, out, err = cli(["evaluate", "--labels", str(labels), "--truth", str(truth)], capsys)
    assert code == 1
    assert f"{truth}:6: task 'b' has label '2' here but '1' at line 4" in err


def test_crowd_rows_keep_their_lines_across_blank_lines(tmp_path):
    from pyvw_lite.io.crowd_input import RowPolicy, read_answers
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\na,w1,x\n\nb,w2,y\n\na,w2,x\n\n\n")
    warnings = []
    data = read_answers(str(answers), label_names=["x"],
                        rows=RowPolicy(strict=False, warn=warnings.append))
    assert data.n_ratings == 2
    assert warnings == [f"[warning] {answers}:4: unknown label 'y' (labels: x); skipped"]


def test_split_reports_overlap_only_for_rater_task_lines(tmp_path, capsys):
    source = tmp_path / "plain.vw"
    source.write_text("".join(f"{k % 2} |f x{k}\n" for k in range(100)))
    code, _, err = cli(["split", str(source), "--train", str(tmp_path / "a.vw"), "--test",
                        str(tmp_path / "b.vw")], capsys)
    assert code == 0 and "lines" in err and "also in train" not in err  # not "0 of 0"


@pytest.mark.parametrize("packed", [False, True], ids=["text", "gzip"])
def test_split_reads_standard_input(tmp_path, capsys, monkeypatch, packed):
    import sys
    lines = "".join(f"{k % 2} |rater r{k % 7} |task t{k}\n" for k in range(400)).encode()
    source = tmp_path / "lines.vw"
    source.write_bytes(lines)
    assert cli(["split", str(source), "--train", str(tmp_path / "a.vw"), "--test",
                str(tmp_path / "b.vw")], capsys)[0] == 0
    cut = len(lines) // 2  # two gzip members, as `cat a.gz b.gz` gives
    piped = gzip.compress(lines[:cut]) + gzip.compress(lines[cut:]) if packed else lines
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(piped)))
    code, _, err = cli(["split", "-", "--train", str(tmp_path / "c.vw"), "--test",
                        str(tmp_path / "d.vw")], capsys)
    assert code == 0, err
    assert (tmp_path / "c.vw").read_bytes() == (tmp_path / "a.vw").read_bytes()
    assert (tmp_path / "d.vw").read_bytes() == (tmp_path / "b.vw").read_bytes()


def test_evaluate_scores_ratings_by_mae_and_rmse_with_intervals(tmp_path, capsys):
    """Issue 27 item 5: integer ratings with real-valued predictions ended in a StopIteration
    traceback; they are regression, scored by MAE, RMSE (95% intervals) and, with --versus,
    paired differences."""
    from pyvw_lite.cli.main import main
    rng = np.random.default_rng(4)
    labels = rng.integers(1, 6, size=400)
    good = labels + rng.normal(0, 0.5, size=400)
    bad = labels + rng.normal(0, 1.0, size=400)
    data, p_good, p_bad = tmp_path / "t.vw", tmp_path / "good.txt", tmp_path / "bad.txt"
    data.write_text("".join(f"{y} |u u{i % 7} |m m{i % 11}\n" for i, y in enumerate(labels)))
    p_good.write_text("".join(f"{v:.6f}\n" for v in good))
    p_bad.write_text("".join(f"{v:.6f}\n" for v in bad))
    assert main(["evaluate", "-p", str(p_good), "-d", str(data), "--versus", str(p_bad)]) == 0
    out = capsys.readouterr().out
    errors = np.round(good, 6) - labels
    mae = np.abs(errors).mean()
    half = 1.959963984540054 * np.abs(errors).std(ddof=1) / np.sqrt(400)
    assert f"MAE = {mae:.6f} (95% interval {mae - half:.6f} .. {mae + half:.6f})" in out
    assert f"RMSE = {np.sqrt((errors ** 2).mean()):.6f}" in out
    gap = np.abs(errors).mean() - np.abs(np.round(bad, 6) - labels).mean()
    assert f"minus {p_bad}: MAE {gap:+.6f}" in out and gap < 0


def test_a_config_names_where_it_looked_and_takes_a_data_root(tmp_path, monkeypatch):
    """Issue 29 item 2: from a clone elsewhere a config's relative data path failed with "no such
    file" and no word of what it was relative to.  Now the error lists every place tried and
    --data-root points at the data."""
    from pyvw_lite.cli.main import main
    from pyvw_lite.workflow.experiment import ConfigError, run_experiment
    project = tmp_path / "deep" / "clone"
    (project / "configs").mkdir(parents=True)
    config = project / "configs" / "x.toml"
    config.write_text('[experiment]\nanswers = "../elsewhere/answers.csv"\npasses = 1\n'
                      '[[models]]\nname = "linear"\nargs = "--oaa {K}"\n')
    monkeypatch.chdir(project)
    with pytest.raises(ConfigError) as caught:
        run_experiment(str(config), str(tmp_path / "w"), with_peer=False, plot=False)
    message = str(caught.value)
    assert "../elsewhere/answers.csv: no such file" in message and "--data-root" in message
    assert str(project.parent / "elsewhere" / "answers.csv") in message  # a place it tried
    data = tmp_path / "data" / "elsewhere"
    data.mkdir(parents=True)
    rows = ["task,worker,label"] + [f"t{t},w{w},{(t + (w == 3)) % 3}" for t in range(40)
                                    for w in range(5)]
    (data / "answers.csv").write_text("\n".join(rows) + "\n")
    root = tmp_path / "data" / "root"
    root.mkdir()
    assert main(["experiment", str(config), "--workdir", str(tmp_path / "w"), "--no-peer",
                 "--data-root", str(root)]) == 0
    assert (tmp_path / "w" / "results.json").exists()
    # a --data-root that does not exist is named as such, even where the data is found anyway
    with pytest.raises(ConfigError, match=f"--data-root {tmp_path / 'nowhere'}: no such directory"):
        run_experiment(str(config), str(tmp_path / "w3"), with_peer=False, plot=False,
                       data_root=str(tmp_path / "nowhere"))


def test_plot_draws_progress_tables(tmp_path, capsys):
    """pyvw-lite plot: one curve per saved progress table (holdout rows apart), a PNG written
    atomically; a file without a table, or an output over an input, is a one-line error."""
    from conftest import run_workspace
    from pyvw_lite.cli.main import main
    from pyvw_lite.workflow.plot import read_progress
    lines = [f"{1 if k % 3 else -1} |a x{k % 7} |b y{k % 5}" for k in range(400)]
    data = tmp_path / "d.vw"
    data.write_text("\n".join(lines) + "\n")
    _, err, code = run_workspace(["-d", str(data), "--loss_function", "logistic", "--passes", "3",
                                  "-c", "--cache_file", str(tmp_path / "c")])
    assert code == 0
    run = tmp_path / "run.txt"
    run.write_text(err)
    curve = read_progress(str(run))
    assert curve.examples[0] == 1.0 and any(curve.holdout) and not all(curve.holdout)
    assert len(curve.examples) == sum(1 for line in err.splitlines()
                                      if line[:1].isdigit() and len(line.split()) >= 7)
    out = tmp_path / "curve.png"
    assert main(["plot", str(run), str(run), "-o", str(out), "--since"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(data), "-o", str(tmp_path / "x.png")]) == 1
    assert "no progress table" in capsys.readouterr().err
    assert main(["plot", str(run), "-o", str(run)]) == 1
    assert "write over its input" in capsys.readouterr().err


def test_a_regression_experiment_scores_mse_with_intervals(tmp_path):
    """task = "regression": test MSE with its 95% interval per model, the training mean as the
    best constant, paired differences of squared errors from linear, a PNG; the bundled config
    configs/dyadic_ratings.toml runs as given."""
    from pathlib import Path

    from pyvw_lite.synthetic import user_item_ratings, write_ratings
    from pyvw_lite.workflow.experiment import ConfigError, run_experiment
    write_ratings(str(tmp_path / "ratings.vw"), *user_item_ratings(
        n_ratings=30000, n_users=300, n_items=400, rank=2, latent_sd=0.8, seed=5))
    config = Path(__file__).resolve().parent.parent / "configs" / "dyadic_ratings.toml"
    printed = io.StringIO()
    result = run_experiment(str(config), str(tmp_path / "work"), with_peer=False, plot=True,
                            out=printed, data_root=str(tmp_path))
    assert "test lines\n" in printed.getvalue() and "K =" not in printed.getvalue()  # no classes
    losses = {r.name: r for r in result.results}
    assert result.metric == "test MSE"
    constant, linear = losses["best constant"], losses["linear"]
    assert linear.loss < constant.loss - 0.1
    assert losses["dyadic k=2"].loss < linear.loss  # rank-2 structure to find
    assert losses["dyadic k=2"].versus["high"] < 0  # ... significantly, paired
    assert all(r.low < r.loss < r.high for r in result.results)
    assert (tmp_path / "work" / "results.png").read_bytes()[:4] == b"\x89PNG"
    bad = tmp_path / "bad.toml"
    bad.write_text(config.read_text().replace('task = "regression"', 'task = "regresion"'))
    with pytest.raises(ConfigError, match="task = 'regresion'"):
        run_experiment(str(bad), str(tmp_path / "w2"), with_peer=False, plot=False,
                       out=io.StringIO(), data_root=str(tmp_path))
