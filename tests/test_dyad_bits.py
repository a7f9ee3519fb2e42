"""-b's default under --dyad (2^22 rows: users and items rarely share a row) and what models
keep of it."""
import numpy as np

from pyvw_lite.cli.main import main
from pyvw_lite.options import DYAD_BITS, options_from


def test_dyad_raises_the_default_table_and_a_given_b_stays():
    assert DYAD_BITS == 22
    assert options_from("--dyad um").bit_precision == 22
    assert options_from("--dyad um -b 18").bit_precision == 18
    assert options_from("-q um").bit_precision == 18  # the linear learner keeps VW's 18


def ratings(tmp_path):
    rng = np.random.default_rng(11)
    lines = [f"{rng.integers(1, 6)} |u u{rng.integers(50)} |m m{rng.integers(80)}"
             for _ in range(600)]
    path = tmp_path / "r.vw"
    path.write_text("\n".join(lines) + "\n")
    return path


def predictions(tmp_path, model, data, *flags):
    out = tmp_path / "p.txt"
    assert main(["-d", str(data), "-t", "-i", str(model), "-p", str(out), "--quiet",
                 *flags]) == 0
    return np.array([float(line) for line in out.read_text().split()])


def test_models_keep_the_table_they_were_trained_with(tmp_path, capsys):
    data = ratings(tmp_path)
    for bits, extra in ((22, []), (18, ["-b", "18"])):
        model = tmp_path / f"m{bits}.model"
        assert main(["-d", str(data), "--dyad", "um", "--rank", "2", "-f", str(model),
                     *extra]) == 0
        assert f"Num weight bits = {bits}" in capsys.readouterr().err
        assert main(["-d", str(data), "-t", "-i", str(model)]) == 0
        assert f"Num weight bits = {bits}" in capsys.readouterr().err
        # the same predictions whether --dyad is named again or not
        again = predictions(tmp_path, model, data, "--dyad", "um")
        assert np.array_equal(predictions(tmp_path, model, data), again)
