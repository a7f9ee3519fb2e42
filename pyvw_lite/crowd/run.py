"""The crowd command's run: true labels from crowd answers by online EM (default), batch EM, or a
baseline; the seed's progress table, posteriors, worker confusion matrices, model files.

``pyvw-lite crowd`` (``cli/crowd.py``) fills a :class:`CrowdRun` and calls :func:`run`;
``pyvw-lite compile``'s crowd modes (``learner/prebuild.py``) run tiny ones.  Batch EM on
``--executor``'s shards is the sharded run's, a layer above: the caller passes it in."""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, fields, replace

import numpy as np

from ..io.crowd_input import (DUPLICATE_POLICIES, CrowdData, CrowdInputError, RowPolicy,
                              known_labels, read_answers, read_gold, resolve_duplicates)
from ..io.atomic import check_paths
from ..io.progress import LiveBar, use_live_bar
from .defaults import AUTO_DEFAULTS, DEFAULTS, EBCC_DEFAULTS

METHODS = ("auto", "ebcc", "bcc", "em", "majority", "one_coin")
BATCH_ONLY = ("auto", "ebcc", "bcc", "majority", "one_coin")  # no online form: --batch
# distinct labels read without --n_labels: crowd label sets have 2-16 classes; hundreds mean
# free text in the label column (and K x K logits per worker slot: 300 asked for 43.9 GiB)
UNASKED_LABELS = 32


@dataclass
class CrowdRun:
    """Options of one crowd run (the typer command fills it)."""
    answers: str
    batch: bool = False
    method: str = "em"
    gold: str | None = None
    truth: str | None = None
    predictions: str | None = None
    workers: str | None = None
    workers_plot: str | None = None
    final_model: str | None = None
    initial_model: str | None = None
    n_items: int = DEFAULTS["n_items"]
    n_labels: int | None = None
    priorz: str | None = None
    learn_priorz: bool = DEFAULTS["learn_priorz"]
    symmetric: bool = DEFAULTS["symmetric"]
    nu: float = DEFAULTS["nu"]
    sigma_alpha: float = DEFAULTS["sigma_alpha"]
    sigma_mu: float = DEFAULTS["sigma_mu"]
    sigma_b: float = DEFAULTS["sigma_b"]
    kappa: float = DEFAULTS["kappa"]
    no_hyper: bool = False
    worker_map: str | None = None
    n_worker_bits: int = DEFAULTS["n_worker_bits"]
    eta: float = DEFAULTS["eta"]
    rho: float = DEFAULTS["rho"]
    initial_t: float = DEFAULTS["initial_t"]
    passes: int = 1
    test_only: bool = False
    progressive: bool = False
    max_iters: int | None = None  # each method's own default
    tol: float | None = None
    executor: str | None = None
    shards: int = 0
    strict_parse: bool = False
    quiet: bool = False
    subtypes: int = EBCC_DEFAULTS["subtypes"]
    restarts: int = EBCC_DEFAULTS["restarts"]
    a_pi: float = EBCC_DEFAULTS["a_pi"]
    a_v: float = EBCC_DEFAULTS["a_v"]
    b_v: float = EBCC_DEFAULTS["b_v"]
    flat_class_prior: bool = False
    seed: int = EBCC_DEFAULTS["seed"]
    sparse_workers: float = AUTO_DEFAULTS["sparse_workers"]
    duplicates: str = "keep"

    def __post_init__(self):
        if self.method is None:  # never another method because of an output asked for
            self.method = "auto" if self.batch else "em"
        self.batch_named = "--batch" if self.batch else f"--method {self.method} (a batch fit)"
        if self.method in BATCH_ONLY:
            self.batch = True

    def bayes_options(self) -> dict:
        """bayes_fit's keywords from the command line (EBCC's; BCC sets one subtype)."""
        return dict(subtypes=self.subtypes, a_pi=self.a_pi, a_v=self.a_v, b_v=self.b_v,
                    restarts=self.restarts, seed=self.seed,
                    empirical_prior=not self.flat_class_prior,
                    max_iters=self.max_iters or EBCC_DEFAULTS["max_iters"],
                    tol=self.tol or EBCC_DEFAULTS["tol"])


def counted(n: int, noun: str) -> str:
    """``n`` and the noun in its number: "1 worker", "2 workers"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def shortened(text: str, limit: int = 40) -> str:
    """An id or label for a message line: whole, or its first ``limit`` characters and how
    many more there are (a file may hold a label of megabytes; the outputs keep it whole)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more)"


def _config(run: CrowdRun, data: CrowdData):
    from .model import CrowdConfig
    priorz = _priorz(run.priorz) if run.priorz else []
    return CrowdConfig(n_labels=data.n_labels, label_names=data.label_names, priorz=priorz,
                       learn_priorz=run.learn_priorz, symmetric=run.symmetric, nu=run.nu,
                       sigma_alpha=run.sigma_alpha, sigma_mu=0.0 if run.no_hyper else run.sigma_mu,
                       sigma_b=run.sigma_b, kappa=run.kappa,
                       worker_map=run.worker_map or ("exact" if run.batch else "hash"),
                       n_worker_bits=run.n_worker_bits, eta=run.eta, rho=run.rho,
                       initial_t=run.initial_t, n_items=run.n_items)


# Options that shape a saved model (its label set, parameters and worker table): continuing with
# another value would silently mean a different model, so -i refuses it.  The schedule (eta, rho,
# initial_t, n_items) may change between runs, as VW lets -l change under -i.
MODEL_SHAPE = ("n_labels", "learn_priorz", "symmetric", "nu", "sigma_alpha", "sigma_mu", "sigma_b",
               "kappa", "worker_map", "n_worker_bits")
SCHEDULE = ("eta", "rho", "initial_t", "n_items")


def _flag_text(name: str, value) -> str:
    """How the command line spells an option's value."""
    if name == "sigma_mu" and value == 0.0:
        return "--no_hyper"
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no_{name}" if name == "learn_priorz" else \
            f"no --{name}"
    return f"--{name} {value:g}" if isinstance(value, float) else f"--{name} {value}"


def _continue_model(run: CrowdRun, model, path: str) -> None:
    """Refuse a model-shaping option that contradicts the model; apply a changed schedule.

    An option at its default counts as not given: the model's value stands."""
    config = model.config
    given = {name: getattr(run, name) for name in MODEL_SHAPE + SCHEDULE}
    given["sigma_mu"] = 0.0 if run.no_hyper else run.sigma_mu
    unset = dict(DEFAULTS, n_labels=None, worker_map=None)
    for name in MODEL_SHAPE:
        value, kept = given[name], getattr(config, name)
        if value != unset[name] and value != kept:
            raise ValueError(f"{path}: the model was trained with {_flag_text(name, kept)}, not "
                             f"with {_flag_text(name, value)}")
    if run.priorz:
        wanted = np.array(_priorz(run.priorz))
        if wanted.size != config.n_labels or not np.allclose(wanted / wanted.sum(), config.priorz,
                                                             rtol=1e-9, atol=0.0):
            shown = ",".join(f"{value:g}" for value in config.priorz)
            raise ValueError(f"{path}: the model was trained with --priorz {shown}, not with "
                             f"--priorz {run.priorz}")
    changed = {name: given[name] for name in SCHEDULE if given[name] != DEFAULTS[name]}
    if changed:
        model.config = replace(config, **changed)  # validated again by __post_init__


def _priorz(text: str) -> list[float]:
    try:
        values = [float(value) for value in text.split(",")]
    except ValueError:
        raise ValueError(f"--priorz {text!r}: expected comma-separated numbers") from None
    if not all(0.0 < value < math.inf for value in values):
        raise ValueError(f"--priorz {text}: values must be positive and finite")
    return values


# Options that shape one family of methods, and the methods they shape: given to another method
# (changed from the default), they are named in a warning instead of being ignored in silence.
_OWN_OPTIONS = (
    (("subtypes", "restarts", "a_pi", "seed"), ("ebcc",)),
    (("a_v", "b_v", "flat_class_prior"), ("ebcc", "bcc", "auto")),
    (("nu", "sigma_alpha", "sigma_mu", "sigma_b", "kappa", "symmetric", "no_hyper", "worker_map",
      "n_worker_bits", "priorz", "learn_priorz", "shards"), ("em",)),
    (("max_iters", "tol"), ("em", "ebcc", "bcc", "auto")),
    (("sparse_workers",), ("auto",)),
)


def _unused_options(run: CrowdRun) -> list[str]:
    """The options given (off their defaults) that the run's method does not use."""
    defaults = CrowdRun(answers=run.answers, method=run.method, batch=run.batch)
    unused = []
    for names, methods in _OWN_OPTIONS:
        if run.method in methods:
            continue
        unused += [f"--{name}" for name in names if getattr(run, name) != getattr(defaults, name)]
    return unused


def _check_numbers(run: CrowdRun) -> None:
    """Every number of the command line, before anything is read: each float option finite,
    the model's settings in their ranges, the label count and iteration cap possible."""
    from .model import MAX_LABELS, check_settings
    for option in fields(CrowdRun):
        value = getattr(run, option.name)
        if option.type.startswith("float") and value is not None and not math.isfinite(value):
            raise ValueError(f"--{option.name} {value}: not a finite number")
    settings = {name: getattr(run, name) for name in ("nu", "kappa", "sigma_alpha", "sigma_mu",
                                                      "sigma_b", "eta", "rho", "initial_t",
                                                      "n_items")}
    if run.no_hyper:
        settings["sigma_mu"] = 0.0
    check_settings(settings)
    if run.n_labels is not None and run.n_labels > MAX_LABELS:
        raise ValueError(f"--n_labels {run.n_labels}: a label model has at most {MAX_LABELS} "
                         "classes")
    if run.priorz:
        _priorz(run.priorz)
    if run.max_iters is not None and run.max_iters < 1:
        raise ValueError("--max_iters must be at least 1")
    if run.tol is not None and run.tol < 0.0:
        raise ValueError("--tol must not be negative")
    if run.sparse_workers < 0.0:
        raise ValueError("--sparse_workers must not be negative")


def _accuracy(data: CrowdData, labels: np.ndarray, truth: dict, truth_path: str
              ) -> tuple[float, int]:
    known = known_labels(data, truth, truth_path)
    scored = known >= 0
    if not scored.any():
        return float("nan"), 0
    return float((labels[scored] == known[scored]).mean()), int(scored.sum())


def run(run: CrowdRun, batch_em_on_executor=None) -> int:
    """Fit ``run``'s method and write its outputs; 0.  ``batch_em_on_executor(run, data,
    config, max_iters, tol, report)`` fits batch EM on ``run.executor`` and returns the fit and
    the executor's name (``cli/crowd.py``'s; the sharded run is above this layer)."""
    from .batch import batch_em
    from .model import CrowdModel
    from .online import run_online
    from .report import (BatchProgress, OnlineProgress, em_view, hypermean_text, plot_workers,
                         settings_block, write_predictions, write_workers)
    check_paths([("answers", run.answers), ("--gold", run.gold), ("--truth", run.truth),
                 ("-i", run.initial_model)],
                [("-p", run.predictions), ("--workers", run.workers),
                 ("--workers_plot", run.workers_plot), ("-f", run.final_model)],
                may_replace=(("-f", "-i"),))
    err = None if run.quiet else sys.stderr
    if run.method not in METHODS:
        raise ValueError(f"--method must be one of {', '.join(METHODS)}, not {run.method!r}")
    if run.passes < 1:
        raise ValueError("--passes must be at least 1")
    _check_numbers(run)
    if run.duplicates not in DUPLICATE_POLICIES:
        raise ValueError(f"--duplicates must be one of {', '.join(DUPLICATE_POLICIES)}, not "
                         f"{run.duplicates!r}")
    if run.batch:
        _check_batch_flags(run, err)
    unused = _unused_options(run)
    if unused and err:
        one = len(unused) == 1
        err.write(f"[warning] --method {run.method} does not use {', '.join(unused)}; "
                  f"{'it is' if one else 'they are'} ignored\n")
    if run.method != "em":
        for flag, value in (("-i", run.initial_model), ("-t", run.test_only),
                            ("-f", run.final_model)):
            if value:
                raise ValueError(f"{flag} needs --method em: only EM keeps a model file to "
                                 f"save, continue or predict with (--method {run.method} fits "
                                 "afresh each run)")
        if run.executor:
            raise ValueError(f"--executor shards batch EM: add --method em (--method "
                             f"{run.method} runs in one process)")
    model = CrowdModel.load(run.initial_model) if run.initial_model else None
    if model is not None and not run.batch:
        _continue_model(run, model, run.initial_model)
    started = time.perf_counter()
    rows = RowPolicy(strict=run.strict_parse, warn=(lambda text: err.write(text + "\n"))
                     if err else None)
    data = read_answers(run.answers, n_labels=run.n_labels, gold_path=run.gold,
                        label_names=model.config.label_names if model else None, rows=rows)
    data = resolve_duplicates(data, run.duplicates) if data.duplicates else data
    truth = read_gold(run.truth) if run.truth else None  # a bad --truth fails before the fit
    if model is None and run.n_labels is None and data.n_labels > UNASKED_LABELS:
        K = data.n_labels
        seen = np.unique(data.rating_label).size  # item blocks name labels 0..K-1 by number
        raise CrowdInputError(f"{run.answers}: {K} {'distinct labels' if seen == K else 'labels'};"
                              f" a label model of more than {UNASKED_LABELS} classes needs "
                              f"--n_labels {K} to say they are all classes (is the label column "
                              "free text?)")
    loaded = time.perf_counter() - started
    if run.batch and data.task_names.size != np.unique(data.task_names.astype(str)).size:
        raise CrowdInputError(f"{run.answers}: an item id appears on more than one line; batch "
                              "EM needs one block per item")
    if err:
        err.write(f"answers = {run.answers}: {counted(data.n_items, 'item')}, "
                  f"{counted(data.n_ratings, 'rating')}, "
                  f"{counted(len(data.worker_names), 'worker')}, "
                  f"{counted(data.n_labels, 'label')} "
                  f"({', '.join(shortened(name) for name in data.label_names)})"
                  + (f", {int((data.gold >= 0).sum())} gold"
                     + ("" if run.gold else " (the file's gold field)")
                     if run.gold or (data.gold >= 0).any() else "")
                  + (f" ({data.gold_elsewhere} gold tasks in no answer)" if data.gold_elsewhere
                     else "")
                  + (f", {counted(data.duplicates, 'repeated task-worker answer')} (kept)"
                     if data.duplicates else "")
                  + (f", repeated task-worker answers resolved by --duplicates {run.duplicates}"
                     if run.duplicates != "keep" else "") + "\n")
    from ..jit import compile_seconds
    fit_started = time.perf_counter()
    compiled_before = compile_seconds()
    summary = []
    view = None
    if run.method != "em":
        q, view = _fit_other(run, data, summary, err)
    elif run.batch:
        config = _config(run, data)
        max_iters = run.max_iters or DEFAULTS["max_iters"]
        tol = run.tol or DEFAULTS["tol"]
        progress = BatchProgress(err)
        progress.header()
        if run.executor:
            if batch_em_on_executor is None:
                raise ValueError("--executor: this caller runs batch EM in one process")
            result, executor_name = batch_em_on_executor(run, data, config, max_iters, tol,
                                                         progress)
            summary.append(f"executor = {executor_name}")
        else:
            result = batch_em(data, config, max_iters=max_iters, tol=tol, report=progress)
        progress.finish()
        model, q = result.model, result.q
        summary += ["method = em (batch MAP-EM of the nominal label model)",
                    f"iterations = {result.iterations}"
                    + ("" if result.converged else f" (stopped at --max_iters {max_iters})"),
                    f"objective = {result.objective[-1]:.6f}",
                    f"used worker slots = {result.used_slots}"]
    else:
        if run.executor:
            raise ValueError("--executor runs batch EM (--batch) on shards; online EM is "
                             "sequential")
        if (run.max_iters, run.tol) != (None, None) and err:
            err.write("[warning] --max_iters and --tol only affect batch EM (--batch)\n")
        if model is None:
            model = CrowdModel(_config(run, data))
        config = model.config
        if err:
            err.write(settings_block(config, model.n_slots, run.test_only, run.predictions,
                                     config.n_items or data.n_items))
        bar = (LiveBar("online EM", data.n_items * run.passes, unit="items")
               if use_live_bar(run.quiet) else None)
        progress = OnlineProgress(bar or err, t_start=model.t)  # rows scroll above a live bar
        progress.header()
        per_item = data.ratings_per_item()
        done = [0]

        def report(first, f, predicted):
            stop = first + f.size
            progress.account(f, data.gold[first:stop], predicted, per_item[first:stop])
            done[0] += f.size
            if bar:
                bar.update(done[0])

        try:
            result = run_online(data, model, passes=run.passes, test_only=run.test_only,
                                report=report)
        finally:
            if bar:
                bar.stop()
        progress.finish()
        q = result.q
        if not (run.test_only or run.progressive):  # label every item with the final model
            q = run_online(data, model, test_only=True).q
        summary += ["method = em (online EM in stream order; --batch fits the default, BCC "
                    "or majority vote, on all answers at once)",
                    f"passes = {run.passes}", f"mean progressive f = {progress.mean:.6f}",
                    f"item counter t = {model.t}"]
    compiling = compile_seconds() - compiled_before
    fit_seconds = time.perf_counter() - fit_started - compiling
    if run.method == "em" and model.config.worker_map == "hash":
        slots = model.worker_slots(data.worker_names)
        shared = int((np.bincount(slots)[slots] > 1).sum())
        if shared:  # their confusion matrices are one: say so, with the way out
            summary.append(f"workers sharing a slot = {shared} of {len(slots)} (2^"
                           f"{model.config.n_worker_bits} slots; raise --n_worker_bits)")
    broken = int((~np.isfinite(q).all(axis=1)).sum())
    if broken:  # every number is checked on the way in: this is an overflow in the fit
        raise ValueError(f"the posteriors of {broken} of {data.n_items} items are not finite "
                         "numbers (the fit overflowed); nothing written")
    if run.final_model:
        model.check_savable(run.final_model)  # before any output is written
    labels = q.argmax(axis=1)
    if run.predictions:
        write_predictions(run.predictions, data.task_names, data.label_names, q)
    if run.workers or run.workers_plot:
        view = view() if view is not None else em_view(
            model, model.worker_slots(data.worker_names, grow=False))
        answered = np.bincount(data.rating_worker, minlength=len(data.worker_names))
        if run.workers:
            write_workers(run.workers, view, data.worker_names, answered)
        if run.workers_plot:
            plot_workers(run.workers_plot, view, answered)
    if run.final_model:
        model.save(run.final_model)
    if err:
        err.write("\nfinished run\n")
        err.write(f"number of items = {data.n_items}\nnumber of ratings = {data.n_ratings}\n")
        if data.malformed:
            err.write(f"skipped malformed rows = {data.malformed}\n")
        for line in summary:
            err.write(line + "\n")
        err.write(f"load seconds = {loaded:.3f}\nfit seconds = {fit_seconds:.3f}\n"
                  + (f"compile seconds = {compiling:.3f} (once; not in fit seconds)\n"
                     if compiling > 0 else ""))
        if run.truth:
            accuracy, count = _accuracy(data, labels, truth, run.truth)
            err.write(f"accuracy on {count} truth items = {accuracy:.4f}\n")
        if run.method == "em":
            err.write(hypermean_text(model))
    return 0


def _check_batch_flags(run: CrowdRun, err) -> None:
    """Online EM's flags under --batch: -i and -t are errors, the schedule a warning."""
    online_only = [flag for flag, value in (("-i", run.initial_model),
                                            ("-t", run.test_only)) if value]
    if online_only:
        if run.batch_named != "--batch":  # the method implied it
            raise ValueError(f"{' and '.join(online_only)} need"
                             f"{'' if len(online_only) > 1 else 's'} --method em (online EM); "
                             f"{run.batch_named[:-len(' (a batch fit)')]} is a batch fit and "
                             "starts afresh")
        raise ValueError(f"{' and '.join(online_only)} with --batch: "
                         f"{'they are' if len(online_only) > 1 else 'it is'} for online EM; "
                         "a batch fit starts afresh")
    ignored = [flag for flag, value, default in (
        ("--n_items", run.n_items, DEFAULTS["n_items"]), ("--passes", run.passes, 1),
        ("--eta", run.eta, DEFAULTS["eta"]), ("--rho", run.rho, DEFAULTS["rho"]),
        ("--initial_t", run.initial_t, DEFAULTS["initial_t"]),
        ("--progressive", run.progressive, False)) if value != default]
    if ignored and err:
        one = len(ignored) == 1
        err.write(f"[warning] {', '.join(ignored)} only affect{'s' if one else ''} online EM; "
                  f"a batch fit ignores {'it' if one else 'them'}\n")


def _fit_other(run: CrowdRun, data: CrowdData, summary: list, err):
    """Posteriors of a baseline, BCC, EBCC, or the method auto chooses, and a function that
    gives its :class:`WorkerView`; adds summary lines."""
    from . import baselines
    from .bayes import bayes_fit
    from .report import posterior_view
    if run.method == "auto":
        from .select import choose_default
        choice = choose_default(data, run.sparse_workers)
        summary.append(f"method = auto: {choice.method} ({choice.reason()})")
        method = choice.method
    else:
        method = run.method
    if method == "majority":
        summary.append("fitted = majority vote")
        q = baselines.majority_vote(data)
        return q, (lambda: posterior_view(data, q))
    if method == "one_coin":
        q, iterations = baselines.one_coin_dawid_skene(data)
        summary.append(f"fitted = one-coin Dawid-Skene ({counted(iterations, 'iteration')})")
        return q, (lambda: posterior_view(data, q))
    options = run.bayes_options()
    if method == "bcc":
        options.update(subtypes=1, restarts=1)
    result = bayes_fit(data, **options)
    restarts = len(result.restart_elbos)
    summary.append(f"fitted = {method.upper()} ({options['subtypes']} subtype"
                   f"{'s' if options['subtypes'] > 1 else ''} per class, "
                   + (f"best of {restarts} restarts: restart {result.seed}, "
                      if restarts > 1 else "")
                   + counted(result.iterations, "iteration")
                   + ("" if result.converged else ", stopped at --max_iters")
                   + f", evidence lower bound {result.elbo:.4f})")
    return result.q, (lambda: posterior_view(data, result.q, result.confusion()))
