"""--active --simulation: the published disagreement sampler over exact reverting weights."""
import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite import Workspace


def linear_data(path, n, seed, w):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, w.size))
    y = np.sign(X @ w + 0.3 * rng.normal(size=n))
    path.write_text("".join(f"{int(label)} |f " + " ".join(f"x{j}:{v:.4f}" for j, v in
                                                           enumerate(row)) + "\n"
                            for row, label in zip(X, y)))


def summary(err, key):
    return next(line.split(" = ")[1] for line in err.splitlines() if line.startswith(key))


def passive_and_active(tmp_path, learner):
    """Test errors and labels used, passive against active (mellowness 0.01), same learner."""
    w = np.random.default_rng(0).normal(size=10)
    train, test = tmp_path / "train.vw", tmp_path / "test.vw"
    linear_data(train, 12000, 1, w)
    linear_data(test, 4000, 2, w)
    errors, queries = {}, {}
    for name, extra in (("passive", []),
                        ("active", ["--active", "--simulation", "--mellowness", "0.01"])):
        model = tmp_path / f"{name}.pvw"
        _, err, _ = run_workspace(["-d", str(train), "--loss_function", "logistic",
                                   "-f", str(model), *learner, *extra])
        queries[name] = int(summary(err, "total queries")) if extra else 12000
        _, err, _ = run_workspace(["-d", str(test), "-t", "-i", str(model), "--binary"])
        errors[name] = float(summary(err, "average loss"))
    return errors, queries


def test_active_reaches_passive_error_with_far_fewer_labels(tmp_path):
    errors, queries = passive_and_active(tmp_path, [])
    assert queries["active"] <= 6000
    assert errors["active"] <= errors["passive"] + 0.005


@pytest.mark.parametrize("rates", [["-l", "1", "--dyad_plain_rate"], []],
                         ids=["plain rate", "adaptive linear rates"])
def test_active_dyadic_learner_queries_less_at_equal_error(tmp_path, rates):
    errors, queries = passive_and_active(tmp_path, ["--dyad_shifted", "--dyad", "fg", *rates])
    assert queries["active"] <= 8000
    assert errors["active"] <= errors["passive"] + 0.005


def test_sampler_is_reproducible_and_mellowness_controls_queries(tmp_path):
    w = np.random.default_rng(3).normal(size=6)
    data = tmp_path / "d.vw"
    linear_data(data, 3000, 4, w)
    counts = []
    for mellowness in ("1", "0.01"):
        runs = [summary(run_workspace(["-d", str(data), "--loss_function", "logistic",
                                       "--active", "--simulation", "--random_seed", "7",
                                       "--mellowness", mellowness])[1], "total queries")
                for _ in range(2)]
        assert runs[0] == runs[1]
        counts.append(int(runs[0]))
    assert counts[1] < counts[0] <= 3000


def test_active_options_are_checked():
    from pyvw_lite.options import OptionError
    with pytest.raises(OptionError, match="needs --active"):
        Workspace("--simulation --quiet")
    for c0 in ("0", "-1"):  # b = c0·ln(k+1)/k would never query
        with pytest.raises(OptionError, match=f"'--mellowness': {c0} must be positive"):
            Workspace(["--active", "--mellowness", c0, "--quiet"])


def test_label_request_mode_marks_the_labels_worth_buying(tmp_path):
    """Without --simulation, unlabelled examples get a request (prediction, tag, importance)
    or none; labelled ones (returned labels) are learned as given."""
    w = np.random.default_rng(8).normal(size=5)
    labelled, pool = tmp_path / "labelled.vw", tmp_path / "pool.vw"
    linear_data(labelled, 2000, 1, w)
    linear_data(pool, 3000, 2, w)
    unlabelled = [f"'q{k} " + line.split(" ", 1)[1] for k, line in
                  enumerate(pool.read_text().splitlines())]
    pool.write_text("\n".join(unlabelled) + "\n")
    model, out = tmp_path / "m.pvw", tmp_path / "p.txt"
    run_workspace(["-d", str(labelled), "--loss_function", "logistic", "-f", str(model)])
    _, err, _ = run_workspace(["-d", str(pool), "-i", str(model), "--active", "--mellowness",
                               "0.01", "-p", str(out)])
    lines = out.read_text().splitlines()
    asked = [line.split() for line in lines if len(line.split()) == 3]
    assert 0 < len(asked) < len(lines) // 2
    assert "total queries" not in err  # as VW: the count is the simulation's
    assert all(float(fields[2]) >= 1.0 and fields[1].startswith("q") for fields in asked)


def test_label_request_lines_and_preamble_are_vws(tmp_path):
    """VW 9.11.9 `--active --no_daemon -d pool.vw -p p.txt` wrote exactly these lines:
    "prediction tag" (the tag may be empty), then the importance when the label is worth asking
    for; every prediction printed with six decimals."""
    pool, out = tmp_path / "pool.vw", tmp_path / "p.txt"
    pool.write_text(" |r r1 |t t1\n1 |r r1 |t t2\n |r r2 |t t1 \n-1 |r r2 |t t3\n"
                    "'tagged |r r3 |t t1\n |r r3\n")
    _, err, _ = run_workspace(["--active", "--no_daemon", "-d", str(pool), "-p", str(out)])
    assert out.read_text() == ("0.000000  1.000000\n0.000000 \n0.193127  1.000000\n0.193127 \n"
                               "0.031838 tagged 1.000000\n0.031838  1.000000\n")
    assert "Enabled learners: gd, active, scorer-identity, count_label" in err


def test_label_requests_under_squared_loss_learn_the_label_range(tmp_path):
    """Squared loss aims h_min at the middle of the labels returned so far; with no range the
    reverting weight is unreachable and every label is requested, whatever the mellowness."""
    w = np.random.default_rng(8).normal(size=5)
    data = tmp_path / "mixed.vw"
    linear_data(data, 4000, 3, w)
    lines = data.read_text().splitlines()
    data.write_text("\n".join(line if k % 3 == 0 else " " + line.split(" ", 1)[1]
                              for k, line in enumerate(lines)) + "\n")
    asked = []
    for mellowness in ("1", "1e-4"):
        out = tmp_path / f"p{mellowness}.txt"
        run_workspace(["-d", str(data), "--active", "--mellowness", mellowness, "-p", str(out)])
        asked.append(sum(len(line.split(" ")) == 3 for line in out.read_text().splitlines()))
    assert asked[1] < asked[0] // 2 and asked[0] <= 2666



def test_a_saved_model_keeps_the_sampler_for_requests_under_t(tmp_path):
    """-i model -t -d pool asks for labels as VW does; the model carries the sampler's evidence
    (label range, queried weight, errors), so a frozen model asks for fewer labels than a fresh
    sampler, which knows no label range and asks for every one."""
    w = np.random.default_rng(2).normal(size=5)
    labelled, pool = tmp_path / "labelled.vw", tmp_path / "pool.vw"
    linear_data(labelled, 3000, 5, w)
    linear_data(pool, 2000, 6, w)
    pool.write_text("".join(" " + line.split(" ", 1)[1] + "\n"
                            for line in pool.read_text().splitlines()))
    asked = {}
    for name, train in (("active", ["--active", "--mellowness", "1e-3"]), ("passive", [])):
        model = tmp_path / f"{name}.pvw"
        run_workspace(["-d", str(labelled), "-f", str(model), *train])
        out = tmp_path / f"{name}.txt"
        run_workspace(["-d", str(pool), "-t", "-i", str(model), "--active", "--mellowness",
                       "1e-3", "-p", str(out)])
        asked[name] = sum(len(line.split(" ")) == 3 for line in out.read_text().splitlines())
    assert asked["passive"] == 2000
    assert 0 < asked["active"] < 1000


def test_predict_leaves_the_sampler_as_it_was():
    ws = Workspace("--active --quiet")
    ws.learn(["1 |f a", "-1 |f b", " |f a", " |f c"])
    before = ws.active.sampler.copy()
    draw = ws.active.rng.bit_generator.state
    ws.predict([" |f a", " |f b", "1 |f c"])
    assert (ws.active.sampler == before).all()
    assert ws.active.rng.bit_generator.state == draw  # later requests draw as without the look


def class_data(path, n, seed, W, split=False):
    """Three classes: the argmax of a noisy linear score; ``split`` puts the second half of
    the features in namespace g (for a dyad fg)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, W.shape[1]))
    y = np.argmax(X @ W.T + 0.3 * rng.normal(size=(n, W.shape[0])), axis=1) + 1
    cut = W.shape[1] // 2 if split else W.shape[1]

    def features(row):
        text = " ".join(f"x{j}:{v:.4f}" for j, v in enumerate(row[:cut]))
        return text + (" |g " + " ".join(f"x{j}:{v:.4f}" for j, v in enumerate(row[cut:]))
                       if split else "")
    path.write_text("".join(f"{label} |f {features(row)}\n" for row, label in zip(X, y)))


@pytest.mark.parametrize("learner, mellowness", [([], "1e-3"), (["--dyad_shifted", "--dyad", "fg"], "1e-4")],
                         ids=["linear", "dyadic"])
def test_active_scoring_filter_tree_reaches_passive_error_with_fewer_labels(tmp_path, learner,
                                                                           mellowness):
    """SPEC §C.3: under --sft the reverting weight is the smallest that flips a match the
    predicted class wins (with --dyad, each match's h_min along its two-sided flow); the
    sampler of §C.4 then asks for under half of the labels."""
    W = np.random.default_rng(0).normal(size=(3, 10))
    train, test = tmp_path / "train.vw", tmp_path / "test.vw"
    class_data(train, 12000, 1, W, split=bool(learner))
    class_data(test, 4000, 2, W, split=bool(learner))
    errors, queries = [], []
    runs = [[]] + [["--active", "--simulation", "--mellowness", mellowness, "--random_seed",
                    str(seed)] for seed in range(5)]  # one run's test error varies by ±0.004
    for extra in runs:
        model = tmp_path / "m.pvw"
        _, err, _ = run_workspace(["-d", str(train), "--sft", "3", *learner, "-f", str(model),
                                   *extra])
        queries.append(int(summary(err, "total queries")) if extra else 12000)
        _, err, _ = run_workspace(["-d", str(test), "-t", "-i", str(model)])
        errors.append(float(summary(err, "average loss")))
    assert max(queries[1:]) <= 6000
    assert np.mean(errors[1:]) <= errors[0] + 0.005


@pytest.mark.parametrize("learner, mellowness", [([], "1e-3"), (["--dyad_shifted", "--dyad", "fg"], "1e-4")],
                         ids=["linear", "dyadic"])
def test_active_scoring_filter_tree_requests_labels(tmp_path, learner, mellowness):
    W = np.random.default_rng(0).normal(size=(3, 10))
    labelled, pool = tmp_path / "labelled.vw", tmp_path / "pool.vw"
    class_data(labelled, 3000, 1, W, split=bool(learner))
    class_data(pool, 1000, 2, W, split=bool(learner))
    pool.write_text("".join(f"'q{k} " + line.split(" ", 1)[1] + "\n"
                            for k, line in enumerate(pool.read_text().splitlines())))
    model, out = tmp_path / "m.pvw", tmp_path / "p.txt"
    run_workspace(["-d", str(labelled), "--sft", "3", *learner, "--active", "--mellowness",
                   mellowness, "-f", str(model)])
    _, err, code = run_workspace(["-d", str(pool), "-t", "-i", str(model), "--active",
                                  "--mellowness", mellowness, "-p", str(out)])
    assert code == 0, err
    lines = [line.split(" ") for line in out.read_text().splitlines()]
    assert len(lines) == 1000 and all(fields[0] in "123" for fields in lines)
    asked = [fields for fields in lines if len(fields) == 3]
    assert 0 < len(asked) < 500 and all(float(fields[2]) >= 1.0 for fields in asked)


@pytest.mark.parametrize("args", ["--oaa 3", "--ect 3", "--ft 3"])
def test_active_is_refused_where_spec_defines_no_sampler(args):
    from pyvw_lite.options import OptionError
    with pytest.raises(OptionError, match="SPEC §C.3 defines no sampler for --oaa and --ect"):
        Workspace(f"--active --quiet {args}")


@pytest.mark.parametrize("learner", ["--sgd --invariant --power_t 0 -l 0.1",
                                     "--dyad_shifted --dyad fg --power_t 0 -l 0.3 --dyad_plain_rate"],
                         ids=["linear", "dyadic"])
@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
def test_sft_h_min_is_the_weight_that_flips_the_weakest_match(loss, learner):
    """Two classes: one match; learning the other class with weight H moves its score
    difference onto 0 (exactly: importance-aware steps at a constant rate; with --dyad the
    exact two-sided flow)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(640, 6))
    y = (X @ rng.normal(size=6) + 0.5 * rng.normal(size=640) > 0).astype(int) + 1
    lines = [f"{c} |f " + " ".join(f"x{j}:{v:.4f}" for j, v in enumerate(row[:3])) + " |g "
             + " ".join(f"x{j}:{v:.4f}" for j, v in enumerate(row[3:]))
             for row, c in zip(X, y)]
    args = f"--sft 2 {learner} --loss_function {loss} --quiet"
    ws = Workspace(args)
    ws.learn(lines[:600])
    probes = [" |f " + line.split(" |f ", 1)[1] for line in lines[600:]]  # unlabelled
    scores = ws.predict_with_scores(probes)[1]
    H = ws.h_min(probes)
    assert np.array_equal(ws.predict_with_scores(probes)[1], scores)  # h_min changes nothing
    checked = 0
    for probe, (s1, s2), h in zip(probes, scores, H):
        if abs(s1 - s2) >= 1.0:  # the match sees its difference clipped to the labels (±1)
            continue
        other = 2 if s1 >= s2 else 1
        learner = Workspace(args)
        learner.learn(lines[:600])
        learner.learn(f"{other} {float(h)!r} {probe.lstrip()}")
        after = learner.predict_with_scores([probe])[1][0]
        assert after[0] - after[1] == pytest.approx(0.0, abs=1e-6)
        checked += 1
    assert checked >= 5


def test_sft_h_min_takes_no_target_and_oaa_has_none():
    ws = Workspace("--sft 3 --quiet")
    with pytest.raises(ValueError, match="no target or label"):
        ws.h_min(" |f a", target=0.5)
    with pytest.raises(ValueError, match="binary learners and --sft"):
        Workspace("--oaa 3 --quiet").h_min(" |f a")


@pytest.mark.parametrize("learner", [[], ["--sft", "2"], ["--dyad", "fg"]],
                         ids=["linear", "sft", "dyad"])
def test_the_summary_counts_the_queried_examples_as_vw_does(tmp_path, learner):
    """VW's --simulation gives an example it does not query weight 0 and no label, so its
    weighted example sum, label sum, average loss and progress rows are the queried examples'
    (each with the importance it was learned with); we counted every example."""
    w = np.random.default_rng(3).normal(size=6)
    data = tmp_path / "d.vw"
    linear_data(data, 3000, 4, w)
    if learner[:1] == ["--sft"]:
        data.write_text(data.read_text().replace("-1 |", "2 |"))
    _, err, code = run_workspace(["-d", str(data), "--active", "--simulation", "--mellowness",
                                  "0.001", "--random_seed", "7", *learner])
    assert code == 0
    queries, examples = int(summary(err, "total queries")), int(summary(err, "number of examples"))
    weighted = float(summary(err, "weighted example sum"))
    assert examples == 3000 and queries < 2500
    # each queried example weighs 1/P >= 1 and the rest 0: an estimate of the examples' count,
    # no longer the count itself
    assert queries <= weighted and abs(weighted - examples) > 1
    rows = [line.split() for line in err.splitlines()
            if line[:1].isdigit() and len(line.split()) >= 7]
    assert any(float(row[3]) != float(row[2]) for row in rows)  # weight apart from the counter
