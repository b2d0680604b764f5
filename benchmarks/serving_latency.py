"""Serving latency of the Linformer and the Transformer classifier exports, side by side.

For each sequence length n, both models (`backbone_for` with
`attention="linformer"`, linear E shared layerwise, k = --projected-dim, and
`attention="transformer"`, keras-hub's BertBackbone of the same shape; random weights, which
do not change the time) are exported with
`keras_linformer.export.export_classifier`, then loaded in one fresh process
the way TF Serving loads a SavedModel: TensorFlow's session-based loader
(`tf.compat.v1.saved_model.loader.load`, tag `serve`) after
`import tensorflow_text`. One client sends requests one after another,
alternating between the two models, to the raw-text signature
(`serving_default`: long BBC News articles, each longer than n tokens) and
the token-id one (`predict_token_ids`), at each batch size; a cell stops
after --requests requests or --seconds seconds, whichever comes first.
Reported per cell: requests, p50 and p99 latency (p99 only from 50 requests
on: fewer cannot place it), and texts per second (batch / mean latency).

`--runtimes` adds the runtimes a CPU user serves token ids with: the same
classifiers exported with Keras's `model.export` to ONNX (run by ONNX Runtime)
and to OpenVINO's IR (run by OpenVINO on the CPU, float32), each in a fresh
process of its own, the two models alternating there as well.

    python -m benchmarks.serving_latency --lengths 512 4096 --batch-sizes 1 32 \\
        --output benchmarks/results/serving-latency.csv
    python -m benchmarks.serving_latency --lengths 512 4096 --batch-sizes 1 8 \\
        --signatures token_ids --runtimes tf_serving onnx openvino \\
        --output benchmarks/results/runtime-latency.csv
"""

import collections
import functools
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import outputs
from keras_linformer.programs import cli

PROGRAM = "benchmarks.serving_latency"

MODELS = ("linformer", "transformer")
SIGNATURES = {"text": "serving_default", "token_ids": "predict_token_ids"}
# Where the exports are served: TF's session loader (as TF Serving), ONNX Runtime, OpenVINO.
RUNTIMES = ("tf_serving", "onnx", "openvino")
FIELDS = ("runtime", "sequence_length", "batch_size", "signature", "model", "requests",
          "p50_ms", "p99_ms", "max_ms", "texts_per_s", "status", "note", "machine",
          "matmul_gflops")
RESULT_MARKER = "SERVING_RESULT "
SHAPE = dict(num_layers=2, hidden_dim=256, num_heads=4, intermediate_dim=1024)


def vocabulary_and_texts(n):
    """A word-level vocabulary of the BBC News articles and texts longer than n tokens."""
    from keras_linformer import data
    from keras_linformer.data.vocabulary import SPECIAL_TOKENS

    articles = data.load_bbc_news().train.texts
    counts = collections.Counter(w for text in articles for w in text.lower().split())
    words = [w for w, _ in counts.most_common(8192 - len(SPECIAL_TOKENS))
             if w not in SPECIAL_TOKENS]
    texts, current = [], []
    for article in articles:
        current.append(article)
        if sum(len(a.split()) for a in current) > 1.2 * n:
            texts.append("\n\n".join(current))
            current = []
        if len(texts) == 64:
            break
    return list(SPECIAL_TOKENS) + words, texts


def export_models(n, projected_dim, base_dir, runtimes):
    """Exports both classifiers for sequence length n; returns {runtime: {model: path}}."""
    import keras

    from keras_linformer.export import export_classifier
    from keras_linformer.models import LinformerTextClassifier
    from keras_linformer.models import backbone_for

    vocabulary, _ = vocabulary_and_texts(n)
    paths = {runtime: {} for runtime in runtimes}
    for model in MODELS:
        keras.utils.set_random_seed(0)
        backbone = backbone_for(
            model, vocabulary_size=len(vocabulary), max_sequence_length=n,
            projected_dim=projected_dim, projection="linear", sharing="layerwise",
            dropout=0.1, **SHAPE)
        classifier = LinformerTextClassifier(backbone, num_classes=5, activation="softmax")
        classifier(token_ids_batch(1, n))  # Keras exports a called model; eager: no tracing.
        if "tf_serving" in runtimes:
            paths["tf_serving"][model] = export_classifier(
                classifier, vocabulary=vocabulary, label_names=[f"class{i}" for i in range(5)],
                base_dir=base_dir, model_name=f"{model}_n{n}", sequence_length=n)
        for runtime, suffix in (("onnx", "onnx"), ("openvino", "xml")):
            if runtime in runtimes:
                paths[runtime][model] = os.path.join(base_dir, f"{model}_n{n}.{suffix}")
                classifier.export(paths[runtime][model], format=runtime)
    return paths


def token_ids_batch(batch, n, seed=0):
    """Random token ids of `batch` full-length texts (the time does not depend on them)."""
    token_ids = np.random.default_rng(seed).integers(5, 8000, (batch, n)).astype("int32")
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": np.ones_like(token_ids)}


def load_callers(runtime, paths):
    """`{model: call(values) -> probabilities}` for the exports in `paths`, loaded in this
    process by `runtime` (the signature's input names: `call(values, signature)`)."""
    callers = {}
    if runtime == "onnx":
        import onnxruntime

        for model, path in paths.items():
            session = onnxruntime.InferenceSession(path)
            names = [i.name for i in session.get_inputs()]
            callers[model] = functools.partial(
                lambda session, names, values, signature: session.run(
                    None, {k: values[k] for k in names})[0], session, names)
        return callers
    if runtime == "openvino":
        import openvino

        for model, path in paths.items():
            compiled = openvino.Core().compile_model(path, "CPU",
                                                     {"INFERENCE_PRECISION_HINT": "f32"})
            request = compiled.create_infer_request()
            names = [i.get_any_name() for i in compiled.inputs]
            callers[model] = functools.partial(
                lambda request, names, output, values, signature: request.infer(
                    {k: values[k] for k in names})[output], request, names, compiled.outputs[0])
        return callers
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the text ops, as TF Serving links them)

    for model, path in paths.items():
        graph = tf.Graph()
        session = tf.compat.v1.Session(graph=graph)
        with graph.as_default():
            meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)

        def call(values, signature, session=session, signatures=meta.signature_def):
            definition = signatures[SIGNATURES[signature]]
            feed = {definition.inputs[k].name: values[k] for k in definition.inputs}
            return session.run(definition.outputs["probabilities"].name, feed)

        callers[model] = call
    return callers


def serve_cells(spec):
    """In a fresh process: loads both exports with the spec's runtime and times requests."""
    n, runtime = spec["sequence_length"], spec["runtime"]
    callers = load_callers(runtime, spec["paths"])
    _, texts = vocabulary_and_texts(n) if "text" in spec["signatures"] else (None, None)
    rows = []
    for batch in spec["batch_sizes"]:
        for signature in spec["signatures"]:
            values = (
                {"text": np.array([texts[i % len(texts)] for i in range(batch)], dtype=object)}
                if signature == "text" else token_ids_batch(batch, n))
            latencies = {model: [] for model in callers}
            for call in callers.values():  # Warm-up, untimed.
                call(values, signature)
            start = time.perf_counter()
            while (min(len(v) for v in latencies.values()) < spec["requests"]
                   and time.perf_counter() - start < spec["seconds"]):
                for model, call in callers.items():  # Alternating.
                    began = time.perf_counter()
                    probabilities = call(values, signature)
                    latencies[model].append(time.perf_counter() - began)
                    assert np.all(np.isfinite(probabilities))
            for model, found in latencies.items():
                found = np.array(found) * 1e3
                rows.append(dict(
                    runtime=runtime, sequence_length=n, batch_size=batch, signature=signature,
                    model=model, requests=len(found),
                    p50_ms=round(float(np.percentile(found, 50)), 3),
                    p99_ms=(round(float(np.percentile(found, 99)), 3)
                            if len(found) >= 50 else ""),
                    max_ms=round(float(found.max()), 3),
                    texts_per_s=round(batch / (found.mean() / 1e3), 3), status="ok"))
                print(f"{runtime} n={n} batch={batch} {signature} {model}: {len(found)} "
                      f"requests, p50 {rows[-1]['p50_ms']:.1f} ms", file=sys.stderr, flush=True)
    return rows


def summary(rows):
    lines = ["| runtime | n | batch | signature | Transformer p50 (ms) | Linformer p50 (ms) | "
             "p50 ratio | Transformer p99 | Linformer p99 | texts/s ratio |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    cells = collections.defaultdict(dict)
    for row in rows:
        if row["status"] == "ok":
            cells[(row.get("runtime") or "tf_serving", int(row["sequence_length"]),
                   int(row["batch_size"]), row["signature"])][row["model"]] = row
    for (runtime, n, batch, signature), pair in sorted(cells.items()):
        if len(pair) < 2:
            continue
        t, lf = pair["transformer"], pair["linformer"]
        lines.append(
            f"| {runtime} | {n} | {batch} | {signature} | {float(t['p50_ms']):.1f} | "
            f"{float(lf['p50_ms']):.1f} | {float(lf['p50_ms']) / float(t['p50_ms']):.3f} | "
            f"{t['p99_ms'] or '-'} | {lf['p99_ms'] or '-'} | "
            f"{float(lf['texts_per_s']) / float(t['texts_per_s']):.2f} |")
    return "\n".join(lines)


def parse_args(argv):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--lengths", nargs="+", type=cli.positive_int, default=[512, 4096])
    parser.add_argument("--batch-sizes", nargs="+", type=cli.positive_int, default=[1, 32])
    parser.add_argument("--signatures", nargs="+", choices=sorted(SIGNATURES),
                        default=sorted(SIGNATURES))
    parser.add_argument("--runtimes", nargs="+", choices=RUNTIMES, default=["tf_serving"],
                        help="where to serve the exports; onnx and openvino serve the token_ids "
                     "signature only")
    parser.add_argument("--projected-dim", type=cli.positive_int, default=128)
    parser.add_argument("--requests", type=cli.positive_int, default=100,
                        help="requests per model and cell (default: %(default)s)")
    parser.add_argument("--seconds", type=cli.positive_float, default=60.0,
                        help="most seconds per cell (default: %(default)s)")
    parser.add_argument("--output", required=True, help="the CSV to write")
    cli.add_debug_flag(parser)
    args = parser.parse_args(argv)
    too_short = [n for n in args.lengths if n < args.projected_dim]
    if too_short:
        parser.error(f"--lengths {too_short} are below --projected-dim {args.projected_dim}; "
                     "the Linformer projects n positions to k <= n slots.")
    if "token_ids" not in args.signatures and set(args.runtimes) - {"tf_serving"}:
        parser.error("--runtimes onnx and openvino serve token ids only: add --signatures "
                     "token_ids.")
    if os.path.exists(args.output):
        parser.error(f"--output {args.output!r} exists; name a new file.")
    return parser, args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--cell"]:
        rows = serve_cells(json.loads(argv[1]))
        sys.stdout.write(RESULT_MARKER + json.dumps(rows) + "\n")
        sys.stdout.flush()
        os._exit(0)
    parser, args = parse_args(argv)
    return cli.run(parser, functools.partial(measure, argv=argv), args)


def measure(args, argv):
    """Exports both models at each length, serves them in a fresh process, writes the CSV."""
    from benchmarks.harness import runner

    machine = dict(machine=outputs.machine_description(), matmul_gflops=runner.matmul_rate())
    print(f"{machine['machine']}; float32 matmul {machine['matmul_gflops'] or 0:.0f} GFLOP/s",
          flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as base_dir:
        for n in args.lengths:
            print(f"n={n}: exporting both models", flush=True)
            paths = export_models(n, args.projected_dim, base_dir, args.runtimes)
            for runtime in args.runtimes:
                signatures = (args.signatures if runtime == "tf_serving" else ["token_ids"])
                spec = dict(runtime=runtime, sequence_length=n, paths=paths[runtime],
                            batch_sizes=args.batch_sizes, signatures=signatures,
                            requests=args.requests, seconds=args.seconds)
                done = subprocess.run(
                    [sys.executable, "-m", PROGRAM, "--cell", json.dumps(spec)],
                    stdout=subprocess.PIPE, text=True)
                found = [line for line in done.stdout.splitlines()
                         if line.startswith(RESULT_MARKER)]
                if found:
                    rows.extend(json.loads(found[-1][len(RESULT_MARKER):]))
                else:
                    rows.extend(dict(runtime=runtime, sequence_length=n, model=m,
                                     status="error", note=f"exit {done.returncode}")
                                for m in MODELS)
    command = outputs.command_line(PROGRAM, argv)
    outputs.write_csv(args.output, command, FIELDS, [dict(row, **machine) for row in rows])
    print(f"command: {command}")
    print(summary([{k: str(v) for k, v in r.items()} for r in rows]))
    if not any(r["status"] == "ok" for r in rows):
        raise SystemExit("no cell finished; see the errors above.")


if __name__ == "__main__":
    main()
