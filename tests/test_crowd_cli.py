"""`pyvw-lite crowd` end to end: inputs, outputs, model files, baselines and bad input."""
from __future__ import annotations

import csv
import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from pyvw_lite.cli.main import main
from pyvw_lite.io.crowd_input import CrowdInputError, RowPolicy, read_answers, read_blocks
from pyvw_lite.synthetic import crowd_answers


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crowd")
    data = crowd_answers(n_tasks=600, answers_per_task=5, n_workers=40, classes=3, seed=3)
    data.write(str(folder / "answers.csv"), str(folder / "truth.csv"))
    return folder, data


def run(args, capsys):
    code = main(["crowd", *args])
    captured = capsys.readouterr()
    return code, captured.err


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def accuracy_line(stderr: str) -> float:
    line = next(line for line in stderr.splitlines() if line.startswith("accuracy on"))
    return float(line.rsplit("=", 1)[1])


def test_batch_writes_posteriors_workers_and_beats_majority(answers, capsys, tmp_path):
    folder, data = answers
    out = tmp_path / "labels.csv"
    workers = tmp_path / "workers.csv"
    code, err = run([str(folder / "answers.csv"), "--batch", "--method", "em", "-p", str(out),
                     "--workers", str(workers), "--truth", str(folder / "truth.csv")], capsys)
    assert code == 0, err
    rows = read_csv(out)
    assert rows[0] == ["task", "label", "p_0", "p_1", "p_2"]
    assert len(rows) == 601
    for row in rows[1:]:
        probabilities = np.array(row[2:], dtype=float)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-5)
        assert row[1] == str(int(np.argmax(probabilities)))
    assert "iteration  objective" in err and "hypermean confusion matrix" in err
    em = accuracy_line(err)
    code, err = run([str(folder / "answers.csv"), "--method", "majority", "--truth",
                     str(folder / "truth.csv")], capsys)
    assert code == 0
    assert em > accuracy_line(err)
    table = read_csv(workers)
    assert table[0][:4] == ["worker", "answers", "slot", "reliability"]
    assert len(table) == 41 and len(table[0]) == 4 + 9
    assert sum(int(row[1]) for row in table[1:]) == 3000


def test_online_prints_the_seed_table_and_continues_from_a_model(answers, capsys, tmp_path):
    folder, _ = answers
    model = tmp_path / "crowd.pvw"
    code, err = run([str(folder / "answers.csv"), "--passes", "2", "-f", str(model)], capsys)
    assert code == 0, err
    lines = err.splitlines()
    settings = lines[1:11]
    assert [line.split(" = ")[0] for line in settings] == [
        "initial_t", "eta", "rho", "n_items", "n_labels", "n_workers", "symmetric", "test_only",
        "prediction file", "priorz"]
    assert "priorz = 0.333333,0.333333,0.333333" in settings
    header = lines.index("cumul      since      example    current    current    current")
    counters = [int(line.split()[2]) for line in lines[header + 2:] if line and line[0] in "-0123456789"
                and len(line.split()) == 6]
    assert counters[:4] == [2, 5, 10, 19] and counters[-1] == 1200
    code, err = run([str(folder / "answers.csv"), "-i", str(model), "-f", str(model)], capsys)
    assert code == 0, err
    assert "item counter t = 1800" in err
    before = model.read_bytes()
    code, err = run([str(folder / "answers.csv"), "-i", str(model), "-t", "-f", str(model)], capsys)
    assert code == 0 and model.read_bytes() == before


def test_item_block_format_and_stdin(tmp_path, capsys):
    blocks = tmp_path / "items.txt"
    blocks.write_text("# comment\n"
                      "a -1 ann:0 bob:0 cy:1\n"
                      "\n"
                      "b 1 ann:1 bob:1\n"
                      "c -1\n"
                      "d -1 ann:2 bob:2 cy:2 cy:2\n")
    data = read_blocks(str(blocks))
    assert data.n_items == 3 and data.skipped_lines == 1
    assert data.gold.tolist() == [-1, 1, -1] and data.duplicates == 1
    out = tmp_path / "p.csv"
    code, err = run([str(blocks), "-p", str(out)], capsys)
    assert code == 0, err
    assert [row[:2] for row in read_csv(out)[1:]] == [["a", "0"], ["b", "1"], ["d", "2"]]
    assert "1 gold (the file's gold field)" in err  # a fixed label is never silent
    triples = "task,worker,label\nx,u,yes\nx,v,yes\ny,u,no\ny,v,no\n"
    result = subprocess.run([sys.executable, "-m", "pyvw_lite", "crowd", "-", "--batch", "-p",
                             str(out), "--quiet"], input=triples, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert read_csv(out)[0] == ["task", "label", "p_no", "p_yes"]
    assert [row[:2] for row in read_csv(out)[1:]] == [["x", "yes"], ["y", "no"]]
    before = out.read_bytes()
    result = subprocess.run([sys.executable, "-m", "pyvw_lite", "crowd", "-", "--batch", "-p",
                             str(out), "--quiet"], input=gzip.compress(triples.encode()),
                            capture_output=True)  # zcat left out: gzip data is read as such
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == before


@pytest.mark.parametrize("packed", [False, True], ids=["text", "gzip"])
def test_item_blocks_on_standard_input(tmp_path, capsys, monkeypatch, packed):
    import io
    text = b"# comment\na -1 ann:0 bob:0 cy:1\nb 1 ann:1 bob:1\nd -1 ann:2 bob:2 cy:2\n"
    blocks = tmp_path / "items.txt"
    blocks.write_bytes(text)
    from_file, from_stdin = tmp_path / "f.csv", tmp_path / "s.csv"
    assert run([str(blocks), "-p", str(from_file), "--quiet"], capsys)[0] == 0
    piped = gzip.compress(text) if packed else text
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(piped)))
    code, err = run(["-", "-p", str(from_stdin), "--quiet"], capsys)  # was: missing column
    assert code == 0, err
    assert from_stdin.read_bytes() == from_file.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(piped)))
    lines = tmp_path / "items.vw"
    assert main(["convert", "-", "-o", str(lines)]) == 0
    assert lines.read_text().splitlines()[:2] == ["1 'a |rater r_ann |task t_a",
                                                  "1 'a |rater r_bob |task t_a"]


@pytest.mark.parametrize("content,gold,message", [
    ("task,worker\nx,u\n", None, "missing column 'label'"),
    ("", None, "answers.csv:1: the file is empty; expected a header line naming the columns "
               "task, worker, label"),
    ("\ntask,worker,label\n", None, "answers.csv:1: the file starts with an empty line"),
    ("task,worker,label\nx,u,1\nx,,2\n", None, ":3: empty 'worker'"),
    ("task,worker,label\nx,u,1\nx,v\ny,u,2\n", None, ":3: expected 3 fields, got 2"),
    ("task,worker,label\nx,u,1\ny,u,2,3\n", None, ":3: expected 3 fields, got 4 (line: 'y,u,2,3')"),
    ("task,worker,label\nx,u,1\ny,u,2\n", "task,label\nx,1\ny,7\n", "gold.csv:3: unknown gold label '7'"),
])
def test_bad_tables_name_file_and_line(tmp_path, capsys, content, gold, message):
    path = tmp_path / "answers.csv"
    path.write_text(content)
    args = [str(path), "--strict_parse"]
    if gold:
        (tmp_path / "gold.csv").write_text(gold)
        args += ["--gold", str(tmp_path / "gold.csv")]
    code, err = run(args, capsys)
    assert code == 1
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("line,message", [
    ("a -1 ann:0 bob\n", "malformed rating 'bob'"),
    ("a -1 ann:x\n", "rating 'x' of worker 'ann' is not an integer"),
    ("a -1 ann:5\n", "rating 5 outside 0..2"),
    ("a 3 ann:1\n", "gold 3 outside -1..2"),
])
def test_bad_item_blocks_are_fatal_with_the_line(tmp_path, line, message):
    path = tmp_path / "items.txt"
    path.write_text("z -1 ann:0 bob:1\n" + line)
    with pytest.raises(CrowdInputError, match=f"items.txt:2: {message}"):
        read_answers(str(path), n_labels=3)


def test_a_csv_label_outside_n_labels_is_named(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label\nt1,w1,1\nt1,w2,4\n")
    with pytest.raises(CrowdInputError, match=r"label 4 is outside 0..3, the classes "
                                              r"--n_labels 4 names"):
        read_answers(str(path), n_labels=4)


def test_malformed_rows_are_skipped_with_a_located_warning(tmp_path, capsys):
    """By default a malformed answer row (or item block) is skipped with a warning naming the
    file, line and text, and counted in the summary; the rest of the file is used."""
    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\nx,u,yes\nx,v\ny,u,no\nz,,no\ny,v,no,maybe\n"
                    "z,v,yes\n")
    out = tmp_path / "p.csv"
    code, err = run([str(path), "-p", str(out)], capsys)
    assert code == 0, err
    assert f"[warning] {path}:3: expected 3 fields, got 2 (line: 'x,v'); skipped" in err
    assert f"{path}:5: empty 'worker'" in err and f"{path}:6: expected 3 fields, got 4" in err
    assert "number of ratings = 3" in err and "skipped malformed rows = 3" in err
    assert [row[0] for row in read_csv(out)[1:]] == ["x", "y", "z"]
    blocks = tmp_path / "items.txt"
    blocks.write_text("a -1 ann:0 bob:1\nb -1 ann:x\nc 0 bob:1\n")
    warnings: list[str] = []
    rows = RowPolicy(strict=False, warn=warnings.append)
    data = read_answers(str(blocks), n_labels=2, rows=rows)
    assert data.task_names.tolist() == ["a", "c"] and data.malformed == rows.skipped == 1
    assert warnings == [f"[warning] {blocks}:2: rating 'x' of worker 'ann' is not an "
                        "integer (line: 'b -1 ann:x'); skipped"]


def test_control_characters_are_a_malformed_row_and_long_labels_are_shortened(tmp_path,
                                                                               capsys):
    """A NUL (or another control character) in an id or label skips its row with a located
    warning, fatal under --strict_parse, instead of a new worker whose id carries it into
    every output; a label of any length is kept whole in the outputs and shortened on the
    summary line."""
    path = tmp_path / "answers.csv"
    path.write_bytes(b"task,worker,label\nx,u,yes\nx,w\x002,no\ny,u,no\n")
    out = tmp_path / "p.csv"
    code, err = run([str(path), "--batch", "-p", str(out)], capsys)
    assert code == 0, err
    assert f"[warning] {path}:3: a control character ('\\x00') in 'w\\x002'" in err
    assert "skipped malformed rows = 1" in err and "1 worker," in err
    code, err = run([str(path), "--batch", "-p", str(tmp_path / "q.csv"), "--strict_parse"],
                    capsys)
    assert code != 0 and f"{path}:3: a control character" in err
    long = "y" * 5000
    path.write_text(f"task,worker,label\nx,u,{long}\nx,v,no\n")
    code, err = run([str(path), "--batch", "-p", str(out)], capsys)
    assert code == 0, err
    assert f"2 labels (no, {'y' * 40}... (4,960 more))" in err and long not in err
    assert f"p_{long}" in out.read_text().splitlines()[0]


def test_a_byte_order_mark_is_not_part_of_the_header(tmp_path, capsys):
    """Spreadsheet exports start with a UTF-8 byte order mark; VW's parser skips it too."""
    bom = "\ufeff"
    path = tmp_path / "answers.csv"
    path.write_text(bom + "task,worker,label\nx,u,yes\nx,v,yes\ny,u,no\ny,v,no\n",
                    encoding="utf-8")
    out = tmp_path / "p.csv"
    code, err = run([str(path), "--batch", "-p", str(out)], capsys)
    assert code == 0, err
    assert [row[:2] for row in read_csv(out)[1:]] == [["x", "yes"], ["y", "no"]]
    blocks = tmp_path / "items.txt"
    blocks.write_text(bom + "a -1 ann:0 bob:1\n", encoding="utf-8")
    assert read_answers(str(blocks), n_labels=2).task_names.tolist() == ["a"]


def test_a_damaged_gzip_of_answers_is_a_clear_error(tmp_path, capsys):
    """Not click's bare "Aborted." (its reading of an EOFError), and no EM over part of the data."""
    import gzip
    rows = "".join(f"t{k % 300},w{k % 17},{'yes' if k % 3 else 'no'}\n" for k in range(5000))
    data = gzip.compress(("task,worker,label\n" + rows).encode())
    whole = tmp_path / "a.csv.gz"
    whole.write_bytes(data)
    assert run([str(whole), "--quiet"], capsys)[0] == 0
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(data[:len(data) // 2])
    code, err = run([str(cut), "--quiet"], capsys)
    assert code == 1
    assert f"{cut}: compressed data ends early" in err
    assert main(["convert", str(cut), "-o", str(tmp_path / "x.vw")]) == 1
    assert f"{cut}: compressed data ends early" in capsys.readouterr().err


def test_option_errors(answers, capsys):
    folder, _ = answers
    code, err = run([str(folder / "answers.csv"), "--priorz", "1,2"], capsys)
    assert code == 1 and "--priorz has 2 values; need 3" in err
    code, err = run([str(folder / "answers.csv"), "--priorz", "1,0,1"], capsys)
    assert code == 1 and "positive" in err
    code, err = run([str(folder / "answers.csv"), "--rho", "1", "--initial_t", "0"], capsys)
    assert code == 1 and "--initial_t > 0" in err
    code, err = run([str(folder / "missing.csv")], capsys)
    assert code == 1 and "no such file" in err


def test_crowd_model_is_not_a_vw_model(answers, capsys, tmp_path):
    folder, _ = answers
    model = tmp_path / "crowd.pvw"
    assert run([str(folder / "answers.csv"), "--batch", "--method", "em", "-f", str(model), "--quiet"], capsys)[0] == 0
    vw = tmp_path / "x.vw"
    vw.write_text("1 |a b\n")
    assert main(["-d", str(vw), "-i", str(model), "--quiet"]) == 1
    assert "crowd" in capsys.readouterr().err


def test_options_of_the_other_mode_are_flagged(answers, capsys):
    folder, _ = answers
    code, err = run([str(folder / "answers.csv"), "--batch", "--passes", "3", "--eta", "2"], capsys)
    assert code == 0 and "[warning] --passes, --eta only affect online EM" in err
    code, err = run([str(folder / "answers.csv"), "--batch", "--progressive"], capsys)
    assert code == 0 and "--progressive only affects online EM; a batch fit ignores it" in err
    code, err = run([str(folder / "answers.csv"), "--batch", "-t"], capsys)
    assert code == 1 and "-t with --batch: it is for online EM" in err
    assert "-i " not in err  # only the flag given is named
    code, err = run([str(folder / "answers.csv"), "--max_iters", "5"], capsys)
    assert code == 0 and "--max_iters and --tol only affect batch EM" in err


def test_continuing_a_model_refuses_options_that_reshape_it(answers, capsys, tmp_path):
    folder, _ = answers
    data = str(folder / "answers.csv")
    model = tmp_path / "crowd.pvw"
    assert run([data, "-f", str(model), "--quiet"], capsys)[0] == 0
    before = model.read_bytes()
    for extra, message in (
            (["--n_labels", "4"], "trained with --n_labels 3, not with --n_labels 4"),
            (["--symmetric"], "trained with no --symmetric, not with --symmetric"),
            (["--sigma_b", "1"], "trained with --sigma_b 0, not with --sigma_b 1"),
            (["--n_worker_bits", "8"], "trained with --n_worker_bits 16, not with --n_worker_bits 8"),
            (["--worker_map", "exact"], "trained with --worker_map hash, not with --worker_map exact"),
            (["--no_hyper"], "trained with --sigma_mu 3, not with --no_hyper"),
            (["--priorz", "1,2,1"], "not with --priorz 1,2,1"),
            (["--method", "majority"], "-i needs --method em")):
        code, err = run([data, "-i", str(model), "-f", str(model), *extra], capsys)
        assert code == 1 and message in err, (extra, err)
        assert model.read_bytes() == before
    # options at the model's own values, and a new schedule, are accepted
    code, err = run([data, "-i", str(model), "--n_labels", "3", "--priorz", "2,2,2", "--eta", "5",
                     "-f", str(model)], capsys)
    assert code == 0, err
    assert "eta = 5.000000" in err


def test_baselines_refuse_model_outputs_before_writing_anything(answers, capsys, tmp_path):
    folder, _ = answers
    out = tmp_path / "labels.csv"
    for extra in (["-f", str(tmp_path / "m.pvw")], ["-t"]):
        code, err = run([str(folder / "answers.csv"), "--method", "majority", "-p", str(out),
                         *extra], capsys)
        assert code == 1 and "needs --method em" in err
        assert not out.exists()


def test_gold_tasks_no_answer_names_are_counted(tmp_path, capsys):
    answers, gold = tmp_path / "a.csv", tmp_path / "g.csv"
    answers.write_text("task,worker,label\na,u,x\nb,u,y\nb,v,y\n")
    gold.write_text("task,label\na,x\nzz,y\nqq,x\n")  # zz, qq: typos or another batch
    code, err = run([str(answers), "--gold", str(gold), "--batch"], capsys)
    assert code == 0, err
    assert "1 gold (2 gold tasks in no answer)" in err


def test_a_long_bad_row_is_quoted_short(tmp_path, capsys):
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\na,u,x\nb,v,y\nb," + "w" * 3000 + ",y,extra\n")
    code, err = run([str(answers), "--batch"], capsys)
    assert code == 0 and "a.csv:4: expected 3 fields, got 4 (line: 'b,www" in err
    assert max(len(line) for line in err.splitlines()) < len(str(answers)) + 300


@pytest.mark.parametrize("packed", [False, True], ids=["text", "gzip"])
def test_answers_from_a_pipe(tmp_path, capsys, packed):
    """crowd <(cat answers.csv) read the header to tell the format, then opened the pipe again
    and found the rest ("missing column 'task'")."""
    import threading
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\nx,u,yes\nx,v,yes\ny,u,no\ny,v,no\nz,u,yes\n")
    from_file, from_pipe = tmp_path / "f.csv", tmp_path / "p.csv"
    assert run([str(answers), "-p", str(from_file), "--quiet"], capsys)[0] == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = gzip.compress(answers.read_bytes()) if packed else answers.read_bytes()
    feeder = threading.Thread(target=lambda: fifo.write_bytes(data), daemon=True)
    feeder.start()
    code, err = run([str(fifo), "-p", str(from_pipe), "--quiet"], capsys)
    feeder.join()
    assert code == 0, err
    assert from_pipe.read_bytes() == from_file.read_bytes()


@pytest.mark.parametrize("mode", [[], ["--batch", "--method", "em", "--worker_map", "hash"]])
def test_workers_sharing_a_hashed_slot_are_counted(answers, capsys, mode):
    """Workers hashed to one slot share one confusion matrix; the summary says how many."""
    folder, _ = answers
    code, err = run([str(folder / "answers.csv"), "--n_worker_bits", "3", *mode], capsys)
    assert code == 0
    shared = re.search(r"workers sharing a slot = (\d+) of 40 \(2\^3 slots; raise "
                       r"--n_worker_bits\)", err)
    assert shared and 32 <= int(shared.group(1)) <= 40  # 40 workers, 8 slots: all but <= 8
    code, err = run([str(folder / "answers.csv"), *mode], capsys)
    assert "sharing a slot" not in err  # 2^16 slots: none for 40 workers


def test_workers_plot_draws_reliabilities_and_the_hypermean(tmp_path, capsys):
    """Issue 29: `crowd --workers_plot PNG` draws the workers' reliabilities and the hypermean
    confusion matrix, for every method (issue 38), and no output may replace the answers."""
    from pyvw_lite.synthetic import crowd_answers
    answers = tmp_path / "answers.csv"
    crowd_answers(n_tasks=200, n_workers=20, seed=2).write(str(answers))
    picture = tmp_path / "workers.png"
    assert main(["crowd", str(answers), "--batch", "--workers_plot", str(picture),
                 "--quiet"]) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["crowd", str(answers), "--batch", "--method", "ebcc", "--workers_plot",
                 str(tmp_path / "x.png"), "--quiet"]) == 0
    assert main(["crowd", str(answers), "--batch", "--workers_plot", str(answers),
                 "--quiet"]) == 1
    assert "write over its input" in capsys.readouterr().err


def test_options_a_method_does_not_use_are_named_and_every_run_names_its_method(tmp_path,
                                                                                capsys):
    """Issue 38's newcomer review: EBCC's options with majority vote, EM's with BCC, and a bad
    --duplicates on a file without repeats passed in silence; EM runs named no method."""
    answers = "datasets/act_MS/answers.csv"
    code, err = run([answers, "--batch", "--method", "majority", "--restarts", "3", "--nu", "0",
                     "--a_v", "9"], capsys)
    assert code == 0
    assert "[warning] --method majority does not use --restarts, --a_v, --nu; they are ignored" \
        in err
    code, err = run([answers, "--batch", "--method", "bcc", "--symmetric"], capsys)
    assert "--method bcc does not use --symmetric; it is ignored" in err
    code, err = run([answers, "--duplicates", "bogus"], capsys)
    assert code == 1 and "--duplicates must be one of keep, first, last, vote" in err
    code, err = run([answers, "--batch", "--method", "em"], capsys)
    assert "method = em (batch MAP-EM of the nominal label model)" in err
    code, err = run([answers], capsys)
    assert "method = em (online EM in stream order; --batch fits the default" in err
    out = tmp_path / "labels.csv"
    code, err = run([answers, "--batch", "--truth", str(tmp_path / "none.csv"), "-p", str(out)],
                    capsys)
    assert code == 1 and "none.csv" in err and not out.exists()  # checked before the fit


def test_counts_of_one_are_singular(tmp_path, capsys):
    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\nt1,w1,a\nt1,w1,b\n")
    code, err = run([str(path), "--batch", "--method", "bcc"], capsys)
    assert code == 0
    assert "1 item, 2 ratings, 1 worker, 2 labels (a, b), 1 repeated task-worker answer (kept)" \
        in err and re.search(r"fitted = BCC \(1 subtype per class, 1 iteration,", err)


@pytest.mark.parametrize("flag", ["--candidates", "--folds"])
def test_a_removed_option_says_it_was_removed_and_what_replaced_it(answers, capsys, flag):
    folder, _ = answers
    code, err = run([str(folder / "answers.csv"), "--batch", flag, "3"], capsys)
    assert code != 0
    assert "were removed" in err and "--sparse_workers" in err and "--method" in err
