"""The set-up of a VW-style run: which outputs it may write, whether a cache is current, VW's
preamble and its notes on interactions.  :class:`pyvw_lite.run.driver.Driver` (and the sharded
run's driver) holds one (``driver.plan``)."""
from __future__ import annotations

import os

from ..io import cache as cache_io
from ..io.source import LineChunks
from ..learner import outputs
from ..learner.checks import ParseError
from ..options import OptionError, Options

# Options that decide which labels are valid, and so which lines a cache skipped.
LABEL_OPTIONS = ("oaa", "ect", "ft", "sft", "named_labels", "indexing", "binary")


class RunPlan:
    """Outputs, cache and preamble of a run over ``learner`` with its ``options``; ``err`` is
    where the run's VW output goes (``None``: nowhere, --quiet)."""

    def __init__(self, options: Options, learner, err):
        self.o = options
        self.ws = learner
        self.err = err
        self.no_input = False  # --no_stdin with no data file: the run sets it

    def holdout_on(self) -> bool:
        """Whether the run holds examples out (VW: with several passes or --holdout_after)."""
        o = self.o
        return not o.holdout_off and (o.passes > 1 or "holdout_after" in o.given)

    def cache_plan(self) -> tuple[str | None, "cache_io.CacheReader | None"]:
        """(cache path, an open reader when the cache is current) following VW's -c /
        --cache_file / -k rules.  With no data file (standard input) a current cache is read
        whatever data made it, as VW does (``--cache_file c --passes 2`` alone)."""
        o = self.o
        path = self.cache_path()
        if o.passes > 1 and path is None:
            raise OptionError("need a cache file for multiple passes : try using --cache or "
                              "--cache_file <name>")
        if path is None or not os.path.exists(path):
            return path, None
        cache_io.refuse_foreign(path, "--cache_file" if o.cache_file else "-c")
        if o.kill_cache:
            return path, None
        settings, reader = cache_io.open_cache(path)
        wanted = self.cache_settings()
        stdin = o.data in (None, "-")
        if settings is not None and stdin:
            settings = {**settings, "source": wanted["source"]}
        text = None if stdin else lambda: LineChunks(o.data).text_digest()
        if reader is None or not cache_io.stands_for(settings, wanted, text):
            if reader is not None:
                reader.close()
            if settings is None:
                why = "is damaged or was made by another pyvw-lite version"
            elif settings.get("format") != cache_io.FORMAT:
                why = "was made by another pyvw-lite version"
            else:
                why = "was made from other data or options"
            self.ws.log(f"[info] {path} {why}; rebuilding it")
            return path, None
        return path, reader

    def cache_path(self) -> str | None:
        """The cache this run reads or writes (:func:`pyvw_lite.learner.outputs.cache_path`)."""
        return outputs.cache_path(self.o)

    def damaged_input(self, message: str) -> None:
        """A damaged .gz data file: its readable lines are learned, the rest is reported (or
        fatal under --strict_parse)."""
        if self.o.strict_parse:
            raise ParseError(message)
        self.ws.log(f"[warning] {message}")

    def check_outputs(self, caches: list[str] | None = None) -> None:
        """Every output can be written, and none is an input or another output
        (:func:`pyvw_lite.learner.outputs.check_outputs`, as every entry point checks them)."""
        outputs.check_outputs(self.o, caches, run=True)

    def cache_settings(self) -> dict:
        """What a cache must have been written under to stand for the data now: the source,
        the hashing, and everything that decides which lines were skipped (the label options,
        --strict_parse), so that a cache never holds other examples than the text would give."""
        ws = self.ws
        return {"format": cache_io.FORMAT, "examples": self.o.examples,
                "hash_seed": self.o.hash_seed,
                "hash_all": ws.hash_all, "loss": ws.loss_name,
                "labels": [getattr(self.o, name) for name in LABEL_OPTIONS],
                "strict_parse": bool(self.o.strict_parse),
                "source": cache_io.source_signature(self.o.data)}

    def announce_interactions(self) -> None:
        """VW's lines about -q/--cubic/--interactions and namespace filters (stderr), then its
        notes on duplicates and reordered terms (stdout), in VW's order."""
        ws = self.ws
        messages = list(ws.interactions.messages)
        if ws.config.lrq is not None and not self.o.quiet:
            messages.insert(0, ws.config.lrq.message())  # VW's lrq line
        if self.err is not None and messages:
            self.err.write("\n".join(messages) + "\n")
            self.err.flush()
        for line in ws.interactions.warnings:
            ws.log(line)
        if ws.interactions.warnings and not ws.quiet:
            ws.stdout.flush()

    def preamble(self, cache_path: str | None, read_cache: bool) -> list[str]:
        """VW's preamble lines (stderr): outputs, cache, the enabled learners, rates."""
        o, ws = self.o, self.ws
        lines = []
        if o.testonly:
            lines.append("only testing")
        lines += [f"using {name} regularization = {value:g}"
                  for name, value in (("l1", o.l1), ("l2", o.l2)) if value > 0.0]
        if ws.reduction is not None and ws.reduction.names is not None:
            lines.append(f"parsed {len(ws.reduction.names)} named labels")
        if o.final_regressor:
            lines.append(f"final_regressor = {o.final_regressor}")
        if o.predictions:
            lines.append(f"predictions = {o.predictions}")
        if o.raw_predictions:
            lines.append(f"raw predictions = {o.raw_predictions}")
        if read_cache:
            lines += [f"using cache_file = {cache_path}",
                      "ignoring text input in favor of cache input"]
        else:
            lines.append(f"creating cache_file = {cache_path}" if cache_path else "using no cache")
            shown = "" if o.data in (None, "-") or self.no_input else o.data
            lines.append(f"Reading datafile = {shown}")
        top = ["count_label"]
        if ws.reduction is not None:  # VW names the scoring variants oaa-prob and oaa-scores
            suffix = "-prob" if o.probabilities else "-scores" if o.scores else ""
            top = [ws.reduction.name + suffix]
        learners = ["gd"] + (["dyad"] if ws.dyadic is not None else []) \
            + (["lrq"] if ws.config.lrq is not None else []) \
            + ([("active-simulation" if o.simulation else "active")] if ws.active is not None
               else []) \
            + (["generate_interactions"] if ws.interactions.uses_wildcard else []) \
            + [ws.scorer.name] + (["binary"] if ws.binary is not None else []) + top
        lines += ["num sources = 1", f"Num weight bits = {ws.bits}", f"learning rate = {ws.eta:g}",
                  f"initial_t = {ws.initial_t_shown:g}", f"power_t = {o.power_t:g}"]
        if o.passes > 1:
            lines.append(f"decay_learning_rate = {o.decay_learning_rate:g}")
        kind = "MULTICLASS" if ws.reduction is not None else None
        shown = "SCALARS" if kind and (o.scores or o.probabilities) else kind or "SCALAR"
        lines += ["Enabled learners: " + ", ".join(learners),
                  f"Input label = {kind or 'SIMPLE'}", f"Output pred = {shown}"]
        return lines
