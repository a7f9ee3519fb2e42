"""VW's progress table and summary on stderr (VW_FACTS §3), byte-compatible, plus a rich live
bar that appears only when stderr is an interactive terminal.

The counters mirror VW's ``shared_data``.  A whole batch of examples is accounted at once with
cumulative sums; Python only loops over the (logarithmically few) printed rows.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Callable, TextIO

import numpy as np

HEADER = ("average  since         example        example        current        current  current\n"
          "loss     last          counter         weight          label        predict features\n")
FLT_MAX = 3.4028234663852886e38


def _loss_cell(value: float | str) -> str:
    text = value if isinstance(value, str) else f"{value:.6f}"
    return f"{text:<8}"[:8]


def _value_cell(text: str) -> str:
    return f"{text:>14}" if len(text) <= 14 else text[:11] + "..."


def format_row(average, since, counter, weight, label: str, prediction: str, features: int,
               holdout: bool) -> str:
    return (f"{_loss_cell(average)} {_loss_cell(since)} {counter:>12} {weight:>14.1f} "
            f"{_value_cell(label)} {_value_cell(prediction)} {features:>8}"
            + (" h" if holdout else "") + "\n")


def use_live_bar(quiet: bool) -> bool:
    """A live bar only on a real terminal (FORCE_COLOR and friends must not fool us)."""
    if quiet or not sys.stderr.isatty():
        return False
    term = os.environ.get("TERM", "")
    return term not in ("", "dumb") and not os.environ.get("PYVW_LITE_NO_BAR")


class LiveBar:
    """Progress of total (bytes read, or items with ``unit="items"``), rate and elapsed time;
    rows scroll above it."""

    def __init__(self, description: str, total: int | None, unit: str = "bytes"):
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress,
                                   TextColumn, TimeElapsedColumn, TransferSpeedColumn)
        counted = ((DownloadColumn(), TransferSpeedColumn()) if unit == "bytes"
                   else (MofNCompleteColumn(), TextColumn(unit)))
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), *counted,
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task(description, total=total)
        self.progress.start()

    def update(self, completed: int, description: str | None = None) -> None:
        kwargs = {"completed": completed}
        if description:
            kwargs["description"] = description
        self.progress.update(self.task, **kwargs)

    def write(self, text: str) -> None:
        self.progress.console.print(text, end="", markup=False, highlight=False)

    def stop(self) -> None:
        self.progress.stop()


def _stretch_sums(weight, loss, labelled, labelled_train, labelled_holdout, train, label,
                  features) -> tuple:
    """A stretch of examples' sums, as :meth:`ProgressTable._add` takes them (masked sums, not
    ``np.dot``: a dot of this length runs on OpenBLAS's threads, which then spin on the cores
    that parse and learn)."""
    hold = None if labelled_holdout is None else (float(weight[labelled_holdout].sum()),
                                                  float(loss[labelled_holdout].sum()))
    # a mask that keeps everything selects the same floats in the same order: sum in place
    everything = slice(None)
    train = everything if train.all() else train
    labelled_train = everything if labelled_train.all() else labelled_train
    return (float(weight[labelled_train].sum()), float(weight[train].sum()),
            float(loss[labelled_train].sum()), float((weight * label)[labelled_train].sum()),
            int(np.count_nonzero(train)) if train is not everything else int(weight.shape[0]),
            int(features[train].sum()), hold)


def totals(*, weight: np.ndarray, loss: np.ndarray, labelled: np.ndarray, holdout: np.ndarray,
           label: np.ndarray, features: np.ndarray) -> dict:
    """What :meth:`ProgressTable.add_totals` needs of a run of examples, and ``reach``, the
    running sum of training weight at its last training example (None without one), which
    tells :meth:`ProgressTable.due_within` whether a row falls due inside it."""
    if weight.shape[0] == 0:
        return {"reach": None, "first_labels": np.zeros(0), "sums": None}
    labelled, holdout, any_holdout, train, labelled_train, labelled_holdout = \
        ProgressTable._masks(labelled, holdout)
    train_weight = np.where(train, weight, 0.0) if any_holdout else weight
    at = np.flatnonzero(train)
    reach = float(np.cumsum(train_weight)[at[-1]]) if at.size else None
    labels = label[labelled_train]
    first = []  # the first three distinct labels: all _observe_labels can use
    while len(first) < 3 and labels.size:
        first.append(float(labels[0]))
        labels = labels[labels != labels[0]]
    return {"reach": reach, "first_labels": np.array(first),
            "sums": _stretch_sums(weight, loss, labelled, labelled_train, labelled_holdout,
                                  train, label, features)}


class ProgressTable:
    """VW's running statistics, progress rows and end-of-run summary."""

    def __init__(self, out: TextIO | None, progress: str | None = None, *, holdout_off: bool = True,
                 log: Callable[[str], None] | None = None):
        self.out = out
        self.bar: LiveBar | None = None
        self.holdout_off = holdout_off
        self.progress_add = False
        self.progress_arg = 2.0
        if progress is not None:
            try:
                number = float(progress)
            except ValueError:
                raise ValueError(f"--progress {progress!r} is not a number") from None
            if not math.isfinite(number):
                raise ValueError(f"--progress {progress!r} must be finite")
            if "." in progress:  # VW: a dot makes it multiplicative, else rows every N (1e3 too)
                arg = number
                if arg <= 1.0:
                    if log:
                        log(f"[warning] Multiplicative --progress <float> '{progress}' is <= 1.0: "
                            "adding 1.0")
                    arg += 1.0
                self.progress_arg = arg
            else:
                self.progress_add = True
                self.progress_arg = number
                if self.progress_arg <= 0:
                    raise ValueError(f"--progress {progress}: must be positive")
        self.dump_interval = self.progress_arg if self.progress_add else 1.0
        self.current_pass = 0
        self.weighted_labeled = 0.0
        self.weighted_unlabeled = 0.0
        self.old_weighted_labeled = 0.0
        self.sum_loss = 0.0
        self.sum_loss_since_dump = 0.0
        self.weighted_labels = 0.0
        self.example_number = 0
        self.total_features = 0
        self.holdout_weight = 0.0
        self.holdout_loss = 0.0
        self.holdout_weight_since_dump = 0.0
        self.holdout_loss_since_dump = 0.0
        self.holdout_weight_pass = 0.0
        self.holdout_loss_pass = 0.0
        self.holdout_best_loss = FLT_MAX
        self.holdout_best_pass = 0
        self.first_label = FLT_MAX
        self.second_label = FLT_MAX
        self.more_than_two_labels = False
        self.header_printed = False
        self.extra_summary: list[str] = []
        self.after_average: list[str] = []

    def write(self, text: str) -> None:
        if self.out is None:
            return
        if self.bar is not None:
            self.bar.write(text)
        else:
            self.out.write(text)

    @property
    def weighted_examples(self) -> float:
        return self.weighted_labeled + self.weighted_unlabeled

    def print_header(self) -> None:
        if not self.header_printed:
            self.write(HEADER)
            self.header_printed = True

    def _observe_labels(self, labels: np.ndarray) -> None:
        """Track the first two distinct training labels (VW's best-constant bookkeeping)."""
        while not self.more_than_two_labels and labels.size:
            other = labels[(labels != self.first_label) & (labels != self.second_label)]
            if other.size == 0:
                return
            value = float(other[0])
            if self.first_label == FLT_MAX:
                self.first_label = value
            elif self.second_label == FLT_MAX:
                self.second_label = value
            else:
                self.more_than_two_labels = True
            labels = other

    @staticmethod
    def _masks(labelled: np.ndarray, holdout: np.ndarray):
        """(labelled, holdout, any_holdout, train, labelled_train, labelled_holdout): the masks
        :meth:`account` and :func:`totals` sum under (one definition, so both sum the same
        floats)."""
        labelled = np.asarray(labelled, dtype=bool)  # masks below: never integer indices
        holdout = np.asarray(holdout, dtype=bool)
        any_holdout = bool(holdout.any())
        train = ~holdout if any_holdout else np.ones(labelled.shape[0], dtype=bool)
        labelled_train = labelled & train if any_holdout else labelled
        labelled_holdout = labelled & holdout if any_holdout else None
        return labelled, holdout, any_holdout, train, labelled_train, labelled_holdout

    def account(self, *, weight: np.ndarray, loss: np.ndarray, labelled: np.ndarray,
                holdout: np.ndarray, label: np.ndarray, features: np.ndarray,
                label_text: Callable[[int], str], prediction_text: Callable[[int], str]) -> None:
        """Account a batch of examples in order; print the rows that fall due.

        Sums run over the stretches between printed rows, so a batch costs a few vector
        passes however many rows it prints.
        """
        n = weight.shape[0]
        if n == 0:
            return
        labelled, holdout, any_holdout, train, labelled_train, labelled_holdout = \
            self._masks(labelled, holdout)
        train_weight = np.where(train, weight, 0.0) if any_holdout else weight
        weighted_after = np.cumsum(train_weight) + self.weighted_examples
        self._observe_labels(label[labelled_train])
        start = 0
        while True:
            due = np.flatnonzero(weighted_after[start:] >= self.dump_interval) \
                if self.out is not None else np.zeros(0, np.int64)
            if due.size and any_holdout:
                due = due[train[start + due]]
            stop = start + int(due[0]) + 1 if due.size else n
            part = slice(start, stop)
            self._add(_stretch_sums(
                weight[part], loss[part], labelled[part], labelled_train[part],
                None if labelled_holdout is None else labelled_holdout[part], train[part],
                label[part], features[part]))
            if not due.size:
                break
            i = stop - 1
            holding_out = not self.holdout_off and self.current_pass >= 1
            if holding_out:
                average = "unknown" if self.holdout_loss == 0.0 and self.holdout_weight == 0.0 \
                    else self.holdout_loss / self.holdout_weight
                since = "unknown" if self.holdout_loss_since_dump == 0.0 and \
                    self.holdout_weight_since_dump == 0.0 \
                    else self.holdout_loss_since_dump / self.holdout_weight_since_dump
                self.holdout_weight_since_dump = 0.0
                self.holdout_loss_since_dump = 0.0
            else:
                average = self.sum_loss / self.weighted_labeled if self.weighted_labeled > 0 \
                    else "n.a."
                delta = self.weighted_labeled - self.old_weighted_labeled
                since = self.sum_loss_since_dump / delta if delta > 0 else "n.a."
            self.print_header()
            self.write(format_row(average, since, self.example_number, self.weighted_examples,
                                  label_text(i), prediction_text(i), int(features[i]),
                                  holding_out))
            self.sum_loss_since_dump = 0.0
            self.old_weighted_labeled = self.weighted_labeled
            now = self.weighted_examples
            # VW keeps the interval in a float: 2 × 4.8 rounds up to 9.6000004, so a weighted sum
            # of 9.6 does not reach it
            self.dump_interval = float(np.float32(now + self.progress_arg if self.progress_add
                                                  else now * self.progress_arg))
            start = stop
            if start >= n:
                break

    def _add(self, sums: tuple) -> None:
        """Add a stretch's sums (:func:`_stretch_sums`) to the running ones."""
        lab_weight, train_weight, lab_loss, weighted_labels, examples, features, hold = sums
        self.weighted_labeled += lab_weight
        self.weighted_unlabeled += train_weight - lab_weight
        self.sum_loss += lab_loss
        self.sum_loss_since_dump += lab_loss
        self.weighted_labels += weighted_labels
        self.example_number += examples
        self.total_features += features
        if hold is not None:
            hold_weight, hold_loss = hold
            self.holdout_weight += hold_weight
            self.holdout_loss += hold_loss
            self.holdout_weight_since_dump += hold_weight
            self.holdout_loss_since_dump += hold_loss
            self.holdout_weight_pass += hold_weight
            self.holdout_loss_pass += hold_loss

    # A shard of a sharded run accounts its examples where it learned them: the driver sends
    # the table's state only when a row falls due inside the shard, and otherwise adds the
    # shard's totals (distributed/learn.py).
    def due_within(self, totals: dict) -> bool:
        """Whether :meth:`account` would print a row inside the examples of ``totals``."""
        return self.out is not None and totals["reach"] is not None and \
            totals["reach"] + self.weighted_examples >= self.dump_interval

    def add_totals(self, totals: dict) -> None:
        """:meth:`account` of the examples of ``totals`` when no row falls due inside them."""
        self._observe_labels(totals["first_labels"])
        if totals["sums"] is not None:
            self._add(totals["sums"])

    def snapshot(self) -> dict:
        """The running state (no streams), for :meth:`restore` elsewhere."""
        return {name: value for name, value in vars(self).items() if name not in ("out", "bar")}

    def restore(self, state: dict) -> None:
        vars(self).update(state)

    def end_pass(self) -> bool:
        """Close a pass; True when its holdout loss is the best so far (VW re-saves the model)."""
        improved = False
        if not self.holdout_off:
            if self.holdout_weight_pass > 0:
                loss = self.holdout_loss_pass / self.holdout_weight_pass
                if loss < self.holdout_best_loss:
                    self.holdout_best_loss = loss
                    self.holdout_best_pass = self.current_pass
                    improved = True
            self.holdout_weight_pass = 0.0
            self.holdout_loss_pass = 0.0
        self.current_pass += 1
        return improved

    def best_constant(self, loss_name: str, loss_fn: Callable[[float, float], float],
                      tau: float = 0.5):
        """VW's best constant and its loss (``None`` when VW prints neither or no loss);
        ``tau`` is the quantile loss's ``--quantile_tau``."""
        if self.first_label == FLT_MAX or self.weighted_labeled <= 0:
            return None
        label1 = self.first_label
        label2 = 0.0 if self.second_label == FLT_MAX else self.second_label
        if label1 > label2:
            label1, label2 = label2, label1
        if label1 == label2:
            return None
        count1 = (self.weighted_labels - label2 * self.weighted_labeled) / (label1 - label2)
        count2 = self.weighted_labeled - count1
        if count1 + count2 <= 0:
            return None
        if loss_name == "squared":
            constant = self.weighted_labels / self.weighted_labeled
            if self.more_than_two_labels:
                return constant, None
        elif self.more_than_two_labels:
            return None
        elif loss_name == "hinge":
            constant = -1.0 if count2 <= count1 else 1.0
        elif loss_name == "quantile":  # the τ-quantile of the two labels
            constant = label2 if tau * (count1 + count2) < count2 else label1
        else:
            label1, label2 = -1.0, 1.0
            if count1 <= 0:
                constant = 1.0
            elif count2 <= 0:
                constant = -1.0
            else:
                constant = math.log(count2 / count1)
        value = (loss_fn(constant, label1) * count1 if count1 > 0 else 0.0)
        value += loss_fn(constant, label2) * count2 if count2 > 0 else 0.0
        return constant, value / (count1 + count2)

    def summary(self, passes_used: int, constant=None, show_label_sum: bool = True) -> str:
        lines = ["", "finished run"]
        if passes_used <= 1:
            lines.append(f"number of examples = {self.example_number}")
        else:
            lines.append(f"number of examples per pass = {self.example_number // passes_used}")
            lines.append(f"passes used = {passes_used}")
        lines.append(f"weighted example sum = {self.weighted_examples:.6f}")
        lines.append(f"weighted label sum = {self.weighted_labels if show_label_sum else 0.0:.6f}")
        if self.holdout_off:
            average = f"{self.sum_loss / self.weighted_labeled:.6f}" if self.weighted_labeled > 0 \
                else "n.a."
        elif self.holdout_best_loss == FLT_MAX:
            average = "undefined (no holdout)"
        else:
            average = f"{self.holdout_best_loss:.6f} h"
        lines.append(f"average loss = {average}")
        lines.extend(self.after_average)
        if constant is not None:
            lines.append(f"best constant = {constant[0]:.6f}")
            if constant[1] is not None:
                lines.append(f"best constant's loss = {constant[1]:.6f}")
        lines.append(f"total feature number = {self.total_features}")
        lines.extend(self.extra_summary)
        return "\n".join(lines) + "\n"


def peak_memory() -> int:
    """This process's peak resident memory so far, in bytes (0 where unknown): Linux's VmHWM,
    not ``getrusage``'s maxrss, which Linux carries over fork and exec from the process that
    started this one (a shard worker's driver, a benchmark's parent)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
