"""Flags and error handling shared by the programs and a checkout's benchmarks/; nothing here
imports TensorFlow, so bad flags are refused before it starts."""

import argparse
import atexit
import codecs
import contextlib
import dataclasses
import errno
import gc
import importlib
import json
import os
import re
import shutil
import sys

from keras_linformer import programs
from keras_linformer.training.config import ARCHITECTURE_KEYS
from keras_linformer.training.config import DEFAULT_ARCHITECTURE
from keras_linformer.utils import validation
from keras_linformer.utils.names import ATTENTIONS
from keras_linformer.utils.names import PROJECTION_INITIALIZERS
from keras_linformer.utils.names import PROJECTIONS
from keras_linformer.utils.names import SHARINGS
from keras_linformer.utils.validation import Bounds
from keras_linformer.utils.validation import first_line

# TensorFlow's C++ log lines only with the user's own TF_CPP_MIN_LOG_LEVEL, or --debug.
USER_LOG_LEVEL = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Exit handlers run last-registered first, so this runs after the others: Python's exit
# then skips a garbage collection over TensorFlow's objects, seconds of a program's time.
atexit.register(gc.freeze)

COMBINATIONS = """\
Hardware: one device by default (the CPU, or MirroredStrategy over all visible GPUs; XLA on
one GPU); --cpu-replicas N for N logical CPU replicas; --mixed-precision works with every
option; --jit-compile is refused with --cpu-replicas > 1 (XLA fails there in TF 2.21);
TF_CONFIG=... for MultiWorkerMirroredStrategy (`keras-linformer-launch` starts local workers).
--output-dir must be new, empty, or a run of the same program; run the same command again to
resume. See docs/training.md for the outputs, TensorBoard and every combination.
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows defaults other than `None` and `False`; names programs as run (`name_commands`)."""

    def _get_help_string(self, action):
        text = name_commands(action.help or "")
        if "%(default)" not in text and action.default not in (None, False, argparse.SUPPRESS):
            text += " (default: %(default)s)"
        return text


def program_parser(program, doc, epilog=None):
    """The parser of `program` (a `programs.PROGRAMS` one refuses a Keras backend other than
    TensorFlow and has --debug), described by `doc` up to its first example command."""
    is_program = program in programs.PROGRAMS
    parser = argparse.ArgumentParser(
        prog=programs.command(program) if is_program else f"python -m {program}",
        description=name_commands(EXAMPLE_COMMAND.split(doc)[0]),
        epilog=None if epilog is None else name_commands(epilog), formatter_class=HelpFormatter)
    if is_program:
        problem = check_tensorflow_backend()
        if problem:
            parser.exit(2, f"{parser.prog}: error: {problem}\n")
        add_debug_flag(parser)
    return parser


PREFIX = re.escape(programs.SCRIPT_PREFIX)
# A docstring's first example command, after any environment variables it sets.
EXAMPLE_COMMAND = re.compile(rf"\n    (?:[A-Z_]+=\S+ )*(?:python |{PREFIX})")
SCRIPT_NAME = re.compile(rf"(?<![\w-]){PREFIX}({'|'.join(programs.PROGRAMS)})(?![\w-])")


def name_commands(text):
    """`text` with every console script named as this process runs programs (`command`)."""
    return SCRIPT_NAME.sub(lambda match: programs.command(match[1]), text)


def check_tensorflow_backend():
    """A one-line refusal when Keras would run on another backend than TensorFlow, or None;
    decided as Keras decides it, without importing Keras."""
    imported = getattr(getattr(sys.modules.get("keras"), "backend", None), "backend", None)
    if imported is not None:
        backend = imported()
        where = f"Keras, already imported, runs on {backend}"
        fix = "run the program in a new process"
    elif os.environ.get("KERAS_BACKEND"):
        backend = os.environ["KERAS_BACKEND"]
        where = f"KERAS_BACKEND={backend} was set"
        fix = "unset KERAS_BACKEND or set it to tensorflow"
    else:
        base = os.path.expanduser("~")
        home = os.path.join(base if os.access(base, os.W_OK) else "/tmp", ".keras")
        path = os.path.expanduser(os.path.join(os.environ.get("KERAS_HOME", home), "keras.json"))
        try:
            with open(path, encoding="utf-8") as file:
                backend = json.load(file).get("backend") or "tensorflow"
        except (OSError, ValueError, AttributeError):  # Keras ignores an unreadable file too.
            backend = "tensorflow"
        where = f'Keras reads the backend {backend} from {path} ("backend": "{backend}")'
        fix = 'set KERAS_BACKEND=tensorflow, or "backend": "tensorflow" in that file'
    if backend == "tensorflow":
        return None
    return (f"the training and export programs need the TensorFlow backend (tf.distribute, "
            f"tf.data, TensorFlow checkpoints, SavedModel), but {where}: {fix}. "
            "Nothing was run or written. (The layers and models themselves run on every "
            "Keras backend.)")


def nonempty(text):
    """An argparse type: a non-empty path or name."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty (an unset variable?)")
    return text


def given(args, flags):
    """The flags of `flags` (`--name`, into `args.name`) that were given, in order."""
    return [flag for flag in flags if getattr(args, flag[2:].replace("-", "_"), None) is not None]


positive_int = validation.POSITIVE_INT
positive_float = validation.POSITIVE_NUMBER
non_negative_float = validation.NON_NEGATIVE_NUMBER
fraction = validation.DROPOUT_RATE
random_seed = validation.SEED
null_slot_count = Bounds(int, 0, 1024)
tcp_port = Bounds(int, 1, 65535, words="a TCP port from 1 to 65535")
sequence_length = validation.SEQUENCE_LENGTH


def text_encoding(text):
    try:
        return codecs.lookup(text).name
    except LookupError:
        raise argparse.ArgumentTypeError("must be a text encoding Python knows (e.g. utf-8, "
                                         f"latin-1, cp1252), got {text!r}") from None


# The backbone's arguments the model flags set; those with a value from scratch.
ARCHITECTURE_FLAGS = sorted(ARCHITECTURE_KEYS - {"dropout", "max_sequence_length", "num_segments"})
FROM_SCRATCH = {name: DEFAULT_ARCHITECTURE[name] for name in ARCHITECTURE_FLAGS
                if name in DEFAULT_ARCHITECTURE}


def add_model_flags(parser, checkpoint_flag="--pretrained"):
    """The LinformerBackbone's flags, left None: their help names the defaults from scratch
    and `checkpoint_flag`, whose checkpoint sets them otherwise."""
    group = parser.add_argument_group("model")

    def add(flag, text, **options):
        name = flag[2:].replace("-", "_")
        if name in FROM_SCRATCH:
            text += (f" Default: {FROM_SCRATCH[name]} from scratch; with {checkpoint_flag}, "
                     "the checkpoint's (another value is refused).")
        group.add_argument(flag, default=None, help=text, **options)

    add("--attention", "Linformer attention, or the full-attention Transformer baseline (same "
        "model otherwise).", choices=ATTENTIONS)
    add("--projection", "How keys and values are projected from n to k positions (learned E, F, "
        "pooling, a strided convolution or a fixed Gaussian E; docs/layers.md).",
        choices=PROJECTIONS)
    add("--projection-initializer", "How a learned linear E starts (--projection linear; "
        "docs/layers.md). Default: the layer's default.", choices=PROJECTION_INITIALIZERS)
    add("--padding-compensation", "With --projection linear: scale the projected values by "
        "n / (real tokens) on padded texts. Default: on from scratch, off with --from-bert.",
        action=argparse.BooleanOptionalAction)
    add("--null-slots", "Zero key/value slots every attention layer can attend to as a no-op "
        "(no weights). Default: the layer's, 0.", type=null_slot_count, metavar="S")
    add("--projected-dim", "k, the projected length of keys and values (mean/max/conv need "
        "n %% k == 0).", type=positive_int, metavar="K")
    add("--sharing", "Which projections share weights: none, across heads, keys with values "
        "per layer, or one for all layers.", choices=SHARINGS)
    add("--num-layers", "Encoder blocks.", type=positive_int)
    add("--num-heads", "Attention heads per block.", type=positive_int)
    add("--hidden-dim", "Hidden size.", type=positive_int)
    add("--intermediate-dim", "Feedforward hidden size.", type=positive_int)
    group.add_argument("--dropout", type=fraction, default=DEFAULT_ARCHITECTURE["dropout"],
                       help="Dropout rate everywhere in the model.")


LINFORMER_ONLY_FLAGS = ("--projection", "--projection-initializer", "--padding-compensation",
                        "--null-slots", "--projected-dim", "--sharing")


def check_attention_flags(parser, args):
    """Refuses the Linformer's flags with --attention transformer."""
    linformer_only = given(args, LINFORMER_ONLY_FLAGS)
    if args.attention == "transformer" and linformer_only:
        parser.error(f"argument {linformer_only[0]}: not allowed with --attention "
                     "transformer, whose full attention projects nothing")


def check_projection_flags(args):
    """Refuses --padding-compensation and --attention-transfer with a projection they do
    nothing for, by the projection's own facts (so once Keras has started)."""
    from keras_linformer.layers import projections

    projection = args.projection or DEFAULT_ARCHITECTURE["projection"]
    if args.padding_compensation is not None and args.projection is not None and not (
            projections.get(projection).sums_positions):
        kinds = " or ".join(projections.names(where="sums_positions"))
        raise ValueError(f"argument --padding-compensation: only used with --projection {kinds} "
                         f"(a projection that sums positions), not {projection}")
    if args.attention_transfer_epochs and not projections.get(projection).trainable:
        kinds = " or ".join(projections.names(where="trainable"))
        raise ValueError(f"argument --attention-transfer: --projection {projection} has no "
                         f"weights to train; use --projection {kinds}")


def check_training_flags(parser, args, config_class, data_flags):
    """Checks pretrain's and finetune's flags against each other and the starting point.

    Each of `data_flags` (`{flag: (dest, default, sources)}`, declared with `default=None`)
    left out gets its default; given without any of its sources, it is refused. A seed left
    out becomes the config's, which splits the data."""
    if args.seed is None:
        args.seed = config_class.seed
    check_attention_flags(parser, args)
    for flag, (dest, default, sources) in data_flags.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
        elif not given(args, sources):
            parser.error(f"argument {flag}: only used with {' or '.join(sources)}")
    starting_point = ("--pretrained" if getattr(args, "pretrained", None)
                      else "--from-bert" if args.from_bert else None)
    refused = given(args, ("--vocabulary-size", "--vocabulary-characters"))
    if refused and starting_point is not None:
        parser.error(f"argument {refused[0]}: not allowed with {starting_point}, whose "
                     "vocabulary the run uses")
    fixed = given(args, ("--num-layers", "--num-heads", "--hidden-dim", "--intermediate-dim"))
    if args.from_bert and fixed:
        parser.error(f"argument {fixed[0]}: not allowed with --from-bert, whose "
                     "checkpoint sets the architecture")
    if args.from_bert and args.attention != "transformer" and args.projected_dim is None:
        parser.error("argument --projected-dim: required with --from-bert (k, e.g. 128), "
                     "unless --attention transformer keeps full attention")
    if args.attention_transfer_epochs and not args.from_bert:
        parser.error("argument --attention-transfer: needs --from-bert (the BERT whose "
                     "attention the conversion learns)")


FROM_BERT_HELP = (
    "A pretrained BERT that keras-hub loads (a Hugging Face BERT directory, a keras-hub preset, "
    "or all-minilm-l6-v2 for the bundled all-MiniLM-L6-v2), converted to a Linformer with "
    "--projected-dim K (and --projection, --sharing, --projection-initializer, "
    "--padding-compensation, --null-slots), or kept as the Transformer with --attention "
    "transformer. Texts are read with the BERT's own vocabulary; --sequence-length defaults to "
    "its 512 positions.")


def architecture_from(args):
    """The backbone arguments the user set (all of them when they have defaults)."""
    values = {name: getattr(args, name) for name in ARCHITECTURE_FLAGS}
    return {name: value for name, value in values.items() if value is not None}


def add_xla_flags(group, step):
    """--jit-compile / --no-jit-compile into `args.jit_compile` (None: the default)."""
    xla = group.add_mutually_exclusive_group()
    xla.add_argument("--jit-compile", dest="jit_compile", action="store_const", const=True,
                     help=f"Compile {step} with XLA, also on CPU and on several GPUs. Default: "
                          "XLA on one GPU only.")
    xla.add_argument("--no-jit-compile", dest="jit_compile", action="store_const", const=False,
                     help=f"Run {step} without XLA, also on one GPU.")


def xla_flags(jit_compile):
    """The flags that pass `args.jit_compile` on to a training program."""
    return [] if jit_compile is None else ["--jit-compile" if jit_compile else "--no-jit-compile"]


def config_flags(config_class, prefix=""):
    """`{field name: flag}` for `config_class`'s options with help; `--PREFIXflag`."""
    return {
        field.name: "--" + prefix + (field.metadata["flag"] or "--" + field.name)[2:].replace(
            "_", "-")
        for field in dataclasses.fields(config_class) if field.metadata.get("help")
    }


def add_config_flags(parser, config_class, prefix="", defaults=None, skip=(), group=None):
    """Adds the flags of `config_class` (but `skip`) as the config declares them, into their
    group (or `group`), left None when not given; `defaults` overrides the shown defaults."""
    fields = {field.name: field for field in dataclasses.fields(config_class)}
    for name, flag in config_flags(config_class, prefix).items():
        if name in skip:
            continue
        field, metadata = fields[name], fields[name].metadata
        default = (defaults or {}).get(name, field.default)
        text = metadata["help"]
        if default not in (None, False, dataclasses.MISSING):
            text += f" Default: {default}."
        into = group or next((each for each in parser._action_groups
                              if each.title.startswith(metadata["group"])), None)
        into = into or parser.add_argument_group(metadata["group"])
        options = dict(dest=prefix.replace("-", "_") + name, default=None, help=text)
        if field.type is bool:
            into.add_argument(flag, action="store_const", const=True, **options)
        else:
            metavar = metadata["metavar"] or flag.removeprefix("--" + prefix).upper()
            into.add_argument(flag, type=metadata["parse"] or metadata["bounds"],
                              metavar=metavar.replace("-", "_"), **options)


def given_options(args, config_class, prefix=""):
    """`{field name: value}` of the options given as flags."""
    values = {name: getattr(args, prefix.replace("-", "_") + name, None)
              for name in config_flags(config_class)}
    return {name: value for name, value in values.items() if value is not None}


def option_arguments(args, config_class, prefix, defaults=None):
    """The arguments that pass the options given as `--PREFIXflag` (over `defaults`) on to a
    program with `config_class`'s flags."""
    flags = config_flags(config_class)
    arguments = []
    for name, value in {**(defaults or {}), **given_options(args, config_class, prefix)}.items():
        arguments.append(flags[name])
        if value is not True:
            arguments.append(",".join(map(str, value)) if isinstance(value, tuple) else str(value))
    return arguments


def add_training_flags(parser, config_class, output_dir, outputs):
    """`config_class`'s flags, the data limits for trial runs, the hardware flags and
    --output-dir (default `output_dir`, where `outputs` go)."""
    add_config_flags(parser, config_class)
    group = next(group for group in parser._action_groups if group.title == "training")
    group.add_argument("--max-train-examples", type=positive_int, default=None,
                       help="Use only the first N training documents (for trial runs).")
    group.add_argument("--max-eval-examples", type=positive_int, default=None,
                       help="Validate and test on the first N held-out documents only (for "
                            "trial runs).")

    group = parser.add_argument_group("hardware (see the combinations below)")
    group.add_argument("--cpu-replicas", type=positive_int, default=1,
                       help="Without GPUs: train N replicas on N logical CPU devices.")
    group.add_argument("--mixed-precision", action="store_true",
                       help="Compute in float16 (GPU) or bfloat16 (CPU); weights stay float32.")
    add_xla_flags(group, "the training step")
    group.add_argument("--connect-timeout", type=positive_float, default=300.0, metavar="SECONDS",
                       help="With TF_CONFIG: how long to wait for every other worker to start.")
    group.add_argument("--deterministic", action="store_true",
                       help="Make every TensorFlow op deterministic, so that a run, resumed or "
                            "not, gives the same weights bit for bit; slower.")
    parser.add_argument("--output-dir", type=nonempty, default=output_dir,
                        help=f"Where {outputs}, checkpoints and logs go; a rerun with the same "
                             "directory resumes an unfinished run.")


def import_library(module):
    """Imports `module`; when that starts TensorFlow, with the garbage collector off, then
    frozen (`gc.freeze`): collections would otherwise walk the half million objects the
    imports make, during them and at every full collection after, about 3 CPU-s a program."""
    if "tensorflow" in sys.modules:
        return
    gc.disable()
    try:
        importlib.import_module(module)
    finally:
        gc.enable()
        gc.freeze()


def set_up_hardware(args):
    """Sets up the devices the hardware flags describe; returns the strategy."""
    import_library("keras_linformer.training.runs")
    from keras_linformer.training import devices

    return devices.set_up_devices(
        cpu_replicas=args.cpu_replicas, mixed_precision=args.mixed_precision,
        jit_compile=args.jit_compile, deterministic=args.deterministic,
        connect_timeout=args.connect_timeout, log=log)


def add_debug_flag(parser):
    parser.add_argument("--debug", action="store_true", help="On an error, show Python's "
                        "traceback instead of one line; show TensorFlow's own log lines.")


def console_script(parse_args, function, status=lambda result: 0):
    """A program's `main(argv=None)`: `status(run(function on the parsed flags))`; its errors
    name the flags (`parser_flags`), not the library's parameters."""

    def main(argv=None):
        parser, args = parse_args(argv)

        def named(args):
            with flag_names(**parser_flags(parser)):
                return function(args)

        return status(run(parser, named, args))

    return main


def parser_flags(parser):
    """`{destination: flag}` of the options of `parser`, the first flag of each destination."""
    return {action.dest: action.option_strings[0] for action in reversed(parser._actions)
            if action.option_strings and action.dest != "help"}


def run(parser, function, args):
    """Runs `function(args)`; an error ends the program with one line and a non-zero status.

    Bad input exits with 2, a diverged run (NaN loss) with 3, a failed write (disk full)
    with 74 (EX_IOERR), a preempted run (SIGTERM, checkpoint saved) with 143, Ctrl-C with
    130, any other failure with 1; `--debug` raises with the traceback instead. A training
    run that stops before its first checkpoint leaves its output directory as it was.
    """
    del STARTED_RUNS[:]
    try:
        if getattr(args, "debug", False):
            if USER_LOG_LEVEL is None and "tensorflow" not in sys.modules:
                os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
            return function(args)
        try:
            return function(args)
        except KeyboardInterrupt:
            parser.exit(130, f"{parser.prog}: interrupted.\n")
        except Exception as error:  # noqa: BLE001 (one line for every failure; --debug shows it)
            status, message = failure(error)
            # The library names programs by their console scripts; say them as run here.
            parser.exit(status, f"{parser.prog}: {name_commands(message)}\n")
    except BaseException as error:
        if not (isinstance(error, SystemExit) and not error.code):
            remove_unfinished_starts()
        raise
    finally:
        del STARTED_RUNS[:]


# A file that could not be written for want of room: the disk, a quota, a size limit.
WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def failure(error):
    """`(exit status, message)` for an error that ends a program (see `run`)."""
    loop = sys.modules.get("keras_linformer.training.loop")
    if (loop is not None and isinstance(error, loop.CheckpointWriteError)) or (
            isinstance(error, OSError) and error.errno in WRITE_ERRORS):
        return 74, f"error: {error}"
    if isinstance(error, (ValueError, OSError, ModuleNotFoundError)):
        return 2, f"error: {str(error).strip() or type(error).__name__}"
    if isinstance(error, FloatingPointError):
        return 3, f"error: {error}"
    if loop is not None and isinstance(error, loop.Preempted):
        return 143, f"{error} Run the same command again to resume."
    return 1, (f"error: {type(error).__name__}: {first_line(error, 1000)} "
               "(run again with --debug for the traceback)")


@contextlib.contextmanager
def flag_names(**flags):
    """Names `flags`, not the library's parameters, in the errors raised inside.

    >>> with flag_names(cpu_replicas="--cpu-replicas"):
    ...     raise ValueError("`cpu_replicas` must be 1 here. Received: cpu_replicas=2")
    Traceback (most recent call last):
    ...
    ValueError: `--cpu-replicas` must be 1 here. Received: --cpu-replicas 2
    """
    try:
        yield
    except (ValueError, OSError) as error:
        message = str(error)
        for name, flag in flags.items():
            if message.startswith(f"{name}: "):
                message = flag + message[len(name):]
            message = message.replace(f"`{name}`", f"`{flag}`")
            message = re.sub(rf"\b{name}=", f"{flag} ", message)
        if message == str(error):
            raise
        try:
            renamed = type(error)(message)
        except TypeError:
            renamed = ValueError(message)
        raise renamed from None


def check_output_dir(path, task):
    """Refuses an `--output-dir` that is not new, empty or a run of `task`, before any work."""
    from keras_linformer.training import devices
    from keras_linformer.training import run_directory

    if devices.is_chief():  # Other workers write nothing there.
        run_directory.check_output_dir(path, task)


def prepare_run(args, task, load_corpus, strategy=None):
    """Checks TF_CONFIG and `--output-dir`, reads the data, then starts the devices (unless
    given `strategy`): a mistake costs no start-up. Returns `(corpus, strategy)`."""
    import_library("keras_linformer.training.runs")
    from keras_linformer import data
    from keras_linformer.training import devices

    check_projection_flags(args)
    devices.read_tf_config()  # A wrong TF_CONFIG is named before the data are read.
    check_output_dir(args.output_dir, task)
    note_start(args.output_dir)
    corpus = data.limit_examples(load_corpus(args), args.max_train_examples,
                                 args.max_eval_examples)
    return corpus, strategy or set_up_hardware(args)


# (path, the names it held before, the topmost directory the run creates or None).
STARTED_RUNS = []


def note_start(path):
    """Notes what `path` holds before a new run (no run.json) writes there, on the chief."""
    from keras_linformer.training import devices
    from keras_linformer.training import run_directory

    path = os.path.abspath(path)
    if not devices.is_chief() or os.path.exists(os.path.join(path, run_directory.RUN_FILE)):
        return
    created, ancestor = None, path
    while not os.path.exists(ancestor):
        created, ancestor = ancestor, os.path.dirname(ancestor)
    before = set(os.listdir(path)) if created is None and os.path.isdir(path) else set()
    STARTED_RUNS.append((path, before, created))


def remove_unfinished_starts():
    """Removes what a run noted by `note_start` added if it stopped before its first checkpoint
    (its run.json would refuse the corrected command); returns the paths removed."""
    if not STARTED_RUNS:
        return []  # Imports nothing: `run` calls it after every failure.
    from keras_linformer.training import run_directory

    # A run that saved a checkpoint imported the module that wrote it.
    loop = sys.modules.get("keras_linformer.training.loop")
    transfer = sys.modules.get("keras_linformer.training.starting_points")
    removed = []
    for path, before, created in STARTED_RUNS:
        # A summary: finished by another process sharing the directory; its results.
        if (not os.path.isdir(path) or loop is not None and loop.has_checkpoint(path)
                or transfer is not None and transfer.stopped_with_checkpoint(path)
                or os.path.isfile(os.path.join(path, run_directory.SUMMARY_FILE))):
            continue
        # All of the topmost directory it created, else what it added to `path`.
        entries = [created] if created else [os.path.join(path, name) for name in
                                             sorted(set(os.listdir(path)) - before)]
        for entry in entries:
            # Best effort: the error that stopped the run is what to report.
            with contextlib.suppress(OSError):
                if os.path.isdir(entry) and not os.path.islink(entry):
                    shutil.rmtree(entry)
                else:
                    os.remove(entry)
                removed.append(entry)
    del STARTED_RUNS[:]
    return removed


def check_sequence_length_fits(parser, args, config_class):
    """Refuses a `--sequence-length` whose training step cannot fit in this machine's memory."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if args.sequence_length is None:
        return
    n, batch_size = args.sequence_length, args.batch_size or config_class.batch_size
    value = {**FROM_SCRATCH, **architecture_from(args)}
    # Bytes (float32) of what grows with n: position embeddings with gradients and Adam
    # moments, activations and attention scores (a learned E's n x k weights are left out).
    attended = value["projected_dim"] if value["attention"] == "linformer" else n
    weights = n * value["hidden_dim"]
    activations = batch_size * n * value["num_layers"] * (
        2 * value["hidden_dim"] + value["intermediate_dim"] + value["num_heads"] * attended)
    needed = 4 * (4 * weights + activations)
    if needed > memory:
        parser.error(f"argument --sequence-length: {args.sequence_length} cannot fit in memory: a "
                     f"training step at batch size {batch_size} needs at least "
                     f"{needed / 2**30:,.1f} GiB (position embeddings, activations, attention "
                     f"scores), more than this machine's {memory / 2**30:,.1f} GiB. Use a shorter "
                     "--sequence-length (or a smaller --batch-size).")


def log(message):
    """Prints a progress line at once, also into a pipe."""
    print(message, flush=True)
