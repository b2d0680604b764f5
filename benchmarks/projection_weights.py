"""How far a model's learned projections E are from the window average they start as.

For every learned (`projection="linear"`) E of a saved model, compares each
column with the same column of `window_average_matrix(n, k)` (the mean over
window j, which E starts near by default) and prints one row per weight:

- deviation: the norm of (E - average) in a column over the average's norm,
  the median over columns (0.1 for the untrained default);
- in-window sum: the sum of a column's weights on its own window (1 for the
  average);
- off-window rms: the root mean square of the weights outside the window
  (0 for the average).

    python -m benchmarks.projection_weights RUN_DIR_OR_KERAS_FILE [...]
"""

import os

import numpy as np

from keras_linformer.programs import cli

PROGRAM = "benchmarks.projection_weights"
MODEL_FILES = ("classifier.keras", "masked_lm.keras")


def window_statistics(matrix):
    """`(deviation, in-window sum, off-window rms)` of an `(n, k)` E (see the module doc)."""
    from keras_linformer.layers.projection_initializers import window_average_matrix

    matrix = np.asarray(matrix, "float64")
    average = window_average_matrix(*matrix.shape)
    inside = average > 0
    deviation = np.linalg.norm(matrix - average, axis=0) / np.linalg.norm(average, axis=0)
    in_window = np.where(inside, matrix, 0.0).sum(axis=0)
    off_window = matrix[~inside]
    rms = float(np.sqrt(np.mean(off_window ** 2))) if off_window.size else 0.0
    return float(np.median(deviation)), float(np.mean(in_window)), rms


def model_file(path):
    """The saved model of a run directory (`classifier.keras` or `masked_lm.keras`), or `path`."""
    if os.path.isdir(path):
        for name in MODEL_FILES:
            if os.path.isfile(os.path.join(path, name)):
                return os.path.join(path, name)
        raise ValueError(f"model: {path!r} holds none of {', '.join(MODEL_FILES)}; give a "
                         "fine-tuning or pretraining output directory or a .keras file.")
    if not os.path.isfile(path):
        raise ValueError(f"model: {path!r} is neither a directory nor a file.")
    return path


def learned_projections(path):
    """`[(weight path, (n, k) matrices)]` of the learned E in the model saved at `path`."""
    from keras_linformer.export.sources import load_keras_file

    model = load_keras_file(model_file(path))
    backbone = getattr(model, "backbone", model)
    projection = getattr(backbone, "projection", None)
    if projection != "linear":
        raise ValueError(f"model: {path!r} has no learned projection E (its projection is "
                         f"{projection!r}; only projection='linear' learns one).")
    result = []
    for variable in backbone.weights:
        if variable.path.rsplit("/", 1)[-1].endswith("projection"):
            value = np.asarray(variable.numpy())
            result.append((variable.path, value.reshape((-1,) + value.shape[-2:])))
    return result


def rows(paths):
    for path in paths:
        for name, matrices in learned_projections(path):
            for index, matrix in enumerate(matrices):
                label = name if len(matrices) == 1 else f"{name}[{index}]"
                yield (path, label, matrix.shape) + window_statistics(matrix)


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("models", nargs="+", metavar="MODEL",
                        help="A fine-tuning or pretraining output directory, or a .keras file.")
    cli.add_debug_flag(parser)
    return parser, parser.parse_args(argv)


def main(argv=None):
    parser, args = parse_args(argv)

    def work(args):
        print("| model | weight | n x k | deviation from the window average | in-window sum | "
              "off-window rms |")
        print("|---|---|---|---|---|---|")
        for path, name, shape, deviation, in_window, rms in rows(args.models):
            print(f"| {path} | {name} | {shape[0]} x {shape[1]} | {deviation:.3f} | "
                  f"{in_window:.3f} | {rms:.4f} |")

    return cli.run(parser, work, args)


if __name__ == "__main__":
    main()
