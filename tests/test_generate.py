"""`pyvw-lite generate`: seeded synthetic data from pyvw_lite.synthetic, end to end."""
import inspect
import subprocess
import sys

import numpy as np
import pytest

from pyvw_lite import synthetic
from pyvw_lite.cli import data as cli_data

CLI = [sys.executable, "-m", "pyvw_lite", "generate"]


def generate(*args, cwd):
    return subprocess.run(CLI + list(map(str, args)), cwd=cwd, capture_output=True, text=True)


SMALL = ["--users", "200", "--items", "300", "--ratings", "8000"]


def test_ratings_are_seeded_split_and_report_the_floor(tmp_path):
    first = generate("ratings", *SMALL, "--seed", "7", "--train", "a.vw", "--test", "b.vw",
                     cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = generate("ratings", *SMALL, "--seed", "7", "--train", "c.vw", "--test", "d.vw",
                     cwd=tmp_path)
    other = generate("ratings", *SMALL, "--seed", "8", "--train", "e.vw", "--test", "f.vw",
                     cwd=tmp_path)
    assert again.stdout == first.stdout
    assert (tmp_path / "a.vw").read_bytes() == (tmp_path / "c.vw").read_bytes()
    assert (tmp_path / "b.vw").read_bytes() == (tmp_path / "d.vw").read_bytes()
    assert (tmp_path / "a.vw").read_bytes() != (tmp_path / "e.vw").read_bytes()
    train = (tmp_path / "a.vw").read_text().splitlines()
    test = (tmp_path / "b.vw").read_text().splitlines()
    assert f"ratings {len(train) + len(test)} (train {len(train)}, test {len(test)})" \
        in first.stdout
    assert 0.05 < len(test) / (len(train) + len(test)) < 0.15
    for line in train[:50] + test[:50]:
        rating, user, item = line.split(" ")[0], line.split(" ")[2], line.split(" ")[4]
        assert rating in "12345" and user.startswith("u_") and item.startswith("m_")
    # the same ratings the Python generator gives, test and train together
    users, items, ratings = synthetic.user_item_ratings(8000, 200, 300, seed=7)
    assert sorted(train + test) == sorted(f"{r} |u u_{u} |m m_{i}" for u, i, r in
                                          zip(users, items, ratings))
    mse = {line.split(":")[0]: float(line.rsplit(" ", 1)[1])
           for line in first.stdout.splitlines() if "test MSE" in line}
    assert mse["generating model"] < mse["its biases alone"] < mse["training mean"]


def test_the_expected_rating_is_the_mean_of_the_rounded_clipped_draws():
    world = synthetic.user_item_world(2000, 50, 60, seed=3)
    means = np.array([0.2, 1.4, 2.5, 3.1, 4.49, 5.8])
    rng = np.random.default_rng(0)
    draws = np.clip(np.rint(means[:, None] + rng.normal(0, world.noise_sd, (6, 200_000))), 1, 5)
    assert np.allclose(world.expected(means), draws.mean(axis=1), atol=0.01)
    sharp = synthetic.UserItemRatings(*([np.zeros(1)] * 5), noise_sd=1e-3)
    assert np.allclose(sharp.expected(np.array([0.2, 2.4, 3.6, 7.0])), [1, 2, 4, 5])


def test_crowd_and_rater_task_write_what_the_python_generators_write(tmp_path):
    done = generate("crowd", "--tasks", "300", "--workers", "40", "--classes", "3", "--seed",
                    "5", "-o", "answers.csv", "--truth", "truth.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    synthetic.crowd_answers(300, 5, 40, 3, 5).write(str(tmp_path / "a2.csv"),
                                                    str(tmp_path / "t2.csv"))
    assert (tmp_path / "answers.csv").read_bytes() == (tmp_path / "a2.csv").read_bytes()
    assert (tmp_path / "truth.csv").read_bytes() == (tmp_path / "t2.csv").read_bytes()
    done = generate("rater-task", "--ratings", "3000", "--raters", "30", "--tasks", "200",
                    "--classes", "2", "--binary", "--seed", "4", "-o", "rt.vw", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    synthetic.write_vw(str(tmp_path / "rt2.vw"),
                       synthetic.rater_task(3000, 30, 200, 2, seed=4), binary=True)
    assert (tmp_path / "rt.vw").read_bytes() == (tmp_path / "rt2.vw").read_bytes()


def test_outputs_that_collide_or_cannot_be_written_are_refused_before_anything_is_written(
        tmp_path):
    (tmp_path / "keep.vw").write_text("1 |u a |m b\n")
    done = generate("ratings", *SMALL, "--train", "keep.vw", "--test", "keep.vw", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == ("pyvw-lite: error: --test keep.vw is the --train file too: "
                                   "two outputs cannot share a file")
    (tmp_path / "folder").mkdir()
    done = generate("ratings", *SMALL, "--train", "new.vw", "--test", "folder", cwd=tmp_path)
    assert done.returncode == 1 and "folder is a directory" in done.stderr
    done = generate("crowd", "--tasks", "10", "--workers", "10", "-o", "x.csv", "--truth",
                    "x.csv", cwd=tmp_path)
    assert done.returncode == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["folder", "keep.vw"]
    assert (tmp_path / "keep.vw").read_text() == "1 |u a |m b\n"


@pytest.mark.parametrize("args,needle", [
    (["crowd", "--tasks", "5", "--workers", "3", "-o", "x.csv"], "at least as many workers"),
    (["crowd", "--accuracy", "0.9", "-o", "x.csv"], "expected two numbers LOW,HIGH"),
    (["rater-task", "--binary", "-o", "x.vw"], "--binary needs --classes 2"),
    (["ratings", "--train", "a.vw"], "Missing option '--test'"),
])
def test_bad_settings_are_named(tmp_path, args, needle):
    done = generate(*args, cwd=tmp_path)
    assert done.returncode == 2 and needle in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command,function,renamed", [
    (cli_data.generate_ratings, synthetic.user_item_world, {}),
    (cli_data.generate_crowd, synthetic.crowd_answers, {"per_task": "answers_per_task",
                                                         "spammers": "spammer_fraction",
                                                         "hard": "hard_fraction"}),
    (cli_data.generate_rater_task, synthetic.rater_task, {}),
])
def test_the_commands_defaults_are_the_generators(command, function, renamed):
    """--help shows the defaults of pyvw_lite.synthetic, not copies that could drift."""
    defaults = {name: parameter.default for name, parameter in
                inspect.signature(function).parameters.items()}
    for name, parameter in inspect.signature(command).parameters.items():
        option = parameter.default
        key = renamed.get(name, name)
        if key not in defaults:
            continue
        value = option.default
        if key == "accuracy":
            value = tuple(float(part) for part in value.split(","))
        assert value == defaults[key], (name, value, defaults[key])
