"""Sharded online learning with per-pass averaging (VW's allreduce semantics, ECOSYSTEM §1.1).

The input is cut into contiguous shards of whole lines that stay where the tasks run.  Every
pass, each shard's learner starts from the broadcast model, learns its lines once in order and
sends back the rows of the weight table it changed, its learner state and its examples' progress
totals; the driver averages the shard models into the next broadcast and prints one VW table
for the whole pass, shards in file order.  The examples' progress records stay with the shard:
where a row of the table falls due inside a shard, the driver sends the table's state there and
gets back the rows and the new state (the records of 10,000,000 lines were 170 MB a shard a
pass).

Averaging: ``mean`` (the plain mean of the weights, VW's ``accumulate_avg``) or ``adaptive``
(each shard's update of a weight counts by the squared gradients the shard saw for that weight
this pass; VW weights whole weights by whole accumulators, which halves the update of a weight
only one shard saw).  Accumulators and counters add up the shards' increments; the label range
is the union; latent coordinates take the plain mean, and a latent vector that some shards
touched for the first time counts, for the shards that did not, the symmetry-breaking values
they would have given it.  Any option set the
Workspace takes works (linear, dyadic, every multiclass reduction): the whole table travels.

Each shard holds out its own every ``--holdout_period``-th example, as each node of a VW cluster
does.  A pass is a deterministic function of the shard and the broadcast model, so a task that
is run again after a lost worker gives the same model.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import time

import numpy as np

from ..io import cache as cache_io
from ..io.atomic import temporary_beside
from ..io.progress import LiveBar, ProgressTable, peak_memory, totals, use_live_bar
from ..io.source import GZIP_MAGIC, LineChunks, is_regular_file, prefetch
from ..io.vw_text import line_terminators, parse_lines, split_lines
from ..jit import announce_compile
from ..learner.checks import ParseError
from ..learner.core import Learner
from ..learners.gd import G, LATENT_ROWS, MAX_LABEL, MIN_LABEL, N, P_ETA, W
from ..options import OptionError, Options, shard_options
from ..reductions.dyad import symmetry_noise
from ..run.driver import Driver, account_examples, table_labels
from .executor import executor_from

AVERAGING = ("adaptive", "mean")
RANGE_BLOCK = 1 << 26  # bytes scanned at once when a file is cut into byte ranges
# A streamed shard's text is read this much at a time: its memory is about 20 times one chunk
# (parsed batch, cache block, progress records), whatever the shard's size.
STREAM_CHUNK_BYTES = 1 << 20
RECORD_FIELDS = ("weight", "loss", "holdout", "truth", "labelled", "pred", "features", "shown",
                 "confidence")


# ---------------------------------------------------------------------- shards
def cut_shards(chunks, n_shards: int) -> list[list[tuple[bytes, int]]]:
    """Contiguous shards with equal numbers of lines, each a list of ``(bytes, first line)``
    pieces, from ``(buf, line starts, line ends, first line)`` chunks."""
    chunks = list(chunks)
    total = sum(starts.size for _, starts, _, _ in chunks)
    bounds = np.linspace(0, total, n_shards + 1).astype(np.int64)
    shards: list[list[tuple[bytes, int]]] = [[] for _ in range(n_shards)]
    line = 0
    for buf, starts, ends, first_line in chunks:
        count = starts.size
        for i in range(n_shards):
            low, high = max(bounds[i], line) - line, min(bounds[i + 1], line + count) - line
            if low < high:
                shards[i].append((bytes(buf[starts[low]:ends[high - 1]]), first_line + int(low)))
        line += count
    return shards


def file_shards(path: str | None, n_shards: int, damaged=None) -> tuple[list[dict], str]:
    """Shards of a data file (text, ``.gz`` or ``-``), and the name messages give it;
    ``damaged`` as :class:`LineChunks` takes it."""
    source = LineChunks(path, damaged=damaged)
    pieces = cut_shards(source, n_shards)
    return [{"source": source.name, "pieces": shard} for shard in pieces], source.name


def range_shards(path: str, n_shards: int) -> list[dict]:
    """Shards of a plain local file as byte ranges of whole lines, which each worker reads
    itself on its first pass: nothing is read whole or shipped by the driver.  The shards hold
    the same lines as :func:`file_shards` would (equal line counts), so the model is the same;
    the driver counts newlines block by block over a memory map (memory stays flat) and finds
    each boundary in its block."""
    import mmap
    size = os.path.getsize(path)
    if size == 0:
        return [{"source": path, "path": path, "start": 0, "end": 0, "first_line": 1}
                for _ in range(n_shards)]
    with open(path, "rb") as handle, \
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        data = np.frombuffer(view, dtype=np.uint8)
        # newlines per block, so memory stays flat however large the file
        blocks = range(0, size, RANGE_BLOCK)
        def ends_in(at: int) -> np.ndarray:
            """Line ends in the block at ``at`` (its next byte read: a CR before an LF)."""
            found = line_terminators(data[at:at + RANGE_BLOCK + 1], at + RANGE_BLOCK >= size)
            return found[found < RANGE_BLOCK]

        counts = np.array([ends_in(at).shape[0] for at in blocks])
        before = np.concatenate([[0], np.cumsum(counts)])  # line ends before each block
        total = int(before[-1]) + (0 if data[size - 1] in (10, 13) else 1)  # a last unended line

        def end_of(lines: int) -> int:
            """The byte just past the first ``lines`` lines."""
            if lines >= total:
                return size
            block = int(np.searchsorted(before, lines, side="left")) - 1  # holds line end #lines
            at = block * RANGE_BLOCK
            inside = ends_in(at)
            return at + int(inside[lines - int(before[block]) - 1]) + 1 if lines else 0

        bounds = np.linspace(0, total, n_shards + 1).astype(np.int64)
        edges = [end_of(int(line)) for line in bounds]
        del data
    return [{"source": path, "path": path, "start": edges[i], "end": edges[i + 1],
             "first_line": int(bounds[i]) + 1} for i in range(n_shards)]


def local_file(path: str | None) -> bool:
    """A plain file on this machine (not stdin, a pipe or a gzip file): byte-range shards."""
    if path in (None, "-") or not is_regular_file(path):
        return False
    with open(path, "rb") as handle:
        return handle.read(2) != GZIP_MAGIC


def line_shards(lines: list[str], n_shards: int) -> list[dict]:
    """Shards of in-memory lines (:func:`cut_shards`), for ``sharded_learn``."""
    data = "\n".join(lines).encode("utf-8")
    buf = np.frombuffer(data, dtype=np.uint8)
    starts, ends, _ = split_lines(buf, final=True)
    pieces = cut_shards([(buf, starts, ends, 1)], n_shards)
    return [{"source": "<input>", "pieces": shard} for shard in pieces]


# ---------------------------------------------------------------------- one shard's pass
class RecordFile:
    """A shard's progress records for one pass, batch after batch, in a scratch file beside its
    cache (``-c`` with ``--executor``: nothing of the shard stays in memory).  Arrays only, in
    numpy's format without pickles; the few label texts kept as read go as JSON."""

    def __init__(self, beside: str):
        fd, self.path = temporary_beside(beside + ".progress")
        self.handle = os.fdopen(fd, "w+b")
        self.batches = 0

    def reset(self) -> "RecordFile":
        """Empty, for the next pass (the same file: no new one each pass)."""
        self.handle.seek(0)
        self.handle.truncate()
        self.batches = 0
        return self

    def append(self, examples: dict) -> None:
        for name in RECORD_FIELDS:
            if name == "shown":
                shown = examples[name]
                texts = {int(k): shown[k] for k in np.flatnonzero(shown != None)}  # noqa: E711
                np.lib.format.write_array(self.handle, np.frombuffer(
                    json.dumps(texts).encode("utf-8"), dtype=np.uint8), allow_pickle=False)
            else:
                np.lib.format.write_array(self.handle, np.asarray(examples[name]),
                                          allow_pickle=False)
        self.batches += 1

    def __iter__(self):
        self.handle.flush()
        self.handle.seek(0)
        for _ in range(self.batches):
            examples = {}
            for name in RECORD_FIELDS:
                array = np.lib.format.read_array(self.handle, allow_pickle=False)
                if name == "shown":
                    shown = np.full(examples["weight"].shape[0], None, dtype=object)
                    for k, text in json.loads(array.tobytes().decode("utf-8")).items():
                        shown[int(k)] = text
                    array = shown
                examples[name] = array
            yield examples

    def close(self) -> None:
        self.handle.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class ShardDriver(Driver):
    """The VW driver's batch processing for one shard: keeps the examples' progress records
    (in memory, or in a :class:`RecordFile`) and their totals instead of printing them, and
    writes predictions to memory."""

    def __init__(self, workspace, records=None):
        super().__init__(workspace)
        self.pass_position = 0
        self.records = [] if records is None else records
        self.totals: list[dict] = []

    def account(self, **examples) -> None:
        labels, _, _ = table_labels(self.ws.reduction, examples["truth"], examples["shown"],
                                    examples["pred"], examples["confidence"])
        self.totals.append(totals(weight=examples["weight"], loss=examples["loss"],
                                  labelled=examples["labelled"], holdout=examples["holdout"],
                                  label=labels, features=examples["features"]))
        self.records.append(examples)


def parsed_pieces(shard: dict, workspace) -> list:
    """The shard's examples, parsed and checked on its first pass and kept with the shard where
    it lives (the in-memory counterpart of VW's cache for the later passes)."""
    if "parsed" not in shard:
        parsed = []
        if "path" in shard:  # a byte range of a local file, read here
            with open(shard["path"], "rb") as handle:
                handle.seek(shard["start"])
                shard["pieces"] = [(handle.read(shard["end"] - shard["start"]),
                                    shard["first_line"])]
        for data, first_line in shard["pieces"]:
            buf = np.frombuffer(data, dtype=np.uint8)
            starts, ends, _ = split_lines(buf, final=True, cr="path" in shard)
            batch = workspace.parse_chunk(buf, starts, ends, first_line, shard["source"])
            parsed.append((batch, workspace.valid_rows(batch)))
        shard["parsed"] = parsed
    return shard["parsed"]


def shard_text_digest(shard: dict) -> str:
    """SHA-256 (hex) of a shard's text: its lines of the file, or the pieces it was sent ("" when
    neither is at hand: a cache then matches no text)."""
    if "path" in shard:
        return LineChunks(shard["path"], byte_range=(shard["start"], shard["end"],
                                                     shard["first_line"])).text_digest()
    if "pieces" not in shard:
        return ""
    digest = hashlib.sha256()
    for data, _ in shard["pieces"]:
        digest.update(data)
    return digest.hexdigest()


def cached_batches(shard: dict, workspace, timings: dict):
    """The shard's ``(batch, rows)`` streamed through its own cache file (``shard["cache"]``):
    read from it when it is current, else parsed chunk by chunk from the shard's lines and
    written to it on the way.  Only a chunk at a time is in memory."""
    reader = shard.get("reader")
    if reader is None and not shard.get("rebuild"):
        settings, reader = cache_io.open_cache(shard["cache"]) \
            if os.path.exists(shard["cache"]) else (None, None)
        if reader is not None and not cache_io.stands_for(settings, shard["cache_settings"],
                                                          lambda: shard_text_digest(shard)):
            reader.close()
            reader = None
    if reader is not None:
        shard["reader"] = reader
        for batch in prefetch(iter(reader)):  # the next block is read while this one learns
            yield batch, workspace.prepare_cached(batch)
        return
    source = None
    if "path" in shard:
        source = LineChunks(shard["path"], chunk_bytes=STREAM_CHUNK_BYTES,
                            byte_range=(shard["start"], shard["end"], shard["first_line"]))
        chunks = iter(source)
    else:
        chunks = ((buf, *split_lines(buf, final=True)[:2], first) for buf, first in
                  ((np.frombuffer(data, dtype=np.uint8), first) for data, first in shard["pieces"]))
    writer = cache_io.CacheWriter(shard["cache"], shard["cache_settings"])
    keep_text = workspace.reduction is not None and not workspace.reduction.parse_label_number
    done = False
    try:
        for buf, starts, ends, first_line in chunks:
            clock = time.perf_counter()
            batch = workspace.parse_chunk(buf, starts, ends, first_line, shard["source"])
            rows = workspace.valid_rows(batch)
            writer.write(batch, rows, keep_label_text=keep_text)
            timings["parse"] += time.perf_counter() - clock
            yield batch, rows
        done = True
    finally:
        if done:
            shard["reader"] = writer.close(source.text_digest() if source is not None
                                           else shard_text_digest(shard))
            shard.pop("rebuild", None)
            shard.pop("pieces", None)
        else:
            writer.abort()


def learn_shard(shard: dict, options: Options, model: tuple, pass_index: int,
                outputs: tuple[int, ...]) -> dict:
    """One pass of one shard from the broadcast ``(weights, state, touched, latent scale)``
    (the scale: the latent rate's decay so far, ``Learner.latent_scale``)."""
    clock = time.perf_counter()
    log = io.StringIO()
    workspace = Learner(options, stdout=log, stderr=io.StringIO())
    weights, state, touched, latent_scale = model
    workspace.weights[...] = weights  # copies: the broadcast arrays stay untouched
    workspace.state[...] = state
    workspace.touched[...] = touched
    workspace.params[P_ETA] *= options.decay_learning_rate ** pass_index
    if pass_index > 0:
        workspace.repeat_pass()
    if workspace.dyadic is not None:
        workspace.set_latent_scale(latent_scale)
    # the examples' progress stays here: the driver gets their totals, and sends its table
    # only when a row falls due inside this shard (account_shard)
    old = shard.pop("records", None)
    streamed = "cache" in shard
    if streamed:
        records = old[1].reset() if old is not None else RecordFile(shard["cache"])
    else:
        records = []
    shard["records"] = (pass_index, records)
    shard["reduction"] = workspace.reduction
    driver = ShardDriver(workspace, records)
    writers = [(io.StringIO(), which) for which in outputs]
    timings = {"start": time.perf_counter() - clock, "parse": 0.0}
    try:
        clock = time.perf_counter()
        if streamed:
            batches = cached_batches(shard, workspace, timings)
        else:
            batches = parsed_pieces(shard, workspace)
            timings["parse"] = time.perf_counter() - clock
            clock = time.perf_counter()
        for batch, rows in batches:
            driver.process_batch(batch, rows, writers)
        timings["learn"] = time.perf_counter() - clock - (timings["parse"] if streamed else 0.0)
    except ParseError as exc:  # --strict_parse: the driver stops the job with this message
        return {"error": str(exc)}
    clock = time.perf_counter()
    changed = np.flatnonzero((workspace.weights != weights).any(axis=1))
    timings["diff"] = time.perf_counter() - clock
    return {"rows": changed, "values": workspace.weights[changed], "state": workspace.state,
            "timings": timings,
            "touched": np.flatnonzero((workspace.touched > 0) & (touched == 0)),
            "counted": (counted := np.flatnonzero(workspace.touched > touched)),
            "uses": workspace.touched[counted] - touched[counted],  # first-pass uses per row
            "totals": driver.totals,
            "predictions": [handle.getvalue() for handle, _ in writers],
            "log": log.getvalue(), "skipped": workspace.skipped,
            "nan_predictions": workspace.nan_predictions,
            "ode_step_caps": workspace.ode_step_caps,
            "multiclass_log_loss": workspace.multiclass_log_loss,
            "peak_memory": peak_memory()}


def account_shard(shard: dict, state: dict, pass_index: int, first: int) -> dict:
    """Account the shard's examples of pass ``pass_index``, from batch ``first`` on, on the
    driver's progress table (``state``) where they live: the table's new state and the rows it
    printed, or ``{"missing": True}`` when this worker no longer holds them (restarted, or a
    copy of the shard)."""
    kept = shard.get("records")
    if kept is None or kept[0] != pass_index:
        return {"missing": True}
    out = io.StringIO()
    table = ProgressTable(out)
    table.restore(state)
    for index, examples in enumerate(kept[1]):
        if index >= first:
            account_examples(table, shard["reduction"], **examples)
    return {"state": table.snapshot(), "text": out.getvalue()}


def release_shard(shard: dict) -> None:
    """End of a streamed job: close the shard's cache file and delete its progress records."""
    kept = shard.pop("records", None)
    if kept is not None and isinstance(kept[1], RecordFile):
        kept[1].close()
    reader = shard.pop("reader", None)
    if reader is not None:
        reader.close()


def account_result(progress, executor, handle, result: dict, learn_args: tuple) -> None:
    """One shard's progress in a pass (shards in file order): its batches' totals until a row
    falls due in one, then the rest from where the shard lives (learned again from the same
    broadcast if that worker lost them: the same model, so the same records)."""
    for first, batch_totals in enumerate(result["totals"]):
        if progress.due_within(batch_totals):
            break
        progress.add_totals(batch_totals)
    else:
        return
    ask = [(progress.snapshot(), learn_args[2], first)]
    answer = executor.map(account_shard, [handle], ask)[0]
    if answer.get("missing"):
        executor.map(learn_shard, [handle], [learn_args])
        answer = executor.map(account_shard, [handle], ask)[0]
        if answer.get("missing"):
            raise RuntimeError("a shard's progress was lost twice in one pass")
    progress.restore(answer["state"])
    progress.write(answer["text"])


def run_pass(executor, handles: list, workspace, options: Options, pass_index: int,
             outputs: tuple[int, ...] = ()) -> list[dict]:
    """One pass of every shard from the workspace's model: the shards' results, in order."""
    model = (workspace.weights, workspace.state, workspace.touched, workspace.latent_scale)
    results = executor.map(learn_shard, handles,
                           [(options, model, pass_index, outputs)] * len(handles))
    for result in results:
        if "error" in result:
            raise ParseError(result["error"])
    return results


def pass_timings(pass_index: int, wall: float, after: float, results: list[dict]) -> str:
    """``--timings``: one pass's wall time and where it went.  The workers' own figures are
    per shard (slowest / fastest); what is left of the wall time is shipping the broadcast
    model out and the changed rows back, and waiting on the slowest shard.  Then the peak
    resident memory of the processes that ran the shards (largest / smallest)."""
    def spread(name: str) -> str:
        values = [result["timings"][name] for result in results]
        return f"{max(values):.2f}/{min(values):.2f}"
    busiest = max(sum(result["timings"].values()) for result in results)
    memory = [result["peak_memory"] for result in results]
    return (f"timings: pass {pass_index + 1}: wall {wall + after:.2f} s = shards {wall:.2f} s "
            f"(per shard, slowest/fastest: start {spread('start')}, parse {spread('parse')}, "
            f"learn {spread('learn')} (progress totals included), changed rows "
            f"{spread('diff')}; shipping and waiting "
            f"{max(wall - busiest, 0.0):.2f}) + averaging and the table {after:.2f} s; "
            f"workers' peak memory {max(memory) >> 20}/{min(memory) >> 20} MB\n")


# ---------------------------------------------------------------------- averaging
def combine(workspace, results: list[dict], mode: str) -> None:
    """Average the shards' models into ``workspace`` (the model they all started from)."""
    weights, state = workspace.weights, workspace.state
    n = len(results)
    newly = np.unique(np.concatenate([result["touched"] for result in results]))
    if n == 1:
        weights[results[0]["rows"]] = results[0]["values"]
        state[:] = results[0]["state"]
        _add_uses(workspace.touched, results)
        return
    rows = np.unique(np.concatenate([result["rows"] for result in results]))
    base = weights[rows].astype(np.float64)  # differences in float64: exact for float32
    moved = np.zeros(rows.size)
    seen = np.zeros(rows.size)  # squared-gradient increments: the adaptive weights
    seen_moved = np.zeros(rows.size)
    latent = workspace.latent
    linear = weights.shape[1] - latent
    accumulating = linear > G
    normalizer = base[:, N].copy() if accumulating else None
    latent_moved = np.zeros((rows.size, latent))
    for result in results:
        at = np.searchsorted(rows, result["rows"])
        values = result["values"].astype(np.float64)
        step = values[:, W] - base[at, W]
        moved[at] += step
        latent_moved[at] += values[:, linear:] - base[at, linear:]
        if accumulating:
            increment = np.maximum(values[:, G] - base[at, G], 0.0)
            seen[at] += increment
            seen_moved[at] += increment * step
            normalizer[at] = np.maximum(normalizer[at], values[:, N])
    if latent and newly.size:
        counts = sum(np.isin(newly, result["touched"]).astype(np.int64) for result in results)
        present = np.isin(newly, rows)
        at = np.searchsorted(rows, newly[present])
        latent_moved[at] += (n - counts[present])[:, None] * symmetry_noise(
            newly[present], latent, workspace.dyadic.noise, workspace.dyadic.seed)
    if mode == "adaptive" and accumulating:
        step = np.where(seen > 0, seen_moved / np.where(seen > 0, seen, 1.0), moved / n)
    else:
        step = moved / n
    weights[rows, W] = base[:, W] + step
    if latent:  # latent coordinates move at the plain rate: the plain mean
        weights[rows, linear:] = base[:, linear:] + latent_moved / n
    if accumulating:
        weights[rows, G] = base[:, G] + seen
        weights[rows, N] = normalizer
    start = state.copy()
    state += sum(result["state"] - start for result in results)
    state[MIN_LABEL] = min(result["state"][MIN_LABEL] for result in results)
    state[MAX_LABEL] = max(result["state"][MAX_LABEL] for result in results)
    state[LATENT_ROWS] = start[LATENT_ROWS] + newly.size  # a row two shards touched is one row
    _add_uses(workspace.touched, results)


def _add_uses(touched, results: list[dict]) -> None:
    """The shards' first-pass uses of each dyadic row added to its count (saturating as the
    learner's own count, at 255)."""
    counted = [result.get("counted", np.zeros(0, dtype=np.int64)) for result in results]
    rows = np.unique(np.concatenate(counted))
    if not rows.size:
        return
    total = touched[rows].astype(np.int64)
    for result, mine in zip(results, counted):
        total[np.searchsorted(rows, mine)] += result.get("uses", 0)
    touched[rows] = np.minimum(total, 255)


# ---------------------------------------------------------------------- the job
class ShardedDriver(Driver):
    """``pyvw-lite ... --executor SPEC``: passes over shards, one VW table for the whole job."""

    def run(self) -> int:
        o, ws = self.o, self.ws
        self.plan.check_outputs()
        for flag in ("audit", "invert_hash"):
            if getattr(o, flag):
                raise OptionError(f"--{flag} follows one learner example by example; run it "
                                  "without --executor")
        if o.examples is not None:
            raise OptionError("--examples counts the examples of one stream; run it without "
                              "--executor")
        if ws.active is not None:
            raise OptionError("--active decides example by example on one learner; run it "
                              "without --executor")
        if o.averaging == "adaptive" and not ws.adaptive and ws.stride == 1:
            ws.log("[warning] adaptive averaging needs adaptive updates; averaging by the mean")
            o.averaging = "mean"
        try:
            executor = executor_from(o.executor)
        except ValueError as exc:
            raise OptionError(str(exc)) from None
        try:
            return self._run_on(executor)
        finally:
            executor.close()

    def _run_on(self, executor) -> int:
        o, ws = self.o, self.ws
        n_shards = o.shards or executor.workers
        if n_shards < 1:
            raise OptionError(f"option '--shards': {n_shards} must be at least 1")
        clock = time.perf_counter()
        if executor.same_machine and local_file(o.data):
            shards = range_shards(o.data, n_shards)
        else:
            shards, _ = file_shards(o.data, n_shards, damaged=self.plan.damaged_input)
        cut = time.perf_counter() - clock
        cache_path = self.plan.cache_path()
        if cache_path is not None:  # each shard streams through a cache file of its own
            settings = self.plan.cache_settings()
            shard_caches = [f"{cache_path}.shard{index + 1}of{n_shards}"
                            for index in range(len(shards))]
            for path in shard_caches:  # a FIFO there would block a worker that heartbeats on
                if os.path.lexists(path):
                    cache_io.refuse_foreign(path)
            self.plan.check_outputs(shard_caches)
            for index, shard in enumerate(shards):
                shard["cache"] = shard_caches[index]
                where = [shard["start"], shard["end"]] if "path" in shard else None
                shard["cache_settings"] = {**settings, "shard": [index, n_shards, where]}
                shard["rebuild"] = bool(o.kill_cache)
            ws.log(f"[info] --executor with a cache: each shard streams through its own cache "
                   f"file ({cache_path}.shard1of{n_shards}, ...), holding one chunk in memory")
        clock = time.perf_counter()
        handles = [executor.put(shard) for shard in shards]
        scattered = time.perf_counter() - clock
        if o.timings and self.err is not None:
            self.err.write(f"timings: read and cut {n_shards} shards {cut:.2f} s, "
                           f"send them to the workers {scattered:.2f} s\n")
        self.plan.announce_interactions()
        if self.err is not None:
            preamble = self.plan.preamble(None, False)
            preamble[preamble.index("using no cache")] = (
                f"executor = {executor.name}, shards = {n_shards}, averaging = {o.averaging}")
            self.err.write("\n".join(preamble) + "\n")
            self.progress.print_header()
        # the workers load their kernels from the same on-disk cache as this process
        announce_compile(parse_lines, *ws.learning_kernels())
        options = shard_options(o)
        contexts, writers = self.open_writers()
        outputs = tuple(which for _, which in writers)
        bar = LiveBar(f"{n_shards} shards", o.passes, unit="passes") \
            if use_live_bar(ws.quiet) else None
        self.progress.bar = bar
        passes_used = 0
        early_stopped = False
        self.no_win = 0
        try:
            for pass_index in range(o.passes):
                clock = time.perf_counter()
                results = run_pass(executor, handles, ws, options, pass_index, outputs)
                ran = time.perf_counter() - clock
                clock = time.perf_counter()
                if bar is not None:
                    bar.update(pass_index + 1)
                learn_args = (options, (ws.weights, ws.state, ws.touched, ws.latent_scale),
                              pass_index, outputs)
                said: set[str] = set()  # a note every shard makes ("labels are now ...") once
                for shard, result in zip(handles, results):
                    if pass_index == 0:  # later passes would repeat the same warnings
                        for line in result["log"].splitlines():
                            if line not in said:
                                said.add(line)
                                ws.log(line)
                        ws.checks.skipped += result["skipped"]
                    account_result(self.progress, executor, shard, result, learn_args)
                    for (handle, _), text in zip(writers, result["predictions"]):
                        handle.write(text)
                    ws.nan_predictions += result["nan_predictions"]
                    ws.ode_step_caps += result["ode_step_caps"]
                    ws.multiclass_log_loss = [ours + theirs for ours, theirs in
                                              zip(ws.multiclass_log_loss,
                                                  result["multiclass_log_loss"])]
                if ws.training:
                    combine(ws, results, o.averaging)
                if o.timings and self.err is not None:
                    self.err.write(pass_timings(pass_index, ran, time.perf_counter() - clock,
                                                results))
                passes_used += 1
                if self.end_pass(pass_index):
                    early_stopped = True
                    break
        except BaseException:
            self.close_writers(contexts, failed=True)
            raise
        finally:
            if bar is not None:
                bar.stop()
                self.progress.bar = None
            if cache_path is not None:
                with contextlib.suppress(Exception):  # a lost worker has nothing left to close
                    executor.map(release_shard, handles, [()] * len(handles))
        self.publish(contexts, passes_used, early_stopped)
        return 0
