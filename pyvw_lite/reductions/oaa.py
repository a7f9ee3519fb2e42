"""``--oaa K``: one-against-all, as VW's ``oaa.cc`` (VW_FACTS §5, SPEC §D.4).

One prediction pass gives the K clipped class scores; the prediction is their argmax (ties go to
the lowest class).  Learning then updates every class with the binary label ±1, each update
starting from the score of that single prediction pass.  Class ``c`` keeps its weights at the
slots ``(place(fh) + c·P_C) & mask`` (``learners.gd.place``) and its own normalizer
sums (VW keeps them per class as well).
"""
from __future__ import annotations

import numpy as np

from ..jit import kernel
from ..learners.gd import MAX_LABEL, MIN_LABEL, P_TAU, T_SUM, learn_flat, widen_range
from ..learners.losses import loss_is_positive, loss_terms
from ..options import Options
from .dyad import (classes_share_rows, flow_update, latent_eta, normalizer,
                   score_dyadic_example)
from .multiclass import (MulticlassReduction, class_buffers, class_loop_settings,
                         predicted_class, requested, score_example, starts_training)


@kernel(_nrt=False)
def oaa_examples(starts, slots, values, classes, importances, initials, holdout, n_classes,
                 weights, state, params, mask, out_pred, out_scores, record_scores, scores,
                 offsets):
    training, loss, _, fixed_range = class_loop_settings(params)
    for e in range(classes.shape[0]):
        first, last = score_example(e, starts, weights, slots, values, offsets, mask, initials,
                                    scores)
        for c in range(n_classes):
            scores[c] = min(max(scores[c], state[MIN_LABEL]), state[MAX_LABEL])
        predicted_class(scores, e, out_pred, out_scores, record_scores)
        truth = classes[e]
        importance = importances[e]
        if starts_training(training, truth, holdout[e], importance, state):
            if not fixed_range:
                widen_range(state, -1.0)
                widen_range(state, 1.0)
            for c in range(n_classes):
                label = 1.0 if c == truth else -1.0
                value, gradient2, aux = loss_terms(loss, scores[c], label, params[P_TAU])
                if loss_is_positive(loss, scores[c], label, value):
                    learn_flat(weights, slots, values, first, last, offsets[c], 0, False, mask,
                               c, state, params, scores[c], label, importance, gradient2, aux)


@kernel(_nrt=False, error_model="numpy")
def oaa_dyadic_examples(rows, ex_int, seg, feat_hash, feat_value, ignore, starts, slots, values,
                        classes, importances, initials, holdout, n_classes, pairs, rank, shift,
                        noise, weights, touched, state, params, mask, rtol, atol, out_pred,
                        out_scores, record_scores, scores, offsets, buffers):
    """One-against-all over dyadic class scores: every class learns its ±1 example along its
    own exact flow (SPEC §B with §D.4)."""
    training, loss, solver, fixed_range = class_loop_settings(params)
    a, b, ranges, sides, known, work = buffers
    caps = 0
    for e in range(rows.shape[0]):
        first, last = score_dyadic_example(e, rows, starts, ex_int, seg, pairs, ignore, weights,
                                           touched, slots, values, feat_hash, feat_value, ranges,
                                           offsets, rank, shift, mask, initials, a, b, scores)
        predicted_class(scores, e, out_pred, out_scores, record_scores)
        truth = classes[e]
        importance = importances[e]
        if not starts_training(training, truth, holdout[e], importance, state):
            continue
        if not fixed_range:  # as the linear one-against-all: each class is a ±1 problem
            widen_range(state, -1.0)
            widen_range(state, 1.0)
        eta = latent_eta(params, state[T_SUM])
        # each class learns from its score of the prediction pass, unless an earlier class's
        # update can have moved it (a hash collision): then from the current weights
        shared = classes_share_rows(slots, first, last, offsets, mask)
        for c in range(n_classes):
            sides[0, 0] = offsets[c]
            sides[0, 1] = c
            known[0] = np.nan if shared else scores[c] - initials[e]
            label = 1.0 if c == truth else -1.0
            _, capped = flow_update(weights, touched, slots, values, first, last, feat_hash,
                                    feat_value, ranges, sides, known, 1, rank, shift, noise,
                                    mask, params, label, initials[e], eta, importance, rtol,
                                    atol, a, b, work, state[MIN_LABEL], state[MAX_LABEL], state,
                                    normalizer(params, c))
            caps += capped
    return caps


class OneAgainstAll(MulticlassReduction):
    name = "oaa"
    # VW 9.11.9 warns of a label outside 1..K (0..K-1) and sets the label to K, but learns
    # from the label as read: every class gets -1, and the prediction is never right
    out_of_range = "none"

    @property
    def models(self) -> int:
        return self.classes

    def run(self, ws, starts, slots, values, classes, importances, initials, holdout, out_pred,
            out_scores, batch=None, rows=None):
        record = out_scores is not None
        scores = out_scores if record else np.empty((1, 1))
        buffers = class_buffers(self.classes, ws.mask, ws.params)
        if ws.dyadic is not None:
            d = ws.dyadic
            ws.ode_step_caps += oaa_dyadic_examples(
                rows, batch.ex_int, batch.seg, ws.latent_hashes(batch), batch.feat_value, ws.ignore,
                starts, slots, values, classes, importances, initials, holdout, self.classes,
                d.pairs, d.rank, d.shift, d.noise, ws.weights, ws.touched, ws.state, ws.params,
                ws.mask, ws.options.ode_rtol, ws.options.ode_atol, out_pred, scores, record,
                *buffers, d.scratch(self.classes, starts))
            return
        oaa_examples(starts, slots, values, classes, importances, initials, holdout,
                     self.classes, ws.weights, ws.state, ws.params, ws.mask, out_pred, scores,
                     record, *buffers)

    def kernels(self, dyadic: bool) -> tuple:
        return (oaa_dyadic_examples if dyadic else oaa_examples,)


def setup(options: Options) -> OneAgainstAll | None:
    if not requested(options, "oaa"):
        return None
    return OneAgainstAll(options, options.oaa)
