"""How much of a pretrained BERT a Linformer conversion keeps before any fine-tuning.

Loads a BERT with keras-hub (by default the bundled all-MiniLM-L6-v2),
converts it with `LinformerBackbone.from_bert` at every `--projected-dims`
k, with mean pooling and with a learned E from each of `--initializers`
(one conversion per `--init-seeds` seed, each without and with padding
compensation, the n / (real tokens) scale of the values), each with every
`--null-slots` count of always-attended zero slots, and runs the BERT and every
conversion on the first `--num-texts` test texts of `--dataset`, encoded as
fine-tuning encodes them (truncated and padded to n). Per conversion it
measures, against the BERT's outputs:

- embedding cosine: the cosine between the texts' sentence embeddings (the
  masked mean of the sequence output, as all-MiniLM-L6-v2 defines them);
- pooled cosine: the same for the pooled `[CLS]` output, which the
  classifier reads;
- token error: ||converted - BERT|| / ||BERT|| over the real tokens'
  sequence outputs;
- neighbour agreement: the fraction of texts whose nearest other text by
  sentence embedding is the one the BERT finds.

`--adapted` adds conversions that were trained further without labels
(`training.pretrain --from-bert` output directories: a masked-LM adaptation,
or a distillation), measured on the same texts. Mean pooling at k = n
computes exactly what the BERT does (windows of one position), so that row
checks the measurement itself. Writes a CSV with a
row per conversion, a markdown report and a plot to `--output-dir`.

    python -m benchmarks.conversion [--dataset bbc_news] [--projected-dims 64 128 256 512]
    python -m benchmarks.conversion --dataset rotten_tomatoes      # n = 128, k = 16 ... 128
"""

import functools
import os
import time

import numpy as np

from benchmarks import outputs
from keras_linformer.programs import cli

PROGRAM = "benchmarks.conversion"
DATASETS = {"bbc_news": 512, "rotten_tomatoes": 128}
# keras_linformer.layers.projection_initializers.PROJECTION_INITIALIZERS
INITIALIZERS = cli.PROJECTION_INITIALIZERS
METRICS = ("embedding_cosine", "pooled_cosine", "token_error", "neighbour_agreement")
FIELDS = (
    "projection", "initializer", "init_seed", "padding_compensation", "null_slots",
    "adapted", "projected_dim", "sequence_length", "texts",
    "embedding_cosine", "embedding_cosine_min", "pooled_cosine", "pooled_cosine_min",
    "token_error", "neighbour_agreement", "seconds",
)


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--bert", default="all-minilm-l6-v2", metavar="DIR_OR_PRESET",
                        help="The BERT to convert (as `training.finetune --from-bert`).")
    parser.add_argument("--dataset", choices=list(DATASETS), default="bbc_news",
                        help="Whose test texts to run: bbc_news (long articles) or "
                             "rotten_tomatoes (short reviews).")
    parser.add_argument("--sequence-length", type=cli.sequence_length, default=None,
                        metavar="N", help="n (default: 512 for bbc_news, 128 for "
                                          "rotten_tomatoes).")
    parser.add_argument("--projected-dims", nargs="+", type=cli.positive_int, default=None,
                        metavar="K", help="Every k to convert at, each at most n (default: "
                                          "n/8, n/4, n/2 and n).")
    parser.add_argument("--initializers", nargs="*", choices=INITIALIZERS,
                        default=list(INITIALIZERS),
                        help="The starts of a learned E to measure (none: mean pooling only).")
    parser.add_argument("--init-seeds", nargs="+", type=cli.random_seed, default=[0],
                        help="One conversion per seed of a learned E's start.")
    parser.add_argument("--null-slots", nargs="+", type=cli.null_slot_count, default=[0],
                        metavar="S", help="Convert with each of these numbers of null slots "
                                          "(zero key/value slots attention can use as a no-op).")
    parser.add_argument("--adapted", nargs="+", default=[], metavar="DIR",
                        help="Also measure these adapted conversions of the BERT: output "
                             "directories of `training.pretrain --from-bert` (masked-LM "
                             "adaptation or --objective distillation) at n = --sequence-length.")
    parser.add_argument("--num-texts", type=cli.positive_int, default=64,
                        help="How many test texts (the first ones), at least 3.")
    parser.add_argument("--batch-size", type=cli.positive_int, default=8,
                        help="Texts per forward pass.")
    parser.add_argument("--output-dir", default="benchmarks/results",
                        help="Where the CSV, report and plot go.")
    parser.add_argument("--name", default=None,
                        help="File name stem (default: conversion-<bert>-<dataset>-n<N>).")
    cli.add_debug_flag(parser)
    args = parser.parse_args(argv)
    args.sequence_length = args.sequence_length or DATASETS[args.dataset]
    args.projected_dims = args.projected_dims or [
        max(1, args.sequence_length // d) for d in (8, 4, 2, 1)]
    n = args.sequence_length
    misfits = [k for k in args.projected_dims if k > n or n % k]
    if misfits:
        parser.error(f"--projected-dims: every k must divide n = {n} (--sequence-length; mean "
                     f"pooling's windows are n / k positions). Received: {misfits}")
    if args.num_texts < 3:
        parser.error(f"--num-texts: must be at least 3 (a nearest neighbour among others). "
                     f"Received: {args.num_texts}")
    return parser, args


def embeddings(backbone, inputs, batch_size):
    """`(sentence embeddings, pooled outputs, sequence outputs)` of `backbone`, as NumPy
    (float64; the sentence embeddings are `keras_linformer.models.agreement`'s)."""
    import keras

    from keras_linformer.models import agreement

    pieces = []
    for start in range(0, len(inputs["token_ids"]), batch_size):
        batch = {key: value[start:start + batch_size] for key, value in inputs.items()}
        result = backbone(batch, training=False)
        pieces.append((keras.ops.convert_to_numpy(result["sequence_output"]),
                       keras.ops.convert_to_numpy(result["pooled_output"])))
    sequence = np.concatenate([p[0] for p in pieces]).astype(np.float64)
    pooled = np.concatenate([p[1] for p in pieces]).astype(np.float64)
    sentence = keras.ops.convert_to_numpy(
        agreement.sentence_embedding(sequence, inputs["padding_mask"]))
    return sentence, pooled, sequence


def cosines(a, b):
    """Row-wise cosine similarity of two `(texts, d)` arrays."""
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def nearest_neighbours(vectors):
    """For each row, the index of the most cosine-similar other row."""
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    return similarity.argmax(-1)


def compare(reference, converted, padding_mask):
    """The metrics of `converted` against `reference`, both from `embeddings`.

    The sentence-embedding cosine and the relative error are distillation's
    (`keras_linformer.models.agreement`), so that a distillation's metrics and this
    program's measure the same thing.
    """
    from keras import ops

    from keras_linformer.models import agreement

    (sentence, pooled, sequence), (sentence2, pooled2, sequence2) = reference, converted
    outputs = np.stack([sequence2, sequence], axis=2)  # (texts, S, 2, H): student, teacher.
    embedding = ops.convert_to_numpy(agreement.embedding_cosine(padding_mask, outputs))
    errors = ops.convert_to_numpy(agreement.relative_error(padding_mask, outputs))
    pooled_cosine = cosines(pooled, pooled2)
    return {
        "embedding_cosine": float(embedding.mean()),
        "embedding_cosine_min": float(embedding.min()),
        "pooled_cosine": float(pooled_cosine.mean()),
        "pooled_cosine_min": float(pooled_cosine.min()),
        "token_error": float(np.mean(errors)),
        "neighbour_agreement": float(
            (nearest_neighbours(sentence) == nearest_neighbours(sentence2)).mean()),
    }


def conversions(args):
    """`(projection, initializer name, init seed, padding compensation, null slots, k)` in
    measuring order (None for what mean pooling does not have)."""
    for k in sorted(set(args.projected_dims)):
        for null_slots in args.null_slots:
            yield "mean", None, None, None, null_slots, k
            for name in args.initializers:
                for seed in args.init_seeds:
                    for compensation in (False, True):
                        yield "linear", name, seed, compensation, null_slots, k


def measure(args):
    """Loads the BERT and texts, runs every conversion; returns `(rows, BERT name, texts)`."""
    from keras_linformer import data
    from keras_linformer.layers import projection_initializers
    from keras_linformer.models import LinformerBackbone
    from keras_linformer.models import copy_bert
    from keras_linformer.models import pretrained_bert

    n = args.sequence_length
    bert, vocabulary = pretrained_bert.load_bert(args.bert, "--bert")
    if n > bert.max_sequence_length:
        raise ValueError(f"--sequence-length: {n} exceeds the BERT's "
                         f"{bert.max_sequence_length} position embeddings.")
    # Checked before anything is measured.
    adapted = [(directory, load_adapted(directory, vocabulary, n)) for directory in args.adapted]
    loader = {"bbc_news": data.load_bbc_news, "rotten_tomatoes": data.load_rotten_tomatoes}
    texts = list(loader[args.dataset]().test.texts)[:args.num_texts]
    encoded = data.TextEncoder(data.make_tokenizer(vocabulary), n)(texts)
    inputs = {key: np.asarray(value) for key, value in encoded.items()}
    real = inputs["padding_mask"].sum(1)
    cli.log(f"{len(texts)} {args.dataset} test texts at n = {n}: {real.mean():.0f} real tokens "
            f"on average ({(real == n).mean():.0%} fill n)")
    source = copy_bert(bert, max_sequence_length=n)
    reference = embeddings(source, inputs, args.batch_size)
    plan = list(conversions(args))
    rows = []
    for index, (projection, name, seed, compensation, null_slots, k) in enumerate(plan, 1):
        start = time.perf_counter()
        initializer = (None if name is None else
                       projection_initializers.projection_initializer(name, k, seed))
        converted = LinformerBackbone.from_bert(
            bert, projected_dim=k, projection=projection, projection_initializer=initializer,
            padding_compensation=bool(compensation), null_slots=null_slots,
            max_sequence_length=n,
        )
        row = dict(projection=projection, initializer=name, init_seed=seed,
                   padding_compensation=compensation, null_slots=null_slots, adapted=None,
                   projected_dim=k, sequence_length=n, texts=len(texts),
                   **compare(reference, embeddings(converted, inputs, args.batch_size),
                             inputs["padding_mask"]))
        rows.append(finish_row(row, start, f"[{index}/{len(plan)}]"))
    for directory, backbone in adapted:
        start = time.perf_counter()
        row = dict(projection=backbone.projection, initializer=None, init_seed=None,
                   padding_compensation=(backbone.padding_compensation
                                         if backbone.projection == "linear" else None),
                   null_slots=backbone.null_slots, adapted=directory,
                   projected_dim=backbone.projected_dim, sequence_length=n, texts=len(texts),
                   **compare(reference, embeddings(backbone, inputs, args.batch_size),
                             inputs["padding_mask"]))
        rows.append(finish_row(row, start, "[adapted]"))
    return rows, os.path.basename(os.path.normpath(args.bert)), texts


def load_adapted(directory, vocabulary, sequence_length):
    """The backbone an adaptation of the BERT left in `directory`, checked against the
    BERT's vocabulary and the texts' n."""
    from keras_linformer.models import attention_of
    from keras_linformer.training import starting_points

    with cli.flag_names(pretrained="--adapted"):
        backbone, adapted_vocabulary = starting_points.load_pretrained(directory)
    attention = attention_of(backbone)
    if attention != "linformer" or backbone.max_sequence_length != sequence_length:
        raise ValueError(f"--adapted: {directory!r} holds a {attention} at n = "
                         f"{backbone.max_sequence_length}; the texts are encoded at n = "
                         f"{sequence_length} (--sequence-length) for Linformer conversions.")
    if adapted_vocabulary != vocabulary:
        raise ValueError(f"--adapted: {directory!r} has a vocabulary of "
                         f"{len(adapted_vocabulary)} tokens that is not the BERT's "
                         f"({len(vocabulary)}): not an adaptation of this BERT (--bert).")
    return backbone


def finish_row(row, start, prefix):
    """`row` with its seconds, logged."""
    row["seconds"] = round(time.perf_counter() - start, 1)
    cli.log(f"{prefix} {label(row)} k={row['projected_dim']}: embedding cosine "
            f"{row['embedding_cosine']:.4f} (min {row['embedding_cosine_min']:.4f}), pooled "
            f"{row['pooled_cosine']:.4f}, token error {row['token_error']:.3f}, neighbours "
            f"{row['neighbour_agreement']:.0%}; {row['seconds']:.0f} s")
    return row


def label(row):
    null = f", {row['null_slots']} null slots" if row["null_slots"] else ""
    if row.get("adapted"):
        kind = "mean pooling" if row["projection"] == "mean" else "learned E"
        return f"{kind}{null}, adapted: {os.path.basename(os.path.normpath(row['adapted']))}"
    if row["projection"] == "mean":
        return "mean pooling" + null
    seed = "" if row["init_seed"] is None else f", seed {row['init_seed']}"
    compensation = ", compensated" if row["padding_compensation"] else ""
    return f"learned E from {row['initializer']}{compensation}{null}{seed}"


def summarize(rows):
    """Per (projection, initializer, k): the metrics' mean and spread over the init seeds."""
    groups = {}
    for row in rows:
        key = (row["projection"], row["initializer"], row["padding_compensation"],
               row["null_slots"], row.get("adapted"), row["projected_dim"])
        groups.setdefault(key, []).append(row)
    return [
        dict(projection=projection, initializer=initializer,
             padding_compensation=compensation, null_slots=null_slots, adapted=adapted,
             projected_dim=k, seeds=len(group),
             **{m: float(np.mean([r[m] for r in group])) for m in METRICS},
             **{f"{m}_spread": float(np.ptp([r[m] for r in group])) for m in METRICS})
        for (projection, initializer, compensation, null_slots, adapted, k), group
        in groups.items()
    ]


def report(rows, command, machine, bert, dataset, texts):
    summary = summarize(rows)
    n = rows[0]["sequence_length"]
    lines = [f"# A converted {bert} against itself before fine-tuning ({dataset}, n = {n})",
             "", *outputs.produced_by(command), f"Machine: {machine}", "",
             f"{texts} test texts, encoded as fine-tuning encodes them. Each cell: the mean over "
             "the texts; a learned E's cell also averages its init seeds, with the spread "
             "(max - min) over them in brackets. Mean pooling at k = n equals the BERT "
             "(windows of one position).", ""]

    def cell(entry, metric, digits):
        value = f"{entry[metric]:.{digits}f}"
        return value + (f" ({entry[metric + '_spread']:.{digits}f})" if entry["seeds"] > 1
                        else "")

    table = [[label(dict(entry, init_seed=None)), entry["projected_dim"],
              cell(entry, "embedding_cosine", 4), cell(entry, "pooled_cosine", 4),
              cell(entry, "token_error", 3), cell(entry, "neighbour_agreement", 2)]
             for entry in summary]
    lines.append(outputs.markdown_table(
        ["conversion", "k", "embedding cosine", "pooled cosine", "token error",
         "neighbour agreement"], table))
    return "\n".join(lines) + "\n", summary


def plot(summary, path, title):
    plt = outputs.pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    series = {}
    for entry in summary:
        series.setdefault(label(dict(entry, init_seed=None)), []).append(entry)
    for name, entries in series.items():
        ks = [e["projected_dim"] for e in entries]
        for axis, metric in zip(axes, ("embedding_cosine", "token_error")):
            axis.plot(ks, [e[metric] for e in entries], marker="o", label=name)
    for axis, ylabel in zip(axes, ("sentence-embedding cosine to the BERT",
                                   "token output error (relative)")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("k")
        axis.set_ylabel(ylabel)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    outputs.save_palette_png(figure, path)


def analyse(args, command):
    cli.log(command)
    rows, bert, texts = measure(args)
    name = args.name or f"conversion-{bert.lower()}-{args.dataset}-n{args.sequence_length}"
    os.makedirs(args.output_dir, exist_ok=True)
    base = os.path.join(args.output_dir, name)
    outputs.write_csv(base + ".csv", command, FIELDS, rows)
    markdown, summary = report(rows, command, outputs.machine_description(), bert,
                               args.dataset, len(texts))
    with open(base + ".md", "w", encoding="utf-8") as file:
        file.write(markdown)
    plot(summary, base + ".png", f"{bert} converted, before fine-tuning: {args.dataset}, "
                                 f"n = {args.sequence_length}")
    written = [base + suffix for suffix in (".csv", ".md", ".png")]
    cli.log("Wrote " + ", ".join(written))
    return written


def main(argv=None):
    parser, args = parse_args(argv)
    command = outputs.command_line(PROGRAM, argv)
    return cli.run(parser, functools.partial(analyse, command=command), args)


if __name__ == "__main__":
    main()
