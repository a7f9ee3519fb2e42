"""Multiclass reductions: SPEC §D checks [D1]-[D6], agreement with VW's --oaa/--ect, labels."""
import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite import Workspace
from pyvw_lite.learners.gd import CLASS_STRIDE, HASH_MIX, LEGACY_CLASS_STRIDE, place_array
from pyvw_lite.reductions.tree import bracket

HERE = Path(__file__).parent / "golden" / "multiclass"


@pytest.mark.parametrize("classes", range(1, 40))
def test_bracket_structure(classes):
    """[D1] K-1 internal nodes, every class a leaf once, contiguous intervals (left = lower
    classes), depth ceil(log2 K), root created last."""
    tree = bracket(classes)
    assert tree.left.size == classes - 1
    assert tree.root == 2 * classes - 2 and tree.parent[tree.root] == -1
    for n in range(classes - 1):
        node = classes + n
        left, right = tree.left[n], tree.right[n]
        assert tree.parent[left] == node and tree.parent[right] == node
        assert tree.lo[node] == tree.lo[left] and tree.hi[left] + 1 == tree.lo[right]
        assert tree.hi[node] == tree.hi[right]
        assert left < node and right < node  # created bottom-up
    assert tree.lo[tree.root] == 0 and tree.hi[tree.root] == classes - 1
    depth = max(tree.depth(leaf) for leaf in range(classes))
    assert depth == int(np.ceil(np.log2(classes))) if classes > 1 else depth == 0


def test_vw_tree_numbering():
    five = bracket(5)
    assert list(zip(five.left, five.right)) == [(0, 1), (2, 3), (5, 6), (7, 4)]
    assert (bracket(10).left[-1], bracket(10).right[-1]) == (17, 14)


def tournament_winner(scores, tree):
    """Bottom-up tournament where every match goes to the higher score (ties: left)."""
    winner = {leaf: leaf for leaf in range(tree.classes)}
    for n in range(tree.classes - 1):
        a, b = winner[tree.left[n]], winner[tree.right[n]]
        winner[tree.classes + n] = a if scores[a] >= scores[b] else b
    return winner[tree.root]


def test_scoring_tournament_is_the_argmax():
    """[D2] for any bracket, score-decided matches crown argmax (ties to the lowest class): the
    plain tournament above, the package's prediction (``predicted_class``) and its subtree
    winners (``_winner`` over each node's class interval, which the training walk uses)."""
    from pyvw_lite.reductions.multiclass import predicted_class
    from pyvw_lite.reductions.sft import _winner
    rng = np.random.default_rng(2)
    for classes in range(1, 30):
        tree = bracket(classes)
        out_pred, out_scores = np.zeros(1, np.int64), np.zeros((1, classes))
        for _ in range(20):
            scores = rng.integers(0, 4, size=classes).astype(float)  # many ties
            best = int(np.argmax(scores))
            assert tournament_winner(scores, tree) == best
            assert predicted_class(scores, 0, out_pred, out_scores, False) == best
            assert out_pred[0] == best
            for node in range(2 * classes - 1):
                lo, hi = int(tree.lo[node]), int(tree.hi[node])
                assert _winner(scores, lo, hi) == lo + int(np.argmax(scores[lo:hi + 1]))


def sft_matches(scores, truth, tree, step, winners):
    """The scoring filter tree's training walk written out plainly: at each ancestor of the true
    class's leaf, the match between the current winners of its two subtrees (``winners``) if
    the true class is one of them; ``step(scores, c1, c2, side)`` applies the match's update,
    and the true class goes on only if it wins after it (SPEC erratum 6 carried to §D.3)."""
    scores = scores.copy()
    out, child = [], truth
    while tree.parent[child] >= 0:
        n, c1, c2 = winners(scores, child)
        if n < 0:
            break
        side = 1 if c1 == truth else -1
        out.append((n, c1, c2, side))
        step(scores, c1, c2, side)
        if (scores[c1] - scores[c2] >= 0) != (side == 1):
            break
        child = n + tree.classes
    return out


def plain_winners(tree, truth):
    def winners(scores, child):
        n = tree.parent[child] - tree.classes
        left, right = tree.left[n], tree.right[n]
        c1 = tree.lo[left] + int(np.argmax(scores[tree.lo[left]:tree.hi[left] + 1]))
        c2 = tree.lo[right] + int(np.argmax(scores[tree.lo[right]:tree.hi[right] + 1]))
        return (n, c1, c2) if truth in (c1, c2) else (-1, c1, c2)
    return winners


def test_sft_training_walk_plays_the_true_class_matches():
    """[D4] between 1 and depth matches; exactly depth(leaf) when the true class is predicted;
    the label marks the side of the true class, which is one of the two competitors; the
    kernel's match finder agrees with the plain walk."""
    from pyvw_lite.reductions.sft import _match_above
    rng = np.random.default_rng(4)
    for classes in (2, 3, 5, 8, 13):
        tree = bracket(classes)
        for _ in range(200):
            scores = rng.normal(size=classes)
            truth = int(rng.integers(classes))
            gain = rng.uniform(0.0, 2.0)

            def step(s, c1, c2, side):  # a partial step towards the true class
                s[c1] += side * gain / 2
                s[c2] -= side * gain / 2

            matches = sft_matches(scores, truth, tree, step, plain_winners(tree, truth))
            kernel = sft_matches(scores, truth, tree, step, lambda s, child: _match_above(
                s, truth, child, classes, tree.left, tree.right, tree.parent, tree.lo, tree.hi))
            assert kernel == matches
            assert 1 <= len(matches) <= tree.depth(truth)
            if int(np.argmax(scores)) == truth:
                assert len(matches) == tree.depth(truth)
            for n, c1, c2, side in matches:
                assert truth in (c1, c2) and (side == 1) == (c1 == truth)
                left = tree.left[n]
                assert (tree.lo[left] <= truth <= tree.hi[left]) == (side == 1)


@pytest.mark.parametrize("classes", [3, 5, 8])
def test_sft_learns_a_heavy_example_all_the_way_up(classes):
    """A class that starts out losing inside its own subtree still climbs the whole bracket
    when every match it plays is won after its update: one example with a large importance
    weight is then predicted, whatever the model learned before (a pre-update filter stops
    after the first match)."""
    rng = np.random.default_rng(classes)
    for trial in range(10):
        ws = Workspace(f"--sft {classes} --quiet")
        ws.learn([f"{rng.integers(1, classes + 1)} |f a{rng.integers(4)} b{rng.integers(4)}"
                  for _ in range(300)])
        truth = int(np.argmin(ws.predict_with_scores("|f a1 b2")[1][0]))  # the worst class
        ws.learn(f"{truth + 1} 1000 |f a1 b2")
        assert ws.predict("|f a1 b2") == truth + 1, trial  # classes as the data writes them


@pytest.mark.parametrize("stride", [CLASS_STRIDE, LEGACY_CLASS_STRIDE])
def test_class_slots_never_collide_with_each_other(stride):
    """[D5] one feature's K class slots are distinct, for the contiguous layout (P_C = 1) and
    the spread one of SPEC §D.5 (odd multiplier), for K <= 32 at b >= 16."""
    for bits in (16, 18, 24):
        mask = (1 << bits) - 1
        offsets = {(c * stride) & mask for c in range(32)}
        assert len(offsets) == 32
        rng = np.random.default_rng(bits)
        for fh in rng.integers(0, 1 << 32, size=50):
            assert len({(int(fh) + c * stride) & mask for c in range(32)}) == 32


def test_a_latent_vector_lives_in_its_linear_weights_row():
    """[D5b] (class, latent dim) never collide: a feature's latent vector for class c is the last
    k columns of the row of its linear weight (place(fh) + c·P_C) & mask, so the rows a dyadic model
    fills are exactly the linear model's (SPEC §D.5 hashes each dim to a row of its own;
    README)."""
    from pyvw_lite.io.hashing import CONSTANT_HASH, hash_bytes
    ws = Workspace("--sft 4 --dyad rt --rank 3 -b 18 --quiet")
    ws.learn(["2 |rater r_1 |task t_1", "4 |rater r_2 |task t_1", "1 |rater r_1 |task t_9"])
    latent = ws.weights[:, -3:]
    rows = set(np.flatnonzero(np.any(latent != 0, axis=1)).tolist())
    assert rows == set(np.flatnonzero(ws.touched).tolist())
    features = [hash_bytes(f, hash_bytes(ns)) for ns, f in
                [("rater", "r_1"), ("rater", "r_2"), ("task", "t_1"), ("task", "t_9")]]
    assert ws.slot_multiplier == HASH_MIX
    linear_rows = {(int(place_array(fh, HASH_MIX, ws.mask)) + c) & ws.mask for fh in features
                   for c in range(4)}
    assert rows and rows <= linear_rows
    constant = {(int(place_array(CONSTANT_HASH, HASH_MIX, ws.mask)) + c) & ws.mask
                for c in range(4)}
    assert not (rows & constant)  # not in a dyad
    assert np.all(ws.weights[sorted(rows), 0] != 0)  # each trained: its linear weight moved too


def test_models_with_the_spread_class_layout_keep_it(tmp_path):
    """A model saved before the contiguous layout (no class stride recorded) predicts as saved."""
    from pyvw_lite import __version__
    from pyvw_lite.io.model_io import save_model
    from pyvw_lite.learners.gd import P_CLASS_STRIDE
    lines = gzip.decompress((HERE / "rt5_20k.vw.gz").read_bytes()).decode().splitlines()[:3000]
    old = Workspace("--oaa 5 --quiet")
    old.params[P_CLASS_STRIDE] = LEGACY_CLASS_STRIDE
    old.slot_multiplier = 1
    old.learn(lines)
    data = old.model_data()
    del data.state["class_stride"]
    del data.state["slot_multiplier"]
    save_model(str(tmp_path / "old"), data, __version__)
    loaded = Workspace(["-i", str(tmp_path / "old"), "--quiet"])
    assert loaded.params[P_CLASS_STRIDE] == LEGACY_CLASS_STRIDE and loaded.slot_multiplier == 1
    np.testing.assert_array_equal(loaded.predict(lines), old.predict(lines))
    new = Workspace("--oaa 5 --quiet")
    new.learn(lines)
    new.save(str(tmp_path / "new"))
    assert Workspace(["-i", str(tmp_path / "new"), "--quiet"]).params[P_CLASS_STRIDE] == 1


def _digit_data(rng, n, centres, names):
    y = rng.integers(centres.shape[0], size=n)
    x = np.maximum(centres[y] + rng.normal(scale=1.5, size=(n, centres.shape[1])), 0.0)
    return [f"{c + 1} | " + " ".join(f"{names}{j}:{v:.3f}" for j, v in enumerate(row) if v)
            for c, row in zip(y, x)], y


@pytest.mark.parametrize("reduction", ["--oaa 10", "--sft 10", "--ect 10",
                                       "--sft 10 --dyad ab --rank 2"])
def test_digit_named_features_learn_as_well_as_other_names(reduction):
    """Features named "0", "1", ... (libsvm conversions, VW's own examples) hash to consecutive
    numbers; with classes one slot apart, feature j's class c was feature j+1's class c-1 and a
    --oaa 10 model of sklearn's digits scored 0.45 where VW scores 0.96.  The hashes'
    mixing (``gd.place``) keeps them apart: the same data under digit names and under
    letter-prefixed names is learned equally well."""
    accuracy = {}
    for names in ("", "f"):
        rng = np.random.default_rng(7)
        centres = rng.uniform(0.0, 4.0, size=(10, 40))
        train, _ = _digit_data(rng, 3000, centres, names)
        test, truth = _digit_data(rng, 1000, centres, names)
        if "--dyad" in reduction:  # a pair of namespaces for the latent term
            train = [line.replace(" | ", " |a a |b ") for line in train]
            test = [line.replace(" | ", " |a a |b ") for line in test]
        ws = Workspace(f"{reduction} --quiet")
        ws.learn(train)
        ws.learn(train)
        predicted = np.asarray(ws.predict([line.split(" ", 1)[1] for line in test]))
        accuracy[names] = float(np.mean(predicted == truth + 1))
    assert accuracy["f"] > 0.85, accuracy
    assert accuracy[""] >= accuracy["f"] - 0.03, accuracy


def test_multiclass_models_record_the_slot_multiplier(tmp_path):
    """A multiclass model records how it places hashes (mixed) and a binary one multiplies by 1,
    as VW places them."""
    lines = ["1 | 0:1 1:2", "2 | 1:1 2:2", "3 | 2:1 0:2"]
    ws = Workspace("--oaa 3 --quiet")
    ws.learn(lines)
    ws.save(str(tmp_path / "m"))
    loaded = Workspace(["-i", str(tmp_path / "m"), "--quiet"])
    assert loaded.slot_multiplier == HASH_MIX
    np.testing.assert_array_equal(loaded.predict(lines), ws.predict(lines))
    assert Workspace("--quiet").slot_multiplier == 1
    assert Workspace("--oaa 3 --vw_layout --quiet").slot_multiplier == 4


def test_sft_learns_separable_classes():
    """[D6] SFT + linear hinge, 3000 online examples of separable 4-class data: test error small."""
    rng = np.random.default_rng(6)
    centres = rng.normal(scale=3.0, size=(4, 5))

    def sample(n):
        y = rng.integers(4, size=n)
        x = centres[y] + rng.normal(scale=0.5, size=(n, 5))
        return [f"{c + 1} |f " + " ".join(f"x{j}:{v:.4f}" for j, v in enumerate(row))
                for c, row in zip(y, x)], y
    train, _ = sample(3000)
    test, truth = sample(1000)
    ws = Workspace("--sft 4 --loss_function hinge --quiet")
    ws.learn(train)
    predicted = ws.predict([line.split(" ", 1)[1] for line in test])
    assert np.mean(predicted != truth + 1) < 0.05


@pytest.mark.parametrize("reduction,layout,floor", [
    ("oaa", [], 0.99), ("ect", [], 0.995), ("oaa", ["--vw_layout"], 1.0),
    ("ect", ["--vw_layout"], 1.0)])
def test_agreement_with_vw_on_rater_task_data(reduction, layout, floor, tmp_path):
    """20,000 rater-task lines at -b 24: predictions equal VW 9.11.9's except where hash
    collisions (placed differently by the two weight layouts) change a score; with VW's layout
    (--vw_layout) on every line, which shows that the layout is the only difference."""
    data = tmp_path / "rt5.vw"
    data.write_bytes(gzip.decompress((HERE / "rt5_20k.vw.gz").read_bytes()))
    out = tmp_path / "p.txt"
    run_workspace(["-d", str(data), f"--{reduction}", "5", "-b", "24", "-p", str(out), "--quiet",
                   *layout])
    ours = np.array(out.read_text().split(), dtype=int)
    theirs = np.array(gzip.decompress((HERE / f"vw.{reduction}.b24.predict.gz").read_bytes())
                      .split(), dtype=int)
    assert ours.shape == theirs.shape == (20000,)
    assert np.mean(ours == theirs) >= floor


@pytest.mark.parametrize("case, flags", [
    ("oaa4.q_ab_cubic_abc", ["--oaa", "4", "-q", "ab", "--cubic", "abc"]),
    ("ect4.q_all", ["--ect", "4", "-q", "::"])])
def test_vw_layout_places_interactions_as_vw(case, flags, tmp_path):
    """VW crosses the class-scaled indices (hash·W); W is a power of two, so the crossed slot is
    the crossed hash times W, and --vw_layout reproduces VW 9.11.9's predictions at -b 14 (where
    collisions are many: the default layout differs on about half of these lines)."""
    source = Path(__file__).parent / "golden" / "interactions"
    lines = []
    for i, line in enumerate((source / "data.vw").read_text().splitlines()):
        head, rest = line.split("|", 1)  # the label becomes class 1 + i mod 4, the rest stays
        lines.append(" ".join([str(1 + i % 4)] + head.split()[1:]) + " |" + rest)
    data, out = tmp_path / "mc4.vw", tmp_path / "p.txt"
    data.write_text("\n".join(lines) + "\n")
    run_workspace(["-d", str(data), *flags, "-b", "14", "--vw_layout", "-p", str(out), "--quiet"])
    assert out.read_text() == (source / f"vw.{case}.predict").read_text()


def invert_hash_entries(text: str) -> dict[int, dict[str, list[float]]]:
    """``index -> {name: values}`` of a --invert_hash file's weight lines."""
    entries: dict[int, dict[str, list[float]]] = {}
    for line in text.splitlines():
        if line.count(":") >= 2 and ("^" in line or line.startswith("Constant")):
            name, index, values = line.split(":", 2)
            entries.setdefault(int(index), {})[name] = [float(v) for v in values.split()]
    return entries


@pytest.mark.parametrize("reduction", ["oaa", "ect"])
def test_invert_hash_names_every_class_as_vw(reduction, tmp_path):
    """Every class (node) slot a feature uses is named ``name[c]`` at VW's index (--vw_layout)
    with VW's values; zero weights are left out.  Where two features share a slot VW names one
    of them and pyvw-lite both."""
    data = tmp_path / "d.vw"
    data.write_text("".join(gzip.decompress((HERE / "rt5_20k.vw.gz").read_bytes()).decode()
                            .splitlines(keepends=True)[:300]))
    out = tmp_path / "ih.txt"
    run_workspace(["-d", str(data), f"--{reduction}", "5", "--vw_layout", "--invert_hash",
                   str(out), "--quiet"])
    ours = invert_hash_entries(out.read_text())
    theirs = invert_hash_entries(gzip.decompress(
        (HERE / f"vw.{reduction}.rt300.invert_hash.gz").read_bytes()).decode())
    assert set(ours) == set(theirs) and len(theirs) > 1500
    for index, names in theirs.items():
        (name, values), = names.items()
        assert ours[index][name] == pytest.approx(values, rel=1e-4, abs=1e-6), (index, name)
    suffixed = {name.rsplit("[", 1)[1] for names in ours.values() for name in names if "[" in name}
    assert suffixed == {f"{c}]" for c in range(1, 5 if reduction == "oaa" else 4)}


def same_text_and_numbers(ours: str, theirs: str) -> bool:
    """Equal line for line, numbers to float32 precision (VW keeps weights in float32)."""
    number = re.compile(r"-?[\d.]+(?:e[-+]?\d+)?")
    mine, other = ours.splitlines(), theirs.splitlines()
    return len(mine) == len(other) and all(
        number.split(a) == number.split(b) and all(
            float(x) == pytest.approx(float(y), rel=2e-5, abs=1e-6)
            for x, y in zip(number.findall(a), number.findall(b), strict=True))
        for a, b in zip(mine, other))


def test_multiclass_audit_as_vw(tmp_path):
    """--audit writes a block per class under --oaa (each class's score and its weights) and,
    with -t under --ect, a block per node on the prediction path, as VW 9.11.9 does."""
    lines = gzip.decompress((HERE / "rt5_20k.vw.gz").read_bytes()).decode().splitlines(True)
    train, data = tmp_path / "train.vw", tmp_path / "d.vw"
    train.write_text("".join(lines[:300]))
    data.write_text("".join(lines[:60]))
    out = run_workspace(["-d", str(data), "--oaa", "5", "--vw_layout", "--audit", "--quiet"])[0]
    assert same_text_and_numbers(out, gzip.decompress(
        (HERE / "vw.oaa.rt60.audit.gz").read_bytes()).decode())
    assert out.count("\n\t") == 5 * 60
    model = tmp_path / "m"
    run_workspace(["-d", str(train), "--ect", "5", "--vw_layout", "-f", str(model), "--quiet"])
    out = run_workspace(["-d", str(data), "-t", "-i", str(model), "--audit", "--quiet"])[0]
    assert same_text_and_numbers(out, gzip.decompress(
        (HERE / "vw.ect.rt60.test_audit.gz").read_bytes()).decode())
    assert "@" not in out  # VW shows the adaptive sums only while learning


@pytest.mark.parametrize("flags, raw", [
    (["--oaa", "3"], " 1:0 2:0 3:0 tg\n 1:0.253466 2:-0.253466 3:-0.253466\n"),
    (["--oaa", "3", "--audit"], " 1:0 2:0 3:0 tg\n 1:0.253466 2:-0.253466 3:-0.253466\n"),
    (["--oaa", "3", "--scores"], ""), (["--oaa", "3", "--scores", "--audit"], ""),
    (["--ect", "3"], "")])
def test_raw_predictions_of_multiclass_models_as_vw(flags, raw, tmp_path):
    """VW 9.11.9's -r: every class's score under --oaa (leading space, then the tag); nothing
    under --ect or when -p already carries the scores."""
    data = tmp_path / "d.vw"
    data.write_text("1 tg|a x\n2 |a y\n")
    raw_file, pred_file = tmp_path / "r", tmp_path / "p"
    out, err, code = run_workspace(["-d", str(data), *flags, "-r", str(raw_file), "-p",
                                    str(pred_file), "--quiet"])
    assert code == 0 and raw_file.read_text() == raw
    if "--scores" in flags:
        assert pred_file.read_text() == "1:0 2:0 3:0 tg\n1:0.253466 2:-0.253466 3:-0.253466\n"


@pytest.mark.parametrize("flags, fixture", [
    (["--probabilities", "--loss_function", "logistic"], "probabilities"),
    (["--scores"], "scores")])
def test_scoring_oaa_table_as_vw(flags, fixture, tmp_path):
    """VW's preamble (oaa-prob / oaa-scores, SCALARS), every row of the table (with the
    predicted class's probability, ``3(24%)``) and the summary, byte for byte."""
    lines = gzip.decompress((HERE / "rt5_20k.vw.gz").read_bytes()).decode().splitlines(True)
    (tmp_path / "d.vw").write_text("".join(lines[:60]))
    err = run_workspace(["-d", "d.vw", "--oaa", "5", *flags, "-P", "1", "--vw_layout"],
                        cwd=tmp_path)[1]
    assert err == (HERE / f"vw.oaa.rt60.{fixture}.stderr").read_text()


def test_raw_predictions_number_the_classes_under_named_labels(tmp_path):
    """VW writes -r with class numbers even when -p names them."""
    data = tmp_path / "d.vw"
    data.write_text("cat tg|a x\ndog |a y\n")
    raw, pred = tmp_path / "r", tmp_path / "p"
    run_workspace(["-d", str(data), "--oaa", "3", "--named_labels", "cat,dog,emu", "-r",
                   str(raw), "-p", str(pred), "--quiet"])
    assert raw.read_text() == " 1:0 2:0 3:0 tg\n 1:0.253466 2:-0.253466 3:-0.253466\n"
    assert pred.read_text() == "cat tg\ncat\n"


G40 = ("3 2 2 1 2 1 2 2 3 3 1 5 1 3 3 1 4 3 1 3 2 2 2 3 5 3 2 4 2 2 2 1 4 1 5 1 1 5 2 3").split()


@pytest.mark.parametrize("reduction,loss,predictions", [
    # VW 9.11.9 on these labels with K = 3 (raters and tasks as below), `-p`
    ("--oaa", "0.875000", "1 3 3 2 2 2 2 2 2 2 1 2 2 2 1 2 1 1 2 1 3 3 3 2 3 1 1 2 3 2 3 3 2 2 2 2 "
                          "3 2 1 2"),
    ("--ect", "0.850000", "1 3 3 2 2 2 2 2 2 2 2 2 2 2 2 2 1 1 2 1 3 1 2 2 1 1 1 2 3 2 3 2 2 2 2 2 "
                          "1 2 1 2"),
])
def test_out_of_range_labels_as_vw(tmp_path, reduction, loss, predictions):
    """VW 9.11.9 learns a label above K under --oaa as no class's example (every class -1: it
    warns of setting the label to K but learns from the label as read) and under --ect predicts
    it without learning; both count it as a mistake and show it as read."""
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{y} |rater r_{i % 7} |task t_{i % 11}\n" for i, y in enumerate(G40)))
    out, err, _ = run_workspace(["-d", str(data), reduction, "3", "-p", str(tmp_path / "p")])
    assert (tmp_path / "p").read_text().split() == predictions.split()
    assert f"average loss = {loss}" in err and "skipped examples" not in err
    assert f"{data}:12: label 5 is not in {{1,3}}; " in out


def test_labels_indexing_names_and_out_of_range(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("0 |a x\n2 |a y\n3 |a z\n2.5 |a w\n")
    out, err, code = run_workspace(["-d", str(data), "--oaa", "3"])
    assert "labels are now considered 0-indexed" in out
    assert "label 3 is not in {0,2}; learned as no class's example" in out
    assert "is not an integer" in out
    out, err, code = run_workspace(["-d", str(data), "--ect", "3", "--indexing", "1"])
    assert "label 0 is not in {1,3}; predicted, not learned" in out
    assert "skipped examples = 1" in err
    named = tmp_path / "n.vw"
    named.write_text("cat |a x\ndog |a y\nemu |a z\n")
    out, err, code = run_workspace(["-d", str(named), "--sft", "2", "--named_labels", "cat,dog",
                                    "-p", str(tmp_path / "p")])
    assert "'emu' is not one of --named_labels cat,dog; predicted, not learned" in out
    predictions = (tmp_path / "p").read_text().split()  # one per line, 'emu' not lost
    assert len(predictions) == 3 and set(predictions) <= {"cat", "dog"}
    assert "average loss = 0.666667" in err  # emu is never right ("dog" was not predicted)


def test_an_unknown_named_label_is_predicted_and_shown_as_vw():
    """VW 9.11.9 on cat/dog/bird/cat/fish with --oaa 3 --named_labels cat,dog,bird: 'Missing
    named label', then the line is predicted and learned as no class's example; VW's -p is
    cat cat dog cat cat."""
    import io
    lines = ["cat |f a b", "dog |f c", "bird |f a c", "cat |f a", "fish |f z"]
    err = io.StringIO()
    ws = Workspace("--oaa 3 --named_labels cat,dog,bird -P 1", stderr=err)
    predictions = ws.learn(ws.parse(lines))  # classes as the data names them, as predict's
    assert predictions.tolist() == ["cat", "cat", "dog", "cat", "cat"]
    ws.finish()


def test_label_indexing_is_decided_in_stream_order(tmp_path):
    """Rows before the first 0 keep VW's default 1..K; reports come in line order."""
    data = tmp_path / "d.vw"
    data.write_text("2 |a x\n4 |a y\n1.5 |a q\n0 |a z\n3 |a w\n1 |a v\n")
    out = run_workspace(["-d", str(data), "--oaa", "3"])[0]
    reports = [line for line in out.splitlines() if line.startswith("[")]
    assert reports == [
        f"[warning] {data}:2: label 4 is not in {{1,3}}; learned as no class's example",
        f"[warning] {data}:3: multiclass label 1.5 is not an integer; example skipped",
        "[info] label 0 found -- labels are now considered 0-indexed.",
        f"[warning] {data}:5: label 3 is not in {{0,2}}; learned as no class's example"]
    data.write_text("1 |a x\n3 |a y\n0 |a z\n")
    out = run_workspace(["-d", str(data), "--sft", "3"])[0]
    assert "[info] label 3 found -- labels are now considered 1-indexed." in out
    assert f"{data}:3: label 0 is not in {{1,3}}; predicted, not learned" in out
    out = run_workspace(["-d", str(data), "--ect", "3"])[0]  # VW's --ect: always 1..K
    assert "considered" not in out and f"{data}:3: label 0 is not in {{1,3}}" in out


def test_label_indexing_does_not_depend_on_how_lines_are_batched():
    """The same stream cut into batches anywhere gives the same classes."""
    from pyvw_lite.io.vw_text import parse_buffer, split_lines
    labels = [2, 1, 3, 1, 2, 0, 2, 1]
    for cut in range(len(labels) + 1):
        reduction = Workspace(["--oaa", "4", "--quiet"]).reduction
        classes = []
        for part in (labels[:cut], labels[cut:]):
            data = "".join(f"{label} |a x\n" for label in part).encode()
            if not data:
                continue
            buf = np.frombuffer(data, np.uint8)
            starts, ends, _ = split_lines(buf, final=True)
            batch = parse_buffer(buf, starts, ends, record_spans=True, source="t.vw")
            classes += reduction.classes_of(batch, np.arange(len(part)),
                                            lambda row, text, outcome: None,
                                            lambda text: None).tolist()
        assert classes == [1, 0, 2, 0, 1, 0, 2, 1], cut  # 1..K up to the 0, then 0..K-1


@pytest.mark.parametrize("reduction,extra", [("oaa", ""), ("ect", ""), ("sft", ""),
                                             ("oaa", "--dyad rt --rank 2"),
                                             ("sft", "--dyad rt --rank 2")])
def test_multiclass_models_roundtrip_and_resume(reduction, extra, tmp_path):
    data = tmp_path / "d.vw"
    data.write_bytes(gzip.decompress((HERE / "rt5_20k.vw.gz").read_bytes())[:200_000])
    model = tmp_path / "m"
    run_workspace(["-d", str(data), f"--{reduction}", "5", "-f", str(model), "--quiet",
                   *extra.split()])
    a, b = tmp_path / "a", tmp_path / "b"
    run_workspace(["-d", str(data), "-t", "-i", str(model), "-p", str(a), "--quiet"])
    run_workspace(["-d", str(data), "-t", f"--{reduction}", "5", "-i", str(model), "-p", str(b),
                   "--quiet", *extra.split()])
    assert a.read_text() == b.read_text() and len(a.read_text().split()) > 1000


@pytest.mark.parametrize("flags, message", [
    (["--sft", "3"], "not --sft or --dyad"), (["--oaa", "3", "--dyad", "rt"], "not --sft or --dyad")])
def test_vw_layout_refuses_what_it_cannot_reproduce(flags, message):
    from pyvw_lite.options import OptionError
    with pytest.raises(OptionError, match=message):
        Workspace(["--vw_layout", "--quiet", *flags])


def test_vw_layout_is_kept_in_the_model(tmp_path):
    lines = gzip.decompress((HERE / "rt5_20k.vw.gz").read_bytes()).decode().splitlines()[:5000]
    trained = Workspace("--oaa 5 --vw_layout --quiet")
    trained.learn(lines)
    trained.save(str(tmp_path / "m"))
    loaded = Workspace(["-i", str(tmp_path / "m"), "--quiet"])
    assert loaded.slot_multiplier == 8
    np.testing.assert_array_equal(loaded.predict(lines), trained.predict(lines))
    plain = Workspace("--oaa 5 --quiet")
    plain.weights[...] = trained.weights  # the same table read through the other layout
    assert np.mean(plain.predict(lines) != trained.predict(lines)) > 0.05


@pytest.mark.parametrize("flag", ["--oaa", "--ect", "--ft", "--sft"])
@pytest.mark.parametrize("classes", ["0", "-2"])
def test_a_reduction_without_classes_is_refused(flag, classes):
    """``--oaa 0`` is an error, not a silent binary run."""
    from pyvw_lite.options import OptionError
    message = f"option '{flag}': needs 1 to 65536 classes \\(got {classes}\\)"
    with pytest.raises(OptionError, match=message):
        Workspace([flag, classes, "--quiet"])
