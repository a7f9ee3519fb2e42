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
    """bytes read of total, rate and elapsed time; rows scroll above it."""

    def __init__(self, description: str, total: int | None):
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TransferSpeedColumn)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
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
            if "." in progress:
                arg = float(progress)
                if arg <= 1.0:
                    if log:
                        log(f"[warning] Multiplicative --progress <float> '{progress}' is <= 1.0: "
                            "adding 1.0")
                    arg += 1.0
                self.progress_arg = arg
            else:
                self.progress_add = True
                self.progress_arg = float(int(progress))
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
        if self.more_than_two_labels or labels.size == 0:
            return
        for value in np.unique(labels)[:3] if labels.size > 64 else labels:
            value = float(value)
            if self.first_label == FLT_MAX:
                self.first_label = value
            elif value != self.first_label and self.second_label == FLT_MAX:
                self.second_label = value
            elif value != self.first_label and value != self.second_label:
                self.more_than_two_labels = True
                return

    def account(self, *, weight: np.ndarray, loss: np.ndarray, labelled: np.ndarray,
                holdout: np.ndarray, label: np.ndarray, features: np.ndarray,
                label_text: Callable[[int], str], prediction_text: Callable[[int], str]) -> None:
        """Account a batch of examples in order; print the rows that fall due."""
        n = weight.shape[0]
        if n == 0:
            return
        train = ~holdout
        labelled_train = labelled & train
        labelled_holdout = labelled & holdout
        w_lab = np.where(labelled_train, weight, 0.0)
        w_unlab = np.where(train & ~labelled, weight, 0.0)
        loss_train = np.where(labelled_train, loss, 0.0)
        w_hold = np.where(labelled_holdout, weight, 0.0)
        loss_hold = np.where(labelled_holdout, loss, 0.0)
        c_lab = np.cumsum(w_lab)
        c_unlab = np.cumsum(w_unlab)
        c_loss = np.cumsum(loss_train)
        c_hold_w = np.cumsum(w_hold)
        c_hold_loss = np.cumsum(loss_hold)
        c_examples = np.cumsum(train)
        c_features = np.cumsum(np.where(train, features, 0))
        weighted_after = self.weighted_examples + c_lab + c_unlab
        self._observe_labels(label[labelled_train])
        base = dict(lab=self.weighted_labeled, unlab=self.weighted_unlabeled, loss=self.sum_loss,
                    hw=self.holdout_weight, hl=self.holdout_loss, ex=self.example_number)
        last_i = -1
        start = 0
        while self.out is not None:
            candidates = np.flatnonzero(train[start:] & (weighted_after[start:] >= self.dump_interval))
            if candidates.size == 0:
                break
            i = start + int(candidates[0])
            lab_i = base["lab"] + c_lab[i]
            loss_i = base["loss"] + c_loss[i]
            since_loss = self.sum_loss_since_dump + c_loss[i] - (c_loss[last_i] if last_i >= 0 else 0.0)
            hold_w_i = base["hw"] + c_hold_w[i]
            hold_l_i = base["hl"] + c_hold_loss[i]
            delta_hw = c_hold_w[i] - (c_hold_w[last_i] if last_i >= 0 else 0.0)
            delta_hl = c_hold_loss[i] - (c_hold_loss[last_i] if last_i >= 0 else 0.0)
            hw_since = self.holdout_weight_since_dump + delta_hw
            hl_since = self.holdout_loss_since_dump + delta_hl
            holding_out = not self.holdout_off and self.current_pass >= 1
            if holding_out:
                average = "unknown" if hold_l_i == 0.0 and hold_w_i == 0.0 else hold_l_i / hold_w_i
                since = "unknown" if hl_since == 0.0 and hw_since == 0.0 else hl_since / hw_since
                self.holdout_weight_since_dump = 0.0
                self.holdout_loss_since_dump = 0.0
            else:
                average = loss_i / lab_i if lab_i > 0 else "n.a."
                delta_lab = lab_i - self.old_weighted_labeled
                since = since_loss / delta_lab if delta_lab > 0 else "n.a."
                self.holdout_weight_since_dump = hw_since
                self.holdout_loss_since_dump = hl_since
            self.print_header()
            self.write(format_row(average, since, base["ex"] + int(c_examples[i]),
                                  float(weighted_after[i]), label_text(i), prediction_text(i),
                                  int(features[i]), holding_out))
            self.sum_loss_since_dump = 0.0
            self.old_weighted_labeled = lab_i
            w_now = float(weighted_after[i])
            self.dump_interval = w_now + self.progress_arg if self.progress_add \
                else w_now * self.progress_arg
            last_i = i
            start = i + 1
        tail_loss = c_loss[-1] - (c_loss[last_i] if last_i >= 0 else 0.0)
        self.sum_loss_since_dump += tail_loss
        self.holdout_weight_since_dump += c_hold_w[-1] - (c_hold_w[last_i] if last_i >= 0 else 0.0)
        self.holdout_loss_since_dump += c_hold_loss[-1] - (c_hold_loss[last_i] if last_i >= 0 else 0.0)
        self.weighted_labeled += c_lab[-1]
        self.weighted_unlabeled += c_unlab[-1]
        self.sum_loss += c_loss[-1]
        self.holdout_weight += c_hold_w[-1]
        self.holdout_loss += c_hold_loss[-1]
        self.holdout_weight_pass += c_hold_w[-1]
        self.holdout_loss_pass += c_hold_loss[-1]
        self.example_number += int(c_examples[-1])
        self.total_features += int(c_features[-1])
        self.weighted_labels += float(np.dot(np.where(labelled_train, label, 0.0), weight))

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

    def best_constant(self, loss_name: str, loss_fn: Callable[[float, float], float]):
        """VW's best constant and its loss (``None`` when VW prints neither or no loss)."""
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
        if constant is not None:
            lines.append(f"best constant = {constant[0]:.6f}")
            if constant[1] is not None:
                lines.append(f"best constant's loss = {constant[1]:.6f}")
        lines.append(f"total feature number = {self.total_features}")
        lines.extend(self.extra_summary)
        return "\n".join(lines) + "\n"
