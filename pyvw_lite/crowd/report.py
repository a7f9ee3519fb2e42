"""What the crowd command shows and writes: the seed's settings block and progress table (SPEC
§F.2), batch iterations, the hypermean confusion matrix, the predictions and worker files.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from ..io.atomic import atomic_write
from ..io.plotting import plain_text
from .model import CrowdConfig, CrowdModel, confusion

ONLINE_HEADER = ("cumul      since      example    current    current    current\n"
                 "avg q      last       counter      label    predict    ratings\n")
BATCH_HEADER = ("iteration  objective            relative    labels   phase\n"
                "                                change      changed\n")


def settings_block(config: CrowdConfig, n_workers: int, test_only: bool, prediction_path: str | None,
                   n_items: int) -> str:
    """SPEC §F.2: one ``name = value`` per line, in the seed's order."""
    lines = [f"initial_t = {config.initial_t:g}", f"eta = {config.eta:f}", f"rho = {config.rho:f}",
             f"n_items = {n_items}", f"n_labels = {config.n_labels}", f"n_workers = {n_workers}",
             f"symmetric = {str(config.symmetric).lower()}", f"test_only = {str(test_only).lower()}",
             f"prediction file = {prediction_path or '(no output)'}",
             "priorz = " + ",".join(f"{value:f}" for value in config.priorz)]
    return "\n".join(lines) + "\n"


def online_row(cumulative: float, since: float, counter: int, label: int, predict: int,
               ratings: int) -> str:
    return f"{cumulative:<10.6f} {since:<10.6f} {counter:10d} {label:10d} {predict:10d} {ratings:10d}\n"


class OnlineProgress:
    """Rows when ``t - t_last > delta`` (then ``delta`` doubles): t = 2, 5, 10, 19, 36, ..."""

    def __init__(self, out: TextIO | None, t_start: int = 0):
        self.out = out
        self.t = t_start
        self.t_last = t_start
        self.delta = 1
        self.total = 0.0
        self.count = 0
        self.since_total = 0.0
        self.since_count = 0
        self.last_printed = True
        self.last = (0, 0, 0)

    def header(self) -> None:
        if self.out:
            self.out.write(ONLINE_HEADER)

    def account(self, f: np.ndarray, gold: np.ndarray, predicted: np.ndarray,
                ratings: np.ndarray) -> None:
        """One chunk of items in stream order; prints only the (logarithmically few) due rows."""
        n = f.size
        if n == 0:
            return
        cumulative_f = np.cumsum(f)
        position = 0  # items of this chunk already summed into the totals
        while True:
            due = self.t_last + self.delta + 1  # the first t with t - t_last > delta
            index = due - self.t - 1 + position
            if index >= n:
                break
            self._add(cumulative_f, position, index + 1)
            position = index + 1
            self.t = due
            self._print(gold[index], predicted[index], ratings[index])
            self.t_last = self.t
            self.delta *= 2
        self._add(cumulative_f, position, n)
        self.t += n - position
        self.last = (int(gold[-1]), int(predicted[-1]), int(ratings[-1]))
        self.last_printed = position == n

    def _add(self, cumulative_f, start, stop) -> None:
        if stop <= start:
            return
        value = cumulative_f[stop - 1] - (cumulative_f[start - 1] if start else 0.0)
        self.total += value
        self.count += stop - start
        self.since_total += value
        self.since_count += stop - start

    def _print(self, label, predict, ratings) -> None:
        if self.out:
            self.out.write(online_row(self.total / max(self.count, 1),
                                      self.since_total / max(self.since_count, 1), self.t,
                                      int(label), int(predict), int(ratings)))
        self.since_total = 0.0
        self.since_count = 0
        self.last_printed = True

    def finish(self) -> None:
        """The final row at the end of input, unless the last item was just printed."""
        if not self.last_printed and self.count:
            self._print(*self.last)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


class BatchProgress:
    """One row per EM iteration on VW's doubling schedule (1, 2, 4, ...) and the last one."""

    def __init__(self, out: TextIO | None):
        self.out = out
        self.next = 1
        self.previous = None
        self.labels = None
        self.pending = None

    def header(self) -> None:
        if self.out:
            self.out.write(BATCH_HEADER)

    def __call__(self, iteration: int, objective: float, phase: str, q: np.ndarray) -> None:
        labels = q.argmax(axis=1)
        change = (math.nan if self.previous is None
                  else (objective - self.previous) / max(abs(objective), 1e-300))
        changed = labels.size if self.labels is None else int((labels != self.labels).sum())
        self.previous = objective
        self.labels = labels.copy()
        row = f"{iteration:>9d}  {objective:<19.6f} {change:<11.3e} {changed:>7d}   {phase}\n"
        if iteration >= self.next:
            self.next *= 2
            if self.out:
                self.out.write(row)
            self.pending = None
        else:
            self.pending = row

    def finish(self) -> None:
        if self.pending and self.out:
            self.out.write(self.pending)
        self.pending = None


def hypermean_text(model: CrowdModel) -> str:
    """softmax(mu[k, .]) per true label (beta = 1): the population's confusion matrix."""
    names = [name if len(name) <= 23 else name[:22] + "~" for name in model.config.label_names]
    width = max(8, max(len(name) for name in names) + 1)  # at most 24: a long name is cut
    matrix = model.hypermean_confusion()
    lines = ["hypermean confusion matrix (row: true label, column: answer)",
             " " * width + "".join(f"{name:>{width}}" for name in names)]
    for k, name in enumerate(names):
        lines.append(f"{name:<{width}}" + "".join(f"{value:>{width}.4f}" for value in matrix[k]))
    return "\n".join(lines) + "\n"


def write_predictions(path: str, task_names, label_names, q: np.ndarray) -> None:
    """CSV: ``task,label`` then one posterior column per label value (atomic)."""
    labels = np.asarray(label_names, dtype=object)[q.argmax(axis=1)]
    header = "task,label," + ",".join(_csv_field(f"p_{name}") for name in label_names) + "\n"
    with atomic_write(path, binary=False) as handle:
        handle.write(header)
        for start in range(0, q.shape[0], 100_000):
            stop = min(start + 100_000, q.shape[0])
            probabilities = [",".join(f"{value:.6f}" for value in row) for row in q[start:stop]]
            handle.write("".join(f"{_csv_field(task)},{_csv_field(label)},{probs}\n"
                                 for task, label, probs in zip(task_names[start:stop].tolist(),
                                                               labels[start:stop].tolist(),
                                                               probabilities)))


def _csv_field(value) -> str:
    text = str(value)
    if any(character in text for character in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


@dataclass
class WorkerView:
    """What ``--workers`` and ``--workers_plot`` show of any fitted method: each worker's
    confusion matrix (rows: truth, columns: answer; rows sum to 1), its reliability (the
    chance of answering the truth under the class prior), the population's matrix, and the
    worker slot of each worker (EM's hashed or exact map; the worker's index otherwise)."""
    label_names: list[str]
    matrices: np.ndarray  # workers x K x K
    reliability: np.ndarray
    population: np.ndarray  # K x K
    population_title: str
    slots: np.ndarray


def _reliability(prior: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    return np.einsum("k,wkk->w", prior / prior.sum(), matrices)


def em_view(model: CrowdModel, slots: np.ndarray) -> WorkerView:
    """EM's worker slots at beta = 1, the learned class prior and the hypermean matrix."""
    matrices = confusion(model.alpha[slots])
    prior = np.exp(model.theta - model.theta.max())
    return WorkerView(list(model.config.label_names), matrices, _reliability(prior, matrices),
                      model.hypermean_confusion(), "hypermean confusion matrix", slots)


def posterior_view(data, q: np.ndarray, matrices: np.ndarray | None = None) -> WorkerView:
    """A method's view from its class posteriors ``q``: ``matrices`` when the method has its
    own (BCC and EBCC: the posterior means), else each worker's answers counted against the
    posteriors with one pseudo-answer per row, spread evenly (majority vote, one-coin: K
    pseudo-answers a cell would drown a worker's few real ones); the population's matrix
    counts every answer so, and the class prior is the posteriors' mean."""
    K, W = data.n_labels, len(data.worker_names)
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    counts = np.zeros((W, K, K))
    np.add.at(counts, (data.rating_worker, slice(None), data.rating_label), q[item])
    population = counts.sum(axis=0) + 1.0 / K
    population /= population.sum(axis=1, keepdims=True)
    if matrices is None:
        matrices = counts + 1.0 / K
        matrices /= matrices.sum(axis=2, keepdims=True)
    prior = q.sum(axis=0) + 1e-12
    return WorkerView(list(data.label_names), matrices, _reliability(prior, matrices),
                      population, "answers given per true label (all workers)",
                      np.arange(W))


def write_workers(path: str, view: WorkerView, worker_names,
                  answers_per_worker: np.ndarray) -> None:
    """CSV: worker, answers, slot, reliability, then ``p_<truth>_<answer>`` cells (atomic)."""
    names = view.label_names
    columns = [f"p_{truth}_{answer}" for truth in names for answer in names]
    with atomic_write(path, binary=False) as handle:
        handle.write("worker,answers,slot,reliability," + ",".join(map(_csv_field, columns)) + "\n")
        for w, name in enumerate(worker_names.tolist()):
            cells = ",".join(f"{value:.6f}" for value in view.matrices[w].ravel())
            handle.write(f"{_csv_field(name)},{int(answers_per_worker[w])},{int(view.slots[w])},"
                         f"{view.reliability[w]:.6f},{cells}\n")


def plot_workers(path: str, view: WorkerView, answers_per_worker: np.ndarray) -> str:
    """PNG (atomic): the workers' reliabilities (a histogram, each worker counted once, and
    the share of the answers each reliability gave) beside the population's confusion
    matrix."""
    try:
        import matplotlib
    except ImportError:
        raise ValueError("--workers_plot needs matplotlib: pip install 'pyvw-lite[plot]'") \
            from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    reliability = view.reliability
    names = [plain_text(str(name)) for name in view.label_names]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    bins = np.linspace(0.0, 1.0, 21)
    left.hist(reliability, bins=bins, color="#1f77b4", alpha=0.8, label="workers")
    share = left.twinx()
    share.hist(reliability, bins=bins, weights=answers_per_worker / max(answers_per_worker.sum(),
                                                                        1),
               histtype="step", color="#d62728", linewidth=1.5, label="share of answers")
    left.set_xlabel("reliability (chance of answering the truth)")
    left.set_ylabel("workers")
    share.set_ylabel("share of the answers", color="#d62728")
    left.set_title(f"{reliability.size} workers")
    matrix = view.population
    image = right.imshow(matrix, vmin=0.0, vmax=1.0, cmap="Blues")
    crowded = len(names) > 6 or sum(len(name) for name in names) > 40
    right.set_xticks(range(len(names)), names, rotation=45 if crowded else 0,
                     ha="right" if crowded else "center")
    right.set_yticks(range(len(names)), names)
    right.set_xlabel("answer")
    right.set_ylabel("true label")
    right.set_title(view.population_title)
    if len(names) <= 12:
        for (row, column), value in np.ndenumerate(matrix):
            right.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=8,
                       color="white" if value > 0.5 else "black")
    figure.colorbar(image, ax=right, fraction=0.046)
    figure.tight_layout()
    with atomic_write(path, binary=True) as handle:
        figure.savefig(handle, format="png", dpi=110)
    plt.close(figure)
    return path
