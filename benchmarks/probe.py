"""Frozen-feature evaluation of a BERT against its Linformer conversions, on the same folds.

No fine-tuning, so no seed of a training run blurs the comparison: every model
embeds every text once (the mean of its sequence output over the real
tokens, as all-MiniLM-L6-v2 defines sentence embeddings;
`conversion.embeddings`), and two scores read the embeddings:

- probe: out-of-fold accuracy of a logistic regression (scikit-learn, on
  standardised embeddings) over `--folds` stratified folds, drawn once by
  `--seed` and saved to `<dataset>-folds.json`, the same for every model;
- kNN: leave-one-out accuracy of a `--neighbours`-nearest-neighbour vote by
  cosine similarity (each neighbour's vote weighted by its similarity).

Models: the BERT (`--bert`, by default the bundled all-MiniLM-L6-v2) and, at
every `--projected-dims` k, its conversions by `LinformerBackbone.from_bert`
with mean pooling (`mean-k<K>`), with a learned E starting as mean pooling
(`linear-k<K>`), and the same after attention transfer (`linear-k<K>-transfer`:
`attention_transfer.transfer_attention` on `--transfer-texts` unlabelled news
articles, which neither task contains; mean pooling has no weights to transfer;
`--transfer-lengths mixed` cuts each article to a random length first, and
names the model `linear-k<K>-transfer-mixed`).
Per conversion: the difference to the BERT in points with a 95% interval from
a paired bootstrap over texts (`--bootstrap` resamples, fixed seed), and the
throughput (texts/s) of every model measured interleaved, round by round, on
the same texts, before any embedding (a transferred conversion has its fresh
start's cost, so only that is timed). Exact duplicate texts are dropped first (BBC News has 98):
a copy in another fold or as a neighbour would score as memory.

Resumable: embeddings, transfer checkpoints and transferred weights are kept
under `--output-dir`; run the same command again to continue. Writes
`probe.csv` (a row per dataset and model), `transfer.csv`, `throughput.csv`
and `probe.md` there.

    python -m benchmarks.probe --output-dir /work/results39
    python -m benchmarks.probe --datasets rotten_tomatoes --max-texts 4000 --projected-dims 64
"""

import functools
import json
import os
import time

import numpy as np

from benchmarks import conversion
from benchmarks import outputs
from keras_linformer.programs import cli
from keras_linformer.utils import files
from keras_linformer.utils.validation import Bounds

PROGRAM = "benchmarks.probe"
DATASETS = conversion.DATASETS  # name -> n
REFERENCE = "bert"
CONVERSIONS = ("transfer", "mean", "linear")
PROBE_FIELDS = (
    "dataset", "sequence_length", "model", "projection", "projected_dim", "transfer", "texts",
    "folds", "probe_accuracy", "probe_difference", "probe_low", "probe_high",
    "knn_accuracy", "knn_difference", "knn_low", "knn_high", "embedding_cosine",
    "texts_per_second", "speedup",
)
TRANSFER_FIELDS = (
    "sequence_length", "projected_dim", "lengths", "texts", "epochs", "steps", "seconds",
    "embedding_cosine_before", "embedding_cosine_after",
    "layer_error_before", "layer_error_after",
)
THROUGHPUT_FIELDS = ("dataset", "sequence_length", "model", "round", "texts", "seconds",
                     "texts_per_second", "load_average")


def add_scoring_flags(parser):
    """The flags this program shares with `benchmarks.long_documents`: how embeddings are
    scored, how the attention transfer trains, how often throughput is measured."""
    parser.add_argument("--folds", type=Bounds(int, 2, 100),
                        default=5, help="Cross-validation folds of the probe.")
    parser.add_argument("--neighbours", type=cli.positive_int, default=10,
                        help="Neighbours of the kNN vote.")
    parser.add_argument("--bootstrap", type=cli.positive_int, default=2000,
                        help="Paired bootstrap resamples of the 95%% intervals.")
    parser.add_argument("--transfer-epochs", type=cli.positive_int, default=2,
                        help="Epochs of attention transfer.")
    parser.add_argument("--transfer-learning-rate", type=cli.positive_float,
                        default=1e-3,
                        help="Adam's learning rate for the attention transfer.")
    parser.add_argument("--throughput-rounds", type=cli.positive_int, default=3,
                        help="Interleaved rounds of the throughput measurement.")


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--bert", default="all-minilm-l6-v2", metavar="DIR_OR_PRESET",
                        help="The BERT to convert (as `training.finetune --from-bert`).")
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS),
                        default=list(DATASETS),
                        help="bbc_news (5 topics, n = 512) and rotten_tomatoes (fresh or "
                             "rotten, n = 128).")
    parser.add_argument("--sequence-length", type=cli.sequence_length, default=None,
                        metavar="N", help="n for every dataset (default: 512 for bbc_news, "
                                          "128 for rotten_tomatoes).")
    parser.add_argument("--projected-dims", nargs="+", type=cli.positive_int, default=[64, 128],
                        metavar="K", help="Every k to convert at; each must divide n.")
    parser.add_argument("--conversions", nargs="+", choices=CONVERSIONS,
                        default=list(CONVERSIONS),
                        help="Which conversions to compare with the BERT at each k: a learned "
                             "E after attention transfer, mean pooling, a learned E "
                             "(default: all).")
    add_scoring_flags(parser)
    parser.add_argument("--max-texts", type=cli.positive_int, default=None, metavar="T",
                        help="At most T texts per dataset, drawn by --seed (default: all).")
    parser.add_argument("--seed", type=cli.random_seed, default=0,
                        help="Seeds the text sample, the folds and the bootstrap.")
    parser.add_argument("--transfer-texts", type=cli.positive_int, default=256,
                        help="Unlabelled news articles the attention transfer trains on.")
    parser.add_argument("--transfer-lengths", choices=["full", "mixed"], default="full",
                        help="full: the articles cut at n tokens; mixed: each cut to a "
                             "random number of words from 4 to n, so that the projections "
                             "also learn short, padded texts (default: %(default)s).")
    parser.add_argument("--batch-size", type=cli.positive_int, default=8,
                        help="Texts per forward pass (and per transfer step).")
    parser.add_argument("--throughput-texts", type=cli.positive_int, default=32,
                        help="Texts each model embeds per round (the dataset's first ones).")
    parser.add_argument("--output-dir", default="artifacts/probe",
                        help="Where embeddings, checkpoints, CSVs and the report go (copy the "
                             "CSVs and the report to benchmarks/results/transfer/ to keep them).")
    cli.add_debug_flag(parser)
    args = parser.parse_args(argv)
    for name in args.datasets:
        n = args.sequence_length or DATASETS[name]
        misfits = [k for k in args.projected_dims if k > n or n % k]
        if misfits:
            parser.error(f"--projected-dims: every k must divide n = {n} of {name} (mean "
                         f"pooling's windows are n / k positions). Received: {misfits}")
    return parser, args


def lengths_suffix(transfer_lengths):
    """What a transfer's model and directory names add for `--transfer-lengths`."""
    return "" if transfer_lengths == "full" else f"-{transfer_lengths}"


def fresh_start(name):
    """The conversion a transferred one starts from (and costs what it costs): its name
    without `-transfer...`."""
    return name.split("-transfer")[0]


def model_names(projected_dims, transfer_lengths="full", conversions=CONVERSIONS):
    """The BERT, then per k (in the order given) the `conversions` asked for, the transferred
    one first: the one a partial run should have measured soonest."""
    suffix = lengths_suffix(transfer_lengths)
    names = [REFERENCE]
    for k in projected_dims:
        names += [name for kind, name in (("transfer", f"linear-k{k}-transfer{suffix}"),
                                          ("mean", f"mean-k{k}"), ("linear", f"linear-k{k}"))
                  if kind in conversions]
    return names


def cut_to_random_lengths(texts, n, rng):
    """Each text's first L words, L drawn uniformly from 4 to n: transfer texts that are
    also short and padded, as a task's texts can be."""
    return [" ".join(text.split()[:rng.integers(4, n + 1)]) for text in texts]


def describe(name):
    """`(projection, k, transfer)` of a model name (`None`s for the BERT)."""
    if name == REFERENCE:
        return None, None, None
    projection, k, *transfer = name.split("-")
    return projection, int(k[1:]), bool(transfer)


def load_texts(dataset, max_texts, seed):
    """Every labelled text of `dataset` once (exact duplicates dropped), in a fixed order;
    at most `max_texts`, a sample drawn by `seed`."""
    from keras_linformer import data

    corpus = {"bbc_news": data.load_bbc_news, "rotten_tomatoes": data.load_rotten_tomatoes}
    corpus = corpus[dataset]()
    seen, texts, labels = set(), [], []
    for split in corpus.splits().values():
        for text, label in zip(split.texts, split.labels):
            if text not in seen:
                seen.add(text)
                texts.append(text)
                labels.append(int(label))
    if max_texts is not None and max_texts < len(texts):
        keep = np.sort(np.random.default_rng(seed).permutation(len(texts))[:max_texts])
        texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    return texts, np.asarray(labels)


def folds_of(path, texts, labels, folds, seed):
    """Each text's fold: stratified, drawn by `seed`, saved to `path` (and read back from it,
    checked to be for the same texts)."""
    import hashlib

    from sklearn.model_selection import StratifiedKFold

    from keras_linformer.training import run_directory

    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            saved = json.load(file)
        if (saved["texts_sha256"], saved["seed"]) != (digest, seed) or (
                saved["folds"] != folds):
            raise ValueError(f"--output-dir: {path} holds folds of other texts, seed or fold "
                             "count; use another --output-dir for this command.")
        return np.asarray(saved["fold"])
    fold = np.empty(len(texts), dtype=int)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for index, (_, test) in enumerate(splitter.split(np.zeros(len(labels)), labels)):
        fold[test] = index
    run_directory.write_json(path, {"texts_sha256": digest, "seed": seed, "folds": folds,
                                    "fold": fold.tolist()})
    return fold


def probe_correct(embeddings, labels, fold):
    """Per text: whether the logistic regression trained on the other folds labels it right."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    correct = np.zeros(len(labels), dtype=bool)
    for index in np.unique(fold):
        test = fold == index
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        model.fit(embeddings[~test], labels[~test])
        correct[test] = model.predict(embeddings[test]) == labels[test]
    return correct


def knn_correct(embeddings, labels, neighbours, chunk=1024):
    """Per text: whether the similarity-weighted vote of its `neighbours` most cosine-similar
    other texts gives its label (leave one out)."""
    unit = (embeddings / np.linalg.norm(embeddings, axis=-1, keepdims=True)).astype(np.float32)
    classes = labels.max() + 1
    correct = np.zeros(len(labels), dtype=bool)
    for start in range(0, len(unit), chunk):
        similarity = unit[start:start + chunk] @ unit.T
        rows = np.arange(len(similarity))
        similarity[rows, start + rows] = -np.inf  # Not itself.
        nearest = np.argpartition(-similarity, neighbours, axis=1)[:, :neighbours]
        votes = np.zeros((len(similarity), classes))
        np.add.at(votes, (rows[:, None], labels[nearest]),
                  np.take_along_axis(similarity, nearest, 1))
        correct[start:start + chunk] = votes.argmax(1) == labels[start:start + chunk]
    return correct


def paired_difference(correct, reference, resamples, seed):
    """`(difference, low, high)` in points: mean(correct) - mean(reference) and its 95%
    paired-bootstrap interval over texts."""
    differences = correct.astype(float) - reference.astype(float)
    rng = np.random.default_rng(seed)
    means = np.array([differences[rng.integers(0, len(differences), len(differences))].mean()
                      for _ in range(resamples)])
    low, high = np.percentile(means, [2.5, 97.5])
    return 100 * differences.mean(), 100 * low, 100 * high


def build_model(name, bert, n, args, transfer_inputs, log):
    """The BERT as a full-attention backbone, or one of its conversions (transferred, or
    loaded from a finished transfer under `--output-dir`)."""
    from keras_linformer.models import LinformerBackbone
    from keras_linformer.models import attention_transfer
    from keras_linformer.models import copy_bert

    projection, k, transfer = describe(name)
    if projection is None:
        return copy_bert(bert, max_sequence_length=n)
    model = LinformerBackbone.from_bert(bert, projected_dim=k, projection=projection,
                                        max_sequence_length=n)
    if not transfer:
        return model
    directory = os.path.join(args.output_dir, "transfer",
                             f"n{n}-k{k}{lengths_suffix(args.transfer_lengths)}")
    weights = os.path.join(directory, "model.weights.h5")
    if not os.path.exists(weights):
        texts, evaluation = transfer_inputs(n)
        # Past the BERT's positions, the teacher is the BERT extended to n (full attention).
        teacher = bert if n <= bert.max_sequence_length else copy_bert(
            bert, max_sequence_length=n)
        report = attention_transfer.transfer_attention(
            model, teacher, texts, evaluation_inputs=evaluation, epochs=args.transfer_epochs,
            batch_size=args.batch_size, learning_rate=args.transfer_learning_rate,
            seed=args.seed, checkpoint_dir=directory, log=log)
        with open(os.path.join(directory, "report.json"), "w", encoding="utf-8") as file:
            json.dump({"sequence_length": n, "projected_dim": k,
                       "lengths": args.transfer_lengths, "texts": len(texts["token_ids"]),
                       **report}, file)
        # Whole: a file cut off by a kill would be taken for a finished transfer.
        with files.replaced_whole(
                weights, weights.replace(".weights.h5", ".tmp.weights.h5")) as temporary:
            model.save_weights(temporary)
    model.load_weights(weights)
    return model


def embed(model, inputs, batch_size, log, prefix, path, chunk=256):
    """Sentence embeddings of every text (`conversion.embeddings`, a chunk at a time), saved
    to `path`; each chunk is kept until then, so that a stopped run resumes mid-model."""
    start_time, count, computed = time.perf_counter(), len(inputs["token_ids"]), 0
    parts = []
    for start in range(0, count, chunk):
        parts.append(f"{path}.{start}.npy")
        if not os.path.exists(parts[-1]):
            piece = {key: value[start:start + chunk] for key, value in inputs.items()}
            with files.replaced_whole(parts[-1]) as temporary:
                np.save(temporary, conversion.embeddings(model, piece, batch_size)[0])
            computed += len(piece["token_ids"])
            log(f"{prefix} embedded {min(start + chunk, count)}/{count} texts, "
                f"{computed / (time.perf_counter() - start_time):.1f} texts/s")
    with files.replaced_whole(path) as temporary:
        np.save(temporary, np.concatenate([np.load(part) for part in parts]))
    for part in parts:
        os.remove(part)


def batches_of(inputs, batch_size, trim_to=None):
    """`inputs` cut into batches of `batch_size` rows, in order; with `trim_to`, the rows
    sorted by their real tokens and each batch cut to its longest row, rounded up to a
    multiple of `trim_to` (what a server that pads each batch to its longest text reads)."""
    lengths = np.asarray(inputs["padding_mask"]).sum(1)
    order = np.argsort(lengths, kind="stable") if trim_to else np.arange(len(lengths))
    width = np.shape(inputs["token_ids"])[1]
    batches = []
    for start in range(0, len(order), batch_size):
        index = order[start:start + batch_size]
        cut = min(width, -(-int(lengths[index].max()) // trim_to) * trim_to) if trim_to else width
        batches.append({key: np.asarray(value)[index, :cut] for key, value in inputs.items()})
    return batches


def throughput(models, batches, texts, rounds, log, prefix, jit_compile=False):
    """Rows of texts/s, every model once per round in turn: `batches[key]` holds what model
    `models[key]` reads of the same `texts` texts (one row each, or several chunks of each).
    Keys that hold the same model (its padded and trimmed batches) share its function: a
    batch shape both read is compiled once."""
    import tensorflow as tf

    functions = {}
    for model in models.values():
        if id(model) not in functions:
            functions[id(model)] = tf.function(functools.partial(model, training=False),
                                               jit_compile=jit_compile)
    calls = {key: functions[id(model)] for key, model in models.items()}
    for key, call in calls.items():
        for batch in {b["token_ids"].shape: b for b in batches[key]}.values():
            call(batch)  # Traced (and compiled) for every batch shape before timing.
    rows = []
    for index in range(rounds):
        for key, call in calls.items():
            start = time.perf_counter()
            for batch in batches[key]:
                result = call(batch)["sequence_output"]
            result.numpy()
            seconds = time.perf_counter() - start
            rows.append(dict(model=key, round=index, texts=texts, seconds=round(seconds, 3),
                             texts_per_second=round(texts / seconds, 2),
                             load_average=round(os.getloadavg()[0], 2)))
            log(f"{prefix} throughput round {index + 1}/{rounds}, {key}: "
                f"{texts / seconds:.1f} texts/s")
    return rows


def bert_and_encoder(preset):
    """`(bert, encode)`: the BERT of `--bert`, and `encode(texts, n)`, its tokenizer's
    encoder inputs of `texts` at n positions, as NumPy arrays."""
    from keras_linformer import data
    from keras_linformer.models import pretrained_bert

    bert, vocabulary = pretrained_bert.load_bert(preset, "--bert")
    encoder = functools.lru_cache()(lambda n: data.TextEncoder(data.make_tokenizer(vocabulary), n))

    def encode(texts, n):
        return {key: np.asarray(value) for key, value in encoder(n)(texts).items()}

    return bert, encode


def evaluate(args, command):
    import keras

    from keras_linformer import data

    os.makedirs(os.path.join(args.output_dir, "embeddings"), exist_ok=True)
    cli.log(command)
    bert, encode = bert_and_encoder(args.bert)

    @functools.lru_cache()
    def transfer_inputs(n):
        news = data.load_news_articles(seed=args.seed)
        texts = [list(news.train.texts)[:args.transfer_texts], list(news.test.texts)[:64]]
        if args.transfer_lengths == "mixed":
            rng = np.random.default_rng(args.seed)
            texts = [cut_to_random_lengths(part, n, rng) for part in texts]
        return encode(texts[0], n), encode(texts[1], n)

    names = model_names(args.projected_dims, args.transfer_lengths, args.conversions)
    probe_rows, throughput_rows = [], []
    paths = {name: os.path.join(args.output_dir, name) for name in
             ("probe.csv", "transfer.csv", "throughput.csv", "probe.md")}
    if os.path.exists(paths["throughput.csv"]):
        throughput_rows = outputs.read_csv(paths["throughput.csv"])[0]
        outputs.check_rows(paths["throughput.csv"], throughput_rows,
                           {"seconds": "time", "texts_per_second": "time"},
                           ("dataset", "sequence_length", "model", "round"), "--output-dir")
    for dataset in args.datasets:
        n = args.sequence_length or DATASETS[dataset]
        texts, labels = load_texts(dataset, args.max_texts, args.seed)
        fold = folds_of(os.path.join(args.output_dir, f"{dataset}-folds.json"), texts, labels,
                        args.folds, args.seed)
        inputs = encode(texts, n)
        cli.log(f"{dataset}: {len(texts)} texts at n = {n}, {args.folds} folds, "
                f"{inputs['padding_mask'].sum(1).mean():.0f} real tokens on average")
        # A transferred conversion is timed as its fresh start (the same cost).
        timed = [name for name in names if not describe(name)[2]]
        timed += sorted({fresh_start(name) for name in names} - set(timed))
        if not set(timed) <= {r["model"] for r in throughput_rows if r["dataset"] == dataset}:
            # First: it needs no transfer (a transferred conversion computes what its fresh
            # start does, at the same cost) and is not left for the end of a long run.
            models = {name: build_model(name, bert, n, args, None, None) for name in timed}
            head = {key: value[:args.throughput_texts] for key, value in inputs.items()}
            rows = throughput(models, dict.fromkeys(models, batches_of(head, args.batch_size)),
                              len(head["token_ids"]), args.throughput_rounds, cli.log,
                              f"[{dataset}]")
            throughput_rows = [r for r in throughput_rows if r["dataset"] != dataset] + [
                dict(row, dataset=dataset, sequence_length=n) for row in rows]
            outputs.write_csv(paths["throughput.csv"], command, THROUGHPUT_FIELDS,
                              throughput_rows)
            del models
        scores = {}
        for index, name in enumerate(names, 1):
            prefix = f"[{dataset} {index}/{len(names)} {name}]"
            path = os.path.join(args.output_dir, "embeddings", f"{dataset}-{name}.npy")
            if not os.path.exists(path):
                model = build_model(name, bert, n, args, transfer_inputs,
                                    lambda line, p=prefix: cli.log(f"{p} {line}"))
                embed(model, inputs, args.batch_size, cli.log, prefix, path)
                del model
            embeddings = np.load(path)
            scores[name] = (embeddings, probe_correct(embeddings, labels, fold),
                            knn_correct(embeddings, labels, args.neighbours))
            probe_rows = [r for r in probe_rows if (r["dataset"], r["model"]) != (dataset, name)]
            probe_rows.append(score_row(dataset, n, name, scores, fold, args))
            add_throughput(probe_rows, throughput_rows, dataset)
            cli.log(f"{prefix} probe {probe_rows[-1]['probe_accuracy']:.2f}%, kNN "
                    f"{probe_rows[-1]['knn_accuracy']:.2f}%")
            outputs.write_csv(paths["probe.csv"], command, PROBE_FIELDS, probe_rows)
            with open(paths["probe.md"], "w", encoding="utf-8") as file:
                file.write(report(probe_rows, transfer_table(args.output_dir), command, args))
        keras.backend.clear_session()
    transfer_rows = transfer_table(args.output_dir)
    outputs.write_csv(paths["transfer.csv"], command, TRANSFER_FIELDS, transfer_rows)
    with open(paths["probe.md"], "w", encoding="utf-8") as file:
        file.write(report(probe_rows, transfer_rows, command, args))
    cli.log("Wrote " + ", ".join(paths.values()))
    return probe_rows


def score_row(dataset, n, name, scores, fold, args):
    embeddings, probe, knn = scores[name]
    reference_embeddings, reference_probe, reference_knn = scores[REFERENCE]
    projection, k, transfer = describe(name)
    row = dict(dataset=dataset, sequence_length=n, model=name, projection=projection,
               projected_dim=k, transfer=transfer, texts=len(probe), folds=args.folds,
               probe_accuracy=round(100 * probe.mean(), 3),
               knn_accuracy=round(100 * knn.mean(), 3),
               embedding_cosine=round(float(conversion.cosines(
                   embeddings, reference_embeddings).mean()), 5))
    if name != REFERENCE:
        for score, correct, reference in (("probe", probe, reference_probe),
                                          ("knn", knn, reference_knn)):
            difference = paired_difference(correct, reference, args.bootstrap, args.seed)
            row.update({f"{score}_{part}": round(value, 3) for part, value in
                        zip(("difference", "low", "high"), difference)})
    return row


def add_throughput(probe_rows, throughput_rows, dataset):
    """Each model's median texts/s over the rounds (a transferred conversion's: its fresh
    start's), and its speed-up over the BERT's."""
    median = {}
    for row in throughput_rows:
        if row["dataset"] == dataset:
            median.setdefault(row["model"], []).append(row["texts_per_second"])
    median = {name: float(np.median(values)) for name, values in median.items()}
    for row in probe_rows:
        timed = fresh_start(row["model"])
        if row["dataset"] == dataset and timed in median:
            row["texts_per_second"] = round(median[timed], 2)
            if REFERENCE in median:
                row["speedup"] = round(median[timed] / median[REFERENCE], 2)


def transfer_table(output_dir):
    rows = []
    root = os.path.join(output_dir, "transfer")
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, name, "report.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as file:
                report_ = json.load(file)
            for key in ("layer_error_before", "layer_error_after"):
                report_[key] = " ".join(f"{e:.3f}" for e in report_[key])
            rows.append(report_)
    return rows


def report(probe_rows, transfer_rows, command, args):
    """The markdown report: the answer to the targets first, then the tables."""
    lines = ["# Frozen features: the BERT against its Linformer conversions", ""]
    best = [r for r in probe_rows if r["model"] != REFERENCE and r.get("probe_low") is not None]
    datasets = sorted({r["dataset"] for r in probe_rows})
    verdicts = []
    for name in sorted({r["model"] for r in best}):
        rows = {r["dataset"]: r for r in best if r["model"] == name}
        if set(rows) != set(DATASETS):
            continue
        within = all(min(r["probe_difference"], r["knn_difference"]) >= -1
                     and min(r["probe_low"], r["knn_low"]) > -1 for r in rows.values())
        fast = (rows["bbc_news"].get("speedup") or 0) >= 2
        verdicts.append((name, within, fast))
    if verdicts:
        met = [name for name, within, fast in verdicts if within and fast]
        lines.append("**Targets** (within 1 point of the BERT on both probes of both datasets, "
                     "95% interval above -1, at least 2x its throughput at n = 512): "
                     + (f"met by {', '.join(met)}." if met else "met by no conversion."))
    else:
        lines.append("**Targets**: not decided yet (not every dataset is measured).")
    lines.append("")
    for dataset in datasets:
        rows = [r for r in probe_rows if r["dataset"] == dataset]
        lines += [f"## {dataset} (n = {rows[0]['sequence_length']}, {rows[0]['texts']} texts, "
                  f"{rows[0]['folds']} folds)", ""]
        table = []
        for r in rows:
            table.append([r["model"], f"{r['probe_accuracy']:.2f}", interval(r, "probe"),
                          f"{r['knn_accuracy']:.2f}", interval(r, "knn"),
                          f"{r['embedding_cosine']:.3f}",
                          "" if r.get("texts_per_second") is None else
                          f"{r['texts_per_second']:.1f}",
                          "" if r.get("speedup") is None else f"{r['speedup']:.2f}x"])
        lines += [outputs.markdown_table(
            ["model", "probe %", "vs BERT (95%)", "kNN %", "vs BERT (95%)",
             "embedding cosine", "texts/s", "speed-up"], table), ""]
    if transfer_rows:
        lines += ["## Attention transfer", "", outputs.markdown_table(
            ["n", "k", "lengths", "texts", "epochs", "steps", "seconds", "cosine before",
             "cosine after", "layer errors before", "layer errors after"],
            [[r["sequence_length"], r["projected_dim"], r.get("lengths") or "full",
              r["texts"], r["epochs"], r["steps"],
              f"{r['seconds']:.0f}", f"{r['embedding_cosine_before']:.3f}",
              f"{r['embedding_cosine_after']:.3f}", r["layer_error_before"],
              r["layer_error_after"]] for r in transfer_rows]), ""]
    lines += ["Produced by:", "", "```sh", command, "```", "",
              outputs.machine_description(), ""]
    return "\n".join(lines)


def interval(row, score):
    """`+d.dd [+l.ll, +h.hh]`: a score's difference to the BERT and its 95% interval."""
    if row.get(f"{score}_low") is None:
        return ""
    return (f"{row[f'{score}_difference']:+.2f} [{row[f'{score}_low']:+.2f}, "
            f"{row[f'{score}_high']:+.2f}]")


def main(argv=None):
    parser, args = parse_args(argv)
    command = outputs.command_line(PROGRAM, argv)
    return cli.run(parser, functools.partial(evaluate, command=command), args)


if __name__ == "__main__":
    main()
