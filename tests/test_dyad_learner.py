"""The --dyad learner (SPEC §B.1-B.8) on real weight tables."""
import math

import numpy as np
import pytest

from pyvw_lite import Workspace
from pyvw_lite.io.hashing import CONSTANT_HASH, hash_bytes
from pyvw_lite.learners.gd import place_array
from pyvw_lite.learners.gd import G, NORM_BASE, P_ETA, P_LATENT_RATE, P_POWER_T, T_SUM
from pyvw_lite.options import OptionError


def flat(ws, row, column=0):
    """Index of ``weights[row, column]`` in ``weights.ravel()``."""
    return int(row) * ws.weights.shape[1] + column


def slots_of(ws, namespace, feature, offset=0):
    """Flat indices of a feature's linear weight and of its latent vector: the last ``k``
    columns of the same row, where ``gd.place`` puts the feature's hash."""
    row = (int(place_array(hash_bytes(feature, hash_bytes(namespace)), ws.slot_multiplier,
                           ws.mask)) + offset) & ws.mask
    first = ws.weights.shape[1] - ws.dyadic.rank
    return flat(ws, row), [flat(ws, row, first + q) for q in range(ws.dyadic.rank)]


def model_prediction(w, ws, rater, task):
    (lr, latent_r), (lt, latent_t) = slots_of(ws, "rater", rater), slots_of(ws, "task", task)
    const = flat(ws, int(place_array(CONSTANT_HASH, ws.slot_multiplier, ws.mask)))
    a = 1.0 + w[latent_r]
    b = 1.0 + w[latent_t]
    return w[lr] + w[lt] + w[const] + float(a @ b) - ws.dyadic.rank


@pytest.mark.parametrize("rates", ["plain", "adaptive"])
@pytest.mark.parametrize("loss,label,h", [("logistic", 1.0, 2.0), ("squared", 0.7, 1.5),
                                          ("hinge", 1.0, 0.01)])
def test_one_update_is_the_limit_of_small_steps_on_the_real_parameters(loss, label, h, rates):
    """[B1/B5/B6] the closed-form trajectory (and its 1-D ODE) equals many tiny gradient steps
    on the actual linear and latent weights; with adaptive rates each linear weight steps at
    its own eta0 / (sqrt(G_k)·N_k)·M (G_k including this example's gradient, VW's adaptive
    normalized rate), the latent ones at eta.  The prediction range is fixed wide: a step
    starts from the clipped prediction (as VW's), and this one's is not clipped."""
    plain = " --dyad_plain_rate" if rates == "plain" else ""
    ws = Workspace(f"--dyad_shifted --dyad rt --rank 2 --loss_function {loss} -b 20 -l 0.5{plain} "
                   "--min_prediction -50 --max_prediction 50 --quiet")
    rng_lines = ["1 |rater r_1 |task t_5", "-1 |rater r_2 |task t_5", "1 |rater r_1 |task t_7"]
    for line in rng_lines * 3:  # a non-trivial, touched state
        ws.learn(line if loss != "squared" else line.replace("-1 ", "0.2 "))
    w0 = ws.weights.ravel().astype(np.float64)
    # the latent rate: the plain schedule times --dyad_rate (1/(2k) by default with adaptive
    # linear rates, 1 under --dyad_plain_rate)
    assert ws.params[P_LATENT_RATE] == (1.0 if plain else 0.25)
    eta = ws.params[P_ETA] * ws.params[P_LATENT_RATE] * \
        (ws.state[T_SUM] + h) ** (-ws.params[P_POWER_T])
    ws.learn(f"{label} {h} |rater r_1 |task t_5")
    learned = ws.weights.ravel().astype(np.float64)
    (lr, latent_r), (lt, latent_t) = slots_of(ws, "rater", "r_1"), slots_of(ws, "task", "t_5")
    const = flat(ws, int(place_array(CONSTANT_HASH, ws.slot_multiplier, ws.mask)))
    w = w0.copy()
    # VW's normalized rate: N_k = 1 for these unit features, and the global normalizer
    # M = (Σ h·Σ x²/N² / Σ h)^-1/2 as it stands after this example
    normalizer = 1.0 if plain else 1.0 / math.sqrt(ws.state[NORM_BASE] / ws.state[NORM_BASE + 1])
    assert plain or ws.state[NORM_BASE + 1] == pytest.approx(9 + h)
    linear_rate = {slot: eta if plain else
                   ws.params[P_ETA] / math.sqrt(learned[slot + G]) * normalizer
                   for slot in (lr, lt, const)}
    n = 20000
    for _ in range(n):
        p = model_prediction(w, ws, "r_1", "t_5")
        if loss == "logistic":
            slope = -label / (1.0 + math.exp(label * p))
        elif loss == "squared":
            slope = 2.0 * (p - label)
        else:
            slope = -label if label * p < 1.0 else 0.0
        step = eta * (h / n) * slope
        a, b = 1.0 + w[latent_r], 1.0 + w[latent_t]
        for slot in (lr, lt, const):
            w[slot] -= linear_rate[slot] * (h / n) * slope
        w[latent_r] -= step * b
        w[latent_t] -= step * a
    touched = [lr, lt, const, *latent_r, *latent_t]
    np.testing.assert_allclose(learned[touched], w[touched], atol=2e-4)


@pytest.mark.parametrize("loss,label,h", [("logistic", 1.0, 2.0), ("squared", 0.7, 1.5),
                                          ("hinge", 1.0, 0.01), ("quantile", 2.5, 3.0),
                                          ("quantile", -1.0, 40.0)])
@pytest.mark.parametrize("l2", [0.0, 0.15])
def test_default_form_and_rates_are_the_limit_of_small_steps(loss, label, h, l2):
    """The defaults (plain form p = a·b, latent rate 0.03·-l held constant, VW's adaptive
    normalized linear rates) move every parameter along the exact flow: one update equals
    20,000 tiny gradient steps on the actual weights, the quantile loss included (it stops on
    the label); --dyad_l2 then shrinks the example's latent vectors by 1/(1 + η·h·λ)."""
    ws = Workspace(f"--dyad rt --rank 2 --loss_function {loss} -b 20 -l 0.5 "
                   f"--dyad_l2 {l2} --dyad_bias_l2 0 --dyad_row_l2 0 --quiet")  # tests below
    assert ws.params[P_LATENT_RATE] == 0.03
    for line in ["1 |rater r_1 |task t_5", "-1 |rater r_2 |task t_5",
                 "1 |rater r_1 |task t_7"] * 3:
        ws.learn(line if loss not in ("squared", "quantile") else line.replace("-1 ", "0.2 "))
    w0 = ws.weights.ravel().astype(np.float64)
    eta = ws.params[P_ETA] * ws.params[P_LATENT_RATE]  # --dyad_power_t 0: no decay
    ws.learn(f"{label} {h} |rater r_1 |task t_5")
    learned = ws.weights.ravel().astype(np.float64)
    (lr, latent_r), (lt, latent_t) = slots_of(ws, "rater", "r_1"), slots_of(ws, "task", "t_5")
    const = flat(ws, int(place_array(CONSTANT_HASH, ws.slot_multiplier, ws.mask)))
    normalizer = 1.0 / math.sqrt(ws.state[NORM_BASE] / ws.state[NORM_BASE + 1])
    linear_rate = {slot: ws.params[P_ETA] / math.sqrt(learned[slot + G]) * normalizer
                   for slot in (lr, lt, const)}
    w = w0.copy()
    n = 20000
    for _ in range(n):
        a, b = w[latent_r].copy(), w[latent_t].copy()
        p = w[lr] + w[lt] + w[const] + float(a @ b)
        if loss == "logistic":
            slope = -label / (1.0 + math.exp(label * p))
        elif loss == "squared":
            slope = 2.0 * (p - label)
        elif loss == "quantile":
            slope = -0.5 if label > p else (0.5 if label < p else 0.0)
        else:
            slope = -label if label * p < 1.0 else 0.0
        for slot in (lr, lt, const):
            w[slot] -= linear_rate[slot] * (h / n) * slope
        w[latent_r] -= eta * (h / n) * slope * b
        w[latent_t] -= eta * (h / n) * slope * a
    shrink = 1.0 / (1.0 + eta * h * l2)
    w[latent_r] *= shrink
    w[latent_t] *= shrink
    touched = [lr, lt, const, *latent_r, *latent_t]
    np.testing.assert_allclose(learned[touched], w[touched], atol=2e-4)


def test_symmetry_is_broken_and_an_absent_side_moves_linearly():
    """[B7] the k latent dimensions start equal and are separated by the seeded perturbation;
    [B9] with the task namespace absent the rater's latent vector moves by -s·x·1."""
    ws = Workspace("--dyad_shifted --dyad rt --rank 3 --loss_function hinge -l 0.5 --dyad_plain_rate --quiet")
    ws.learn(["1 |rater r_1 |task t_1", "-1 |rater r_1 |task t_2"])
    linear, latent = slots_of(ws, "rater", "r_1")
    assert len(set(np.round(ws.weights.ravel()[latent], 12))) == 3
    assert ws.touched[linear // ws.weights.shape[1]]
    before = ws.weights.ravel().astype(np.float64)
    linear, latent = slots_of(ws, "rater", "r_2")
    ws.learn("1 |rater r_2")  # no task: the pair is linear in s
    after = ws.weights.ravel()
    moved_linear = after[linear] - before[linear]
    moved_latent = after[latent] - before[latent]
    noise = after[latent] - before[latent] - moved_linear  # perturbation + move
    assert moved_linear > 0
    np.testing.assert_allclose(moved_latent - noise, moved_linear, rtol=1e-6)


def test_dyad_seed_chooses_the_perturbation():
    """SPEC §B.8's ``dyad_seed`` is ``--dyad_seed``: its default is 0x5EED, another seed gives
    other latent vectors, the same seed the same ones."""
    lines = ["1 |rater r_1 |task t_1", "-1 |rater r_2 |task t_1", "1 |rater r_1 |task t_2"]
    learned = {}
    for seed in ("", "--dyad_seed 24301", "--dyad_seed 7", "--dyad_seed 7"):
        ws = Workspace(f"--dyad_shifted --dyad rt --rank 2 --loss_function logistic {seed} --quiet")
        ws.learn(lines)
        learned.setdefault(seed, []).append(ws.weights.copy())
    np.testing.assert_array_equal(learned[""][0], learned["--dyad_seed 24301"][0])
    np.testing.assert_array_equal(*learned["--dyad_seed 7"])
    latent = learned[""][0][:, -2:]
    assert np.abs(latent).max() > 0
    assert not np.allclose(latent, learned["--dyad_seed 7"][0][:, -2:])


@pytest.mark.parametrize("seed", ["", "--dyad_seed 99"])
def test_saved_dyadic_model_keeps_latent_weights_and_touched_map(tmp_path, rater_task_file, seed):
    """Learning on from a saved model equals learning on without saving: the rows touched
    after loading get the perturbation of the model's seed."""
    lines = rater_task_file.read_text().splitlines()
    ws = Workspace(f"--dyad_shifted --dyad rt --rank 2 --loss_function logistic -l 1 {seed} --quiet")
    ws.learn(lines[:2000])
    ws.save(str(tmp_path / "m"))
    again = Workspace(f"-i {tmp_path / 'm'} -l 1 --quiet")  # like VW, -l is not kept
    assert again.dyadic.rank == 2 and np.array_equal(again.touched, ws.touched)
    np.testing.assert_array_equal(again.predict(lines[2000:]), ws.predict(lines[2000:]))
    again.learn(lines[2000:])
    ws.learn(lines[2000:])
    np.testing.assert_allclose(again.weights, ws.weights, rtol=1e-6, atol=1e-7)


def test_predict_only_and_readable_dyadic_models_carry_the_latent_vectors(tmp_path,
                                                                          rater_task_file):
    lines = rater_task_file.read_text().splitlines()
    ws = Workspace("--dyad_shifted --dyad rt --rank 2 --loss_function logistic --quiet")
    ws.learn(lines[:1000])
    ws.save(str(tmp_path / "small"), predict_only=True)
    small = Workspace(["-i", str(tmp_path / "small"), "-t", "--quiet"])
    np.testing.assert_array_equal(small.predict(lines[1000:1200]), ws.predict(lines[1000:1200]))
    ws.write_readable_model(str(tmp_path / "readable.txt"))
    text = (tmp_path / "readable.txt").read_text()
    linear, latent = slots_of(ws, "task", lines[0].split("|task ")[1].strip())
    row = linear // ws.weights.shape[1]
    values = ws.weights[row]
    expected = f"{row}:{values[0]:g} {values[1]:g} {values[2]:g} [{values[4]:g} {values[5]:g}]"
    assert expected in text.splitlines()


def test_a_dyadic_model_of_the_spread_latent_layout_is_refused(tmp_path):
    """Models from before latent vectors moved into their feature's row cannot be read as if
    they were of this layout: loading says so."""
    from pyvw_lite import __version__
    from pyvw_lite.io.model_io import ModelError, save_model
    ws = Workspace("--dyad_shifted --dyad rt --rank 2 --quiet")
    ws.learn(["1 |rater r_1 |task t_1", "-1 |rater r_2 |task t_1"])
    data = ws.model_data()
    assert data.state["latent_columns"] == 2 and data.arrays["values"].shape[1] == 3 + 2
    del data.state["latent_columns"]
    save_model(str(tmp_path / "old"), data, __version__)
    with pytest.raises(ModelError, match="latent vectors in rows of their own"):
        Workspace(["-i", str(tmp_path / "old"), "--quiet"])


@pytest.mark.parametrize("args,needle", [
    ("--dyad_shifted --dyad rr", "with itself"), ("--dyad_shifted --dyad rt --dyad tq", "in two pairs"),
    ("--dyad_shifted --dyad rtx", "two namespace letters"), ("--rank 2", "needs --dyad"),
    ("--dyad_rate 0.5", "needs --dyad"), ("--dyad rt --dyad_plain --dyad_shifted", "two forms"),
    ("--dyad rt --dyad_l2 -1", "at least 0"), ("--dyad rt --dyad_noise inf", "finite"),
    ("--dyad rt --dyad_plain_rate --adaptive", "--dyad_plain_rate moves every parameter"),
    ("--lrq um", "two namespace letters and a rank"),
])
def test_dyad_option_errors(args, needle):
    with pytest.raises(OptionError, match=needle):
        Workspace(args + " --quiet")


def test_dyad_beats_linear_on_rater_task_data():
    """A rater's reliability times a task's truth is a rank-1 rater×task effect."""
    from pyvw_lite.synthetic import rater_task
    data = rater_task(n_ratings=60000, n_raters=60, n_tasks=3000, classes=2, seed=5)
    lines = data.vw_lines(binary=True)
    linear = Workspace("--loss_function logistic --sgd --invariant -l 2 --quiet")
    dyadic = Workspace("--loss_function logistic --dyad_shifted --dyad rt --rank 1 -l 2 "
                       "--dyad_plain_rate "
                       "--quiet")
    labels = np.array([float(line.split()[0]) for line in lines])

    def log_loss(pred):
        return float(np.mean(np.log1p(np.exp(-labels * pred))))
    assert log_loss(dyadic.learn(lines)) < log_loss(linear.learn(lines))
    # adaptive linear terms (the default) against VW's default adaptive linear learner
    adaptive = Workspace("--loss_function logistic --dyad rt --rank 1 --quiet")
    vw_default = Workspace("--loss_function logistic --quiet")
    assert log_loss(adaptive.learn(lines)) < log_loss(vw_default.learn(lines)) + 0.003


class SmallStepMatches:
    """The reference for --sft dyadic matches of ``h |rater r_1 |task t_5`` under logistic loss
    at the plain rate: tiny gradient steps on a float64 copy of a rank-2 model's weights,
    moving the match's two classes at ±step (SPEC §D.3); the match starts from its prediction
    clipped to the label range, as the learner's does."""

    def __init__(self, ws, h):
        from pyvw_lite.learners.gd import MAX_LABEL, MIN_LABEL
        self.ws, self.h = ws, h
        self.w = ws.weights.ravel().astype(np.float64)
        self.eta = ws.params[P_ETA] * (ws.state[T_SUM] + h) ** (-ws.params[P_POWER_T])
        self.low, self.high = ws.state[MIN_LABEL], ws.state[MAX_LABEL]

    def slots(self, c):
        """Class ``c``'s linear slots (rater, task, constant) and its two latent vectors."""
        from pyvw_lite.learners.gd import P_CLASS_STRIDE
        ws = self.ws
        off = c * int(ws.params[P_CLASS_STRIDE])
        rater, lat_r = slots_of(ws, "rater", "r_1", off)
        task, lat_t = slots_of(ws, "task", "t_5", off)
        return [rater, task, flat(ws, (int(place_array(CONSTANT_HASH, ws.slot_multiplier, ws.mask))
                                         + off) & ws.mask)], lat_r, lat_t

    def score(self, c):
        lin, lat_r, lat_t = self.slots(c)
        w = self.w
        return w[lin].sum() + float((1 + w[lat_r]) @ (1 + w[lat_t])) - 2

    def match(self, c1, c2, n=20000):
        """``c1`` (target +1) against ``c2``."""
        w = self.w
        p = self.score(c1) - self.score(c2)
        shift = p - min(max(p, self.low), self.high)
        for _ in range(n):
            p = self.score(c1) - self.score(c2) - shift
            step = self.eta * (self.h / n) * (-1.0 / (1.0 + math.exp(p)))
            for c, sign in ((c1, 1.0), (c2, -1.0)):
                lin, lat_r, lat_t = self.slots(c)
                a, b = 1 + w[lat_r], 1 + w[lat_t]
                w[lin] -= sign * step
                w[lat_r] -= sign * step * b
                w[lat_t] -= sign * step * a

    def assert_learned(self, classes):
        """The learner's weights after the example equal the reference's at every parameter
        the classes' scores read."""
        touched = [slot for c in classes for group in self.slots(c) for slot in group]
        learned = self.ws.weights.ravel().astype(np.float64)
        np.testing.assert_allclose(learned[touched], self.w[touched], atol=2e-4)


def test_scoring_filter_tree_match_moves_both_competitors_exactly():
    """[B8] one --sft match with dyads equals tiny gradient steps on both classes' parameters
    of p_node = f(x, 0) - f(x, 1) (the second class's dyad enters with U and V swapped)."""
    ws = Workspace("--sft 2 --dyad_shifted --dyad rt --rank 2 --loss_function logistic -b 20 "
                   "-l 0.5 "
                   "--dyad_plain_rate --quiet")
    for line in ["1 |rater r_1 |task t_5", "2 |rater r_2 |task t_5", "2 |rater r_1 |task t_7"] * 3:
        ws.learn(line)
    reference = SmallStepMatches(ws, h=2.0)
    ws.learn("1 2.0 |rater r_1 |task t_5")  # class 1 is the left competitor: target +1
    reference.match(0, 1)
    reference.assert_learned((0, 1))


def test_a_class_that_wins_its_match_plays_the_next_from_its_updated_parameters():
    """Two --sft matches of one example in a row, against tiny gradient steps: the true class
    wins its first match (after the update) and meets the winner of the other subtree, with
    the parameters, the ã, b̃ and the score its first match left (the loop keeps them per class
    instead of rescoring)."""
    ws = Workspace("--sft 4 --dyad_shifted --dyad rt --rank 2 --loss_function logistic -b 20 "
                   "-l 0.5 "
                   "--dyad_plain_rate --quiet")
    for line in ["3 |rater r_1 |task t_5", "2 |rater r_2 |task t_5", "4 |rater r_1 |task t_7",
                 "1 |rater r_2 |task t_7"] * 2:
        ws.learn(line)
    reference = SmallStepMatches(ws, h=3.0)
    ws.learn("1 3.0 |rater r_1 |task t_5")  # class 0: left at node (0, 1), left at the root
    scores = [reference.score(c) for c in range(4)]
    assert scores[0] < scores[1], "the true class should start behind its first opponent"
    other = 2 if scores[2] >= scores[3] else 3
    reference.match(0, 1)
    assert reference.score(0) >= reference.score(1), "the true class should win after the update"
    reference.match(0, other)
    reference.assert_learned((0, 1, other))


@pytest.mark.parametrize("args", ["--sgd --invariant --power_t 0 -l 0.3",
                                  "--dyad_shifted --dyad rt --rank 2 --power_t 0 -l 0.3 --dyad_noise 0 "
                                  "--dyad_plain_rate",
                                  "--dyad_shifted --dyad rt --rank 2 --power_t 0 -l 0.3 --dyad_noise 0"])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_h_min_from_the_api_flips_the_prediction(args, loss):
    """Learning an example with its reverting weight h_min moves its prediction onto 0.

    With adaptive linear terms h_min uses the rates an importance-1 step would get (VW's
    stateless sensitivity); a weight h > 1 grows G more, so the step falls short of the
    boundary (and overshoots for h < 1) while still moving toward it."""
    ws = Workspace(f"{args} --loss_function {loss} --noconstant --quiet")
    ws.learn(["1 |rater r_1 |task t_1", "-1 |rater r_2 |task t_1", "1 |rater r_1 |task t_2"])
    line = "|rater r_1 |task t_1"
    before = ws.predict(line)
    weight = ws.h_min(line)  # one line: one number
    assert 0 < weight < math.inf
    assert ws.predict(line) == before  # h_min changes nothing
    flipped = -1 if before >= 0 else 1
    ws.learn(f"{flipped} {weight!r} {line}")
    after = ws.predict(line)
    if "--dyad_plain_rate" in args or "--sgd" in args:
        assert after == pytest.approx(0.0, abs=1e-7)
    else:
        assert abs(after) < abs(before)
        assert (after * before > 0) == (weight > 1.0)


def test_linear_terms_learn_as_vws_default_linear_learner():
    """With no dyad present (``--dyad qz`` on rater/task data) the dyadic learner is its linear
    terms alone, and they take VW's default adaptive normalized rates: the predictions follow
    the linear learner's to float32 rounding, non-unit feature values included (the per-slot
    normalizers N_k, the weight rescale when N_k grows and the global normalizer)."""
    from pyvw_lite.synthetic import rater_task
    data = rater_task(n_ratings=5000, n_raters=50, n_tasks=800, classes=2, seed=7)
    rng = np.random.default_rng(0)
    lines = [f"{line} |f x:{rng.normal():.3f} y:{rng.uniform(0, 5):.3f}"
             for line in data.vw_lines(binary=True)]
    # -b 24: a --dyad model places hashes mixed (gd.place), so its hash collisions are not the
    # linear model's; with 2^24 rows neither has any
    linear = Workspace("--loss_function logistic -b 24 --quiet").learn(lines)
    dyadic = Workspace("--loss_function logistic --dyad_shifted --dyad qz -b 24 "
                       "--quiet").learn(lines)
    np.testing.assert_allclose(dyadic, linear, atol=1e-5)
    plain = Workspace("--loss_function logistic --dyad_shifted --dyad qz --dyad_plain_rate "
                      "-b 24 --quiet").learn(lines)
    assert np.abs(plain - linear).max() > 0.1  # the plain rate is another learner


@pytest.mark.parametrize("reduction", ["", "--sft 3", "--oaa 3"])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_taylor_and_rk4_solvers_learn_the_same_model(reduction, loss):
    """--ode_solver taylor (default) and rk4 solve the same flows: over 2,000 rater-task
    examples the progressive predictions agree to the solvers' tolerance, not just on average."""
    from pyvw_lite.synthetic import rater_task
    classes = 3 if reduction else 2
    data = rater_task(n_ratings=2000, n_raters=30, n_tasks=300, classes=classes, seed=11)
    lines = data.vw_lines(binary=not reduction)
    args = f"{reduction} --loss_function {loss} --dyad rt --rank 2 --quiet"
    taylor = Workspace(args)
    rk4 = Workspace(args + " --ode_solver rk4")
    first, second = taylor.learn(lines), rk4.learn(lines)
    if reduction:
        assert np.mean(first == second) > 0.995  # class predictions
        _, a = taylor.predict_with_scores(lines[:200])
        _, b = rk4.predict_with_scores(lines[:200])
        np.testing.assert_allclose(a, b, atol=1e-4)
    else:
        np.testing.assert_allclose(first, second, atol=1e-4)


@pytest.mark.parametrize("flags,rate", [("--dyad_shifted --rank 2", 0.25),
                                        ("--dyad_shifted --rank 3", 1 / 6),
                                        ("--rank 2", 0.09), ("--rank 2 --dyad_plain", 0.09),
                                        ("--rank 2 --loss_function logistic", 0.03),
                                        ("--dyad_shifted --rank 2 --dyad_plain_rate", 1.0),
                                        ("--rank 2 --dyad_rate 0.7", 0.7)])
def test_the_latent_rate_is_normalized_by_the_latent_coordinates(flags, rate):
    """The shifted model's latent block starts as 2k unit coordinates per unit feature: its rate
    is 1/(2k) of the plain one unless --dyad_rate says otherwise; the plain form's default is
    0.09 under the per-row ridge of squared loss (decayed by 0.93 a pass), else 0.03
    (docs/dyadic.md)."""
    ws = Workspace(f"--dyad rt {flags} --quiet")
    assert ws.params[P_LATENT_RATE] == pytest.approx(rate)
    with pytest.raises(OptionError, match="dyad_rate"):
        Workspace("--dyad_shifted --dyad rt --dyad_rate 0 --quiet")


def test_a_lower_latent_rate_moves_the_latent_vectors_less():
    lines = [f"{1 if i % 3 else -1} |rater r_{i % 5} |task t_{i % 7}" for i in range(60)]
    moved = {}
    for rate in (1.0, 0.1):
        ws = Workspace(f"--dyad_shifted --dyad rt --rank 2 --dyad_rate {rate} --dyad_noise 0 -b 20 --quiet")
        ws.learn(lines)
        _, latent = slots_of(ws, "rater", "r_1")
        moved[rate] = float(np.abs(ws.weights.ravel()[latent]).sum())
    assert 0.0 < moved[0.1] < 0.5 * moved[1.0]


@pytest.mark.parametrize("offsets,bits", [([0, 1, 2, 3, 4], 10), ([0, 7, 14, 21, 28], 10),
                                          ([0, 17, 2], 5)])  # VW's stride at -b 5: spans 2
def test_rows_shared_between_classes_are_detected(offsets, bits):
    """The multiclass loops reuse the scoring pass's class scores only when no two classes
    of the example share a weight row: (slot_k + off_c) & mask == (slot_j + off_d) & mask."""
    from pyvw_lite.reductions.dyad import classes_share_rows
    offsets = np.array(offsets, dtype=np.int64)
    mask = (1 << bits) - 1

    def brute(slots):
        rows = [(int(s) + int(o)) & mask for o in offsets for s in set(slots)]
        return len(rows) != len(set(rows))

    rng = np.random.default_rng(3)
    cases = [[10, 10 + offsets[2]], [10, 10 - offsets[-1]], [1, 1 - offsets[1]], [3, 500],
             [10, 10]]
    cases = [[value & mask for value in case] for case in cases]
    cases += [list(rng.integers(0, mask + 1, size=3)) for _ in range(3000)]
    hits = 0
    for slots in cases:
        array = np.array(slots, dtype=np.int64)
        expected = brute(slots)
        hits += expected
        assert classes_share_rows(array, 0, array.size, offsets, mask) == expected, slots
    assert hits > 10  # the random cases include collisions


@pytest.mark.parametrize("importance", [1.0, 3.0])
def test_dyad_l2_shrinks_the_updated_latent_vectors_after_the_exact_step(importance):
    """--dyad_l2 λ: after the loss's exact step, the example's latent vectors are multiplied
    by 1/(1 + η·h·λ) (the penalty's proximal step); the linear weights are untouched."""
    common = "--dyad ab --rank 3 --dyad_plain --power_t 0 -l 0.5 --dyad_rate 0.2 " \
             "--dyad_noise 0.1 -b 12 --quiet"
    plain_flags = common + " --dyad_l2 0"
    line = [f"0.5 {importance} |a x y |b z w"]
    plain, shrunk = Workspace(plain_flags), Workspace(common + " --dyad_l2 0.3")
    plain.learn(line)
    shrunk.learn(line)
    latent = plain._latent_columns
    factor = 1.0 / (1.0 + 0.5 * 0.2 * importance * 0.3)
    moved = np.flatnonzero(np.any(plain.weights[:, latent] != shrunk.weights[:, latent], axis=1))
    assert moved.size == 4  # x, y, z, w: the example's latent vectors
    np.testing.assert_allclose(shrunk.weights[np.ix_(moved, latent)],
                               plain.weights[np.ix_(moved, latent)] * factor, rtol=2e-7)  # float32
    others = [c for c in range(plain.weights.shape[1]) if c not in latent]
    np.testing.assert_array_equal(shrunk.weights[:, others], plain.weights[:, others])


def test_a_model_saved_before_the_plain_default_keeps_its_shifted_form(tmp_path):
    """Models saved before the plain form became the default stored no form: they were
    shifted, with the earlier latent schedule, and load as such (same predictions)."""
    from pyvw_lite import __version__
    from pyvw_lite.io.model_io import save_model
    lines = [f"{1 if i % 3 else -1} |rater r_{i % 5} |task t_{i % 7}" for i in range(40)]
    shifted = Workspace("--dyad_shifted --dyad rt --rank 2 --loss_function logistic --quiet")
    shifted.learn(lines)
    data = shifted.model_data()
    del data.state["kept"]["dyad_shifted"]
    data.options = [token for token in data.options if token != "--dyad_shifted"]
    save_model(str(tmp_path / "old"), data, __version__)
    old = Workspace(["-i", str(tmp_path / "old"), "--quiet"])
    assert old.dyadic.shift == 1.0 and old.params[P_LATENT_RATE] == 0.25
    np.testing.assert_array_equal(old.predict(lines), shifted.predict(lines))
    new = Workspace("--dyad rt --rank 2 --quiet")
    assert new.dyadic.shift == 0.0 and new.model_data().state["kept"]["dyad_shifted"] is False


def test_number_named_users_and_items_learn_as_well_as_named_ones():
    """User and item ids written as numbers ("|u 17 |m 1193", as most MovieLens conversions do)
    hash to consecutive numbers from their namespace's hash, and at -b 18 (VW's default) 'u' and
    'm' start 644 rows apart: unmixed, user i shared its weight and latent vector with item
    i + 644 (test MSE 0.985 against 0.795 on gen_dyadic's default data).  Placed through the
    mixer they collide as random hashes do."""
    from pyvw_lite.synthetic import user_item_ratings
    users, items, ratings = user_item_ratings(40_000, 400, 1_400, rank=4, latent_sd=0.8,
                                              noise_sd=0.5, seed=3)
    mse = {}
    for prefix in ("", "x"):
        lines = [f"{r} |u {prefix}{u + 1} |m {prefix}{i + 1}"
                 for r, u, i in zip(ratings.tolist(), users.tolist(), items.tolist())]
        cut = len(lines) * 9 // 10
        train, test = lines[:cut], lines[cut:]
        ws = Workspace("--dyad um --rank 4 -b 18 --quiet")
        for _ in range(4):
            ws.learn(train)
        predicted = np.asarray(ws.predict([line.split(" ", 1)[1] for line in test]))
        mse[prefix] = float(np.mean((predicted - ratings[cut:]) ** 2))
    assert mse[""] <= mse["x"] + 0.02, mse


@pytest.mark.parametrize("loss,expected", [("squared", 0.0), ("logistic", 0.15),
                                           ("quantile", 0.05)])
def test_the_latent_penalty_default_follows_the_loss_gradients_scale(loss, expected):
    """--dyad_l2 defaults to 0.05 under the quantile loss, whose gradient (tau or 1 - tau) is
    about a third of squared loss's 2(p - y) on ratings (0.15 held the latent vectors near
    zero: VW's movielens demo line scored test MAE 0.774, as the linear model's 0.771; 0.727
    with 0.05); a given value wins, and the shifted form keeps none.  Under squared loss the
    per-row penalty --dyad_row_l2 replaces it by default; without that the default is 0.15."""
    from pyvw_lite.learners.gd import P_DYAD_L2, P_DYAD_ROW_L2
    ws = Workspace(f"--dyad um --rank 2 --loss_function {loss} --quiet")
    assert ws.params[P_DYAD_L2] == expected
    assert ws.params[P_DYAD_ROW_L2] == (8.0 if loss == "squared" else 0.0)
    assert Workspace(f"--dyad um --loss_function {loss} --dyad_row_l2 0 --quiet"
                     ).params[P_DYAD_L2] == (0.05 if loss == "quantile" else 0.15)
    assert Workspace(f"--dyad um --loss_function {loss} --dyad_l2 0.3 --quiet"
                     ).params[P_DYAD_L2] == 0.3
    assert Workspace(f"--dyad um --loss_function {loss} --dyad_shifted --quiet"
                     ).params[P_DYAD_L2] == 0.0


def test_the_default_penalty_follows_the_uses_per_latent_row():
    """Without --dyad_l2 the latent penalty is its base × (n̄/60)^-0.6, n̄ the uses per latent
    row counted in the first pass (capped at the base while it counts): the state counts every
    latent row once and every use of one (importance-weighted) until the data repeats, and a
    later step shrinks by 1/(1 + η·h·λ(n̄))."""
    from pyvw_lite.learners.gd import (LATENT_ROWS, LATENT_USES, P_DYAD_COUNT, P_DYAD_L2,
                                       P_DYAD_L2_POWER)
    from pyvw_lite.reductions.dyad import sized_l2
    common = "--dyad ab --rank 3 -l 0.5 -b 12 --dyad_row_l2 0 --quiet"
    assert Workspace(common).params[P_DYAD_L2_POWER] == 0.6
    assert Workspace(common + " --dyad_l2 0.15").params[P_DYAD_L2_POWER] == 0.0
    lines = ["0.5 2 |a x y |b z", "1 |a x |b w", "-1 |a y |b z w"]
    sized, given = Workspace(common), Workspace(common + " --dyad_l2 0.15")
    for ws in (sized, given):
        ws.learn(lines)  # n̄ ≤ 11/4 while counting: the factor is capped at 1
    np.testing.assert_array_equal(sized.weights, given.weights)
    assert sized.state[LATENT_ROWS] == 4  # a's x and y, b's z and w
    assert sized.state[LATENT_USES] == 2 * 3 + 2 + 3
    for ws in (sized, given):
        ws.repeat_pass()
    given.params[P_DYAD_L2] = 0.15 * (11 / 4 / 60) ** -0.6
    for ws in (sized, given):
        ws.learn(lines)
    assert (sized.state[LATENT_ROWS], sized.state[LATENT_USES]) == (4, 11)
    np.testing.assert_allclose(sized.weights, given.weights, rtol=1e-6, atol=1e-9)
    before = Workspace(common + " --dyad_l2 0.15")
    before.learn(lines)
    before.repeat_pass()
    before.learn(lines)
    assert not np.allclose(sized.weights, before.weights, rtol=1e-4)
    # the rule itself, over counts on both sides of the reference
    params, state = sized.params.copy(), np.zeros_like(sized.state)
    for rows, uses, counting in [(0, 0, 1), (4, 11, 1), (10, 600, 1), (10, 600, 0), (4, 11, 0),
                                 (1000, 240_000, 0)]:
        state[LATENT_ROWS], state[LATENT_USES], params[P_DYAD_COUNT] = rows, uses, counting
        factor = (max(uses / max(rows, 1), 1) / 60) ** -0.6
        expected = 0.15 * (min(factor, 1.0) if counting else factor)
        assert sized_l2(params, state) == pytest.approx(expected, rel=1e-12)


def test_passes_count_the_latent_uses_of_the_first_pass_only(tmp_path):
    """--passes from a cache: the saved counts are those of one pass (a model saved by an
    earlier version, without counts, resumes at the reference uses of its touched rows)."""
    from pyvw_lite.learners.gd import LATENT_ROWS, LATENT_USES
    from pyvw_lite.io.model_io import load_model, save_model
    from pyvw_lite import __version__
    from conftest import run_workspace
    data = tmp_path / "r.vw"
    data.write_text("".join(f"{1 + (u * m) % 5} |u u{u} |m m{m}\n"
                            for u in range(12) for m in range(0, 30, 3)))
    models = {}
    for passes in (1, 3):
        model = tmp_path / f"p{passes}.pvw"
        _, _, code = run_workspace(["-d", str(data), "--dyad", "um", "--rank", "2", "-c",
                                    "--cache_file", str(tmp_path / f"c{passes}"), "--passes",
                                    str(passes), "--holdout_off", "-f", str(model), "--quiet"])
        assert code == 0
        models[passes] = Workspace(["-i", str(model), "--quiet"])
    for ws in models.values():
        assert (ws.state[LATENT_ROWS], ws.state[LATENT_USES]) == (22, 240)
    data_old = load_model(str(tmp_path / "p3.pvw"))
    data_old.state["learner"] = data_old.state["learner"][:-2]
    save_model(str(tmp_path / "old.pvw"), data_old, __version__)
    old = Workspace(["-i", str(tmp_path / "old.pvw"), "--quiet"])
    assert (old.state[LATENT_ROWS], old.state[LATENT_USES]) == (22, 22 * 60)


def test_lrqdropout_steps_along_the_exact_flow_of_the_kept_coordinates():
    """--lrqdropout (VW's lrq): a learned example keeps each latent coordinate with probability
    1/2.  The step is the exact flow of the model whose dropped coordinates are removed: the
    same as the step of a model without dropout whose dropped coordinates are zero, and the
    dropped coordinates do not move.  Both sides keep the same coordinates."""
    import copy
    from pyvw_lite.learners.gd import P_DYAD_DROPOUT
    flags = "--dyad ab --rank 16 --lrqdropout -b 12 --dyad_rate 0.5 --quiet"
    ws = Workspace(flags)
    assert ws.params[P_DYAD_DROPOUT] == 1.0 and ws.dyadic.settings["l2"] == 0.0
    ws.learn(["1 |a x |b z", "-1 |a y |b w", "0.5 |a x |b w"])  # touch the rows
    latent = ws._latent_columns
    kept_counts = []
    for line in ["1 2 |a x |b z", "-0.5 |a y |b z", "2 0.5 |a x y |b w"]:
        before = copy.deepcopy(ws)
        ws.learn([line])
        rows = np.flatnonzero(np.any(ws.weights[:, latent] != before.weights[:, latent], axis=1))
        moved = ws.weights[np.ix_(rows, latent)] != before.weights[np.ix_(rows, latent)]
        assert rows.size >= 2 and (moved == moved[0]).all()  # one mask for every vector
        kept = np.asarray(latent)[moved[0]]
        dropped = np.asarray(latent)[~moved[0]]
        kept_counts.append(kept.size)
        reference = copy.deepcopy(before)
        reference.params[P_DYAD_DROPOUT] = 0.0
        reference.weights[np.ix_(rows, dropped)] = 0.0
        reference.learn([line])
        np.testing.assert_allclose(ws.weights[np.ix_(rows, kept)],
                                   reference.weights[np.ix_(rows, kept)], rtol=1e-6, atol=1e-9)
        linear = [c for c in range(ws.weights.shape[1]) if c not in latent]
        np.testing.assert_allclose(ws.weights[:, linear], reference.weights[:, linear],
                                   rtol=1e-6, atol=1e-9)
    assert all(2 <= k <= 14 for k in kept_counts) and len(set(kept_counts)) > 1


def test_lrqdropout_models_predict_with_half_the_latent_term(tmp_path):
    """A model trained with --lrqdropout keeps the flag and predicts with its linear part plus
    half its latent term (VW's 0.5 at test time: the expected term over the kept halves); the
    same run repeats exactly (the masks are seeded)."""
    from pyvw_lite.learners.gd import MAX_LABEL, MIN_LABEL, P_DYAD_DROPOUT
    lines = [f"{1 + (u * m) % 5} |u u{u} |m m{m}" for u in range(20) for m in range(0, 30, 3)]
    ws, again = (Workspace("--dyad um --rank 4 --lrqdropout --dyad_rate 0.5 --quiet") for _ in range(2))
    ws.learn(lines)
    again.learn(lines)
    np.testing.assert_array_equal(ws.weights, again.weights)
    ws.save(str(tmp_path / "d.pvw"))
    loaded = Workspace(["-i", str(tmp_path / "d.pvw"), "-t", "--quiet"])
    assert loaded.params[P_DYAD_DROPOUT] == 1.0
    loaded.state[MIN_LABEL], loaded.state[MAX_LABEL] = -1e9, 1e9  # unclipped
    dropout = loaded.predict(lines)
    loaded.params[P_DYAD_DROPOUT] = 0.0
    full = loaded.predict(lines)
    loaded.weights[:, loaded._latent_columns] = 0.0
    linear = loaded.predict(lines)
    assert np.abs(full - linear).max() > 0.05  # the latent term learned something
    np.testing.assert_allclose(dropout, linear + 0.5 * (full - linear), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("flags,message", [
    ("--dyad um --lrqdropout --dyad_shifted", "plain form"),
    ("--dyad um --lrqdropout --active", "cannot go together")])
def test_lrqdropout_refuses_what_it_cannot_serve(flags, message):
    with pytest.raises(OptionError, match=message):
        Workspace(flags + " --quiet")


def test_lrqdropout_under_a_multiclass_reduction_keeps_the_latent_penalty():
    """Dropout is built for binary and regression updates; under --oaa/--sft the flag leaves the
    model as without it (the default --dyad_l2), and the run says so."""
    from pyvw_lite.learners.gd import P_DYAD_DROPOUT, P_DYAD_L2
    ws = Workspace("--sft 3 --dyad rt --lrqdropout --quiet")
    assert ws.params[P_DYAD_DROPOUT] == 0.0 and ws.params[P_DYAD_L2] == 0.15


def test_dyadic_predictions_and_steps_are_clipped_to_the_label_range_as_the_linear_learners():
    """As VW's (and the linear learner's, and --oaa/--sft --dyad): a regression prediction is
    clipped to the range of the labels learned from, and the step starts from the clipped
    prediction, so an example already predicted beyond its label's edge of the range does not
    move the model.  (Clipping the predictions of gen_dyadic's ratings to 1..5 took 0.001 off
    test MSE on four sets it was checked on; stepping from them 0.0005 more: docs/dyadic.md.)"""
    from pyvw_lite.learners.gd import MAX_LABEL, MIN_LABEL
    ws = Workspace("--dyad um --rank 2 --dyad_rate 0.5 --quiet")
    ws.learn(["1 |u a |m x", "5 |u b |m y"] * 30)
    assert (ws.state[MIN_LABEL], ws.state[MAX_LABEL]) == (0.0, 5.0)  # from 0, as VW
    ws.weights[:, ws._latent_columns] *= 3.0  # push the latent term beyond the range
    lines = ["5 |u b |m y", "1 |u a |m x"]
    before = ws.weights.copy()
    ws.state[MIN_LABEL], ws.state[MAX_LABEL] = -1e9, 1e9
    unclipped = ws.predict(lines)
    ws.state[MIN_LABEL], ws.state[MAX_LABEL] = 0.0, 5.0
    clipped = ws.predict(lines)
    assert unclipped[0] > 5.0 and clipped[0] == 5.0
    np.testing.assert_array_equal(clipped, np.clip(unclipped, 0.0, 5.0))
    ws.learn(lines[:1])  # predicted 5 (clipped) with label 5: no step
    np.testing.assert_array_equal(ws.weights[:, [0] + list(ws._latent_columns)],
                                  before[:, [0] + list(ws._latent_columns)])


# ------------------------------------------------------------ per-row ridge penalties (issue 41)

@pytest.mark.parametrize("rate,importance,penalty,count", [
    (0.3, 1.0, 3.0, 1), (0.01, 2.5, 3.0, 7), (1.2, 0.5, 10.0, 255), (0.05, 1.0, 0.0, 4),
    (0.05, 1.0, 3.0, 0)])
def test_the_row_shrink_is_the_proximal_step_of_alss_ridge_share(rate, importance, penalty,
                                                                  count):
    """An update of a row used n times takes λ/n of ALS's ridge λ|w|²: the factor maps the
    loss's step w0 onto the minimiser of rate·h·λ/n·w² + (w − w0)²/2 (its gradient vanishes
    there, and the objective is larger on either side); an uncounted row is not shrunk."""
    from pyvw_lite.reductions.dyad import row_shrink
    factor = row_shrink(rate, importance, penalty, np.uint8(count))
    if count == 0 or penalty == 0.0:
        assert factor == 1.0
        return
    w0 = 0.8

    def objective(w):
        return rate * importance * penalty / count * w * w + 0.5 * (w - w0) ** 2

    w = factor * w0
    gradient = 2.0 * rate * importance * penalty / count * w + (w - w0)
    assert abs(gradient) < 1e-12
    assert objective(w) < min(objective(w - 1e-4), objective(w + 1e-4))
    # n updates of a row used n times add up to ALS's ridge on the row: ∏ ≈ 1/(1 + 2·rate·h·λ)
    small = 1e-4
    total = row_shrink(small, importance, penalty, np.uint8(count)) ** count
    assert total == pytest.approx(1.0 / (1.0 + 2.0 * small * importance * penalty), rel=1e-6)


def test_rows_count_their_first_pass_uses_and_the_bias_penalty_shrinks_by_them(tmp_path):
    """The first pass counts each --dyad row's uses (saturating at 255), later passes do not;
    the counts are saved with the model (one byte per stored row) and resumed; an update shrinks
    the example's --dyad biases by 1/(1 + 2·η_k·h·λ/n), η_k the weight's own rate, and leaves
    the constant alone."""
    lines = ["4 |u a |m x", "2 |u a |m y", "5 |u b |m x", "3 |u a |m x"]
    ws = Workspace("--dyad um --rank 2 -b 16 --quiet")
    ws.learn(lines)
    (ua, _), (ub, _), (mx, _), (my, _) = (slots_of(ws, "u", "a"), slots_of(ws, "u", "b"),
                                          slots_of(ws, "m", "x"), slots_of(ws, "m", "y"))
    assert [int(ws.touched[s // ws.weights.shape[1]]) for s in (ua, ub, mx, my)] == [3, 1, 3, 1]
    ws.repeat_pass()
    ws.learn(lines)
    assert [int(ws.touched[s // ws.weights.shape[1]]) for s in (ua, ub, mx, my)] == [3, 1, 3, 1]
    model = tmp_path / "m.pvw"
    ws.save(str(model))
    back = Workspace(["-i", str(model), "--quiet"])
    np.testing.assert_array_equal(back.touched, ws.touched)
    # the same updates without the penalty: the biases of the penalised model are smaller
    free = Workspace("--dyad um --rank 2 -b 16 --dyad_bias_l2 0 --quiet")
    for _ in range(2):
        free.learn(lines)
        free.repeat_pass()
    for slot in (ua, mx):
        assert abs(ws.weights.ravel()[slot]) < abs(free.weights.ravel()[slot])
    const = flat(ws, int(place_array(CONSTANT_HASH, ws.slot_multiplier, ws.mask)))
    assert ws.touched[const // ws.weights.shape[1]] == 0
    many = Workspace("--dyad um --rank 1 -b 16 --quiet")
    many.learn([f"{1 + i % 5} |u a |m m{i}" for i in range(300)])
    assert many.touched[slots_of(many, "u", "a")[0] // many.weights.shape[1]] == 255


def test_per_row_counts_in_models_are_checked_and_older_models_keep_their_penalty(tmp_path):
    """A model's counts must be one byte per stored row (else a one-line error naming them); a
    model saved before them resumes without the per-row penalties it was not trained with."""
    from pyvw_lite import __version__
    from pyvw_lite.io.model_io import ModelError, load_model, save_model
    from pyvw_lite.learners.gd import P_DYAD_BIAS_L2
    ws = Workspace("--dyad um --rank 2 -b 16 --quiet")
    ws.learn(["4 |u a |m x", "2 |u a |m y"])
    path = tmp_path / "m.pvw"
    ws.save(str(path))
    assert Workspace(["-i", str(path), "--quiet"]).params[P_DYAD_BIAS_L2] == 3.0
    data = load_model(str(path))
    for bad in (data.arrays["uses"][:-1], data.arrays["uses"].astype(np.int16),
                data.arrays["uses"].reshape(-1, 1)):
        broken = load_model(str(path))
        broken.arrays["uses"] = bad
        save_model(str(tmp_path / "bad.pvw"), broken, __version__)
        with pytest.raises(ModelError, match="uses"):
            Workspace(["-i", str(tmp_path / "bad.pvw"), "--quiet"])
    del data.arrays["uses"]
    save_model(str(tmp_path / "old.pvw"), data, __version__)
    assert Workspace(["-i", str(tmp_path / "old.pvw"), "--quiet"]).params[P_DYAD_BIAS_L2] == 0.0
    assert Workspace(["-i", str(tmp_path / "old.pvw"), "--dyad_bias_l2", "2", "--quiet"]
                     ).params[P_DYAD_BIAS_L2] == 2.0


@pytest.mark.parametrize("flag,value", [("--dyad_bias_l2", "-1"), ("--dyad_row_l2", "inf")])
def test_per_row_penalty_option_errors(flag, value):
    with pytest.raises(OptionError, match=flag.lstrip("-")):
        Workspace(f"--dyad um {flag} {value} --quiet")
    with pytest.raises(OptionError, match="needs --dyad"):
        Workspace(f"{flag} 1 --quiet")


def _als_module():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent / "accuracy" / "dyad_als.py"
    spec = importlib.util.spec_from_file_location("dyad_als", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_per_row_penalties_come_within_0_01_of_a_tuned_als_on_long_tailed_items():
    """Zipf-popular items (most seen a few times): the per-row penalties (--dyad_bias_l2,
    --dyad_row_l2) lower test MSE well below the learner without them and the linear model, to
    within 0.01 of a tuned batch ALS (ridge with biases, rank and λ by CV on train:
    tests/accuracy/dyad_als.py).  Measured: 1.0454 against ALS's 1.0406; without the penalties
    1.1363, linear 1.1390."""
    from pyvw_lite.synthetic import user_item_ratings
    als = _als_module()
    users, items, ratings = user_item_ratings(16_000, 300, 1_500, rank=4, latent_sd=0.6,
                                              noise_sd=0.8, seed=41)
    cut = ratings.size * 9 // 10
    lines = [f"{r} |u u{u} |m m{i}" for r, u, i in zip(ratings.tolist(), users.tolist(),
                                                        items.tolist())]
    mse = {}
    for name, flags in (("new", ""), ("old", " --dyad_bias_l2 0 --dyad_row_l2 0"),
                        ("linear", None)):
        ws = Workspace("-b 20 --quiet" + ("" if flags is None else " --dyad um --rank 4" + flags))
        for _ in range(10):
            ws.learn(lines[:cut])
            ws.repeat_pass()
        predicted = np.asarray(ws.predict([line.split(" ", 1)[1] for line in lines[cut:]]))
        mse[name] = float(np.mean((predicted - ratings[cut:]) ** 2))
    n_users, n_items = users.max() + 1, items.max() + 1
    scores = als.cross_validate(users[:cut], items[:cut], ratings[:cut].astype(float), n_users,
                                n_items, (0, 4), (5.0, 15.0), folds=3, sweeps=8)
    rank, lam, _ = min(scores, key=scores.get)  # (rank, λ, the biases' own λ: None, λ)
    model = als.fit(users[:cut], items[:cut], ratings[:cut].astype(float), n_users, n_items,
                    rank, lam, sweeps=8)
    mse["als"] = float(np.mean((als.predict(model, users[cut:], items[cut:]) - ratings[cut:])
                               ** 2))
    assert mse["new"] < mse["old"] - 0.005, mse
    assert mse["new"] < mse["linear"] - 0.01, mse
    assert mse["new"] < mse["als"] + 0.01, mse


def one_and_sharded(tmp_path, shards: int, extra: list[str]) -> dict:
    """The rank-2 dyadic models one learner and ``--shards`` serial shards learn from the same
    small ratings file with ``extra`` options, loaded: {"one": ..., "shards": ...}."""
    from conftest import run_workspace
    data = tmp_path / "r.vw"
    data.write_text("".join(f"{1 + (u * m) % 5} |u u{u} |m m{m}\n"
                            for u in range(12) for m in range(0, 30, 3)))
    models = {}
    for name, executor in (("one", []), ("shards", ["--executor", "serial", "--shards",
                                                    str(shards)])):
        model = tmp_path / f"{name}.pvw"
        _, err, code = run_workspace(["-d", str(data), "--dyad", "um", "--rank", "2", "--quiet",
                                      *extra, "-f", str(model), *executor])
        assert code == 0, err
        models[name] = Workspace(["-i", str(model), "--quiet"])
    return models


def test_shards_add_their_first_pass_counts(tmp_path):
    """Under --executor each shard counts the uses of its own lines; the combined model counts
    every use once, as one learner over the whole file does."""
    models = one_and_sharded(tmp_path, 3, [])
    np.testing.assert_array_equal(models["shards"].touched, models["one"].touched)
    assert sorted(np.unique(models["one"].touched).tolist()) == [0, 10, 12]


def test_the_latent_rate_decays_by_dyad_decay_per_pass_and_a_model_keeps_it(tmp_path):
    """--dyad_decay D multiplies the latent rate by D after each pass (the linear rates are
    untouched) and a saved model resumes at the rate it reached.  The default is 0.93 from 0.09
    under the per-row ridge of squared loss (docs/dyadic.md), 1 (a constant 0.03) elsewhere."""
    ws = Workspace("--dyad um --rank 2 --dyad_rate 0.15 --dyad_decay 0.9 --quiet")
    eta = ws.params[P_ETA]
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.15)
    for _ in range(3):
        ws.learn(["4 |u u1 |m m1", "2 |u u2 |m m1", "5 |u u1 |m m2"])
        ws.repeat_pass()
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.15 * 0.9 ** 3)
    assert ws.params[P_ETA] == eta
    path = tmp_path / "m.pvw"
    ws.save(str(path))
    again = Workspace(["-i", str(path), "--quiet"])
    assert again.params[P_LATENT_RATE] == pytest.approx(0.15 * 0.9 ** 3)
    again.repeat_pass()
    assert again.params[P_LATENT_RATE] == pytest.approx(0.15 * 0.9 ** 4)
    for flags, first, second in (("", 0.09, 0.09 * 0.93), ("--dyad_decay 0.5", 0.09, 0.045),
                                 ("--dyad_row_l2 0", 0.03, 0.03),
                                 ("--loss_function logistic", 0.03, 0.03),
                                 ("--loss_function logistic --dyad_decay 0.8", 0.03, 0.024)):
        ws = Workspace(f"--dyad um --rank 2 --quiet {flags}")
        assert ws.params[P_LATENT_RATE] == pytest.approx(first), flags
        ws.repeat_pass()
        assert ws.params[P_LATENT_RATE] == pytest.approx(second), flags


def test_a_command_line_run_saves_the_decayed_rate_and_an_older_model_resumes_at_its_own(
        tmp_path):
    """-f after three passes holds the rate's scale 0.9³ and the schedule (rate, decay) it
    followed; a model saved before --dyad_decay (no scale in it) resumes at scale 1, one saved
    before issue 41's schedule (no rate or decay in it) at the constant 0.03 that was the default
    then; a scale, rate or decay that is not a finite positive number is refused."""
    from conftest import run_workspace
    from pyvw_lite.io.model_io import load_model, save_model
    data = tmp_path / "r.vw"
    data.write_text("".join(f"{1 + (u * m) % 5} |u u{u} |m m{m}\n"
                            for u in range(12) for m in range(0, 30, 3)))
    model = tmp_path / "m.pvw"
    _, err, code = run_workspace(["-d", str(data), "--dyad", "um", "--rank", "2", "--passes",
                                  "3", "--holdout_off", "-c", "--quiet", "-f", str(model),
                                  "--dyad_decay", "0.9"])
    assert code == 0, err
    saved = load_model(str(model))
    assert saved.state["dyad_rate_scale"] == pytest.approx(0.9 ** 3)
    assert (saved.state["dyad_rate"], saved.state["dyad_decay"]) == (0.09, 0.9)
    ws = Workspace(["-i", str(model), "--quiet"])
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.09 * 0.9 ** 3)
    ws.repeat_pass()
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.09 * 0.9 ** 4)
    older = tmp_path / "older.pvw"
    del saved.state["dyad_rate_scale"]
    save_model(str(older), saved, "0")
    ws = Workspace(["-i", str(older), "--quiet"])
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.09)
    ws.repeat_pass()
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.081)
    for name in ("dyad_rate", "dyad_decay"):
        del saved.state[name]
    save_model(str(older), saved, "0")
    ws = Workspace(["-i", str(older), "--quiet"])  # the --dyad_decay given is kept
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.03)
    ws.repeat_pass()
    assert ws.params[P_LATENT_RATE] == pytest.approx(0.027)
    with pytest.raises(OptionError, match="trained with --dyad_rate 0.09, not with 0.18"):
        Workspace(["-i", str(model), "--dyad_rate", "0.18", "--quiet"])
    for name, bad, message in (("dyad_rate_scale", -1.0, "latent rate scale -1.0"),
                               ("dyad_rate_scale", "0.5", "latent rate scale '0.5'"),
                               ("dyad_rate_scale", True, "latent rate scale True"),
                               ("dyad_rate_scale", [0.5], r"latent rate scale \[0.5\]"),
                               ("dyad_rate_scale", None, "latent rate scale None"),
                               ("dyad_rate", 0.0, "dyad_rate 0.0"),
                               ("dyad_rate", 1e308, "dyad_rate 1e\\+308"),
                               ("dyad_rate", None, "dyad_rate None"),
                               ("dyad_decay", "0.9", "dyad_decay '0.9'"),
                               ("dyad_decay", 2.0, "dyad_decay 2.0"),
                               ("dyad_rate", float("nan"), "NaN")):
        broken = load_model(str(model))
        broken.state[name] = bad
        save_model(str(older), broken, "0")
        with pytest.raises(Exception, match=message):
            Workspace(["-i", str(older), "--quiet"])
    broken = load_model(str(model))
    del broken.state["dyad_decay"]  # half a schedule: no version writes that
    save_model(str(older), broken, "0")
    with pytest.raises(Exception, match="dyad_rate without the other half"):
        Workspace(["-i", str(older), "--quiet"])


@pytest.mark.parametrize("value", ["0", "-0.5", "inf", "nan", "1.5"])
def test_dyad_decay_must_be_a_finite_positive_number(value):
    with pytest.raises(OptionError, match="--dyad_decay"):
        Workspace(f"--dyad um --rank 2 --dyad_decay {value} --quiet")
    with pytest.raises(OptionError, match="needs --dyad"):
        Workspace("--dyad_decay 0.9 --quiet")


def test_a_steep_decay_stops_at_the_lowest_rate_and_writes_a_model_that_loads(tmp_path):
    """--dyad_decay 1e-200 would take the latent rate to 0 in two passes (the flow then gives
    NaN): the decayed rate stops at --dyad_rate's lower bound, and the model loads."""
    from conftest import run_workspace
    data = tmp_path / "r.vw"
    data.write_text("".join(f"{1 + (u * m) % 5} |u u{u} |m m{m}\n"
                            for u in range(12) for m in range(0, 30, 3)))
    model = tmp_path / "m.pvw"
    _, err, code = run_workspace(["-d", str(data), "--dyad", "um", "--rank", "2", "--passes",
                                  "4", "--holdout_off", "-c", "-f", str(model),
                                  "--dyad_decay", "1e-200"])
    assert code == 0, err
    assert math.isfinite(float(err.split("average loss = ")[1].split()[0]))
    ws = Workspace(["-i", str(model), "--quiet"])
    assert ws.params[P_LATENT_RATE] == pytest.approx(1e-9)


@pytest.mark.parametrize("value", ["0", "1e-12", "1e308", "nan", "150"])
def test_dyad_rate_must_be_within_its_range(value):
    """Beyond 100 × -l the latent flow overflows to NaN; below 1e-9 it learns nothing."""
    with pytest.raises(OptionError, match="--dyad_rate"):
        Workspace(f"--dyad um --rank 2 --dyad_rate {value} --quiet")


def test_shards_learn_at_the_decayed_latent_rate(tmp_path):
    """Under --executor every shard of pass p learns at 0.9^p of the latent rate (--dyad_decay
    0.9), as one learner does: one shard's model equals the single learner's after three
    passes."""
    models = one_and_sharded(tmp_path, 1, ["--passes", "3", "--holdout_off", "-c",
                                           "--dyad_decay", "0.9"])
    assert models["shards"].latent_scale == pytest.approx(0.9 ** 3)
    np.testing.assert_allclose(models["shards"].weights, models["one"].weights, atol=1e-6)



def test_shared_rows_estimates_the_features_hashing_put_on_a_taken_row():
    """F features hashed at random into R rows fill R(1 − e^(−F/R)) of them: from the rows
    filled, shared_rows recovers how many features landed on a row already taken."""
    from pyvw_lite.reductions.dyad import shared_rows
    rng = np.random.default_rng(5)
    for features, table in ((112_000, 1 << 18), (20_000, 1 << 14), (300, 1 << 18)):
        rows = np.unique(rng.integers(0, table, features)).size
        assert shared_rows(rows, table) == pytest.approx(features - rows, rel=0.05, abs=3)
    assert shared_rows(0, 1 << 18) == 0


def test_the_summary_says_when_dyadic_features_share_rows(tmp_path):
    """2,000 items in a 2^10-row table: the summary counts the rows and names a larger -b; in
    2^18 rows they are apart and the summary says nothing."""
    from conftest import run_workspace
    data = tmp_path / "r.vw"
    data.write_text("".join(f"{1 + i % 5} |u u{i % 40} |m m{i}\n" for i in range(2000)))
    _, err, code = run_workspace(["-d", str(data), "--dyad", "um", "--rank", "2", "-b", "10"])
    assert code == 0
    line = [text for text in err.splitlines() if text.startswith("dyadic rows = ")]
    assert len(line) == 1 and "of 1024: about" in line[0] and "-b 14 keeps them apart" in line[0]
    shared = int(line[0].split("about ")[1].split()[0])
    assert 900 < shared < 1300  # 2,040 features in 1,024 rows: about 1,150 on a taken row
    _, err, _ = run_workspace(["-d", str(data), "--dyad", "um", "--rank", "2"])
    assert "dyadic rows" not in err
