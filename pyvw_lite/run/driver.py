"""The VW-style run: preamble, passes over text or cache, holdout, progress, outputs, summary.

Driver output (preamble, table, summary) goes to stderr and log lines (``[warning] ...``) to
stdout, as in VW.  Parsing of the next batch overlaps learning of the current one.
"""
from __future__ import annotations

import math
import os
from typing import Iterator

import numpy as np

from ..io import cache as cache_io
from ..io.atomic import atomic_write, published_together, same_stream
from ..io.progress import LiveBar, ProgressTable, use_live_bar
from ..io.source import LineChunks, gzip_damage, prefetch
from ..io.vw_text import (LABEL, NLABEL, TAG_END, TAG_START, ParsedBatch, format_prediction,
                          parse_lines)
from ..jit import announce_compile, is_cached
from ..learner import audit, persist
from ..learner.checks import ParseError
from ..learner.core import Learner
from ..learners import gd
from ..learners.losses import loss_value
from ..options import OptionError
from ..reductions.dyad import shared_rows
from ..reductions.dyad_census import DyadCensus
from ..reductions.multiclass import class_buffers
from .plan import RunPlan


def table_labels(reduction, truth, shown, pred, confidence):
    """(labels the table sums, label text of example i, prediction text of example i): the
    labels themselves, or zeros under a multiclass reduction, whose ``truth`` holds class
    indices, ``shown`` the label as read for a label out of range and ``confidence`` the
    predicted class's probability under --probabilities (NaN otherwise)."""
    if reduction is not None:
        def label_text(i):
            return reduction.label_text(int(truth[i])) if shown[i] is None else shown[i]

        def prediction_text(i):
            text = reduction.label_text(int(pred[i]))
            return text if np.isnan(confidence[i]) else f"{text}({confidence[i]:.0%})"
        return np.zeros(truth.shape[0]), label_text, prediction_text
    return truth, None, lambda i: f"{pred[i]:.4f}"


def account_examples(progress: ProgressTable, reduction, *, weight, loss, holdout, truth,
                     labelled, pred, features, shown, confidence) -> None:
    """Feed examples, in order, to the progress table (``truth``, ``shown``, ``confidence``: as
    :func:`table_labels` takes them)."""
    labels, label_text, prediction_text = table_labels(reduction, truth, shown, pred,
                                                       confidence)
    if label_text is None:
        label_text = lambda i: f"{truth[i]:.4f}" if labelled[i] else "unknown"  # noqa: E731
    progress.account(weight=weight, loss=loss, labelled=labelled, holdout=holdout, label=labels,
                     features=features, label_text=label_text, prediction_text=prediction_text)


UPDATE_FLAG_NOTE = ("[info] --adaptive/--normalized/--invariant under --dyad: its linear terms "
                    "take VW's adaptive normalized rates and every step is exact already")


def compile_helper(learner):
    """On a cold start, the helper process that compiles the learning kernels beside the parser
    (:func:`~pyvw_lite.learner.compile.start_learning_compile`); a warm run imports none of it."""
    if is_cached(parse_lines):
        return None
    from ..learner.compile import start_learning_compile
    return start_learning_compile(learner)


class Driver:
    """One VW-style job over a learner (``ws``, a :class:`Learner`): passes over text or cache,
    holdout, the progress table, -p/-r, the model files and the summary.  Its set-up (outputs,
    cache, preamble) is ``plan``, a :class:`RunPlan`."""

    shared_stream = False  # -p and -r write to one descriptor: lines interleave as in VW

    def __init__(self, workspace: Learner):
        self.ws = workspace
        self.o = workspace.options
        self.err = None if workspace.quiet else workspace.stderr
        self.plan = RunPlan(self.o, workspace, self.err)
        self.progress = ProgressTable(self.err, self.o.progress,
                                      holdout_off=not self.plan.holdout_on(), log=workspace.log)
        self.names: dict[int, set[str]] = {}
        self.helper = None  # a process compiling the learning kernels beside a cold start
        dyadic = workspace.dyadic
        # a dyadic run's first pass counts repeated pairs and labels outside the scale
        self.census = None if dyadic is None or self.err is None else DyadCensus(
            dyadic.pairs, list(self.o.dyad))
        self.first_pass = True

    # ------------------------------------------------------------------ batches
    def _text_batches(self, source: LineChunks, record_spans: bool) -> Iterator[ParsedBatch]:
        for buf, starts, ends, first_line in source:
            yield self.ws.parse_chunk(buf, starts, ends, first_line, source.name, record_spans)

    def _holdout_flags(self, count: int) -> np.ndarray:
        position = self.pass_position + np.arange(1, count + 1)
        self.pass_position += count
        if self.progress.holdout_off:
            return np.zeros(count, dtype=np.uint8)
        if self.o.holdout_after:
            return (position > self.o.holdout_after).astype(np.uint8)
        return (position % self.o.holdout_period == 0).astype(np.uint8)

    def _process_one_by_one(self, batch, rows, holdout, writers):
        """Example by example, for --audit and --invert_hash.  Under --audit each example's
        -p/-r lines follow its audit block, as VW writes them (one stream with -p /dev/stdout)."""
        ws = self.ws
        if rows.size == 0:
            return ws.run_kernel(batch, rows, holdout, ws.training)
        outputs = None  # shaped like the kernel's results (class scores are rows)
        requests = []
        for k, row in enumerate(rows):
            one = rows[k:k + 1]
            if self.o.audit:
                ws.stdout.write(audit.audit_text(ws, batch, int(row)))
            if self.o.invert_hash:
                for name, slot, _ in audit.feature_names(ws, batch, int(row)):
                    self.names.setdefault(slot, set()).add(name)
            result = ws.run_kernel(batch, one, holdout[k:k + 1], ws.training)
            if self.o.audit and writers:
                ws.stdout.flush()
                self._write_outputs(batch, one, result[0], result[1], writers)
                for handle, _ in writers:
                    handle.flush()
            requests.extend(ws.requests)
            if outputs is None:
                outputs = [np.empty((rows.size, *np.shape(value)[1:]), np.asarray(value).dtype)
                           for value in result]
            for out, value in zip(outputs, result):
                out[k] = value[0]
        ws.requests = requests  # the label requests of the whole batch, row by row
        return outputs

    def _raw_score_lines(self, batch: ParsedBatch, rows: np.ndarray, scores: np.ndarray) -> str:
        """VW's -r lines of a scoring multiclass model: `` 1:s1 2:s2 ... [tag]``, classes by
        number even under --named_labels (as VW writes them)."""
        first = 0 if self.ws.reduction.indexing == 0 else 1
        names = [str(c + first) for c in range(scores.shape[1])]
        lines = []
        for row, values in zip(rows.tolist(), scores.tolist()):
            tag = audit.example_tag(batch, row)
            lines.append("".join(f" {name}:{v:g}" for name, v in zip(names, values))
                         + (f" {tag}" if tag else "") + "\n")
        return "".join(lines)

    def _prediction_lines(self, batch: ParsedBatch, rows: np.ndarray, values: np.ndarray,
                          requests: np.ndarray | None = None) -> str:
        tags = batch.ex_int[rows, TAG_START]
        ends = batch.ex_int[rows, TAG_END]
        buf = batch.buf
        lines = []
        reduction = self.ws.reduction
        asks = requests.tolist() if requests is not None and requests.any() else [0.0] * len(rows)
        if self.ws.active is not None and not self.o.simulation and reduction is None:
            # VW's label-request lines: "prediction tag", then the importance when worth asking
            for value, start, end, ask in zip(values.tolist(), tags.tolist(), ends.tolist(), asks):
                tag = bytes(buf[start:end]).decode("utf-8", "replace") if start >= 0 else ""
                lines.append(f"{value:f} {tag}" + (f" {ask:f}" if ask > 0.0 else ""))
            return "\n".join(lines) + "\n" if lines else ""
        for value, start, end, ask in zip(values.tolist(), tags.tolist(), ends.tolist(), asks):
            if isinstance(value, list):  # --scores / --probabilities: class:value for every class
                text = " ".join(f"{reduction.label_text(c)}:{v:g}" for c, v in enumerate(value))
            elif reduction is not None:
                text = reduction.label_text(int(value))
            else:
                text = format_prediction(value)
            if start >= 0:
                text += " " + bytes(buf[start:end]).decode("utf-8", "replace")
            if ask > 0.0:  # --active --sft: the importance of a label worth requesting
                text += f" {ask:f}"
            lines.append(text)
        return "\n".join(lines) + "\n" if lines else ""

    # ------------------------------------------------------------------ run
    def run(self) -> int:
        """Run the job the options describe; 0 when it succeeded."""
        o, ws = self.o, self.ws
        if o.invert_hash and (o.cache or o.cache_file):
            raise OptionError("--invert_hash needs a single pass over text input (no cache)")
        if o.save_resume:
            ws.log("[info] --save_resume is deprecated: models always keep their learning state")
        for flag in ("onethread", "preserve_performance_counters", "sort_features"):
            if getattr(o, flag):
                ws.log(f"[info] --{flag} only changes VW's internals; accepted, no effect here")
        if o.lrqdropout and not o.lrq and (not o.dyad or ws.reduction is not None):
            ws.log("[info] --lrqdropout drops latent features of --lrq and latent coordinates "
                   "of binary and regression --dyad learning only; "
                   + ("here --dyad_l2 regularises them" if o.dyad else "no effect without --lrq"))
        if o.dyad and (o.adaptive or o.normalized or o.invariant):
            ws.log(UPDATE_FLAG_NOTE)
        self.plan.no_input = o.no_stdin and o.data is None
        if self.plan.no_input:
            o.data = os.devnull  # VW's --no_stdin: no data file, no examples
        self.plan.check_outputs()
        cache_path, cache_reader = self.plan.cache_plan()
        read_cache = cache_reader is not None
        text_source = None
        if not read_cache:
            text_source = LineChunks(o.data, damaged=self.plan.damaged_input)
            if o.strict_parse and o.data not in (None, "-"):
                damage = gzip_damage(o.data)  # nothing is learned from a damaged file
                if damage is not None:
                    raise ParseError(f"{o.data}: {damage}; nothing was learned "
                                     "(--strict_parse checks a .gz whole before learning)")
        self.plan.announce_interactions()
        if self.err is not None:
            self.err.write("\n".join(self.plan.preamble(cache_path, read_cache)) + "\n")
            self.progress.print_header()
        announce_compile(parse_lines, *ws.learning_kernels())
        self.helper = compile_helper(ws)
        bar = None
        if use_live_bar(ws.quiet):
            total = cache_reader.total_bytes if read_cache else text_source.total_bytes
            bar = LiveBar("pass 1", total)
            self.progress.bar = bar
        contexts, writers = self.open_writers()
        cache_writer = None
        passes_used = 0
        early_stopped = False
        self.no_win = 0
        try:
            for pass_index in range(o.passes):
                self.pass_position = 0
                self.first_pass = pass_index == 0
                from_cache = read_cache or pass_index > 0
                if from_cache:
                    batches = prefetch(iter(cache_reader))
                    tracker = cache_reader
                else:
                    if pass_index > 0:
                        text_source = LineChunks(o.data, damaged=self.plan.damaged_input)
                    if cache_path:
                        cache_writer = cache_io.CacheWriter(cache_path,
                                                            self.plan.cache_settings())
                    batches = prefetch(self._text_batches(text_source, bool(o.audit or o.invert_hash)))
                    tracker = text_source
                if bar is not None:
                    bar.update(0, f"pass {pass_index + 1}")
                left = math.inf if o.examples is None else o.examples  # --examples: per pass
                for batch in batches:
                    if left <= 0:
                        break
                    rows = ws.prepare_cached(batch) if from_cache else ws.valid_rows(batch)
                    rows = rows[:left] if rows.size > left else rows
                    left -= rows.size
                    if cache_writer is not None:
                        cache_writer.write(batch, rows, keep_label_text=ws.reduction is not None
                                           and not ws.reduction.parse_label_number)
                    self.process_batch(batch, rows, writers)
                    if bar is not None:
                        bar.update(tracker.bytes_read)
                if cache_writer is not None:  # later passes read this very file
                    cache_reader = cache_writer.close(text_source.text_digest())
                    cache_writer = None
                passes_used += 1
                if self.end_pass(pass_index):
                    early_stopped = True
                    break
        except BaseException:
            if cache_writer is not None:
                cache_writer.abort()
            if cache_reader is not None:
                cache_reader.close()
            self.close_writers(contexts, failed=True)
            if bar is not None:
                bar.stop()
            raise
        if cache_reader is not None:
            cache_reader.close()
        if bar is not None:
            bar.stop()
        self.publish(contexts, passes_used, early_stopped)
        return 0

    def publish(self, contexts, passes_used: int, early_stopped: bool) -> None:
        """Close -p/-r and write the end-of-run files (:meth:`finish`), all renamed into place
        together: a run stopped before then keeps its old outputs, all of them."""
        with published_together():
            self.close_writers(contexts, failed=False)
            self.finish(passes_used, early_stopped)

    def open_writers(self):
        """Atomic writers of -p (0) and -r (1): (contexts, [(handle, which)])."""
        o = self.o
        specs = [(path, which) for path, which in ((o.predictions, 0), (o.raw_predictions, 1))
                 if path]
        contexts = [atomic_write(path, binary=False) for path, _ in specs]
        self.shared_stream = len(specs) == 2 and same_stream(o.predictions, o.raw_predictions)
        return contexts, [(context.__enter__(), which) for context, (_, which) in zip(contexts, specs)]

    @staticmethod
    def close_writers(contexts, failed: bool) -> None:
        """Publish the prediction files, or discard them when the run failed (all of them
        when one cannot be written)."""
        error = None
        for context in contexts:
            if failed or error is not None:
                context.__exit__(RuntimeError, RuntimeError("aborted"), None)
                continue
            try:
                context.__exit__(None, None, None)
            except BaseException as exc:  # noqa: B036 - the others are discarded, then it is raised
                error = exc
        if error is not None:
            raise error

    def end_pass(self, pass_index: int) -> bool:
        """Close a pass (holdout bookkeeping, best-model save, learning-rate decay); True when
        the holdout loss stopped improving (VW's early termination)."""
        o, ws = self.o, self.ws
        improved = self.progress.end_pass()
        ws.repeat_pass()
        last = pass_index + 1 >= o.passes
        if o.save_per_pass:
            persist.save(ws, f"{o.final_regressor}.{pass_index + 1}")  # VW's names: 1-based passes
        if not self.progress.holdout_off:
            if improved:
                self.no_win = 0
                if o.final_regressor and not last:
                    persist.save(ws, o.final_regressor)
            else:
                self.no_win += 1
            if self.no_win >= o.early_terminate and not last:  # as VW: 0 stops after one pass
                return True
        ws.params[gd.P_ETA] *= o.decay_learning_rate
        return False

    def process_batch(self, batch: ParsedBatch, rows: np.ndarray, writers) -> None:
        """Learn (or predict) ``rows`` of a batch: account them on the table, write -p/-r."""
        ws = self.ws
        if self.helper is not None:  # the learning kernels were compiled beside us: load them
            self.helper.join(timeout=600)
            self.helper = None
        holdout = self._holdout_flags(rows.size)
        multiclass = ws.reduction
        scored = multiclass is not None and (self.o.scores or self.o.probabilities)
        # VW's -r under --oaa: every class's score; empty under --ect, --scores, --probabilities
        ws.raw_scores = multiclass is not None and multiclass.name != "ect" and not scored \
            and any(which == 1 for _, which in writers)
        if self.o.audit or self.o.invert_hash:
            pred, raw, loss, nfeat = self._process_one_by_one(batch, rows, holdout, writers)
        else:
            pred, raw, loss, nfeat = ws.run_kernel(batch, rows, holdout, ws.training)
        shown = np.full(rows.size, None, dtype=object)
        confidence = np.full(rows.size, np.nan)
        if multiclass is not None and self.o.probabilities and rows.size:
            confidence = raw[np.arange(rows.size), pred.astype(np.int64)]
        if multiclass is not None:
            truth = batch.classes[rows]
            labelled = truth >= 0
            if batch.out_of_range is not None:
                for k in np.flatnonzero(batch.out_of_range[rows]):
                    shown[k] = multiclass.label_as_read(batch, int(rows[k]))
        else:
            truth = batch.ex_float[rows, LABEL]
            labelled = batch.ex_int[rows, NLABEL] > 0
        weight = batch.ex_float[rows, 1]
        if ws.active is not None and not ws.active.requests_labels and ws.requests:
            # --simulation: VW counts the queried examples (with the importance they were
            # learned with) and takes the others as unlabelled examples of weight 0
            decided = np.concatenate(ws.requests)
            queried = decided > 0.0
            loss = np.where(queried, loss * decided / np.where(queried, weight, 1.0),
                            np.where(decided < 0.0, 0.0, loss))
            weight = np.where(queried, decided, np.where(decided < 0.0, 0.0, weight))
            labelled = labelled & (decided >= 0.0)
        self.account(weight=weight, loss=loss, holdout=holdout.astype(bool), truth=truth,
                     labelled=labelled, pred=pred, features=nfeat, shown=shown,
                     confidence=confidence)
        if self.census is not None and self.first_pass:
            self.census.add(batch, rows, ws.ignore)
        if not self.o.audit:  # --audit wrote each example's lines after its audit block
            self._write_outputs(batch, rows, pred, raw, writers)

    def _write_outputs(self, batch: ParsedBatch, rows: np.ndarray, pred, raw, writers) -> None:
        """The -p (0) and -r (1) lines of ``rows``, whose results the last kernel call gave."""
        ws = self.ws
        multiclass = ws.reduction
        scored = multiclass is not None and (self.o.scores or self.o.probabilities)
        requests = np.concatenate(ws.requests) \
            if ws.requests and ws.active is not None and ws.active.requests_labels else None
        texts = []
        for handle, which in writers:
            if which == 1 and multiclass is not None:
                texts.append(self._raw_score_lines(batch, rows, raw) if ws.raw_scores else "")
                continue
            values = raw if which == 1 or scored else pred
            texts.append(self._prediction_lines(batch, rows, values,
                                                requests if which == 0 else None))
        if self.shared_stream and all(texts):  # VW writes each example's -r line, then its -p
            predicted, raw_lines = (text.splitlines(keepends=True) for text in texts)
            texts = ["".join(r + p for r, p in zip(raw_lines, predicted, strict=True)), ""]
        for (handle, _), text in zip(writers, texts):
            handle.write(text)

    def account(self, **examples) -> None:
        """Feed a batch's examples to the progress table (:func:`account_examples`)."""
        account_examples(self.progress, self.ws.reduction, **examples)

    def finish(self, passes_used: int, early_stopped: bool) -> None:
        """End the run: -f, --readable_model, --invert_hash, then VW's summary (stderr)."""
        o, ws = self.o, self.ws
        if ws.nan_predictions:
            ws.log(f"[warning] {ws.nan_predictions} NaN predictions were forced to 0")
        if o.final_regressor and not early_stopped:
            persist.save(ws, o.final_regressor)
        if o.readable_model:
            persist.write_readable_model(ws, o.readable_model)
        if o.invert_hash:
            self._write_invert_hash(o.invert_hash)
        if self.err is not None:
            constant = None if ws.reduction is not None else self.progress.best_constant(
                ws.loss_name, lambda p, y: loss_value(ws.loss, p, y, o.quantile_tau),
                o.quantile_tau)
            if ws.skipped:
                self.progress.extra_summary.append(f"skipped examples = {ws.skipped}")
            if ws.active is not None and o.simulation:  # as VW: not for label requests
                self.progress.extra_summary.append(f"total queries = {ws.active.queries}")
            if ws.ode_step_caps:
                self.progress.extra_summary.append(f"ode_step_cap = {ws.ode_step_caps}")
            self.progress.extra_summary.extend(crowded_table(ws))
            if self.census is not None:
                self.progress.extra_summary.extend(self.census.summary())
            total, weight = ws.multiclass_log_loss
            if o.probabilities and weight > 0:
                self.progress.after_average.append(
                    f"average multiclass log loss = {total / weight:.6f}")
            self.err.write(self.progress.summary(passes_used, constant))

    def _write_invert_hash(self, path: str) -> None:
        with self.ws.synced_weights():
            self._write_invert_hash_synced(path)

    def _write_invert_hash_synced(self, path: str) -> None:
        ws = self.ws
        predict_only = self.o.predict_only_model
        resume = None if predict_only else persist.resume_lines(ws)
        sets = 1 if ws.reduction is None else ws.reduction.slot_sets
        _, offsets = class_buffers(sets, ws.mask, ws.params)
        entries = []  # VW's order: by weight index, then name; a class's suffix is [class]
        shown = ws.weights[:, [gd.W, *ws.latent_columns]]
        for slot, names in self.names.items():
            for c, offset in enumerate(offsets.tolist()):
                at = (slot + offset) & ws.mask
                if shown[at].any():  # VW writes the weights that are not zero
                    entries += [(at, name + (f"[{c}]" if c else "")) for name in names]
        body = "".join(persist.weight_text(ws, f"{name}:{at}", at, predict_only)
                       for at, name in sorted(entries))
        persist.write_text_model(ws, path, body, resume)


def crowded_table(ws) -> list[str]:
    """The summary's line on a dyadic model whose features share weight rows: the rows they
    filled and about how many share one (:func:`~pyvw_lite.reductions.dyad.shared_rows`), when
    that is at least 1% of them; none otherwise."""
    if not getattr(ws, "latent", 0):
        return []
    rows, table = int(ws.state[gd.LATENT_ROWS]), int(ws.weights.shape[0])
    shared = shared_rows(rows, table)
    if shared < 0.01 * (rows + shared):
        return []
    bits = int(math.log2(table))
    return [f"dyadic rows = {rows} of {table}: about {shared} features share a row with another "
            f"(their biases and latent vectors are one); -b {bits + 4} keeps them apart"]
