"""Vowpal Wabbit as the peer: the PyPI ``vowpalwabbit`` package has no ``vw`` executable, so a
child Python runs its ``Workspace`` the way the command line would (``-d`` makes the workspace
run the driver; ``finish`` prints the summary).

A config's ``[[peer]]`` arguments are data from elsewhere (docs/security.md): VW has options
that connect to a host, listen on a port, start processes and read or write files, and a
deny-list always misses the next one.  :func:`check_peer_args` lets through only the options of
:data:`PEER_FLAGS` and :data:`PEER_VALUES`, each of which only changes what is learned or
printed, written in full.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Sequence

from ..vw_options import VW_OPTIONS

VW_RUNNER = (
    "import sys\n"
    "from vowpalwabbit import Workspace\n"
    "workspace = Workspace(arg_list=sys.argv[1:])\n"
    "workspace.finish()\n"
)
# the child's address space, capped before VW starts: a weight table too big fails to allocate
MEMORY_CAP = (
    "import resource\n"
    "_, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
    "cap = {memory} if hard == resource.RLIM_INFINITY else min({memory}, hard)\n"
    "resource.setrlimit(resource.RLIMIT_AS, (cap, hard))\n"
)


def vw_available(python: str = sys.executable) -> bool:
    return subprocess.run([python, "-c", "import vowpalwabbit"], capture_output=True).returncode == 0


def vw_command(args: list[str], memory: int | None = None) -> list[str]:
    """The argv that runs VW with ``args`` (VW's own command-line options), in at most
    ``memory`` bytes of address space when given."""
    cap = MEMORY_CAP.format(memory=int(memory)) if memory else ""
    return [sys.executable, "-c", cap + VW_RUNNER, *args]


def peer_memory() -> int:
    """The address space a config's peer may take: half the machine's memory, so that
    ``-b 32`` or ``--oaa 2000000000`` fails in VW instead of exhausting a shared machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


class PeerArgsError(ValueError):
    """A [[peer]] argument VW may not be given; the message names the token."""


# The options a config's [[peer]] may give VW: losses, learning rates, regularization, feature
# hashing and interactions, and the reductions that apply to simple and multiclass labels.
PEER_FLAGS = frozenset("""
active adaptive adax batch_sz_no_doubling binary coin dont_output_best_constant dropout freegrad
ftrl holdout_off inpass invariant leave_duplicate_interactions lrqdropout meanfield multitask
no_bias_regularization noconstant node_only normal_weights normalized permutations pistol
probabilities project quiet random_weights randomized_routing restart scores sgd simulation
sort_features sparse_weights stage_poly strict_parse truncated_normal_weights
""".split())
PEER_VALUES = frozenset("""
affix alg autolink batch_sz bern_hyper bit_precision boosting bootstrap bs_type classweight
constant csoaa cubic decay_learning_rate early_terminate ect error expectile_q feature_limit
fepsilon flipschitz_const ftrl_alpha ftrl_beta gamma hash hash_seed holdout_after
holdout_period ignore ignore_linear indexing initial_t initial_weight interactions keep l1
l1_state l2 l2_state learning_rate link log_multi logistic_max logistic_min loss_function lrq
lrqfa max_candidates max_depth max_prediction mellowness min_prediction named_labels ngram nn
oaa oaa_subsample power_t quadratic quantile_tau radius random_seed recall_tree redefine
sched_exponent skips sparse_l2 spelling swap_resistance
""".split())
# VW's one-letter options; a peer may use those whose long name is on the list
VW_SHORT = {"a": "audit", "b": "bit_precision", "c": "cache", "d": "data",
            "f": "final_regressor", "h": "help", "i": "initial_regressor", "k": "kill_cache",
            "l": "learning_rate", "p": "predictions", "P": "progress", "q": "quadratic",
            "r": "raw_predictions", "t": "testonly", "C": "constant"}

_CONNECTS = "VW connects to the host it names (a config may not reach the network)"
_CLUSTER = ("it joins a cluster: VW connects to a spanning-tree server (a config may not reach "
            "the network)")
_LISTENS = "VW listens on a port as a daemon (a config may not reach the network)"
_READS = "it names a file VW reads (the experiment gives VW its data)"
_WRITES = "it names a file VW writes (the experiment names every file in its work directory)"
_BESIDE = "VW writes a file beside the data or the model (the experiment names every file)"
_FORMAT = "it changes how VW reads the data file the experiment writes"
# Options refused with their reason; anything else off the list is refused as off the list.
PEER_REFUSED = {
    "sendto": _CONNECTS, "span_server": _CLUSTER, "span_server_port": _CLUSTER,
    "unique_id": _CLUSTER, "total": _CLUSTER, "node": _CLUSTER,
    "daemon": _LISTENS, "port": _LISTENS, "num_children": _LISTENS, "foreground": _LISTENS,
    "port_file": _WRITES, "pid_file": _WRITES,
    "active": "without --simulation, VW listens on a port for labels as a daemon",
    "data": _READS, "initial_regressor": _READS, "cache_file": _READS, "dictionary": _READS,
    "dictionary_path": _READS, "feature_mask": _READS, "input_feature_regularizer": _READS,
    "final_regressor": _WRITES, "predictions": _WRITES, "raw_predictions": _WRITES,
    "readable_model": _WRITES, "invert_hash": _WRITES, "audit_regressor": _WRITES,
    "output_feature_regularizer_binary": _WRITES, "output_feature_regularizer_text": _WRITES,
    "dump_json_weights_experimental": _WRITES, "extra_metrics": _WRITES,
    "cache": _BESIDE, "kill_cache": _BESIDE, "save_per_pass": _BESIDE,
    "log_output": "it chooses where VW writes its log (the experiment reads VW's streams)",
    "driver_output": "it chooses where VW writes its progress (the experiment reads VW's "
                     "streams)",
    "json": _FORMAT, "dsjson": _FORMAT, "flatbuffer": _FORMAT, "csv": _FORMAT,
}
OFF_THE_LIST = "is not on the list of options a [[peer]] may use (docs/security.md lists them)"


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _refuse(name: str | None, shown: str) -> None:
    """Refuse an option that is not on the list: by its reason when it has one."""
    if name in PEER_REFUSED:
        raise PeerArgsError(f"VW's {shown} may not be given in a config: {PEER_REFUSED[name]}")
    hint = ""
    if shown.startswith("--") and name not in VW_OPTIONS \
            and any(option.startswith(name) for option in VW_OPTIONS):
        hint = "; write options in full"
    raise PeerArgsError(f"{shown} {OFF_THE_LIST}{hint}")


def check_peer_args(argv: Sequence[str]) -> None:
    """Raise :class:`PeerArgsError` at the first token of ``argv`` that VW may not be given.

    Each option must be spelt exactly as on the list (``--name``, ``--name=value``, or one of
    ``-b -l -q -C`` with its value apart or attached): an abbreviation VW might complete, another
    spelling, a cluster of short flags, a value that looks like an option and a token that is no
    option (VW reads it as a data file) are refused.
    """
    given = set()
    position = 0
    while position < len(argv):
        token = argv[position]
        position += 1
        if token == "--":
            raise PeerArgsError(f"'--' {OFF_THE_LIST} (VW reads what follows as data files)")
        if token.startswith("--"):
            name, equals, inline = token[2:].partition("=")
            shown, value = f"--{name}", inline if equals else None
            allowed = name in PEER_FLAGS or name in PEER_VALUES
        elif token.startswith("-") and len(token) > 1 and not _is_number(token):
            # VW reads the rest of a short token as its value, or as more flags
            name, shown, value = VW_SHORT.get(token[1]), f"-{token[1]}", token[2:] or None
            allowed = name in PEER_VALUES
        else:
            raise PeerArgsError(f"{token!r} is not an option: VW would read it as a data file "
                                "(the experiment gives VW its data)")
        if not allowed:
            _refuse(name, shown)
        if name in PEER_FLAGS:
            if value is not None:
                raise PeerArgsError(f"{shown} takes no value (got {value!r})")
        else:
            if value is None:
                if position == len(argv):
                    raise PeerArgsError(f"{shown} needs a value")
                value = argv[position]
                position += 1
            if value.startswith("-") and not _is_number(value):
                raise PeerArgsError(f"{shown}: its value {value!r} looks like an option")
        given.add(name)
    if "active" in given and "simulation" not in given:
        _refuse("active", "--active")
