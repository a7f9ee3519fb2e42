"""``--ect K`` (``--error 0``; ``--ft K`` is an alias): VW's filter tree (VW_FACTS §5).

Prediction walks from the root: at node ``n`` the score of binary problem ``n`` sends the example
right when it is above 0.  Training follows the true label's path bottom-up: the node learns
target -1 when the label arrives from its left child, +1 from its right; the node is then
re-predicted with the updated weights (VW learns it again with weight 0) and the label advances
only if that post-update prediction is on its side (SPEC erratum 6).
"""
from __future__ import annotations

import numpy as np

from ..jit import kernel
from ..learners.gd import (MAX_LABEL, MIN_LABEL, P_CLASS_STRIDE, P_FIXED_RANGE, P_LOSS,
                           P_TAU, P_TRAINING, learn_flat, predict_flat, prefetch_example,
                           widen_range)
from ..learners.losses import loss_is_positive, loss_terms
from ..options import OptionError, Options
from .multiclass import TreeReduction, requested, starts_training


@kernel
def ect_examples(starts, slots, values, classes, importances, initials, holdout, n_classes,
                 left, right, parent, weights, state, params, mask, out_pred):
    training = params[P_TRAINING] != 0.0
    fixed_range = params[P_FIXED_RANGE] != 0.0
    loss = np.int64(params[P_LOSS])
    stride = np.int64(params[P_CLASS_STRIDE])
    root = 2 * n_classes - 2
    for e in range(classes.shape[0]):
        first = starts[e]
        last = starts[e + 1]
        if e + 1 < classes.shape[0]:  # the node rows of the next example
            prefetch_example(weights, slots, last, starts[e + 2], 0,
                             (max(n_classes - 2, 0) * stride) & mask, mask)
        node = root
        while node >= n_classes:
            problem = node - n_classes
            raw = predict_flat(weights, slots, values, first, last,
                               (problem * stride) & mask, mask, initials[e])
            score = min(max(raw, state[MIN_LABEL]), state[MAX_LABEL])
            node = right[problem] if score > 0.0 else left[problem]
        out_pred[e] = node
        truth = classes[e]
        importance = importances[e]
        if not starts_training(training, truth, holdout[e], importance, state):
            continue
        node = truth
        while parent[node] >= 0:
            up = parent[node]
            problem = up - n_classes
            offset = (problem * stride) & mask
            label = -1.0 if left[problem] == node else 1.0
            if not fixed_range:
                widen_range(state, label)
            raw = predict_flat(weights, slots, values, first, last, offset, mask, initials[e])
            pred = min(max(raw, state[MIN_LABEL]), state[MAX_LABEL])
            value, gradient2, aux = loss_terms(loss, pred, label, params[P_TAU])
            if loss_is_positive(loss, pred, label, value):
                learn_flat(weights, slots, values, first, last, offset, 0, False, mask, problem,
                           state, params, pred, label, importance, gradient2, aux)
            raw = predict_flat(weights, slots, values, first, last, offset, mask, initials[e])
            after = min(max(raw, state[MIN_LABEL]), state[MAX_LABEL])
            if (after > 0.0) != (label > 0.0):
                break  # the label loses this match: nodes above never see it
            node = up


class FilterTree(TreeReduction):
    name = "ect"

    def __init__(self, options: Options, classes: int, flag: str = ""):
        super().__init__(options, classes, flag)
        if self.indexing is None:  # VW's --ect reads 1..K and never detects 0-indexing
            self.indexing = 1

    @property
    def slot_sets(self) -> int:
        return self.models  # one binary scorer per internal node

    def run(self, ws, starts, slots, values, classes, importances, initials, holdout, out_pred,
            out_scores, batch=None, rows=None):
        ect_examples(starts, slots, values, classes, importances, initials, holdout,
                     self.classes, self.tree.left, self.tree.right, self.tree.parent, ws.weights,
                     ws.state, ws.params, ws.mask, out_pred)

    def kernels(self, dyadic: bool) -> tuple:
        return (ect_examples,)


def setup(options: Options) -> FilterTree | None:
    if not requested(options, "ect", "ft"):
        return None
    if requested(options, "ect") and requested(options, "ft"):
        raise OptionError("--ft is an alias of --ect: give one of them")
    if options.error:
        raise OptionError("option '--error': only --error 0 (the filter tree) is supported")
    flag = "ect" if requested(options, "ect") else "ft"
    return FilterTree(options, getattr(options, flag), flag)
