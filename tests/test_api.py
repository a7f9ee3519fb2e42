"""The Python API shares the option table with the command line."""
import numpy as np
import pytest

from pyvw_lite import Workspace
from pyvw_lite.options import OptionError


def test_workspace_string_and_keywords_are_the_same_options():
    a = Workspace("--loss_function logistic -b 20 -q rt --quiet")
    b = Workspace(loss_function="logistic", bit_precision=20, quadratic=["rt"], quiet=True)
    assert a.options.as_dict() == b.options.as_dict()
    with pytest.raises(OptionError):
        Workspace(not_an_option=3)
    with pytest.raises(OptionError, match=r"unrecognised option 'pases' \(did you mean 'passes'"):
        Workspace(pases=3)


def test_learn_predict_save_load_roundtrip(tmp_path, rater_task_file):
    lines = rater_task_file.read_text().splitlines()
    ws = Workspace("--loss_function logistic --quiet")
    progressive = ws.learn(lines)
    assert progressive.shape == (len(lines),) and progressive[0] == 0.0
    before = ws.predict(lines[:50])
    assert np.array_equal(before, ws.predict(lines[:50]))  # predict changes nothing
    ws.save(str(tmp_path / "m.pvw"))
    again = Workspace(f"-i {tmp_path / 'm.pvw'} --quiet")
    np.testing.assert_array_equal(again.predict(lines[:50]), before)


def test_learning_from_a_parsed_batch_equals_learning_from_lines(rater_task_file):
    lines = rater_task_file.read_text().splitlines()[:500]
    a, b = Workspace("--quiet"), Workspace("--quiet")
    a.learn(lines)
    b.learn(b.parse(lines))
    np.testing.assert_array_equal(a.weights, b.weights)


def test_a_separable_problem_is_learned():
    ws = Workspace("--loss_function logistic --quiet")
    for _ in range(20):
        ws.learn(["1 |f good", "-1 |f bad"])
    good, bad = ws.predict(["|f good", "|f bad"])
    assert good > 1.0 and bad < -1.0


def test_determinism():
    lines = [f"{1 if i % 3 else -1} |a f{i % 7} |b g{i % 5}" for i in range(300)]
    a, b = Workspace("--quiet --loss_function hinge"), Workspace("--quiet --loss_function hinge")
    assert np.array_equal(a.learn(lines), b.learn(lines))


def test_last_rows_says_which_lines_the_outputs_belong_to():
    ws = Workspace(quiet=True)
    progressive = ws.learn(["1 |a x", "zz |a y", "", "2 |a z"])  # a bad label, a blank line
    assert progressive.size == 2 and ws.last_rows.tolist() == [0, 3]
    assert ws.predict(["|a x", "1 |a x:nan"]).size == 1 and ws.last_rows.tolist() == [0]


def test_finish_writes_the_files_the_options_name(tmp_path):
    """As VW's Workspace.finish(): -f and --readable_model are written at the end."""
    model, text = tmp_path / "m.pvw", tmp_path / "m.txt"
    ws = Workspace(f"-f {model} --readable_model {text} --quiet")
    ws.learn(["1 |a x", "-1 |a y"])
    assert not model.exists()
    ws.finish()
    again = Workspace(f"-i {model} --quiet")
    np.testing.assert_array_equal(again.predict("|a x"), ws.predict("|a x"))
    assert text.read_text().startswith("Version")
    with pytest.raises(ValueError, match="--invert_hash needs the feature names"):
        Workspace(f"--invert_hash {text} --quiet").finish()


def test_pyvw_habits_hold(tmp_path):
    """pyvw's keyword arg_str, its context manager (finish at the end of the block) and one
    number for one line from h_min as from predict."""
    model = tmp_path / "m.pvw"
    assert Workspace(arg_str="-b 20 --quiet").options.bit_precision == 20
    with pytest.raises(TypeError, match="args or arg_str"):
        Workspace("--quiet", arg_str="--quiet")
    with Workspace(arg_str=f"-f {model} --quiet") as ws:
        ws.learn(["1 |a x", "-1 |a y"] * 5)
        assert not model.exists()
    assert model.exists()
    with pytest.raises(RuntimeError):
        with Workspace(f"-f {tmp_path / 'half.pvw'} --quiet") as ws:
            ws.learn(["1 |a x"])
            raise RuntimeError("the caller's own failure")
    assert not (tmp_path / "half.pvw").exists()  # not saved after an exception
    one = Workspace(f"-i {model} --quiet")
    weight = one.h_min("|a x")
    assert isinstance(weight, float) and weight > 0 and isinstance(one.predict("|a x"), float)
    both = one.h_min(["|a x", "|a y"])
    assert both.shape == (2,) and both[0] == weight


@pytest.mark.parametrize("where", [0.3, 0.6, 0.95])
def test_a_model_with_one_flipped_bit_is_refused_everywhere_it_is_read(tmp_path, where):
    """The model's SHA-256 covers every byte: one flipped bit in the header, the arrays or the
    tail is refused, by the Python API and by the command line's -i alike, never misread."""
    from pyvw_lite.io.model_io import ModelError
    from pyvw_lite.cli.main import main
    ws = Workspace("--oaa 3 --quiet")
    ws.learn([f"{1 + k % 3} |a x{k % 7} y{k % 5}" for k in range(200)])
    path = tmp_path / "m.pvw"
    ws.save(str(path))
    data = bytearray(path.read_bytes())
    data[int(where * (len(data) - 1))] ^= 0x10
    bad = tmp_path / "bad.pvw"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="checksum mismatch|not a pyvw-lite model|malformed|"
                                        "corrupt model file"):
        Workspace(["-i", str(bad), "--quiet"])
    data_file = tmp_path / "d.vw"
    data_file.write_text("1 |a x1\n")
    assert main(["-d", str(data_file), "-i", str(bad), "--quiet"]) == 1


def test_a_multiclass_workspace_predicts_classes_as_the_data_writes_them():
    """As pyvw and the command line's -p: 1..K, or the names of --named_labels (it gave the
    class index 0..K-1, every prediction off by one against the user's labels)."""
    lines = ["1 |a x", "2 |a y", "3 |a z"] * 5
    for args in ("--oaa 3", "--sft 3", "--ect 3"):
        ws = Workspace(f"{args} --quiet")
        ws.learn(lines)
        assert ws.predict(["|a x", "|a y", "|a z"]).tolist() == [1, 2, 3], args
        assert ws.predict("|a z") == 3 and isinstance(ws.predict("|a z"), int)
        assert ws.predict_with_scores(["|a x"])[0].tolist() == [0]  # indices stay there
        # learn's progressive predictions on the same scale (they were 0-based indices)
        assert ws.learn(lines[-3:]).tolist() == [1, 2, 3], args
    named = Workspace("--oaa 3 --named_labels a,b,c --quiet")
    named.learn([line.replace("1 ", "a ").replace("2 ", "b ").replace("3 ", "c ")
                 for line in lines])
    assert named.predict(["|a x", "|a y", "|a z"]).tolist() == ["a", "b", "c"]
    assert named.predict("|a y") == "b"
    assert named.learn(["a |a x", "c |a z"]).tolist() == ["a", "c"]
    zero = Workspace("--oaa 3 --quiet")
    zero.learn([line.replace("3 ", "0 ") for line in lines])  # 0-based labels, detected
    assert zero.predict("|a z") == 0 and zero.predict("|a y") == 2
