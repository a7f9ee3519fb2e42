"""A dyadic run's summary counts repeated user-item pairs and labels outside the rating scale,
and learns every one of those examples."""
import re

import numpy as np

from pyvw_lite.cli.main import main


def ratings_file(tmp_path, repeats=(), outside=()):
    """Seeded 1-5 ratings of 40 users × 30 items, each pair once, then the ``repeats`` (pairs
    rated again) and ``outside`` (ratings of 0) appended."""
    rng = np.random.default_rng(3)
    pairs = [(u, i) for u in range(40) for i in range(30) if rng.random() < 0.5]
    lines = [f"{rng.integers(1, 6)} |u u{u} |m m{i}" for u, i in pairs]
    lines += [f"{rating} |u u{u} |m m{i}" for u, i, rating in repeats]
    lines += [f"0 |u u{u} |m m{i}" for u, i in outside]
    path = tmp_path / "ratings.vw"
    path.write_text("\n".join(lines) + "\n")
    return path, len(lines)


def summary(path, capsys, *flags):
    assert main(["-d", str(path), "--dyad", "um", "--rank", "2", *flags]) == 0
    return capsys.readouterr().err


def test_repeated_pairs_are_counted_and_learned(tmp_path, capsys):
    path, total = ratings_file(tmp_path, repeats=[(0, 0, 5), (0, 0, 4), (7, 9, 1), (39, 29, 2)])
    lines = path.read_text().splitlines()
    first = {line.split(" ", 1)[1] for line in lines[:-4]}
    again = [line.split(" ", 1)[1] for line in lines[-4:]]
    expected_pairs = len({pair for pair in again if pair in first})
    err = summary(path, capsys)
    assert f"number of examples = {total}" in err  # none dropped
    found = re.search(r"repeated um pairs = (\d+) examples repeat one of (\d+) pairs", err)
    assert found, err
    assert int(found.group(1)) == sum(pair in first for pair in again)
    assert int(found.group(2)) == expected_pairs


def test_a_file_without_repeats_or_outliers_has_no_census_lines(tmp_path, capsys):
    path, _ = ratings_file(tmp_path)
    err = summary(path, capsys)
    assert "repeated" not in err and "outside the scale" not in err


def test_ratings_outside_the_scale_are_counted_and_learned(tmp_path, capsys):
    rng = np.random.default_rng(5)
    big = tmp_path / "big.vw"
    # 1,500 ratings of 1-5 (every value far above 1 in 1,000) and one 0 and one 9
    lines = [f"{rng.integers(1, 6)} |u u{rng.integers(200)} |m m{k}" for k in range(1500)]
    lines += ["0 |u u1 |m m1", "9 |u u2 |m m2"]
    big.write_text("\n".join(lines) + "\n")
    err = summary(big, capsys)
    assert "number of examples = 1502" in err
    found = re.search(r"labels outside the scale = (\d+) \((.*?); the others span 1 to 5\)", err)
    assert found, err
    assert found.group(1) == "2" and found.group(2) == "1 label of 0, 1 label of 9"
    # learned as given: the 0 lowers its item's prediction below what it is without it
    model = tmp_path / "m.model"
    predictions = tmp_path / "p.txt"
    query = tmp_path / "q.vw"
    query.write_text("|u u1 |m m1\n")
    assert main(["-d", str(big), "--dyad", "um", "--rank", "2", "-f", str(model),
                 "--quiet"]) == 0
    assert main(["-d", str(query), "-t", "-i", str(model), "-p", str(predictions),
                 "--quiet"]) == 0
    with_zero = float(predictions.read_text().split()[0])
    big.write_text("\n".join(lines[:-2] + ["9 |u u2 |m m2"]) + "\n")
    assert main(["-d", str(big), "--dyad", "um", "--rank", "2", "-f", str(model),
                 "--quiet"]) == 0
    assert main(["-d", str(query), "-t", "-i", str(model), "-p", str(predictions),
                 "--quiet"]) == 0
    assert with_zero < float(predictions.read_text().split()[0])


def test_the_census_counts_the_first_pass_only(tmp_path, capsys):
    path, _ = ratings_file(tmp_path, repeats=[(1, 1, 3)])
    one = summary(path, capsys)
    three = summary(path, capsys, "--passes", "3", "-c", "-k", "--holdout_off")
    pattern = r"repeated um pairs = (\d+) examples"
    assert re.search(pattern, one).group(1) == re.search(pattern, three).group(1)
