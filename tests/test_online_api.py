"""river-style API: one example at a time and batched, same results."""
import doctest
import warnings

import numpy as np
import pytest

from pyvw_lite.api import online, sklearn as sk_api
from pyvw_lite.api.online import OnlineLearner, features_text


def test_docstring_examples_run():
    """Every module with a runnable example in its docstrings."""
    from pyvw_lite import datasets, workspace
    from pyvw_lite.api import crowd
    for module in (online, sk_api, crowd, datasets, workspace):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_feature_text_forms():
    assert features_text({"rater": {"r 1": 1}, "task": {"t:9": 2}}) == \
        "|rater r_1:1.0 |task t_9:2.0"
    assert features_text({"f": 0.5}) == "| f:0.5"
    assert features_text("|a x") == "|a x"


def test_learn_one_equals_learn_many():
    rng = np.random.default_rng(3)
    examples = [({"r": {f"r{rng.integers(5)}": 1}, "t": {f"t{rng.integers(20)}": 1}},
                 int(rng.integers(1, 4))) for _ in range(300)]
    one, many = OnlineLearner("--sft 3"), OnlineLearner("--sft 3")
    for x, y in examples:
        one.learn_one(x, y)
    many.learn_many([x for x, _ in examples], [y for _, y in examples])
    np.testing.assert_array_equal(one.workspace.weights, many.workspace.weights)
    probabilities = one.predict_proba_one(examples[0][0])
    assert set(probabilities) == {1, 2, 3} and abs(sum(probabilities.values()) - 1) < 1e-12
    assert one.predict_one(examples[0][0]) in {1, 2, 3}
    hits = [one.predict_one(x) == y for x, y in examples]  # integer labels compare equal
    assert np.mean(hits) > 0.46  # measured 0.49; chance is 1/3


def test_a_malformed_example_raises_instead_of_vanishing():
    import pytest
    from pyvw_lite.workspace import ParseError
    model = OnlineLearner("--loss_function logistic")
    with pytest.raises(ParseError, match="label 'yes' is not a number"):
        model.learn_one({"f": {"x": 1.0}}, "yes")
    with pytest.raises(ParseError, match="'x:nan' is not finite"):
        model.learn_one({"f": {"x": float("nan")}}, 1)
    assert not model.workspace.weights.any()  # nothing was learned from either
    lenient = OnlineLearner("--loss_function logistic", strict_parse=False)
    # a skipped example keeps its place: NaN (None for a class) where its output would be
    progressive = lenient.learn_many([{"f": {"x": 1.0}}, {"f": {"x": 1.0}}], ["yes", 1])
    assert progressive.shape == (2,) and np.isnan(progressive[0]) and progressive[1] == 0.0
    assert np.isnan(lenient.predict_one({"f": {"x": float("nan")}}))  # was an IndexError
    assert np.isfinite(lenient.predict_many([{"f": {"x": float("inf")}}, {"f": {"x": 1}}])[1])
    classes = OnlineLearner("--oaa 3", strict_parse=False)
    assert classes.predict_many([{"x": float("nan")}, {"x": 1.0}]).tolist() == [None, 1]


def test_a_bad_class_label_raises_with_the_problem_only():
    """The exception names the label and the line; 'example skipped' belongs to the
    lenient mode's warning, not to an error that stops the call."""
    import pytest
    from pyvw_lite.workspace import ParseError
    model = OnlineLearner("--oaa 3 --named_labels cat,dog,emu")
    with pytest.raises(ParseError, match=r"'zebra' is not one of --named_labels cat,dog,emu "
                                         r"\(line: 'zebra 1.0 \|f x:1.0'\)$"):
        model.learn_one({"f": {"x": 1.0}}, "zebra")
    with pytest.raises(ParseError, match=r"multiclass label 1.5 is not an integer \(line"):
        OnlineLearner("--oaa 3").learn_one({"f": {"x": 1.0}}, 1.5)


def test_categorical_values_and_empty_examples():
    assert features_text({"color": "red", "size": 3}) == "| color=red size:3.0"
    assert features_text({}) == "|"
    model = OnlineLearner("--loss_function logistic")
    for _ in range(10):
        model.learn_one({"color": "red"}, 1)
        model.learn_one({"color": "blue"}, -1)
    assert model.predict_one({"color": "red"}) > 0.5 > -0.5 > model.predict_one({"color": "blue"})
    model.learn_one({}, 1)  # the constant alone: an example, not a blank line that vanishes
    assert np.isfinite(model.predict_one({}))
    assert OnlineLearner("--oaa 3").predict_one({}) == 1
    try:
        model.learn_one({"size": None}, 1)
    except ValueError as exc:
        assert "feature 'size': value None" in str(exc)
    else:
        raise AssertionError("a None value was accepted")


def test_learn_many_refuses_unequal_lengths_instead_of_dropping_the_tail():
    import pytest
    model = OnlineLearner()
    X = [{"f": {"a": 1.0}}] * 3
    with pytest.raises(ValueError, match="3 examples, 2 labels and 3 weights"):
        model.learn_many(X, [1.0, 2.0])
    with pytest.raises(ValueError, match="3 examples, 3 labels and 1 weights"):
        model.learn_many(X, [1.0, 2.0, 3.0], weights=[1.0])
    assert not model.workspace.weights.any()  # nothing learned from the part that fitted


def test_bool_labels_are_the_binary_classes():
    import pytest
    for options, negative in [("", -1), ("--loss_function logistic --logistic_min 0", 0)]:
        as_bool, as_number = OnlineLearner(options), OnlineLearner(options)
        for _ in range(5):
            as_bool.learn_many([{"x": 1.0}, {"y": 1.0}], [True, np.bool_(False)])
            as_number.learn_many([{"x": 1.0}, {"y": 1.0}], [1, negative])
        np.testing.assert_array_equal(as_bool.workspace.weights, as_number.workspace.weights)
        assert as_bool.predict_one({"x": 1.0}) > 0 > as_bool.predict_one({"y": 1.0})
        # the probabilities are keyed by the labels the model was taught
        assert set(as_bool.predict_proba_one({"x": 1.0})) == {1, negative}
    with pytest.raises(ValueError, match="a bool label is for a binary model; this one has 3"):
        OnlineLearner("--oaa 3").learn_one({"x": 1.0}, True)


def test_a_logistic_label_zero_is_not_silent():
    """VW reads a logistic label 0 as the soft label ½; a river user's 0 means the negative
    class, so the learner warns once (the command line prints an [info] line)."""
    learner = OnlineLearner("--loss_function logistic")
    with pytest.warns(UserWarning, match="soft label"):
        learner.learn_one({"f": {"a": 1}}, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        learner.learn_one({"f": {"a": 1}}, 0)  # once
        OnlineLearner("--loss_function logistic --logistic_min 0").learn_one({"f": {"a": 1}}, 0)
        OnlineLearner("--loss_function logistic").learn_one({"f": {"a": 1}}, False)


def test_workspace_predict_of_one_line_is_a_number():
    from pyvw_lite import Workspace
    ws = Workspace("--quiet")
    ws.learn(["1 |a x", "2 |a y"])
    one = ws.predict("|a x")
    assert isinstance(one, float)
    assert ws.predict(["|a x"]).shape == (1,)
    multi = Workspace("--oaa 3 --quiet")
    multi.learn(["2 |a x"])
    assert isinstance(multi.predict("|a x"), int)
