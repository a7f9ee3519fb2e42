"""End-to-end command line: VW argv, files, models, cache, passes, bad input."""
import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite.cli.main import main

CLI = [sys.executable, "-m", "pyvw_lite"]


def cli(args, cwd=None, stdin=None):
    return subprocess.run(CLI + list(args), cwd=cwd, input=stdin, capture_output=True)


def summary_value(stderr: str, key: str) -> str:
    for line in stderr.splitlines():
        if line.startswith(key + " = "):
            return line.split(" = ", 1)[1]
    raise AssertionError(f"{key} not in output")


def test_help_is_plain_fast_and_imports_no_numba():
    code = ("import sys; from pyvw_lite.cli.main import main; main(['--help']); "
            "print('NUMBA' if 'numba' in sys.modules else 'NO-NUMBA')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0
    assert "--loss_function" in done.stdout and "bench" in done.stdout
    assert done.stdout.strip().endswith("NO-NUMBA")


@pytest.mark.parametrize("args,needle", [
    (["--bogus_option", "3"], "unrecognised option '--bogus_option'"),
    (["--pases", "3"], "unrecognised option '--pases' (did you mean '--passes'?)"),
    (["--lrqfa", "rt2"], "VW's option '--lrqfa' is not implemented by pyvw-lite: use --dyad"),
    (["--bfgs"], "VW's option '--bfgs' is not implemented by pyvw-lite: pyvw-lite learns "
                 "online only"),
    (["--ftrl"], "VW's option '--ftrl' is not implemented by pyvw-lite: its online learner is "
                 "VW's default SGD"),
    (["--coin"], "FTRL, PiSTOL, coin betting, FreeGrad, OjaNewton and AdaX are not implemented"),
    (["--expectile_q", "0.3"], "VW's option '--expectile_q' is not implemented by pyvw-lite: "
                               "its losses are squared, logistic, hinge and quantile"),
    (["--l1", "1e-3", "--oaa", "3"], "--l1 and --l2 apply to the linear learner"),
    (["--l2", "-1"], "option '--l2': -1 must be a number of at least 0"),
    (["--quantile_tau", "1.5", "--loss_function", "quantile"],
     "option '--quantile_tau': 1.5 must be between 0 and 1"),
    (["--loss_function", "quantile", "--active", "--simulation"],
     "--active is defined for the squared, logistic and hinge losses"),
    (["--math-mode", "1"], "VW's option '--math-mode' is not implemented by pyvw-lite: "
                           "no topic model (LDA)"),
    (["--ksvm"], "'--ksvm' is not implemented by pyvw-lite: no kernel SVM"),
    (["--lda", "3"], "'--lda' is not implemented by pyvw-lite: no topic model"),
    (["--boosting", "3"], "'--boosting' is not implemented by pyvw-lite: no online boosting"),
    (["--stage_poly"], "'--stage_poly' is not implemented by pyvw-lite: no stagewise polynomial"),
    (["--redefine", "a:=b"], "'--redefine' is not implemented by pyvw-lite: namespaces keep"),
    (["--bootstrap", "3"], "'--bootstrap' is not implemented by pyvw-lite: no bootstrap"),
    (["--loss_function", "poisson"], "option '--loss_function': VW's 'poisson' is not "
                                     "implemented by pyvw-lite: no Poisson"),
    (["--loss_function", "classic"], "VW's 'classic' is not implemented by pyvw-lite: VW's "
                                     "classic loss is squared loss"),
    (["--loss_function", "expectile"], "VW's 'expectile' is not implemented by pyvw-lite: no "
                                       "expectile loss"),
    (["--link", "poisson"], "option '--link': VW's 'poisson' is not implemented by pyvw-lite"),
    (["--exampels", "3"], "unrecognised option '--exampels' (did you mean '--examples'?)"),
    (["--passes", "2", "--passes", "3", "-c", "-d", "x"], "'--passes' cannot be specified more"),
    (["-b", "x"], "'x' is not a valid integer"),
    (["--loss_function", "logit"], "'logit' is not one of"),
    (["-d", "missing.vw"], "missing.vw"),
    (["--rank", "3", "-q", "um"], "--rank needs --dyad LR; for the low-rank form of -q um: "
                                  "--dyad um --rank 3"),
])
def test_option_errors_name_the_option(args, needle, capsys):
    assert main(args) == 1
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_every_refused_vw_option_and_loss_has_its_own_reason():
    """Each option of VW 9.11.9 is pyvw-lite's or has a row of the refusal table, and each of
    VW's losses and links is a choice or a refused value: no generic refusal."""
    from pyvw_lite.options import BY_NAME, NOT_IMPLEMENTED, options_from
    from pyvw_lite.vw_options import VW_OPTIONS
    assert sorted(n for n in VW_OPTIONS if n not in BY_NAME and n not in NOT_IMPLEMENTED) == []
    assert not set(NOT_IMPLEMENTED) & set(BY_NAME)
    vw_values = {"loss_function": ("squared", "classic", "hinge", "logistic", "quantile",
                                   "expectile", "poisson"),
                 "link": ("identity", "logistic", "glf1", "poisson")}
    for name, values in vw_values.items():
        for value in values:
            assert value in BY_NAME[name].choices or f"{name}={value}" in NOT_IMPLEMENTED
    reasons = [NOT_IMPLEMENTED[n] for n in ("ksvm", "lda", "boosting", "stage_poly", "redefine",
                                            "bootstrap")]
    assert len(set(reasons)) == len(reasons)  # each its own reason, none generic
    with pytest.raises(ValueError, match="VW's 'poisson' is not implemented"):
        options_from("--loss_function poisson")


@pytest.mark.parametrize("args,needle", [
    (["-l", "nan"], "'--learning_rate': 'nan' must be a finite number"),
    (["--power_t", "inf"], "'--power_t': 'inf' must be a finite number"),
    (["-C", "nan"], "'--constant': 'nan' must be a finite number"),
    (["--sgd", "--initial_t", "-5"], "'--initial_t': -5 must be at least 0"),
    (["--normalized", "--initial_t", "-5"], "'--initial_t': -5 must be at least 0"),
    (["--dyad", "rt", "--initial_t", "-1"], "'--initial_t': -1 must be at least 0"),
    (["--dyad", "rt", "--dyad_noise", "-0.1"], "'--dyad_noise': -0.1 must be a finite number, at least 0"),
    (["--dyad", "rt", "--ode_rtol", "0", "--ode_atol", "0"], "not both 0"),
    (["--dyad", "rt", "--ode_rtol", "-1e-7"], "tolerances must be finite, at least 0"),
    (["--holdout_after", "-1"], "'--holdout_after': -1 must be at least 0"),  # VW: 2^64 - 1
    (["--early_terminate", "-1"], "'--early_terminate': -1 must be at least 0"),
    (["--min_prediction", "5", "--max_prediction", "1"],  # VW: a negative average loss
     "'--min_prediction': 5 is above --max_prediction 1"),
])
def test_values_that_would_poison_the_weights_are_refused(args, needle, rater_task_file,
                                                          capsys):
    """NaN or infinite rates, a negative time in the plain schedule, a negative perturbation
    or tolerance: VW learns NaNs (or worse, here a traceback); these are errors naming the
    option."""
    assert main(["-d", str(rater_task_file), *args, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_multiple_passes_need_a_cache(rater_task_file, capsys):
    assert main(["-d", str(rater_task_file), "--passes", "2"]) == 1
    assert "need a cache file for multiple passes" in capsys.readouterr().err


def test_vw_argv_forms(rater_task_file):
    _, a, _ = run_workspace(["-d", str(rater_task_file), "-b18", "--loss_function=logistic"])
    _, b, _ = run_workspace([str(rater_task_file), "-b", "18", "--loss_function", "logistic"])
    assert summary_value(a, "average loss") == summary_value(b, "average loss")


def test_no_arguments_with_piped_input_learns_from_it(rater_task_file):
    done = cli([], stdin=rater_task_file.read_bytes())
    assert done.returncode == 0 and b"number of examples = 3000" in done.stderr


def test_stdin_and_gzip_give_the_same_run(rater_task_file, tmp_path):
    data = rater_task_file.read_bytes()
    gz = tmp_path / "rt2.vw.gz"
    gz.write_bytes(gzip.compress(data))
    plain = cli(["-d", str(rater_task_file), "--loss_function", "logistic"])
    piped = cli(["--loss_function", "logistic"], stdin=data)
    zipped = cli(["-d", str(gz), "--loss_function", "logistic"])
    piped_gz = cli(["--loss_function", "logistic"], stdin=gzip.compress(data))  # cat x.gz | ...
    runs = (plain, piped, zipped, piped_gz)
    losses = {summary_value(r.stderr.decode(), "average loss") for r in runs}
    assert len(losses) == 1 and all(r.returncode == 0 for r in runs)
    assert b"warning" not in piped_gz.stderr


def test_resumed_model_learns_as_if_never_stopped(rater_task_file, tmp_path):
    lines = rater_task_file.read_text().splitlines()
    first, second = tmp_path / "a.vw", tmp_path / "b.vw"
    first.write_text("\n".join(lines[:1500]) + "\n")
    second.write_text("\n".join(lines[1500:]) + "\n")
    whole, half, resumed = tmp_path / "whole.pvw", tmp_path / "half.pvw", tmp_path / "res.pvw"
    run_workspace(["-d", str(rater_task_file), "--loss_function", "logistic", "-f", str(whole)])
    run_workspace(["-d", str(first), "--loss_function", "logistic", "-f", str(half)])
    run_workspace(["-d", str(second), "-i", str(half), "-f", str(resumed)])  # loss is kept
    from pyvw_lite.workspace import Workspace
    a = Workspace(f"-i {whole} --quiet")
    b = Workspace(f"-i {resumed} --quiet")
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(a.state, b.state, rtol=1e-12)


@pytest.mark.parametrize("flags", [["-l", "2"], ["--sgd", "-l", "0.1"], ["--power_t", "0.3"],
                                   ["--normalized", "--invariant"], ["--adaptive"]])
def test_resumed_model_keeps_its_learning_rate_options(rater_task_file, tmp_path, flags):
    # as VW's -i: the learning rate, its decay and the update flags come back with the model
    lines = rater_task_file.read_text().splitlines()
    first, second = tmp_path / "a.vw", tmp_path / "b.vw"
    first.write_text("\n".join(lines[:1500]) + "\n")
    second.write_text("\n".join(lines[1500:]) + "\n")
    whole, half, resumed = tmp_path / "whole.pvw", tmp_path / "half.pvw", tmp_path / "res.pvw"
    run_workspace(["-d", str(rater_task_file), *flags, "-f", str(whole)])
    run_workspace(["-d", str(first), *flags, "-f", str(half)])
    run_workspace(["-d", str(second), "-i", str(half), "-f", str(resumed)])
    from pyvw_lite.workspace import Workspace
    a = Workspace(f"-i {whole} --quiet")
    b = Workspace(f"-i {resumed} --quiet")
    assert (a.eta, a.adaptive, a.normalized, a.invariant) == (b.eta, b.adaptive, b.normalized,
                                                              b.invariant)
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-5, atol=1e-6)


def test_command_line_learning_rate_options_override_the_model(rater_task_file, tmp_path):
    from pyvw_lite.workspace import Workspace
    model = tmp_path / "m.pvw"
    run_workspace(["-d", str(rater_task_file), "--adaptive", "-l", "2", "-f", str(model)])
    kept = Workspace(f"-i {model} --quiet")
    assert (kept.eta, kept.adaptive, kept.normalized) == (2.0, True, False)
    changed = Workspace(f"-i {model} --quiet -l 0.25 --sgd")
    assert not (changed.adaptive or changed.normalized or changed.invariant)
    assert changed.eta == pytest.approx(0.25)  # initial_t 1 for plain updates: 0.25 * 1^p
    # a predict-only model keeps no learning state, and in VW no learning-rate options either
    run_workspace(["-d", str(rater_task_file), "--sgd", "-l", "0.1", "--predict_only_model",
                   "-f", str(model)])
    fresh = Workspace(f"-i {model} --quiet")
    assert (fresh.eta, fresh.adaptive, fresh.normalized, fresh.invariant) == (0.5, True, True,
                                                                              True)


def test_model_problems_are_clear_errors(rater_task_file, tmp_path, capsys):
    model = tmp_path / "m.pvw"
    run_workspace(["-d", str(rater_task_file), "-f", str(model)])
    raw = model.read_bytes()
    cases = {"truncated": raw[:len(raw) - 10], "corrupt": raw[:-5] + b"XXXXX",
             "not a pyvw-lite model": b"hello world"}
    for needle, content in cases.items():
        model.write_bytes(content)
        assert main(["-d", str(rater_task_file), "-i", str(model), "--quiet"]) == 1
        err = capsys.readouterr().err
        assert needle in err and str(model) in err and "Traceback" not in err


def test_kept_options_come_back_and_conflicts_are_refused(rater_task_file, tmp_path, capsys):
    model = tmp_path / "m.pvw"
    run_workspace(["-d", str(rater_task_file), "-b", "20", "-q", "rt", "-f", str(model)])
    from pyvw_lite.workspace import Workspace
    ws = Workspace(f"-i {model} --quiet")
    assert ws.bits == 20 and ws.interactions.terms == ["rt"]
    assert main(["-d", str(rater_task_file), "-i", str(model), "-b", "18"]) == 1
    assert "trained with --bit_precision" in capsys.readouterr().err
    # the layout options keep their defaults too: a 2^18 table read into 2^20 rows would put
    # most weights where no feature looks (VW refuses the same: "Disagreeing option values for
    # 'bit_precision'"), another --hash_seed would hash every feature elsewhere, another --rank
    # or a reduction reshape the table; output and learning flags may still be added
    run_workspace(["-d", str(rater_task_file), "--dyad", "rt", "-f", str(model), "--quiet"])
    ws = Workspace(f"-i {model} --quiet")
    assert ws.bits == 22 and ws.options.rank == 1  # --dyad's own default table
    for flags, message in [(["-b", "20"], "with --bit_precision 22, not with --bit_precision 20"),
                           (["--hash_seed", "3"], "without --hash_seed, not with --hash_seed 3"),
                           (["--rank", "2"], "with --rank 1, not with --rank 2"),
                           (["--oaa", "3"], "without --oaa, not with --oaa 3 (its options: "
                                            "--dyad rt)")]:
        assert main(["-d", str(rater_task_file), "-i", str(model), *flags, "--quiet"]) == 1
        assert message in capsys.readouterr().err
    assert main(["-d", str(rater_task_file), "-i", str(model), "-b", "22", "--rank", "1",
                 "--loss_function", "logistic", "--quiet"]) == 0


def test_predictions_tags_raw_and_testonly(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 'first|a x\n-1 second|a y\n|a x\n")
    model, preds, raw = tmp_path / "m", tmp_path / "p.txt", tmp_path / "r.txt"
    run_workspace(["-d", str(data), "--loss_function", "logistic", "-f", str(model)])
    before = model.read_bytes()
    run_workspace(["-d", str(data), "-t", "-i", str(model), "-p", str(preds), "-r", str(raw)])
    lines = preds.read_text().splitlines()
    assert [line.split(" ", 1)[1] if " " in line else None for line in lines] == \
        ["first", "second", None]
    assert len(raw.read_text().splitlines()) == 3
    assert model.read_bytes() == before  # -t never writes or changes the model


def test_cache_is_created_then_used_and_rebuilt_when_data_changes(rater_task_file):
    args = ["-d", str(rater_task_file), "-c", "--loss_function", "logistic"]
    _, first, _ = run_workspace(args)
    _, second, _ = run_workspace(args)
    assert "creating cache_file" in first and "using cache_file" in second
    assert summary_value(first, "average loss") == summary_value(second, "average loss")
    with open(rater_task_file, "a") as handle:
        handle.write("1 |rater r_1 |task t_2\n")
    out, third, _ = run_workspace(args)
    assert "creating cache_file" in third and "rebuilding" in out


def test_no_stdin_reads_nothing_without_a_data_file(rater_task_file):
    """pylibvw passes --no_stdin; with no data file VW then learns from nothing."""
    done = cli(["--no_stdin"], stdin=b"1 |a x\n")
    assert done.returncode == 0
    assert summary_value(done.stderr.decode(), "number of examples") == "0"
    _, err, _ = run_workspace(["-d", str(rater_task_file), "--no_stdin"])
    assert summary_value(err, "number of examples") == "3000"


def test_examples_limits_each_pass_as_vw(rater_task_file, tmp_path):
    """VW's --examples N: the first N examples of every pass (VW 9.11.9 on reg.vw: --examples
    100 --passes 3 -c gives 'number of examples per pass = 90', the same table as here)."""
    head = tmp_path / "head.vw"
    head.write_text("".join(rater_task_file.read_text().splitlines(True)[:250]))
    common = ["--loss_function", "logistic", "-c", "-k", "--passes", "3", "--holdout_off"]
    limited = tmp_path / "limited.pvw"
    _, err, _ = run_workspace(["-d", str(rater_task_file), "--examples", "250", "-f",
                               str(limited), *common])
    assert summary_value(err, "number of examples per pass") == "250"
    whole = tmp_path / "whole.pvw"
    run_workspace(["-d", str(head), "-f", str(whole), *common])
    assert limited.read_bytes() == whole.read_bytes()
    # a cache made under a limit is not read by a run without it
    _, err, _ = run_workspace(["-d", str(rater_task_file), "-c", "--examples", "10"])
    out, err, _ = run_workspace(["-d", str(rater_task_file), "-c"])
    assert "rebuilding" in out + err and summary_value(err, "number of examples") == "3000"


@pytest.mark.parametrize("args,needle", [
    (["--examples", "-1"], "option '--examples': -1 must be at least 0"),
    (["--examples", "5", "--executor", "serial"], "--examples counts the examples of one"),
])
def test_examples_refusals(rater_task_file, capsys, args, needle):
    assert main(["-d", str(rater_task_file), *args]) == 1
    assert needle in capsys.readouterr().err


def test_passes_holdout_and_early_termination(rater_task_file, tmp_path):
    model = tmp_path / "m"
    _, err, _ = run_workspace(["-d", str(rater_task_file), "-c", "--passes", "20",
                               "--loss_function", "logistic", "-f", str(model), "-l", "5"])
    assert "average loss" in err and err.rstrip().splitlines()[-1].startswith("total feature")
    used = int(summary_value(err, "passes used"))
    assert 1 < used < 20  # overfitting stops improving the holdout loss
    assert summary_value(err, "average loss").endswith(" h")
    assert model.exists()


def test_readable_model_and_invert_hash(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x y\n0 |a x\n")
    readable, inverted = tmp_path / "r.txt", tmp_path / "i.txt"
    run_workspace(["-d", str(data), "--readable_model", str(readable),
                   "--invert_hash", str(inverted)])
    text = readable.read_text()
    assert "bits:18" in text and "\n55432:" in text and "\n116060:" in text
    assert "\na^x:55432:" in inverted.read_text() and "\nConstant:116060:" in inverted.read_text()
    # both dumps carry the same resume block (invert_hash wrote only "t")
    resume = text.split("\n:1\n")[1].split("\n")[:3]
    assert [line.split()[0] for line in resume] == ["t", "norm", "total_weight"]
    assert inverted.read_text().split("\n:1\n")[1].split("\n")[:3] == resume


def test_bad_input_never_tracebacks_and_strict_parse_exits_1(tmp_path):
    data = tmp_path / "bad.vw"
    data.write_bytes(b"1 |a x\nnot-a-label |a x\n\xff\xfe |a \x00:\n1 |a x:1:2\n")
    loose = cli(["-d", str(data)])
    assert loose.returncode == 0 and b"Traceback" not in loose.stderr + loose.stdout
    assert b"bad.vw:2: label 'not-a-label' is not a number" in loose.stdout
    assert b"skipped examples = 3" in loose.stderr
    strict = cli(["-d", str(data), "--strict_parse"])
    assert strict.returncode == 1 and b"Traceback" not in strict.stderr
    assert b"bad.vw:2:" in strict.stderr


def test_failed_run_leaves_no_partial_output(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n" * 10 + "oops |a x\n")
    preds = tmp_path / "p.txt"
    preds.write_text("old\n")
    assert main(["-d", str(data), "-p", str(preds), "--strict_parse", "--quiet"]) == 1
    assert preds.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["d.vw", "p.txt"]


def test_bench_runs_end_to_end_without_the_peer(tmp_path):
    from pyvw_lite.cli.bench import run_bench
    import io
    out = io.StringIO()
    results = run_bench(lines=2000, repeat=1, workdir=str(tmp_path), peer=False, out=out)
    assert [r.scenario for r in results] == ["binary logistic, 1 pass, text, 1 line",
                                             "binary logistic, 1 pass, text, 2,000 lines",
                                             "binary logistic, 1 pass, text",
                                             "binary logistic, 1 pass, cache",
                                             "--sft 5 (VW: --ect 5), 1 pass, text",
                                             "--sft 5 --dyad rt --rank 2 (VW: --oaa 5 --lrq rt2)",
                                             "ratings --lrq um8, 5 passes, cache",
                                             "ratings --dyad um --rank 8 (VW: --lrq um8), 5 "
                                             "passes, cache"]
    from pyvw_lite.cli.bench import SCENARIOS
    assert [r.key for r in results] == list(SCENARIOS)
    assert [r.examples for r in results[:3]] == [1, 2000, 2000]
    # the short files are the text file's first lines: all 2,000 learn as the whole file does
    assert results[1].ours_loss == results[2].ours_loss == results[3].ours_loss
    assert (tmp_path / "rt2_2000_12345_first1.vw").read_text() == \
        (tmp_path / "rt2_2000_12345.vw").read_text().splitlines(keepends=True)[0]
    for ratings in results[6:]:
        assert ratings.examples == 5 * sum(1 for _ in open(
            tmp_path / "ratings_2000_12345.vw"))  # five passes over the ratings file
    # squared loss on ratings 1..5: the exact-flow learner learned, VW's --lrq did not blow up
    assert float(results[7].ours_loss) < 1.0 and float(results[6].ours_loss) < 2.5
    from pyvw_lite.cli.bench import busy_machine
    assert all(r.busy == busy_machine(*r.load, os.cpu_count() or 1) for r in results)
    assert "ratio" in out.getvalue()
    assert "nan" not in out.getvalue() and "None" not in out.getvalue()  # VW's cells: '-'


def test_bench_marks_a_scenario_busy_by_the_load_around_it():
    from pyvw_lite.cli.bench import busy_machine
    assert not busy_machine(0.3, 1.4, cores=2)  # quiet before; after, the benchmark's own run
    assert busy_machine(0.6, 0.6, cores=2)  # busy before
    assert busy_machine(0.1, 1.6, cores=2)  # someone else started meanwhile
    assert not busy_machine(0.9, 1.9, cores=4)


def test_bench_crowd_runs_end_to_end_without_the_peer(tmp_path):
    from pyvw_lite.cli.crowd_bench import run_crowd_bench
    import io
    out = io.StringIO()
    rows = run_crowd_bench(sizes=(300,), repeat=1, workdir=str(tmp_path), many_workers=3000,
                           out=out)
    assert [row["method"] for row in rows] == ["online, 3,000 workers", "default, whole process",
                                               "batch EM", "online EM"]
    assert all(0.79 < row["accuracy"] <= 1.0 for row in rows)  # measured 0.82, 0.86, 0.86
    assert rows[1]["chosen"] in ("bcc", "majority")
    table = out.getvalue()
    assert "nan" not in table and "batch EM" in table  # a cell that does not apply shows '-'


@pytest.mark.parametrize("args, needle", [
    (["bench", "--repeat", "0"], "'--repeat'"),
    (["bench", "-n", "0"], "'--lines'"),
    (["bench-crowd", "--tasks", "0"], "'--tasks'"),
    (["bench-crowd", "--peer-python", "/nonexistent/python"], "cannot import crowdkit"),
    (["bench-crowd", "--json", "/nonexistent/dir/x.json"], "no such directory"),
    (["bench-scale", "--lines", "0", "--tasks", "0"], "leave nothing to time"),
    (["bench-scale", "--passes", "0"], "'--passes'"),
])
def test_bench_arguments_are_checked_before_any_work(args, needle, tmp_path, capsys):
    """Each was a traceback, some only after minutes of work (a bad --json at the very end)."""
    assert main([*args, "--workdir", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.replace("│", " ").split())
    assert needle in err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("args", [["-p", "-", "--quiet"], ["--audit"], ["-p", "/dev/stdout"]])
def test_a_reader_that_goes_away_ends_the_run_quietly(args, tmp_path):
    """`pyvw-lite ... | head -1`: no "error: Broken pipe" line and no traceback at exit."""
    data = tmp_path / "many.vw"
    data.write_text("".join(f"{1 if k % 3 else -1} 'tag{k} |r r{k % 50} |t t{k}\n"
                            for k in range(30000)))
    process = subprocess.Popen([sys.executable, "-m", "pyvw_lite", "-d", str(data), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait() == 1
    assert first
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception" not in err


@pytest.mark.parametrize("target", ["/dev/stdout", "-", "/dev/fd/1"])
def test_predictions_to_standard_output_even_when_it_is_a_file(target, tmp_path):
    """A device path is written in place: an atomic rename would replace /dev/stdout itself.
    Standard output redirected to a file (as ``cmd > log`` opens it, not appending) keeps what
    was written before: a new open of /dev/stdout would truncate it or write over it."""
    data = tmp_path / "d.vw"
    data.write_text("1 'a|f x\n-1 'b|f y\n")
    was_link = os.path.islink("/dev/stdout")
    with open(tmp_path / "out.txt", "wb") as out:
        out.write(b"before\n")
        out.flush()
        done = subprocess.run(CLI + ["-d", str(data), "-p", target, "--quiet"], stdout=out)
        out.write(b"after\n")
    assert done.returncode == 0
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert len(lines) == 4 and lines[0] == "before" and lines[-1] == "after"
    assert lines[1] == "0 a" and lines[2].endswith(" b")
    assert os.path.islink("/dev/stdout") == was_link


def test_unwritable_model_path_is_a_clear_error(rater_task_file, capsys):
    assert main(["-d", str(rater_task_file), "-f", "/nonexistent/dir/m.pvw", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "-f /nonexistent/dir/m.pvw: cannot write there (no directory /nonexistent/dir)" in err


@pytest.mark.parametrize("name", ["{input}/", "{dir}/out.txt/"])
def test_an_output_ending_in_a_slash_is_refused_by_its_own_name(rater_task_file, tmp_path, name,
                                                               capsys):
    """``-p d.vw/`` was refused naming the temporary file beside it (``.tmp-...: Not a
    directory``), after the run."""
    target = name.format(input=rater_task_file, dir=tmp_path)
    assert main(["-d", str(rater_task_file), "-p", target, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"-p {target}: cannot write there" in err, err
    assert ".tmp" not in err


def _fifo_feeding(path, data: bytes):
    """A named pipe at ``path`` that a thread fills with ``data`` once (as ``<(command)``)."""
    import threading
    os.mkfifo(path)

    def feed():
        with open(path, "wb") as pipe:
            pipe.write(data)
    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("packed", [False, True], ids=["text", "gzip"])
def test_data_from_a_pipe_is_read_whole(tmp_path, rater_task_file, packed):
    """-d <(cat x.vw) lost its first 8 KB (probed for gzip magic, then opened again), and
    -d <(zcat ...)-style gzip pipes learned nothing."""
    text = rater_task_file.read_bytes()
    plain, piped = tmp_path / "a.txt", tmp_path / "b.txt"
    assert main(["-d", str(rater_task_file), "-p", str(plain), "--quiet"]) == 0
    fifo = tmp_path / "fifo"
    feeder = _fifo_feeding(fifo, gzip.compress(text) if packed else text)
    assert main(["-d", str(fifo), "-p", str(piped), "--quiet"]) == 0
    feeder.join()
    assert piped.read_bytes() == plain.read_bytes() and len(plain.read_text().splitlines()) > 1000


def test_cache_next_to_a_pipe_is_refused_with_the_way_out(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo")
    assert main(["-d", str(tmp_path / "fifo"), "-c", "--passes", "2"]) == 1
    assert "is a pipe or device, so the cache cannot go next to it; name one with " \
           "--cache_file" in capsys.readouterr().err


def test_a_model_from_a_pipe(tmp_path, rater_task_file):
    """-i <(cat m.pvw): the model file was opened twice (header, then payload by seeking)."""
    model, plain, piped = tmp_path / "m.pvw", tmp_path / "a.txt", tmp_path / "b.txt"
    assert main(["-d", str(rater_task_file), "-f", str(model), "--quiet"]) == 0
    test = ["-d", str(rater_task_file), "-t", "--quiet"]
    assert main(test + ["-i", str(model), "-p", str(plain)]) == 0
    feeder = _fifo_feeding(tmp_path / "fifo", model.read_bytes())
    assert main(test + ["-i", str(tmp_path / "fifo"), "-p", str(piped)]) == 0
    feeder.join()
    assert piped.read_bytes() == plain.read_bytes()


@pytest.mark.parametrize("value,rows", [("2.0", None), ("1e3", [1000, 2000]),
                                        ("1000", [1000, 2000])])
def test_progress_reads_numbers_as_vw(tmp_path, capsys, value, rows):
    """-P 1e3 is every 1,000 weighted examples, as in VW (it was an int() traceback text)."""
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{k % 2} |a x{k % 7}\n" for k in range(2500)))
    assert main(["-d", str(data), "-P", value]) == 0
    table = [line.split() for line in capsys.readouterr().err.splitlines()]
    counters = [int(fields[2]) for fields in table if len(fields) == 7 and fields[2].isdigit()]
    if rows is None:  # multiplicative: 1, 2, 4, ...
        assert counters[:4] == [1, 2, 4, 8]
    else:
        assert counters == rows


@pytest.mark.parametrize("value,message", [("abc", "'abc' is not a number"),
                                           ("inf", "must be finite"), ("0", "must be positive")])
def test_progress_refuses_what_is_not_a_row_interval(capsys, value, message):
    assert main(["-d", "x.vw", "-P", value]) == 1
    assert message in capsys.readouterr().err


def test_early_terminate_0_stops_after_the_first_pass_as_vw(tmp_path, capsys):
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{k % 2} |a x{k % 7}\n" for k in range(400)))
    assert main(["-d", str(data), "-c", "--passes", "3", "--early_terminate", "0"]) == 0
    err = capsys.readouterr().err
    assert "number of examples = 360\n" in err and "passes used" not in err  # VW's summary


def test_test_and_holdout_labels_do_not_widen_the_clip_range(tmp_path):
    """VW clips to the range of the labels it learned from; a -t or holdout example's own label
    widened ours, so it leaked into that example's prediction (VW 9.11.9: 2, and 1 below)."""
    train, test = tmp_path / "train.vw", tmp_path / "test.vw"
    train.write_text("1 |a x\n2 |a y\n")
    test.write_text("9 1 5 |a x\n")  # initial 5: the raw score is far above the range
    model, preds = tmp_path / "m.pvw", tmp_path / "p.txt"
    assert main(["-d", str(train), "-f", str(model), "--quiet"]) == 0
    assert main(["-d", str(test), "-t", "-i", str(model), "-p", str(preds), "--quiet"]) == 0
    assert preds.read_text() == "2\n"
    lines = [f"1 |a x{k}" for k in range(1, 10)] + ["20 |a q", "1 |a r", "1 1 15 |a z"]
    data = tmp_path / "h.vw"  # the 10th example is held out; its label 20 must not count
    data.write_text("\n".join(lines + [f"1 |a y{k}" for k in range(8)]) + "\n")
    assert main(["-d", str(data), "-c", "--passes", "2", "-p", str(preds), "--quiet"]) == 0
    assert preds.read_text().splitlines()[11] == "1"


def test_every_subcommand_help_shows_each_option_help_whole():
    """Rich markup must not eat bracketed text such as '[[peer]]' from a help string."""
    import re

    import typer
    from typer.testing import CliRunner

    from pyvw_lite.cli.app import app
    group = typer.main.get_command(app)
    runner = CliRunner()
    for name, command in group.commands.items():
        shown = runner.invoke(app, [name, "--help"], terminal_width=200).output
        shown = " ".join(re.sub(r"[│╭╮╰╯─]", " ", shown).split())
        for param in command.params:
            text = " ".join((getattr(param, "help", None) or "").split())
            assert text in shown, f"{name}: {param.name}: {text!r}"


def test_logistic_labels_between_min_and_max_are_soft_as_vw(tmp_path, rater_task_file):
    """VW 9.11.9 reads a logistic label y in [--logistic_min, --logistic_max] (default -1, 1) as
    the class-1 probability (y - min)/(max - min): 0/1 data with --logistic_min 0 learns exactly
    what -1/1 data does, and a 0 under the default range is a soft label (q = 1/2) that pulls
    its prediction toward 0 without crossing it."""
    zero_one = tmp_path / "01.vw"
    zero_one.write_text(re.sub(r"(?m)^-1 ", "0 ", rater_task_file.read_text()))
    run_workspace(["-d", str(rater_task_file), "--loss_function", "logistic", "-f",
                   str(tmp_path / "pm.pvw")])
    out, err, _ = run_workspace(["-d", str(zero_one), "--loss_function", "logistic",
                                 "--logistic_min", "0", "--logistic_max", "1", "-f",
                                 str(tmp_path / "01.pvw")])
    assert "warning" not in out and "soft label" not in out
    from pyvw_lite.workspace import Workspace
    a, b = (Workspace(["-i", str(tmp_path / name), "--quiet"]) for name in ("pm.pvw", "01.pvw"))
    np.testing.assert_array_equal(a.weights, b.weights)
    soft = tmp_path / "soft.vw"
    soft.write_text("1 |a x\n" * 3 + "0 |a x\n" * 40)
    out, err, _ = run_workspace(["-d", str(soft), "--loss_function", "logistic", "-p",
                                 str(tmp_path / "p"), "--noconstant"])
    predictions = [float(v) for v in (tmp_path / "p").read_text().split()]
    assert predictions[3] > 0.5 and 0.0 < predictions[-1] < 0.05  # toward logit(1/2) = 0
    assert all(b <= a for a, b in zip(predictions[3:], predictions[4:]))  # never past it
    assert "warning" not in out
    # VW's classic trap (0/1 data read as -1/1), said once
    assert out.count("a logistic label 0 is a soft label") == 1 and "--logistic_min 0" in out


@pytest.mark.parametrize("args,needle", [
    ([], "label 2 is outside [-1, 1], the labels of the logistic loss"),
    (["--dyad", "ra"], "label 0 is a soft label, which --dyad does not learn"),
    (["--active", "--simulation"], "label 0 is a soft label, which --active does not learn"),
])
def test_logistic_labels_that_cannot_be_learned_are_predicted(tmp_path, args, needle):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x |r u\n0 |a x |r u\n-1 |a y |r v\n2 |a x |r v\n")
    out, err, _ = run_workspace(["-d", str(data), "--loss_function", "logistic", "-p",
                                 str(tmp_path / "p"), *args])
    assert needle in out and "predicted, not learned" in out
    assert len((tmp_path / "p").read_text().splitlines()) == 4  # no line lost
    assert "skipped examples" not in err


def test_logistic_label_range_is_checked(capsys):
    assert main(["--loss_function", "logistic", "--logistic_min", "1", "--logistic_max",
                 "0"]) == 1
    assert "the first below the second" in capsys.readouterr().err


def test_binary_with_labels_that_are_not_plus_or_minus_one_as_vw(tmp_path):
    """VW 9.11.9 reports such a label and leaves its loss to the learner (squared here): on
    these six lines VW prints -1 1 1 1 1 1 and average loss 0.922080."""
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n0 |a y\n-1 |a y\n2 |a x z\n0 |a x\n1 |a z\n")
    out, err, _ = run_workspace(["-d", str(data), "--binary", "-p", str(tmp_path / "p")])
    assert (tmp_path / "p").read_text().split() == ["-1", "1", "1", "1", "1", "1"]
    assert "average loss = 0.922080" in err
    assert f"{data}:4: label 2 is not -1 or 1 as --binary expects" in out


@pytest.mark.parametrize("args,expected,loss", [
    # VW 9.11.9 on these lines; its plain soft-label step is the exact blend of the ±1 ones,
    # so without --invariant the predictions are VW's
    (["--sgd"], "0 7.071068 -2.228169 0.821118 -2.952340 4.093046 5.119131 -1.158929",
     "1.312896"),
    (["--adaptive", "--normalized"],
     "0 0.707107 -0.064341 0.282618 -0.513204 0.488744 1.307044 0.341566", "0.713699"),
])
def test_soft_logistic_labels_with_plain_updates_are_vw(tmp_path, args, expected, loss):
    data = tmp_path / "s.vw"
    data.write_text("1 |a x\n0 |a x y\n-1 |a y\n0.5 |a x\n0 |a y z\n1 |a z\n-0.25 |a x z\n"
                    "0 |a x\n")
    _, err, _ = run_workspace(["-d", str(data), "--loss_function", "logistic", "-p",
                               str(tmp_path / "p"), *args])
    ours = [float(v) for v in (tmp_path / "p").read_text().split()]
    np.testing.assert_allclose(ours, [float(v) for v in expected.split()], atol=2e-6)
    assert f"average loss = {loss}" in err


def test_a_negative_importance_weight_is_predicted_not_learned(tmp_path, capsys):
    # VW 9.11.9 writes a prediction for such a line and learns nothing from it (the line after
    # it, on the same features, gets the same prediction); we say so with the line, or stop
    data = tmp_path / "w.vw"
    data.write_text("1 |f a\n-1 -2 'neg |f a\n1 |f a\n1 -0.5 |f a\n")
    preds = tmp_path / "p.txt"
    out, err, code = run_workspace(["-d", str(data), "-p", str(preds)])
    assert code == 0
    lines = preds.read_text().splitlines()
    assert len(lines) == 4 and lines[1].endswith(" neg")
    assert lines[1].split()[0] == lines[2]  # line 2 taught nothing
    assert f"{data}:2: importance weight '-2' must be a finite value >= 0" in out
    assert "predicted, not learned" in out and f"{data}:4:" in out
    assert "skipped examples" not in err
    assert main(["-d", str(data), "--strict_parse", "--quiet"]) == 1
    assert f"{data}:2: importance weight '-2'" in capsys.readouterr().err


@pytest.mark.parametrize("flags", ["--sgd -l 0.1 --initial_t 5", "--adaptive --initial_t 3",
                                   "--normalized --initial_t 2", "--loss_function logistic"])
def test_a_predict_only_model_goes_on_learning_from_a_fresh_state(rater_task_file, tmp_path,
                                                                  flags):
    # as VW: t, the normalizer sums and the adaptive sums start over (at --initial_t) under the
    # saved weights; they started at 0, which made VW's and our later predictions differ
    from pyvw_lite.learners import gd
    from pyvw_lite.workspace import Workspace
    lines = rater_task_file.read_text().splitlines()
    model = tmp_path / "m.pvw"
    first = Workspace(f"{flags} --quiet --predict_only_model")
    first.learn(lines[:1500])
    first.save(str(model))
    resumed = Workspace(f"-i {model} {flags} --quiet")
    fresh = Workspace(f"{flags} --quiet")
    fresh.weights[:, gd.W] = first.weights[:, gd.W]
    fresh.state[gd.MIN_LABEL:gd.MAX_LABEL + 1] = first.state[gd.MIN_LABEL:gd.MAX_LABEL + 1]
    np.testing.assert_array_equal(resumed.state, fresh.state)
    resumed.learn(lines[1500:])
    fresh.learn(lines[1500:])
    np.testing.assert_array_equal(resumed.weights, fresh.weights)


def test_save_per_pass_writes_each_pass_model_as_vw(rater_task_file, tmp_path, capsys):
    from pyvw_lite.workspace import Workspace
    model, one = tmp_path / "m.pvw", tmp_path / "one.pvw"
    args = ["-d", str(rater_task_file), "-c", "--cache_file", str(tmp_path / "c"),
            "--holdout_off", "--quiet"]
    run_workspace([*args, "--passes", "3", "--save_per_pass", "-f", str(model)])
    assert sorted(p.name for p in tmp_path.glob("m.pvw*")) == ["m.pvw", "m.pvw.1", "m.pvw.2",
                                                               "m.pvw.3"]
    run_workspace([*args, "--passes", "1", "-f", str(one)])
    for saved, same in ((f"{model}.1", one), (f"{model}.3", model)):
        np.testing.assert_array_equal(Workspace(f"-i {saved} --quiet").weights,
                                      Workspace(f"-i {same} --quiet").weights)
    assert main(["-d", str(rater_task_file), "--save_per_pass", "--quiet"]) == 1
    assert "--save_per_pass saves the -f model after each pass" in capsys.readouterr().err
    sharded = tmp_path / "s.pvw"  # the shards' workspaces have no -f, the job has
    assert main(["-d", str(rater_task_file), "--executor", "serial", "--passes", "2",
                 "--save_per_pass", "-f", str(sharded), "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.glob("s.pvw*")) == ["s.pvw", "s.pvw.1", "s.pvw.2"]


def test_a_cache_of_another_format_is_rebuilt(tmp_path):
    import json
    from pyvw_lite.io import cache as cache_io
    data, cache = tmp_path / "d.vw", tmp_path / "d.cache"
    data.write_text("1 |f a\n-1 |f b\n")
    run_workspace(["-d", str(data), "--cache_file", str(cache), "--quiet"])
    raw = cache.read_bytes()
    key = f'"format": {json.dumps(cache_io.FORMAT)}'.encode()
    assert raw.count(key) == 1
    old = raw.replace(key, b'"format": 2')  # as an older version wrote it
    cache.write_bytes(old)
    out, err, code = run_workspace(["-d", str(data), "--cache_file", str(cache)])
    assert code == 0 and "was made by another pyvw-lite version; rebuilding it" in out
    assert cache.read_bytes() == raw


def test_outputs_sharing_stdout_come_example_by_example_as_in_vw(tmp_path):
    # VW writes each example's --audit block, then its -r line, then its -p line; we wrote the
    # audit of a whole batch, then its -p lines, then its -r lines
    data = tmp_path / "d.vw"
    data.write_text("1 'a |f x y\n2 |f y\n3 'c |f z\n1 |f x\n")
    audited = cli(["-d", str(data), "--audit", "-p", "/dev/stdout", "--quiet"])
    lines = audited.stdout.decode().splitlines()
    assert audited.returncode == 0 and len(lines) == 12
    for k in range(0, 12, 3):  # the audit's prediction line, its features, the -p line
        assert lines[k + 1].startswith("\t") and lines[k + 2] == lines[k]
    both = cli(["-d", str(data), "--oaa", "3", "-p", "/dev/stdout", "-r", "-", "--quiet"])
    lines = both.stdout.decode().splitlines()
    assert both.returncode == 0 and len(lines) == 8
    assert all(raw.startswith(" 1:") and predicted.split()[0] in "123"
               for raw, predicted in zip(lines[0::2], lines[1::2]))
    assert lines[0].endswith(" a") and lines[1] == "1 a"


@pytest.mark.parametrize("argv,near", [(["evalute", "-p", "p.txt", "-d", "t.vw"], "evaluate"),
                                       (["crwod"], "crowd"), (["spilt", "x"], "split")])
def test_a_misspelt_command_is_named_as_one(argv, near, capsys, tmp_path, monkeypatch):
    """Issue 29 item 4: 'evalute' was taken for a data file ('only one data file may be
    given'), 'crwod' for a missing one."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"unknown command '{argv[0]}' (did you mean 'pyvw-lite {near}'?)" in err
    (tmp_path / "crwod").write_text("1 |a x\n")  # an existing file is data, as in VW
    assert main(["crwod", "--quiet"]) == 0


def test_vw_flags_that_only_change_vws_internals_are_accepted_with_a_note(rater_task_file):
    """Issue 29 item 5: --onethread, --preserve_performance_counters and --sort_features
    stopped the run."""
    flags = ["--onethread", "--preserve_performance_counters", "--sort_features"]
    out, err, code = run_workspace(["-d", str(rater_task_file), *flags])
    plain = run_workspace(["-d", str(rater_task_file)])[1]
    assert code == 0 and err == plain
    for flag in flags:
        assert f"[info] {flag} only changes VW's internals; accepted, no effect here" in out


def test_help_lists_choices_once_and_keeps_its_columns():
    from pyvw_lite.cli.main import _help
    text = _help()
    assert "--loss_function squared|logistic|hinge|quantile\n" in text
    assert "(squared|logistic|hinge|quantile)" not in text
    lines = text.splitlines()
    flags = [k for k, line in enumerate(lines) if line.lstrip().startswith("-")
             and line.startswith("  ") and not line.startswith("  pyvw-lite")]
    assert len(flags) > 80
    for k in flags:  # help text starts in column 37, or on the next line after a long flag
        line = lines[k]
        if len(line) > 36 and line[36] != " ":
            continue  # a flag longer than the column, alone on its line
        assert line[36] == " " and line[37] != " " or lines[k + 1].startswith(" " * 37), line


def test_the_default_cache_is_named_apart_from_vws_and_a_vw_cache_is_named_as_such(tmp_path,
                                                                                   capsys):
    # VW's -c writes DATA.cache in its own format: ours went there too, so each tool's cache
    # broke the other's next run ("cache version too long" in VW)
    vw = pytest.importorskip("vowpalwabbit")
    data = tmp_path / "d.vw"
    data.write_text("1 |f a\n-1 |f b\n" * 20)
    assert main(["-d", str(data), "-c", "--passes", "2", "--quiet"]) == 0
    assert (tmp_path / "d.vw.pvwcache").exists() and not (tmp_path / "d.vw.cache").exists()
    model = vw.Workspace(f"-d {data} -c --passes 2 --quiet")  # VW's cache goes beside ours
    model.finish()
    assert (tmp_path / "d.vw.cache").read_bytes()[8:15] == vw.__version__.encode() + b"\0"
    assert main(["-d", str(data), "-c", "-k", "--passes", "2", "--quiet"]) == 0
    before = (tmp_path / "d.vw.cache").read_bytes()
    assert main(["-d", str(data), "--cache_file", str(tmp_path / "d.vw.cache"), "-k"]) == 1
    err = capsys.readouterr().err
    assert f"--cache_file {tmp_path / 'd.vw.cache'} exists and is VW {vw.__version__}'s cache" in err
    assert (tmp_path / "d.vw.cache").read_bytes() == before
    (tmp_path / "other.vw").write_bytes(data.read_bytes())
    (tmp_path / "other.vw.pvwcache").write_bytes(before)  # -c names it: the message says -c
    assert main(["-d", str(tmp_path / "other.vw"), "-c", "--passes", "2", "--quiet"]) == 1
    assert f"-c {tmp_path / 'other.vw.pvwcache'} exists and is VW" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["split", "crowd", "evaluate", "convert", "experiment"])
def test_subcommand_help_shows_a_value_only_for_options_that_take_one(command):
    done = cli([command, "--help"])
    text = done.stdout.decode()
    assert done.returncode == 0 and "--help" in text
    assert "<bool>" not in text and "Show this message and exit." in text


def test_ignore_linear_features_are_counted_as_vw_counts_them(tmp_path, capsys):
    # VW 9.11.9 on these 18 lines, --ignore_linear r -q rt: current features 12, 4 and 6 (r's
    # features counted though they learn no linear term), total feature number 132
    data = tmp_path / "d.vw"
    data.write_text("1 |r a b |t c d e\n-1 |r a |t c\n1 |r b |t d e\n" * 6)
    assert main(["-d", str(data), "--ignore_linear", "r", "-q", "rt", "-P", "1"]) == 0
    err = capsys.readouterr().err
    rows = [line.split() for line in err.splitlines() if line[:1].isdigit()]
    assert [int(row[-1]) for row in rows[:3]] == [12, 4, 6]
    assert summary_value(err, "total feature number") == "132"
    assert main(["-d", str(data), "--ignore", "r", "-q", "rt", "--quiet"]) == 0  # gone entirely


def test_class_numbers_under_named_labels_are_refused_with_the_reason(tmp_path, capsys):
    # VW turns each into "unknown" and reports an average loss near 0; the run is stopped instead
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{k % 5 + 1} |f x{k % 5}\n" for k in range(50)))
    assert main(["-d", str(data), "--oaa", "5", "--named_labels", "a,b,c,d,e"]) == 1
    err = capsys.readouterr().err
    assert f"{data}:1: label '1' is a class number, not one of --named_labels a,b,c,d,e" in err
    data.write_text("a |f x\nz |f y\nb |f x\n")  # a name that is not a class: warned, as VW
    assert main(["-d", str(data), "--oaa", "5", "--named_labels", "a,b,c,d,e"]) == 0
    assert "label 'z' is not one of --named_labels" in capsys.readouterr().out  # VW's stream
