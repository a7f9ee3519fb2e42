"""The one option table: it drives the VW-style command line, ``Workspace("...")`` strings and
keyword parameters, so the three never drift apart.

Parsing follows VW's conventions: ``--name value``, ``--name=value``, ``-b18``, ``-b 18``,
combined short flags (``-ctk``), repeatable options (``-q ab -q cd``), a positional data file,
and negative numbers as values (``--initial_t -1``).  An unknown option, a repeated scalar option
or a value of the wrong type is an :class:`OptionError` naming it.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

FLAG, INT, FLOAT, STR, LIST = "flag", "int", "float", "str", "list"
DYAD_SEED = 0x5EED  # SPEC §B.8's default dyad_seed
# -b's default under --dyad: 2^22 weight rows, 16.8 MB per float32 column (4 + --rank columns
# and a byte per row: 205 MB at rank 8).  Users and items that share a row share their bias and latent vector; at
# VW's -b 18 Ciao's 112,000 users and items put about 10,000 on shared rows, and held-out MSE on
# folds of its training half fell by 0.008-0.010 at -b 20 and 0.003 more at -b 22
# (docs/dyadic-evidence.md).  A model keeps its -b: older ones load at the 18 they were made with.
DYAD_BITS = 22


class OptionError(ValueError):
    """A command-line or Workspace option that cannot be used; the message names it."""


@dataclass(frozen=True)
class Option:
    name: str
    kind: str
    default: Any
    help: str
    group: str
    short: str | None = None
    choices: tuple[str, ...] | None = None
    keep: bool = False  # stored in the model file (when given) and re-applied by -i
    # it decides where the weights live (table size, hashing, classes, latent columns): a model
    # keeps its value even when it was the default, and -i refuses another one
    layout: bool = False
    # VW's learning-rate options: stored in the model when given, and re-applied by -i unless
    # the command line gives its own (one of the update flags replaces all four)
    resume: bool = False
    metavar: str = ""


OPTIONS: tuple[Option, ...] = (
    # input and output
    Option("data", STR, None, "example file (VW text or gzip; '-' for stdin); also positional",
           "Input and output", short="d", metavar="FILE"),
    Option("final_regressor", STR, None, "write the final model to FILE (atomically)",
           "Input and output", short="f", metavar="FILE"),
    Option("initial_regressor", STR, None, "load an initial model from FILE and keep learning",
           "Input and output", short="i", metavar="FILE"),
    Option("testonly", FLAG, False, "ignore labels: predict only, never learn", "Input and output",
           short="t"),
    Option("predictions", STR, None, "write predictions (and tags) to FILE",
           "Input and output", short="p", metavar="FILE"),
    Option("raw_predictions", STR, None, "write raw (unclipped) scores to FILE",
           "Input and output", short="r", metavar="FILE"),
    Option("cache", FLAG, False, "use a binary cache, <data>.pvwcache by default (with "
           "--executor: one per shard, <cache>.shardKofN, streamed)", "Input and output",
           short="c"),
    Option("cache_file", STR, None, "binary cache file to create or read (with --executor: "
           "FILE.shardKofN, one per shard)", "Input and output", metavar="FILE"),
    Option("kill_cache", FLAG, False, "rebuild the cache even if it exists", "Input and output",
           short="k"),
    Option("passes", INT, 1, "number of passes over the data (needs a cache)", "Input and output",
           metavar="N"),
    Option("no_stdin", FLAG, False, "with no data file, read nothing (not standard input)",
           "Input and output"),
    Option("examples", INT, None, "learn from the first N examples of each pass only",
           "Input and output", metavar="N"),
    Option("readable_model", STR, None, "write the model as text (index:weight)",
           "Input and output", metavar="FILE"),
    Option("invert_hash", STR, None, "write the model as text with feature names",
           "Input and output", metavar="FILE"),
    Option("predict_only_model", FLAG, False, "save weights only, without the state to resume",
           "Input and output"),
    Option("save_resume", FLAG, False, "deprecated (models always resume); accepted for VW scripts",
           "Input and output"),
    # VW flags that only change VW's internals: accepted with a note, so VW scripts run as they are
    Option("onethread", FLAG, False, "accepted for VW scripts (parsing overlaps learning on a "
           "second thread here)", "Input and output"),
    Option("preserve_performance_counters", FLAG, False, "accepted for VW scripts (no effect: "
           "each pass's counters are reported)", "Input and output"),
    Option("sort_features", FLAG, False, "accepted for VW scripts (no effect: the cache keeps "
           "the features as read)", "Input and output"),
    Option("save_per_pass", FLAG, False, "with -f FILE: also save the model after each pass, as "
           "FILE.1, FILE.2, ...", "Input and output"),
    Option("audit", FLAG, False, "print every feature of every example with index and weight",
           "Input and output", short="a"),
    Option("quiet", FLAG, False, "print nothing but errors", "Input and output"),
    Option("progress", STR, None, "progress rows: integer = every N, float = multiplicative",
           "Input and output", short="P", metavar="N"),
    Option("strict_parse", FLAG, False, "a malformed example is fatal (exit 1) instead of skipped",
           "Input and output"),
    # holdout and passes
    Option("holdout_off", FLAG, False, "no holdout data in multiple passes", "Holdout"),
    Option("holdout_period", INT, 10, "holdout every N-th example of each pass", "Holdout",
           metavar="N"),
    Option("holdout_after", INT, 0, "holdout the examples after the N-th of each pass", "Holdout",
           metavar="N"),
    Option("early_terminate", INT, 3, "stop after N passes without holdout improvement",
           "Holdout", metavar="N"),
    # feature space
    Option("bit_precision", INT, 18, "number of hash bits (weight table 2^b)", "Feature space",
           short="b", keep=True, layout=True, metavar="B"),
    Option("hash", STR, "strings", "how to hash feature names", "Feature space",
           choices=("strings", "all"), keep=True, layout=True),
    Option("hash_seed", INT, 0, "seed of the feature hash", "Feature space", keep=True, layout=True,
           metavar="N"),
    Option("noconstant", FLAG, False, "no constant (bias) feature", "Feature space", keep=True),
    Option("constant", FLOAT, 0.0, "initial weight of the constant feature", "Feature space",
           short="C", metavar="W"),
    Option("ignore", LIST, (), "ignore namespaces starting with this letter (repeatable)",
           "Feature space", keep=True, metavar="L"),
    Option("ignore_linear", LIST, (), "like --ignore, but interactions keep the namespace",
           "Feature space", keep=True, metavar="L"),
    Option("keep", LIST, (), "keep only namespaces starting with these letters (repeatable)",
           "Feature space", keep=True, metavar="L"),
    Option("quadratic", LIST, (), "pair namespaces, e.g. ab, a: or :: (repeatable)",
           "Feature space", short="q", keep=True, metavar="AB"),
    Option("cubic", LIST, (), "triple namespaces, e.g. abc (repeatable)", "Feature space",
           keep=True, metavar="ABC"),
    Option("interactions", LIST, (), "interactions of 2 or 3 namespaces (repeatable)",
           "Feature space", keep=True, metavar="AB[C]"),
    Option("leave_duplicate_interactions", FLAG, False, "keep -q ab -q ba both", "Feature space",
           keep=True),
    # learning
    Option("loss_function", STR, "squared", "loss function", "Learning",
           choices=("squared", "logistic", "hinge", "quantile"), keep=True),
    Option("quantile_tau", FLOAT, 0.5, "the quantile loss's τ: the prediction aims at the "
           "τ-quantile of the label (0.5: the median)", "Learning", keep=True, metavar="TAU"),
    Option("logistic_min", FLOAT, -1.0, "logistic label read as class -1 (between it and "
           "--logistic_max: a soft label)", "Learning", keep=True, metavar="Y"),
    Option("logistic_max", FLOAT, 1.0, "logistic label read as class 1", "Learning", keep=True,
           metavar="Y"),
    Option("learning_rate", FLOAT, 0.5, "learning rate (10 for plain updates unless given)",
           "Learning", short="l", resume=True, metavar="ETA"),
    Option("power_t", FLOAT, 0.5, "learning-rate decay exponent", "Learning", resume=True,
           metavar="P"),
    Option("l1", FLOAT, 0.0, "L1 penalty: truncated-gradient shrinkage of the linear weights, "
           "as VW's --l1", "Learning", metavar="L"),
    Option("l2", FLOAT, 0.0, "L2 penalty: global contraction of the linear weights, as VW's "
           "--l2 (with --dyad: a shrink of each example's linear weights; latent vectors take "
           "--dyad_l2)", "Learning", metavar="L"),
    Option("initial_t", FLOAT, 0.0, "initial time of the learning-rate schedule", "Learning",
           metavar="T0"),
    Option("decay_learning_rate", FLOAT, 1.0, "multiply the learning rate by D after each pass",
           "Learning", metavar="D"),
    Option("sgd", FLAG, False, "plain SGD: no adaptive, normalized or invariant updates",
           "Learning", resume=True),
    Option("adaptive", FLAG, False, "per-feature adaptive (AdaGrad) rates", "Learning",
           resume=True),
    Option("normalized", FLAG, False, "per-feature normalized updates", "Learning", resume=True),
    Option("invariant", FLAG, False, "importance-invariant (exact) updates", "Learning",
           resume=True),
    Option("min_prediction", FLOAT, None, "smallest prediction to output", "Learning",
           metavar="V"),
    Option("max_prediction", FLOAT, None, "largest prediction to output", "Learning",
           metavar="V"),
    Option("random_seed", INT, 0, "seed of --active's query draws (and of the scikit-learn "
           "estimators' shuffle)", "Learning", metavar="N"),
    Option("binary", FLAG, False, "report the sign of the score and 0/1 loss", "Learning",
           keep=True),
    Option("link", STR, "identity", "link applied to reported predictions", "Learning",
           choices=("identity", "logistic"), keep=True),
    # active learning
    Option("active", FLAG, False, "active learning: learn only the examples worth a label",
           "Active learning"),
    Option("simulation", FLAG, False, "with --active: all labels are known; the sampler decides "
           "which ones it would have bought", "Active learning"),
    Option("no_daemon", FLAG, False, "with --active: read -d, not a socket (VW's flag; pyvw-lite "
           "never listens)", "Active learning"),
    Option("mellowness", FLOAT, 1.0, "with --active: larger queries more", "Active learning",
           metavar="C0"),
    # dyadic learner
    Option("dyad", LIST, (), "pair namespace letters L and R in a low-rank term (repeatable)",
           "Dyadic", keep=True, layout=True, metavar="LR"),
    Option("rank", INT, 1, "rank k of the dyadic terms", "Dyadic", keep=True, layout=True,
           metavar="K"),
    Option("lrq", LIST, (), "VW's low-rank quadratic features: --lrq abK pairs namespaces a "
           "and b at rank K over the linear learner, with VW's predictions (repeatable; "
           "--dyad LR is pyvw-lite's exact-flow learner)", "Dyadic", keep=True, layout=True,
           metavar="ABK"),
    Option("lrqdropout", FLAG, False, "VW's dropout of --lrq's latent features: each learned "
           "example keeps each with probability 1/2, predictions halve them (with --dyad: "
           "binary and regression updates drop latent coordinates alike)", "Dyadic", keep=True),
    Option("dyad_plain", FLAG, False, "the plain form p = a·b (the default; kept for scripts)",
           "Dyadic", keep=True),
    Option("dyad_shifted", FLAG, False, "the shifted form p = (1+a)·(1+b) - k, with its "
           "earlier defaults (rate 1/(2k), noise 0.01, no L2, the --power_t decay)", "Dyadic",
           keep=True, layout=True),
    Option("dyad_plain_rate", FLAG, False, "linear terms of a --dyad model at the plain rate too "
           "(default: VW-style adaptive per-feature rates); latent rate 1", "Dyadic", keep=True),
    Option("dyad_rate", FLOAT, None, "the latent vectors' rate as a fraction of -l (default "
           "0.09 under the per-row ridge of squared loss, else 0.03; shifted form 1/(2k))",
           "Dyadic", keep=True, metavar="R"),
    Option("dyad_decay", FLOAT, None, "multiply the latent rate by D after each pass, the "
           "linear rates untouched (default 0.93 under the per-row ridge of squared loss, else "
           "1: constant; a model keeps the rate it reached)", "Dyadic", keep=True, metavar="D"),
    Option("dyad_power_t", FLOAT, None, "decay exponent of the latent rate (default 0: "
           "constant; shifted form: --power_t)", "Dyadic", keep=True, metavar="P"),
    Option("dyad_noise", FLOAT, None, "size of the symmetry-breaking start of latent vectors "
           "(default 0.1; shifted form 0.01)", "Dyadic", keep=True, metavar="EPS"),
    Option("dyad_l2", FLOAT, None, "L2 penalty on latent vectors: each update shrinks the "
           "example's latent vectors by 1/(1 + rate·importance·L2) after its exact step "
           "(default 0.15, 0.05 with --loss_function quantile, each times (n/60)^-0.6 for n "
           "uses per latent row in the first pass; a given value is used as is; 0 with "
           "--lrqdropout, in the shifted form and where --dyad_row_l2 is on)", "Dyadic",
           keep=True, metavar="L2"),
    Option("dyad_bias_l2", FLOAT, None, "ridge penalty on the linear weights of the --dyad "
           "namespaces' features (user and item biases), ALS's lambda per row: each update of a "
           "feature used n times shrinks its weight by 1/(1 + 2·rate·importance·L/n), n counted "
           "in the first pass (default 3 under squared loss without --oaa/--sft/--lrqdropout, "
           "else 0)", "Dyadic", keep=True, metavar="L"),
    Option("dyad_row_l2", FLOAT, None, "ridge penalty on latent vectors per row, ALS's lambda: "
           "each update of a vector used n times shrinks it by 1/(1 + 2·rate·importance·L/n), "
           "n counted in the first pass (default 8 under squared loss without --oaa/--sft/"
           "--lrqdropout, where it replaces --dyad_l2's default; else 0)",
           "Dyadic", keep=True, metavar="L"),
    Option("dyad_seed", INT, DYAD_SEED, "seed of the symmetry-breaking perturbation (a "
           "model keeps it)", "Dyadic", keep=True, metavar="N"),
    Option("ode_rtol", FLOAT, 1e-7, "relative tolerance of the dyadic logistic/squared ODE",
           "Dyadic", metavar="TOL"),
    Option("ode_atol", FLOAT, 1e-10, "absolute tolerance of the dyadic logistic/squared ODE",
           "Dyadic", metavar="TOL"),
    Option("ode_solver", STR, "taylor", "solver of the dyadic logistic/squared ODE: Taylor "
           "polynomials (degree up to 16, mostly one step per update) or classical RK4 with "
           "step doubling", "Dyadic", choices=("taylor", "rk4")),
    # multiclass reductions
    Option("oaa", INT, 0, "one-against-all over K classes", "Multiclass", keep=True, layout=True,
           metavar="K"),
    Option("ect", INT, 0, "filter tree over K classes (VW's error-correcting tournament with "
           "--error 0)", "Multiclass", keep=True, layout=True, metavar="K"),
    Option("ft", INT, 0, "alias of --ect", "Multiclass", keep=True, layout=True, metavar="K"),
    Option("error", INT, 0, "errors the tournament corrects (only 0 is supported)", "Multiclass",
           metavar="E"),
    Option("sft", INT, 0, "scoring filter tree over K classes", "Multiclass", keep=True,
           layout=True, metavar="K"),
    Option("scores", FLAG, False, "--oaa/--sft: write every class score (class:score ...)",
           "Multiclass"),
    Option("probabilities", FLAG, False, "--oaa/--sft: write class probabilities and report "
           "multiclass log loss (use with --loss_function logistic)", "Multiclass"),
    Option("named_labels", STR, None, "class names, comma separated, for labels 1..K",
           "Multiclass", keep=True, metavar="A,B,C"),
    Option("indexing", INT, None, "labels are 0..K-1 (0) or 1..K (1); detected when not given",
           "Multiclass", keep=True, choices=("0", "1"), metavar="0|1"),
    Option("vw_layout", FLAG, False, "--oaa/--ect weights where VW puts them (feature i, class j "
           "at i*W + j): VW's predictions exactly, with VW's 2^b/W feature buckets",
           "Multiclass", keep=True, layout=True),
    # scale-out
    Option("executor", STR, None, "learn on shards, averaging after each pass: serial, "
           "processes:N, dask:ADDRESS or dask-local:N", "Scale-out", metavar="EXECUTOR"),
    Option("shards", INT, 0, "number of shards (0: one per worker)", "Scale-out", metavar="N"),
    Option("averaging", STR, "adaptive", "how shard models combine after a pass (adaptive "
           "weights each update by its squared gradients)", "Scale-out",
           choices=("adaptive", "mean")),
    Option("timings", FLAG, False, "with --executor: where each pass's time goes (shard "
           "start, parsing, learning, shipping, averaging), one line per pass on stderr",
           "Scale-out"),
)

BY_NAME = {opt.name: opt for opt in OPTIONS}
# the options that name a file or an executor: never read from a model or a config, never
# passed on to a shard's workspace
FILES_AND_EXECUTOR = ("data", "final_regressor", "save_per_pass", "initial_regressor",
                      "predictions", "raw_predictions", "readable_model", "invert_hash", "cache",
                      "cache_file", "executor")
UPDATE_FLAGS = ("sgd", "adaptive", "normalized", "invariant")  # together they pick the update
BY_SHORT = {opt.short: opt for opt in OPTIONS if opt.short}
ALIASES = {"learning-rate": "learning_rate"}

# Every option and loss of VW 9.11.9 that pyvw-lite refuses, grouped by what it belongs to, with
# the reason and what to use instead: a VW user gets the reason, never "unrecognised option".  A
# key "loss_function=poisson" is a value of an option pyvw-lite has.  tests/test_cli.py checks
# that every name of vw_options.VW_OPTIONS is an option here or a key of this table.
_BATCH = "pyvw-lite learns online only (use --passes with -c for more passes)"
_WEIGHTS_START = "weights start at 0 (the constant's at -C W)"
_DAEMON = "no daemon mode; serve predictions from Python (pyvw_lite.Workspace)"
_REFUSED = (
    ("contextual-bandit, exploration and continuous-action reductions are not part of "
     "pyvw-lite: it learns from a label per example, not from the cost or reward of one chosen "
     "action (its multiclass reductions are --oaa, --ect and --sft)", """
     cb cb_adf cb_explore cb_explore_adf cbify cbify_cs cbify_reg cbify_ldf cb_type eval
     cb_force_legacy cb_to_cbadf rank_all clip_p cb_sample cb_dro cb_dro_alpha cb_dro_tau
     cb_dro_wmax cb_min_cost cb_max_cost first first_only epsilon bag greedify regcb regcbopt
     squarecb gamma_scale gamma_exponent elim rnd rnd_alpha rnd_invlambda softmax lambda
     synthcover synthcoverpsi synthcoversize cover psi nounif ccb_explore_adf all_slots_loss
     no_predict ccb_no_slot_index slates cats cats_pdf cats_tree tree_bandwidth cb_discrete
     min_value max_value loss_option loss_report loss_01_ratio loss0 loss1 flip_loss_sign cbzo
     policy get_pmf sample_pdf cb_explore_pdf pmf_to_pdf baseline_challenger_cb cb_c_alpha
     cb_c_tau baseline lr_multiplier global_only check_enabled explore_eval multiplier
     target_rate multiworld_test learn exclude_eval epsilon_decay model_count min_scope
     epsilon_decay_significance_level epsilon_decay_audit constant_epsilon bonferroni_denominator
     min_champ_examples initial_epsilon shift_model_bounds reward_as_cost tol_x opt_func
     challenger_epsilon automl default_lease priority_type priority_challengers verbose_metrics
     csv_trace interaction_type oracle_type debug_reversed_learn automl_significance_level
     fixed_significance_level graph_feedback large_action_space max_actions spanner_c
     thread_pool_size block_size las_hint_explicit_simd two_pass_svd action_cache_slack
     experimental_igl warm_cb warm_cb_cs warm_start interaction warm_start_update
     interaction_update corrupt_type_warm_start corrupt_prob_warm_start choices_lambda
     lambda_scheme overwrite_label sim_bandit ot per_model_save_load"""),
    ("cost-sensitive reductions are not part of pyvw-lite: it learns one label per example "
     "(--oaa, --ect or --sft for classes; an importance weight per example for unequal costs)",
     """csoaa csoaa_ldf wap wap_ldf ldf_override csoaa_rank cs_absolute_loss cs_active
     domination range_c max_labels min_labels cost_max cost_min csa_debug"""),
    (_BATCH, "bfgs conjugate_gradient hessian_on mem termination initial_pass_length svrg "
     "stage_size"),
    ("its online learner is VW's default SGD (adaptive, normalized, invariant updates; --sgd, "
     "--l1, --l2); FTRL, PiSTOL, coin betting, FreeGrad, OjaNewton and AdaX are not "
     "implemented", """ftrl ftrl_alpha ftrl_beta pistol coin freegrad restart project radius
     fepsilon flipschitz_const OjaNewton sketch_size epoch_size alpha_inverse learning_rate_cnt
     normalize random_init adax sparse_l2 l1_state l2_state"""),
    ("an option of VW's --OjaNewton, --active_cover and --memory_tree, none of which pyvw-lite "
     "implements", "alpha"),
    ("an option of VW's continuous-action (--cats, --pmf_to_pdf) and kernel-SVM (--ksvm) "
     "reductions, which pyvw-lite does not implement", "bandwidth"),
    ("no multilabel, tree-search or memory-based multiclass reductions: use --oaa, --ect or "
     "--sft", """log_multi no_progress swap_resistance recall_tree max_candidates bern_hyper
     max_depth node_only randomized_routing plt kary_tree threshold top_k
     plt_force_load_legacy_model multilabel_oaa memory_tree max_number_of_labels
     leaf_example_multiplier dream_repeats top_K learn_at_leaf oas dream_at_update online emt
     emt_tree emt_leaf emt_scorer emt_initial emt_router top"""),
    ("--oaa updates every class on every example; negatives are not subsampled",
     "oaa_subsample"),
    ("no per-class weights: give each example an importance weight in the data (`label weight "
     "|...`)", "classweight"),
    ("no neural-network reduction; --dyad adds a low-rank interaction model",
     "nn inpass multitask dropout meanfield"),
    ("use --dyad LR --rank K, the low-rank learner with exact importance-aware updates",
     "lrqfa new_mf"),
    ("no kernel SVM: its learners are linear (with -q, --cubic or --interactions) and low-rank "
     "(--dyad)", "ksvm reprocess pool_greedy para_active pool_size subsample kernel degree"),
    ("no topic model (LDA): pyvw-lite learns supervised models from labelled examples",
     "lda lda_alpha lda_rho lda_D lda_epsilon minibatch metrics math_mode"),
    ("no online boosting: pyvw-lite learns one linear or low-rank model (one per class under "
     "--oaa or --sft)", "boosting gamma alg"),
    ("no bootstrap ensemble: pyvw-lite learns one model (for a spread, learn several on "
     "resamples of the data)", "bootstrap bs_type"),
    ("no stagewise polynomial feature search: name the interactions with -q, --cubic or "
     "--interactions", "stage_poly sched_exponent batch_sz batch_sz_no_doubling"),
    ("no polynomial link of the prediction: add the features or interactions it would stand "
     "for", "autolink"),
    ("no marginal (running-average) features: put such averages in the data as features",
     "marginal initial_denominator initial_numerator compete update_before_learn "
     "unweighted_marginals decay"),
    ("no confidence reduction; --link logistic (binary) and --probabilities (--oaa, --sft) "
     "report probabilities", "confidence confidence_after_training"),
    ("its active learning is VW's --active (simulated with --simulation, or label requests "
     "written to -p); --active_cover and the tag interface are not implemented",
     "active_cover beta_scale oracular direct"),
    ("no learning to search (structured prediction): pyvw-lite makes one prediction per "
     "example", """search search_task search_metatask search_interpolation search_rollout
     search_rollin search_passes_per_policy search_beta search_alpha search_total_nb_policies
     search_trained_nb_policies search_allowed_transitions search_subsample_time
     search_neighbor_features search_rollout_num_steps search_history_length search_no_caching
     search_xv search_perturb_oracle search_linear_ordering search_active_verify
     search_save_every_k_runs"""),
    ("experience replay is not implemented: --passes (with -c) learns the examples again",
     "replay_b replay_b_count replay_c replay_c_count replay_m replay_m_count"),
    ("namespaces keep the names the data gives them: rename them in the data", "redefine"),
    ("features are read as the data writes them: no generated n-grams, skips, affixes, "
     "spellings or dictionary features (write them into the data)",
     "ngram skips affix spelling dictionary dictionary_path"),
    ("every feature of the data is learned: no per-namespace limit or feature mask (--ignore "
     "drops a namespace)", "feature_limit feature_mask"),
    ("interactions follow VW's defaults (combinations within a namespace, namespaces named by "
     "their first character); this switch is not implemented",
     "permutations experimental_full_name_interactions interact"),
    ("--l1/--l2 treat the constant as VW's default does; this switch is not implemented",
     "no_bias_regularization"),
    ("its losses are squared, logistic, hinge and quantile", "expectile_q"),
    (_WEIGHTS_START, "initial_weight random_weights normal_weights truncated_normal_weights"),
    ("its weight table is dense (2^b rows); lower -b to save memory", "sparse_weights"),
    ("no feature regularizer files: --l1 and --l2 regularize towards 0",
     "input_feature_regularizer output_feature_regularizer_binary "
     "output_feature_regularizer_text"),
    (_DAEMON, "daemon port foreground num_children pid_file port_file"),
    ("no AllReduce cluster: learn on shards with --executor (averaged after each pass)",
     "span_server span_server_port unique_id total node sendto"),
    ("it reads VW's text format (gzip data is detected by its bytes; caches are pyvw-lite's "
     "own, -c): no JSON, DSJSON, flatbuffer or CSV input",
     """json dsjson chain_hash ignore_features_dsjson_experimental flatbuffer csv csv_separator
     csv_no_file_header csv_header csv_ns_value compressed"""),
    ("examples are parsed in batches for the compiled kernels, not through VW's example queue",
     "ring_size example_queue_limit"),
    ("progress and the summary go to stderr as VW's default shows them (--quiet silences "
     "them); VW's log redirection is not implemented",
     "driver_output_off driver_output log_level log_output limit_output"),
    ("models are written with -f in pyvw-lite's format and as text with --readable_model or "
     "--invert_hash; no JSON or hexfloat dumps, no model id",
     """hexfloat_weights dump_json_weights_experimental
     dump_json_weights_include_feature_names_experimental
     dump_json_weights_include_extra_online_state_experimental id"""),
    ("--audit prints each example's features and weights; --audit_regressor, --print and "
     "--extra_metrics are not implemented", "audit_regressor print extra_metrics"),
    ("the summary always reports the best constant", "dont_output_best_constant"),
    ("no dry run: the options are checked before any data is read", "dry_run"),
    ("-t predicts without learning; the noop learner is not implemented", "noop"),
    ("pyvw-lite --help lists its options, pyvw-lite --version its version", "help version"),
    # values of an option pyvw-lite has
    ("VW's classic loss is squared loss with the plain, not importance-invariant, step: "
     "--loss_function squared --adaptive --normalized gives its predictions",
     "loss_function=classic"),
    ("no expectile loss; --loss_function quantile --quantile_tau T fits a quantile",
     "loss_function=expectile"),
    ("no Poisson (log-link) regression: its losses are squared, logistic, hinge and quantile",
     "loss_function=poisson"),
    ("no generalized logistic or exponential link: --link logistic reports 1/(1+e^-score)",
     "link=glf1 link=poisson"),
)
NOT_IMPLEMENTED = {name: reason for reason, names in _REFUSED for name in names.split()}


def _unknown_option(name: str, prefix: str = "--") -> OptionError:
    """The error for an unknown option (``prefix`` "" for a keyword): why, when VW has it, or
    the nearest option's name."""
    from .vw_options import VW_OPTIONS
    key = name.replace("-", "_")
    if key in NOT_IMPLEMENTED or key in VW_OPTIONS:
        return OptionError(f"VW's option '{prefix}{name}' is not implemented by pyvw-lite: "
                           f"{NOT_IMPLEMENTED.get(key, 'see pyvw-lite --help for its options')}")
    import difflib
    near = difflib.get_close_matches(key, list(BY_NAME), n=1, cutoff=0.75)
    hint = f" (did you mean '{prefix}{near[0]}'?)" if near else ""
    return OptionError(f"unrecognised option '{prefix}{name}'{hint}")


class Options:
    """Parsed option values (attribute access) plus the set of names the user gave."""

    def __init__(self, values: dict[str, Any], given: set[str]):
        self._values = values
        self.given = given

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getstate__(self):
        return {"values": self._values, "given": self.given}

    def __setstate__(self, state):
        object.__setattr__(self, "_values", state["values"])
        object.__setattr__(self, "given", state["given"])

    def __setattr__(self, name, value):
        if name in ("_values", "given"):
            object.__setattr__(self, name, value)
        else:
            self._values[name] = value

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def kept_values(self) -> dict[str, Any]:
        """The layout options with their values, given or default: a model keeps them all, as a
        default -b 18 or --rank 1 must not be changed under it on loading."""
        return {opt.name: list(self._values[opt.name]) if opt.kind == LIST
                else self._values[opt.name] for opt in OPTIONS if opt.layout}

    def kept_argv(self, resume: bool = True) -> list[str]:
        """The options that define a model, and with ``resume`` (a model that can go on
        learning, as in VW) the learning-rate options given, as argv (stored in model files)."""
        argv: list[str] = []
        for opt in OPTIONS:
            if not (opt.keep or opt.resume and resume) or opt.name not in self.given:
                continue
            value = self._values[opt.name]
            if opt.kind == FLAG:
                if value:
                    argv.append(f"--{opt.name}")
            elif opt.kind == LIST:
                for item in value:
                    argv += [f"--{opt.name}", str(item)]
            elif isinstance(value, float) and value.is_integer():
                argv += [f"--{opt.name}", str(int(value))]  # "0" as VW writes it, not "0.0"
            else:
                argv += [f"--{opt.name}", str(value)]
        return argv


UNBOUNDED = ("min_prediction", "max_prediction")


def convert(opt: Option, text: str) -> Any:
    """The value of option ``opt`` given as ``text`` (an OptionError names the option)."""
    if opt.choices and text not in opt.choices:
        if f"{opt.name}={text}" in NOT_IMPLEMENTED:
            raise OptionError(f"option '--{opt.name}': VW's {text!r} is not implemented by "
                              f"pyvw-lite: {NOT_IMPLEMENTED[f'{opt.name}={text}']}")
        raise OptionError(f"option '--{opt.name}': {text!r} is not one of "
                          f"{', '.join(opt.choices)}")
    try:
        if opt.kind == INT:
            return int(text)
        if opt.kind == FLOAT:
            value = float(text)
        else:
            return text
    except ValueError:
        raise OptionError(f"option '--{opt.name}': {text!r} is not a valid "
                          f"{'integer' if opt.kind == INT else 'number'}") from None
    # a NaN or infinite rate, time or size turns every weight into NaN without a word (VW
    # runs on); only the prediction bounds may be infinite
    if math.isnan(value) or (math.isinf(value) and opt.name not in UNBOUNDED):
        raise OptionError(f"option '--{opt.name}': {text!r} must be a finite number")
    return value


def _lookup_long(name: str) -> Option:
    key = ALIASES.get(name, name)
    if key not in BY_NAME:
        key = key.replace("-", "_")
    if key not in BY_NAME:
        raise _unknown_option(name)
    return BY_NAME[key]


def parse_argv(argv: Sequence[str], defaults: dict[str, Any] | None = None) -> Options:
    """Parse VW-style argv into :class:`Options`."""
    values = {opt.name: (list(opt.default) if opt.kind == LIST else opt.default) for opt in OPTIONS}
    if defaults:
        values.update(defaults)
    given: set[str] = set()
    positional: list[str] = []

    def assign(opt: Option, text: str | None, shown: str) -> None:
        if opt.kind == FLAG:
            if text is not None:
                raise OptionError(f"option '{shown}' takes no value (got {text!r})")
            values[opt.name] = True
        elif opt.kind == LIST:
            values[opt.name].append(convert(opt, text))
        else:
            if opt.name in given:
                raise OptionError(f"option '{shown}' cannot be specified more than once")
            values[opt.name] = convert(opt, text)
        given.add(opt.name)

    i = 0
    args = list(argv)
    while i < len(args):
        token = args[i]
        i += 1
        if token.startswith("--") and len(token) > 2:
            name, eq, inline = token[2:].partition("=")
            opt = _lookup_long(name)
            if opt.kind == FLAG:
                assign(opt, inline if eq else None, f"--{name}")
                continue
            if eq:
                assign(opt, inline, f"--{name}")
            else:
                if i >= len(args):
                    raise OptionError(f"option '--{name}' needs a value")
                assign(opt, args[i], f"--{name}")
                i += 1
        elif token.startswith("-") and len(token) > 1 and not _is_number(token):
            letters = token[1:]
            for k, letter in enumerate(letters):
                opt = BY_SHORT.get(letter)
                if opt is None:
                    raise OptionError(f"unrecognised option '-{letter}'"
                                      + (f" (in '{token}')" if len(letters) > 1 else ""))
                if opt.kind == FLAG:
                    assign(opt, None, f"-{letter}")
                    continue
                rest = letters[k + 1:]
                if rest:
                    assign(opt, rest[1:] if rest.startswith("=") else rest, f"-{letter}")
                else:
                    if i >= len(args):
                        raise OptionError(f"option '-{letter}' needs a value")
                    assign(opt, args[i], f"-{letter}")
                    i += 1
                break
        else:
            positional.append(token)
    if positional:
        if len(positional) > 1 or "data" in given:
            raise OptionError("only one data file may be given (got "
                              + ", ".join(repr(p) for p in ([values['data']] if 'data' in given else [])
                                          + positional) + ")")
        values["data"] = positional[0]
        given.add("data")
    if values["dyad"] and "bit_precision" not in given:
        values["bit_precision"] = DYAD_BITS
    return Options(values, given)


def _is_number(token: str) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def options_from(args: str | Sequence[str] | None = None, **keywords: Any) -> Options:
    """Options from a VW string (``"--oaa 5 -b 20"``), an argv list, and/or keyword values."""
    if isinstance(args, Options) and not keywords:
        return Options(dict(args.as_dict()), set(args.given))
    if args is None:
        argv: list[str] = []
    elif isinstance(args, str):
        argv = shlex.split(args)
    else:
        argv = list(args)
    for name, value in keywords.items():
        opt = BY_NAME.get(name)
        if opt is None:
            raise _unknown_option(name, prefix="")
        if value is None or (opt.kind == FLAG and not value):
            continue
        if opt.kind == FLAG:
            argv.append(f"--{name}")
        elif opt.kind == LIST:
            for item in ([value] if isinstance(value, str) else value):
                argv += [f"--{name}", str(item)]
        else:
            argv += [f"--{name}", str(value)]
    return parse_argv(argv)


def help_rows(groups: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
    """(group, flag text, help) rows for ``--help``, straight from the table."""
    rows = []
    for opt in OPTIONS:
        if groups is not None and opt.group not in groups:
            continue
        flag = (f"-{opt.short}, " if opt.short else "    ") + f"--{opt.name}"
        if opt.kind != FLAG:
            flag += " " + (opt.metavar or ("|".join(opt.choices) if opt.choices else "VALUE"))
        text = opt.help
        if opt.choices and opt.metavar:  # without a metavar the flag column shows them
            text += f" ({'|'.join(opt.choices)})"
        if opt.kind not in (FLAG, LIST) and opt.default is not None:
            text += f" [default: {opt.default}]"
        rows.append((opt.group, flag, text))
    return rows


def shard_options(options: Options) -> Options:
    """The options of a shard's learner: the same learning, no files of its own."""
    values = options.as_dict()
    given = set(options.given) - set(FILES_AND_EXECUTOR)
    for name in FILES_AND_EXECUTOR:
        values[name] = False if name == "cache" else None
    return Options(values, given)
