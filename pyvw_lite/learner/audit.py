"""VW's audit text of a learner: the names of an example's flattened features (``--audit``,
``--invert_hash``) and the audit lines of one example scored by the model as it is."""
from __future__ import annotations

import numpy as np

from ..io.vw_text import (F_NAME_END, F_NAME_START, F_SVAL_END, F_SVAL_START, INITIAL, SEG_END,
                          SEG_FEND, SEG_FSTART, SEG_NAME_END, SEG_NAME_START, SEG_START, TAG_END,
                          TAG_START, ParsedBatch, format_prediction)
from ..learners import gd
from ..reductions.multiclass import class_buffers


def feature_names(learner, batch: ParsedBatch, row: int):
    """(name, slot, value) of every flattened feature of one example, VW's audit names."""
    _, n, starts, slots, values, origins = next(learner.expand(batch, np.array([row]), True))
    n = int(starts[1])
    namespace_of = {}
    for s in range(batch.ex_int[row, SEG_START], batch.ex_int[row, SEG_END]):
        ns = bytes(batch.buf[batch.seg[s, SEG_NAME_START]:batch.seg[s, SEG_NAME_END]]).decode(
            "utf-8", "replace")
        for j in range(batch.seg[s, SEG_FSTART], batch.seg[s, SEG_FEND]):
            namespace_of[j] = ns

    def name(j: int) -> str:
        if j == -1:
            return "Constant"
        span = batch.feat_span[j]
        text = bytes(batch.buf[span[F_NAME_START]:span[F_NAME_END]]).decode("utf-8", "replace")
        if span[F_SVAL_START] >= 0:
            text += "^" + bytes(batch.buf[span[F_SVAL_START]:span[F_SVAL_END]]).decode(
                "utf-8", "replace")
        ns = namespace_of[j]
        return f"{ns}^{text}" if ns else text

    result = []
    for k in range(n):
        parts = [name(int(j)) for j in origins[k] if j != -2]
        result.append(("*".join(parts), int(slots[k]), float(values[k])))
    return result


def audit_text(learner, batch: ParsedBatch, row: int) -> str:
    """VW's --audit lines for one example, scored by the model as it is (before the
    example's update): the prediction, then each feature's ``name:slot:value:weight[@G]``,
    largest contribution first.  A multiclass model writes a block per sub-model it scores,
    as VW does: every class under --oaa/--sft (the class's score), the nodes on the
    prediction path from the root under --ect (the node's score)."""
    features = feature_names(learner, batch, row)
    tag = example_tag(batch, row)
    if learner.reduction is None:
        pred = learner.run_kernel(batch, np.array([row]), np.ones(1, np.uint8), False)[0]
        return _audit_block(learner, features, 0, float(pred[0]), tag)
    _, offsets = class_buffers(learner.reduction.slot_sets, learner.mask, learner.params)
    if learner.reduction.name == "ect":
        tree, classes = learner.reduction.tree, learner.reduction.classes
        initial = float(batch.ex_float[row, INITIAL])
        blocks, node = [], 2 * classes - 2
        while node >= classes:
            problem = node - classes
            score = initial + sum(value * float(learner.weights[(slot + offsets[problem])
                                                                & learner.mask, gd.W])
                                  for _, slot, value in features)
            score = min(max(score, learner.state[gd.MIN_LABEL]), learner.state[gd.MAX_LABEL])
            blocks.append((problem, score))
            node = tree.right[problem] if score > 0.0 else tree.left[problem]
    else:
        saved, learner.want_scores = learner.state.copy(), True
        try:
            scores = learner.run_kernel(batch, np.array([row]), np.ones(1, np.uint8), False)[1]
        finally:
            learner.want_scores = False
            learner.state[:] = saved
        blocks = list(enumerate(scores[0].tolist()))
    return "".join(_audit_block(learner, features, int(offsets[c]), score, tag)
                   for c, score in blocks)


def _audit_block(learner, features, offset: int, prediction: float, tag: str) -> str:
    """One sub-model's audit block: the prediction and tag, then the feature entries."""
    entries = []
    for name, slot, value in features:
        at = (slot + offset) & learner.mask
        weight = float(learner.weights[at, gd.W])
        text = f"{name}:{at}:{value:g}:{weight:g}"
        if learner.adaptive and learner.training:  # VW shows G while it learns (not with -t)
            text += f"@{float(learner.weights[at, gd.G]):g}"
        entries.append((abs(value * weight), text))
    entries.sort(key=lambda item: -item[0])
    return (format_prediction(prediction) + (f" {tag}" if tag else "") + "\n\t"
            + "\t".join(text for _, text in entries) + "\n")


def example_tag(batch: ParsedBatch, row: int) -> str:
    """The tag of example ``row`` (empty without one)."""
    start = batch.ex_int[row, TAG_START]
    if start < 0:
        return ""
    return bytes(batch.buf[start:batch.ex_int[row, TAG_END]]).decode("utf-8", "replace")
