"""typer app for the subcommands that VW itself does not have."""
from __future__ import annotations

import math
import sys

import typer

from ..crowd.defaults import AUTO_DEFAULTS, DEFAULTS, EBCC_DEFAULTS
from ..io.atomic import atomic_write, check_paths
from .data import datasets_app, generate_app

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="pyvw-lite subcommands (a plain VW command line needs none).")


@app.callback()
def _root() -> None:
    """pyvw-lite subcommands."""


app.add_typer(datasets_app, name="datasets")
app.add_typer(generate_app, name="generate")


@app.command()
def bench(
    lines: int = typer.Option(1_000_000, "--lines", "-n", min=1,
                              help="rater-task lines to generate"),
    repeat: int = typer.Option(3, "--repeat", min=1,
                               help="runs per tool and scenario (median kept)"),
    seed: int = typer.Option(12345, "--seed", min=0, help="seed of the generated data"),
    loss: str = typer.Option("logistic", "--loss_function", help="loss of the binary learner"),
    workdir: str = typer.Option(None, "--workdir", help="keep data and caches here"),
    peer: bool = typer.Option(True, "--peer/--no-peer", help="also time VW (pip vowpalwabbit)"),
    json_out: str = typer.Option(None, "--json", help="also write the results as JSON"),
    scenario: list[str] = typer.Option(
        None, "--scenario", help="text, cache, sft, sft-dyad, ratings-lrq or ratings-dyad "
        "(repeatable; default all)"),
) -> None:
    """Time pyvw-lite and VW side by side on seeded rater-task and ratings data; print the
    ratio."""
    from .bench import SCENARIOS, bench_files, results_json, run_bench
    chosen = tuple(scenario) if scenario else SCENARIOS
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:
        raise typer.BadParameter(f"unknown scenario {unknown[0]!r}; choose from "
                                 + ", ".join(SCENARIOS))
    _check_bench_outputs(json_out, workdir, bench_files(lines, seed))
    results = _workflow_errors(lambda: run_bench(lines=lines, repeat=repeat, seed=seed,
                                                 loss=loss, workdir=workdir, peer=peer,
                                                 chosen=chosen))
    if json_out:
        _workflow_errors(lambda: _write_json(json_out, results_json(results)))


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def crowd(
    answers: str = typer.Argument(..., help="task,worker,label CSV/TSV (or item-per-line blocks); "
                                            "- reads standard input"),
    batch: bool = typer.Option(False, "--batch", help="fit all items at once (default method "
                                                     "auto); without it, online EM in stream "
                                                     "order"),
    method: str = typer.Option(None, "--method", help="auto (the --batch default: BCC, or "
                                                      "majority vote where workers answered too "
                                                      "few items), ebcc, bcc, em (batch or "
                                                      "online MAP-EM), majority or one_coin"),
    gold: str = typer.Option(None, "--gold", help="task,label file of known items (fixed labels)"),
    truth: str = typer.Option(None, "--truth", help="task,label file to report accuracy against "
                                                   "(not used for fitting)"),
    predictions: str = typer.Option(None, "-p", "--predictions",
                                    help="write task,label and one posterior column per label"),
    workers: str = typer.Option(None, "--workers", help="write each worker's confusion matrix "
                                                       "and reliability (CSV)"),
    workers_plot: str = typer.Option(None, "--workers_plot", help="draw the workers' "
                                     "reliabilities and the hypermean confusion matrix (PNG)"),
    final_model: str = typer.Option(None, "-f", "--final_model", help="save the model"),
    initial_model: str = typer.Option(None, "-i", "--initial_model",
                                      help="continue online EM from a saved model"),
    n_items: int = typer.Option(DEFAULTS["n_items"], "--n_items",
                                help="online prior weight |I| (default: the number of items read)"),
    n_labels: int = typer.Option(None, "--n_labels", help="number of labels K (default: those "
                                                          "seen)"),
    priorz: str = typer.Option(None, "--priorz", help="class prior, comma-separated (normalised; "
                                                      "default uniform)"),
    learn_priorz: bool = typer.Option(DEFAULTS["learn_priorz"], "--learn_priorz/--no_learn_priorz",
                                      help="learn the class prior (N(log priorz, 1) prior)"),
    symmetric: bool = typer.Option(False, "--symmetric",
                                   help="tie confusion logits (k,l) and (l,k)"),
    nu: float = typer.Option(DEFAULTS["nu"], "--nu",
                             help="hyperprior mean of the off-diagonal logits"),
    sigma_alpha: float = typer.Option(DEFAULTS["sigma_alpha"], "--sigma_alpha",
                                      help="prior std of worker logits around the hypermean"),
    sigma_mu: float = typer.Option(DEFAULTS["sigma_mu"], "--sigma_mu",
                                   help="prior std of the hypermean around nu"),
    sigma_b: float = typer.Option(DEFAULTS["sigma_b"], "--sigma_b",
                                  help="prior std of item log-difficulty (0: no difficulty model)"),
    kappa: float = typer.Option(DEFAULTS["kappa"], "--kappa",
                                help="prior mean of item log-difficulty"),
    no_hyper: bool = typer.Option(False, "--no_hyper", help="freeze the hypermean at nu"),
    worker_map: str = typer.Option(None, "--worker_map", help="hash (online default) or exact "
                                                               "(batch default)"),
    n_worker_bits: int = typer.Option(DEFAULTS["n_worker_bits"], "--n_worker_bits",
                                      help="2^bits worker slots"),
    eta: float = typer.Option(DEFAULTS["eta"], "--eta", help="online learning rate eta0"),
    rho: float = typer.Option(DEFAULTS["rho"], "--rho", help="online learning-rate decay power"),
    initial_t: float = typer.Option(DEFAULTS["initial_t"], "--initial_t",
                                    help="online learning-rate offset t0"),
    passes: int = typer.Option(1, "--passes", help="online passes over the data"),
    test_only: bool = typer.Option(False, "-t", "--test_only", help="online: predict without "
                                                                    "learning"),
    progressive: bool = typer.Option(False, "--progressive",
                                     help="online: write each item's posterior from before its "
                                          "own update in the last pass (default: the final "
                                          "model's posteriors)"),
    max_iters: int = typer.Option(None, "--max_iters", help="iteration cap of batch EM (200), "
                                                           "BCC and EBCC (500)"),
    tol: float = typer.Option(None, "--tol", help="batch EM: relative objective change (1e-6); "
                                                  "BCC/EBCC: largest move of an item's class "
                                                  "posterior (1e-3)"),
    subtypes: int = typer.Option(EBCC_DEFAULTS["subtypes"], "--subtypes",
                                 help="EBCC: subtypes M per class (worker correlation)"),
    restarts: int = typer.Option(EBCC_DEFAULTS["restarts"], "--restarts",
                                 help="EBCC: seeded restarts, the best evidence bound kept"),
    a_pi: float = typer.Option(EBCC_DEFAULTS["a_pi"], "--a_pi",
                               help="EBCC: Dirichlet concentration of the subtype weights"),
    a_v: float = typer.Option(EBCC_DEFAULTS["a_v"], "--a_v",
                              help="BCC/EBCC: Dirichlet prior on a worker's right answer"),
    b_v: float = typer.Option(EBCC_DEFAULTS["b_v"], "--b_v",
                              help="BCC/EBCC: Dirichlet prior on each wrong answer"),
    flat_class_prior: bool = typer.Option(False, "--flat_class_prior",
                                          help="BCC/EBCC: Dir(1) class prior (default: the "
                                               "majority-vote class counts)"),
    seed: int = typer.Option(EBCC_DEFAULTS["seed"], "--seed", help="EBCC: seed of the "
                                                                  "restarts"),
    sparse_workers: float = typer.Option(AUTO_DEFAULTS["sparse_workers"], "--sparse_workers",
                                         help="auto: majority vote when the median answer's "
                                              "worker gave fewer answers than this, else BCC"),
    duplicates: str = typer.Option("keep", "--duplicates",
                                   help="repeated (task, worker) answers: keep, first, last or "
                                        "vote (one answer, the pair's most frequent)"),
    executor: str = typer.Option(None, "--executor", help="batch EM on shards: serial, "
                                                          "processes:N, dask:ADDRESS or "
                                                          "dask-local:N"),
    shards: int = typer.Option(0, "--shards", help="with --executor: item shards (default: "
                                                   "one per worker)"),
    model_name: str = typer.Option("flass", "--model", help="the model (flass, the only one)"),
    strict_parse: bool = typer.Option(False, "--strict_parse",
                                      help="a malformed answer row is fatal (default: skipped "
                                           "with a warning naming its line)"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress or summary on stderr"),
    removed: str = typer.Option(None, "--candidates", "--folds", hidden=True),
) -> None:
    """True labels from crowd answers: BCC or majority vote by the workers' density (--batch),
    EBCC, BCC, batch or online EM (the default without --batch), or a baseline."""
    from .crowd import CrowdRun, main
    if removed is not None:
        raise typer.BadParameter("--candidates and --folds were removed with the held-out "
                                 "likelihood choice: the default now fits BCC, or majority "
                                 "vote where workers answered too few items (--sparse_workers); "
                                 "--method names one method (docs/crowd.md)")
    if model_name != "flass":
        raise typer.BadParameter(f"unknown --model {model_name!r}; the only model is flass")
    options = CrowdRun(answers=answers, batch=batch, method=method, gold=gold, truth=truth,
                       predictions=predictions, workers=workers, workers_plot=workers_plot,
                       final_model=final_model,
                       initial_model=initial_model, n_items=n_items, n_labels=n_labels,
                       priorz=priorz, learn_priorz=learn_priorz, symmetric=symmetric, nu=nu,
                       sigma_alpha=sigma_alpha, sigma_mu=sigma_mu, sigma_b=sigma_b, kappa=kappa,
                       no_hyper=no_hyper, worker_map=worker_map, n_worker_bits=n_worker_bits,
                       eta=eta, rho=rho, initial_t=initial_t, passes=passes, test_only=test_only,
                       progressive=progressive,
                       max_iters=max_iters, tol=tol, executor=executor, shards=shards,
                       strict_parse=strict_parse, quiet=quiet, subtypes=subtypes,
                       restarts=restarts, a_pi=a_pi, a_v=a_v, b_v=b_v,
                       flat_class_prior=flat_class_prior, seed=seed,
                       sparse_workers=sparse_workers, duplicates=duplicates)
    raise typer.Exit(main(options))


@app.command("compile")
def compile_kernels(
    modes: list[str] = typer.Argument(None, help="modes to compile (default: --all)"),
    all_modes: bool = typer.Option(False, "--all", help="every mode"),
    jobs: int = typer.Option(0, "--jobs", "-j", help="worker processes compiling at once "
                                                     "(default: one per core)"),
) -> None:
    """Fill the kernel cache ahead of time (Docker images, clusters, CI): binary, squared,
    oaa, ect, sft, dyad, sft-dyad, oaa-dyad, active, crowd-online, crowd-batch, crowd-auto."""
    import os

    from ..learner.prebuild import MODES, prebuild
    chosen = list(MODES) if all_modes or not modes else list(modes)
    if jobs < 0:
        typer.echo(f"pyvw-lite: error: --jobs {jobs}: at least 1 (0: one per core)", err=True)
        raise typer.Exit(1)
    try:
        prebuild(chosen, jobs=jobs or os.cpu_count() or 1)
    except ValueError as exc:
        typer.echo(f"pyvw-lite: error: {exc}", err=True)
        raise typer.Exit(1) from None


@app.command("bench-crowd")
def bench_crowd(
    tasks: list[int] = typer.Option(None, "--tasks", min=1, help="tasks to generate (repeatable; "
                                                                 "default 100000 and 1000000)"),
    repeat: int = typer.Option(3, "--repeat", min=1, help="runs per method (median kept)"),
    seed: int = typer.Option(12345, "--seed", min=0, help="seed of the generated answers"),
    peer_python: str = typer.Option(None, "--peer-python",
                                    help="a Python with crowd-kit installed (default: this one, "
                                         "if it has crowd-kit)"),
    peer_tasks: list[int] = typer.Option(None, "--peer-tasks",
                                         help="sizes at which crowd-kit runs too (default 100000)"),
    workdir: str = typer.Option(None, "--workdir", help="keep the generated data here"),
    json_out: str = typer.Option(None, "--json", help="also write the results as JSON"),
) -> None:
    """Time batch and online EM against crowd-kit's DawidSkene on seeded crowd answers."""
    import json

    from .crowd_bench import crowd_bench_files, has_crowdkit, peer_python_default, run_crowd_bench
    sizes = tuple(tasks or (100_000, 1_000_000))
    _check_bench_outputs(json_out, workdir, crowd_bench_files(sizes, seed))
    if peer_python is not None and not has_crowdkit(peer_python):
        raise typer.BadParameter(f"{peer_python} cannot import crowdkit (give a Python with "
                                 "crowd-kit installed)", param_hint="'--peer-python'")
    peer = peer_python or peer_python_default()
    if peer is None:
        typer.echo("crowd-kit is not importable here (pip install crowd-kit, or pass "
                   "--peer-python): timing pyvw-lite alone")
    rows = _workflow_errors(lambda: run_crowd_bench(
        sizes=sizes, repeat=repeat, seed=seed, peer_python=peer, workdir=workdir,
        peer_sizes=tuple(peer_tasks or (100_000,))))
    if json_out:
        _workflow_errors(lambda: _write_json(json_out, json.dumps(rows, indent=1)))


@app.command("bench-scale")
def bench_scale(
    lines: int = typer.Option(1_000_000, "--lines", "-n", min=0,
                              help="rater-task lines to learn from (0: skip learning)"),
    tasks: int = typer.Option(1_000_000, "--tasks", min=0,
                              help="crowd tasks for batch EM (0: skip)"),
    passes: int = typer.Option(3, "--passes", min=1, help="learning passes"),
    repeat: int = typer.Option(3, "--repeat", min=1, help="runs per executor (median kept)"),
    seed: int = typer.Option(12345, "--seed", min=0, help="seed of the generated data"),
    workdir: str = typer.Option(None, "--workdir", help="keep the generated data here"),
    json_out: str = typer.Option(None, "--json", help="also write the results as JSON"),
) -> None:
    """Time sharded learning and map-reduce batch EM on serial, processes:2 and dask-local:2."""
    from .scale_bench import rows_json, run_scale_bench, scale_bench_files
    if lines == 0 and tasks == 0:
        raise typer.BadParameter("--lines 0 and --tasks 0 leave nothing to time")
    _check_bench_outputs(json_out, workdir, scale_bench_files(lines, tasks, seed))
    rows = _workflow_errors(lambda: run_scale_bench(lines=lines, tasks=tasks, passes=passes,
                                                    repeat=repeat, seed=seed, workdir=workdir))
    if json_out:
        _workflow_errors(lambda: _write_json(json_out, rows_json(rows)))


def _check_bench_outputs(json_out: str | None, workdir: str | None, made: list[str]) -> None:
    """Refuse, before a long benchmark starts, a --workdir that is no folder and a --json it
    could not write at its end or that names a file the benchmark makes in its --workdir (its
    data, caches and outputs, however named: the shared output check)."""
    import os
    if workdir is not None and os.path.exists(workdir) and not os.path.isdir(workdir):
        raise typer.BadParameter(f"{workdir} exists and is not a directory",
                                 param_hint="'--workdir'")
    if json_out is None:
        return
    _check_output("--json", json_out)
    for name in made if workdir else []:
        try:
            check_paths([("--workdir", os.path.join(workdir, name))], [("--json", json_out)])
        except ValueError:
            raise typer.BadParameter(f"{json_out} is the benchmark's own {name} in --workdir "
                                     f"{workdir}; name another file", param_hint="'--json'") from None


def _check_output(flag: str, path: str | None) -> None:
    """Refuse an output a long run could not write at its end, before the run starts."""
    if path is None:
        return
    import os
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise typer.BadParameter(f"{path}: no such directory {folder}", param_hint=f"'{flag}'")
    if os.path.isdir(path):
        raise typer.BadParameter(f"{path} is a directory", param_hint=f"'{flag}'")


def _write_json(path: str, text: str) -> None:
    with atomic_write(path, binary=False) as handle:
        handle.write(text)


def _workflow_errors(action):
    """Run a workflow step; bad input becomes one located line and exit status 1."""
    from ..io.crowd_input import CrowdInputError
    try:
        return action()
    except BrokenPipeError:
        raise  # the reader went away: no error line (click ends with status 1)
    except (CrowdInputError, ValueError, OSError) as exc:
        message = (f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) and exc.filename
                   else str(exc))
        typer.echo(f"pyvw-lite: error: {message}", err=True)
        raise typer.Exit(1) from None


def _plain_or_quoted(name: str) -> str:
    """A label as written, quoted when a comma, '=' or a space would make the list ambiguous."""
    return repr(name) if any(c in name for c in ", =") or not name else name


@app.command()
def convert(
    source: str = typer.Argument(..., help="crowd answers (task,worker,label CSV/TSV or item "
                                           "blocks); with --back, a predictions file"),
    out: str = typer.Option(..., "-o", "--out", help="VW lines to write (with --back: task,label CSV)"),
    label_map: str = typer.Option(None, "--map", help="label map JSON (written; read with --back)"),
    features: str = typer.Option("", "--features", help="extra columns to emit as namespaces, "
                                                        "comma-separated"),
    shuffle: int = typer.Option(None, "--shuffle", min=0,
                                help="shuffle the lines with this seed (0 or more)"),
    back: bool = typer.Option(False, "--back", help="predictions (class 1..K and tag) back to "
                                                    "task,label with --map"),
    strict_parse: bool = typer.Option(False, "--strict_parse",
                                      help="a malformed answer row is fatal instead of skipped "
                                           "with a warning"),
) -> None:
    """Crowd answers to rater-task VW lines (labels 1..K, task tags), or predictions back."""
    from ..io.crowd_input import RowPolicy
    from ..workflow.convert import crowd_to_vw, predictions_to_labels

    def action():
        maps = [("--map", label_map)]
        check_paths([("source", source)] + (maps if back else []),
                    [("-o", out)] + ([] if back else maps))
        if back:
            if not label_map:
                raise ValueError("--back needs --map (the label map written by convert)")
            rows = predictions_to_labels(source, label_map, out)
            typer.echo(f"{rows} predictions -> {out}", err=True)
            return
        wanted = tuple(name.strip() for name in features.split(",") if name.strip())
        rows = RowPolicy(strict=strict_parse, warn=lambda text: typer.echo(text, err=True))
        report = crowd_to_vw(source, out, label_map, wanted, shuffle_seed=shuffle, rows=rows)
        if rows.skipped:
            typer.echo(f"skipped malformed rows = {rows.skipped}", err=True)
        typer.echo(f"{report.lines} lines, {report.tasks} tasks, {report.workers} raters, labels "
                   + ", ".join(f"{k + 1}={_plain_or_quoted(name)}"
                               for k, name in enumerate(report.labels))
                   + f" -> {out}" + (f" (map: {label_map})" if label_map else ""), err=True)
        for name, count in report.left_out.items():
            typer.echo(f"[warning] {count} non-finite {name!r} values (nan, inf, ...) left out "
                       "as missing", err=True)
        for name in report.clashes:
            typer.echo(f"[warning] namespace {name!r} starts with the letter of rater/task, so "
                       "-q/--dyad on that letter would include it", err=True)

    _workflow_errors(action)


@app.command()
def split(
    source: str = typer.Argument(..., help="text lines (VW examples); - reads standard input"),
    train: str = typer.Option(..., "--train", help="training lines to write"),
    test: str = typer.Option(..., "--test", help="test lines to write"),
    test_fraction: float = typer.Option(1 / 16, "--test_fraction", help="share of lines in test"),
    seed: int = typer.Option(0, "--seed", help="hash seed of the split"),
) -> None:
    """Split lines by a seeded hash of each line; report shared raters and tasks."""
    from ..workflow.split import split_file

    def action():
        check_paths([("source", source)], [("--train", train), ("--test", test)])
        r = split_file(source, train, test, test_fraction, seed)
        report = [f"train = {r.train_lines} lines ({train})",
                  f"test = {r.test_lines} lines ({test})"]
        report += [f"test {what} also in train = {seen} of {total}"
                   for what, seen, total in r.overlaps()]
        typer.echo("\n".join(report), err=True)

    _workflow_errors(action)


@app.command()
def evaluate(
    predictions: str = typer.Option(None, "-p", "--predictions", help="predictions (-p output)"),
    data: str = typer.Option(None, "-d", "--data", help="the labelled examples they were made on"),
    labels: str = typer.Option(None, "--labels", help="crowd output (task,label[,...] CSV)"),
    truth: str = typer.Option(None, "--truth", help="truth file (task,label) for --labels"),
    versus: str = typer.Option(None, "--versus", help="another model's predictions of the same "
                                                      "examples: paired comparison (with -p -d)"),
    threshold: float = typer.Option(None, "--threshold", help="binary labels: a prediction above "
                                    "it is positive (default 0, or 0.5 when all lie in [0, 1])"),
    names: bool = typer.Option(False, "--names", help="compare labels and predictions as text "
                               "(default: as numbers when the first labelled line's label is "
                               "one)"),
) -> None:
    """0/1 loss with a 95% interval, per-class precision and recall, confusion matrix (numeric
    labels with real-valued predictions: MAE and RMSE with 95% intervals); with --versus, the
    paired difference from another model (its exact McNemar test for classes)."""
    from ..workflow.evaluate import (RegressionEvaluation, evaluate_labels, evaluate_predictions,
                                     paired_difference, regression_difference)

    def action():
        if threshold is not None and not math.isfinite(threshold):
            raise ValueError(f"--threshold {threshold}: must be a finite number")
        if versus and not (predictions and data):
            raise ValueError("--versus compares two predictions files of the same -d DATA")
        if predictions and data:
            if names and threshold is not None:
                raise ValueError("--names compares text; --threshold is for numbers")
            result = evaluate_predictions(predictions, data, threshold, names)
        elif labels and truth:
            result = evaluate_labels(labels, truth)
        else:
            raise ValueError("give -p PREDICTIONS -d DATA, or --labels LABELS --truth TRUTH")
        other = evaluate_predictions(versus, data, threshold, names) if versus else None
        typer.echo(result.text(), nl=False)
        if versus:
            if isinstance(result, RegressionEvaluation) != isinstance(other, RegressionEvaluation):
                raise ValueError(f"{versus}: one predictions file is scored as classes, the "
                                 "other as numbers")
            if isinstance(result, RegressionEvaluation):
                typer.echo(f"{predictions} minus {versus}: "
                           + regression_difference(other, result))
            else:
                typer.echo(paired_difference(other.hits, result.hits).text(predictions, versus))

    _workflow_errors(action)


@app.command()
def plot(
    runs: list[str] = typer.Argument(..., help="saved stderr of runs (their progress tables); "
                                               "- reads standard input"),
    output: str = typer.Option(..., "-o", "--output", help="PNG to write"),
    since: bool = typer.Option(False, "--since", help="also draw the loss since the last report"),
    title: str = typer.Option(None, "--title", help="the plot's title"),
) -> None:
    """Draw the progressive loss curve of one or more runs from their progress tables
    (pyvw-lite -d train.vw ... 2> run.txt; pyvw-lite plot run.txt -o curve.png)."""
    from ..workflow.plot import plot_progress, read_progress

    def action():
        _check_output("-o", output)
        check_paths([("run", run) for run in runs], [("-o", output)])
        curves = [read_progress("stdin", sys.stdin.read()) if run == "-" else read_progress(run)
                  for run in runs]
        plot_progress(curves, output, since=since, title=title)
        typer.echo(f"plot: {output}")

    _workflow_errors(action)


@app.command()
def experiment(
    config: str = typer.Argument(..., help="experiment TOML (e.g. configs/seed_table.toml)"),
    workdir: str = typer.Option(None, "--workdir", help="where data, models and results go "
                                                        "(default experiments/NAME)"),
    peer: bool = typer.Option(True, "--peer/--no-peer", help="also run the config's peer models "
                                                             "under VW when installed"),
    data_root: str = typer.Option(None, "--data-root", help="folder the config's relative data "
                                                            "path is under (default: the working "
                                                            "directory or the config's folders)"),
) -> None:
    """Run a configured rater-task experiment and print its table (JSON record, PNG plot)."""
    from ..workflow.experiment import ConfigError, run_experiment

    def action():
        try:
            run_experiment(config, workdir, with_peer=peer, data_root=data_root)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    _workflow_errors(action)
