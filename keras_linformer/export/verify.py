"""Checks an export the way TF Serving loads it, against the Keras model it came from.

TF Serving's binary cannot be installed here, so the closest loader is
`saved_model_cli` (TF1 session loader, like TF Serving's), run in a fresh
process that imported `tensorflow_text` first, as TF Serving links the
tensorflow-text ops. Inputs go in as `.npy` files (`--input_exprs` only
takes Python literals, and no raw bytes).
"""

import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

import keras
import numpy as np

from keras_linformer import data
from keras_linformer.data.vocabulary import MASK
from keras_linformer.export import layout
from keras_linformer.export import serving
from keras_linformer.export import sources
from keras_linformer.export import warmup

SAVED_MODEL_CLI = """\
import sys
import tensorflow_text  # noqa: F401  Registers the tokenizer ops, as TF Serving links them.
from tensorflow.python.tools import saved_model_cli
sys.argv = ["saved_model_cli"] + sys.argv[1:]
saved_model_cli.main()
"""

SAVED_MODEL_LOAD = """\
import json, os, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
export_dir, cases_dir = sys.argv[1:3]
loaded = tf.saved_model.load(export_dir, tags=["serve"])
with open(os.path.join(cases_dir, "cases.json"), encoding="utf-8") as file:
    cases = json.load(file)
for case, signature in cases.items():
    inputs = np.load(os.path.join(cases_dir, case + ".npz"), allow_pickle=True)
    outputs = loaded.signatures[signature](**{k: tf.constant(inputs[k]) for k in inputs.files})
    np.savez(os.path.join(cases_dir, case + ".out.npz"), **{k: v.numpy() for k, v in outputs.items()})
print("ran", len(cases), "cases on signatures", sorted(loaded.signatures))
"""

SUBPROCESS_TIMEOUT = 600
# Fresh TensorFlow processes run at once (each needs about 1 GB).
PARALLEL_PROCESSES = 2


def verification_texts(sequence_length, task):
    """The texts every verification feeds: the cases a served model must survive."""
    long_text = b"a sentence that goes on and on " * sequence_length
    texts = [
        b"",
        b"A short text, not bad at all.",
        "Caf\u00e9 na\u00efve \u00fcber \u65e5\u672c\u8a9e \U0001f600 \u00c5ngstr\u00f6m".encode(),
        long_text,
        b"invalid \xff\xfe UTF-8 \xc3(",
        b"   \t\n ",
    ]
    if task == "masked_lm":
        texts += [
            b"The [MASK] sat on the [MASK].",
            b"[MASK] " * (sequence_length + 4),
            b"[MASK] " + long_text + b"[MASK]",
            b"\xff [MASK] \xc3",
            "Caf\u00e9 [MASK] \u65e5\u672c\u8a9e".encode(),
        ]
    return texts


class Check:
    """One line of a verification report."""

    def __init__(self, name, passed, detail):
        self.name, self.passed, self.detail = name, passed, detail

    def __str__(self):
        return f"  {'PASS' if self.passed else 'FAIL'}  {self.name}: {self.detail}"


class VerificationReport:
    """What `verify` found; `str(report)` is the printed report.

    Attributes:
        export_dir: str, the version directory verified.
        info: dict, its `export_info.json`.
        checks: list of checks, each with `name`, `passed` and `detail`.
        passed: bool, whether there were checks and all passed.
        inputs: `{signature: {input: array}}`, what was fed.
        signatures: `{signature: {"inputs"|"outputs": {key: (dtype,
            shape)}}}` as `saved_model_cli show --all` printed them.
        cli_outputs: `{signature: {output: array}}` from
            `saved_model_cli run`.
        load_outputs: `{signature: {output: array}}` from
            `tf.saved_model.load` in a fresh process.
    """

    def __init__(self, export_dir, info, header):
        self.export_dir, self.info, self.header = export_dir, info, header
        self.checks = []
        self.inputs, self.signatures, self.cli_outputs, self.load_outputs = {}, {}, {}, {}

    @property
    def passed(self):
        return bool(self.checks) and all(check.passed for check in self.checks)

    def summary(self):
        failed = sum(not check.passed for check in self.checks)
        if failed:
            return f"FAILED: {failed} of {len(self.checks)} checks failed for {self.export_dir}"
        return f"PASSED: all {len(self.checks)} checks for {self.export_dir}"

    def __str__(self):
        return "\n".join([self.header, *map(str, self.checks), self.summary()])


def verify(export_dir, model=None, texts=None, atol=1e-5, log=print):
    """Loads an export the way TF Serving does and compares it with the Keras model.

    Checks, each a line of the report:

    1. layout: a SavedModel in an integer version directory, with the
       warmup file, `vocab.txt` and `export_info.json` in `assets.extra/`.
    2. `saved_model_cli show --all` (fresh process): tag-set `serve`
       holds every expected signature with the expected input and output
       dtypes and shapes.
    3. `saved_model_cli run --tag_set serve` for each signature (fresh
       process, session loader, inputs from `.npy` files) on texts that
       include an empty string, non-ASCII text, a text longer than n,
       whitespace only and invalid UTF-8 bytes: the outputs match the
       Keras model's predictions within `atol` (probabilities and
       fill-mask scores; ids and names exactly, up to ties within `atol`).
    4. `tf.saved_model.load` (fresh process): every signature gives the
       same outputs, and every warmup request runs.
    5. warmup: `tf_serving_warmup_requests` parses as `PredictionLog`
       records whose signature, input names and dtypes and shapes match.

    Args:
        export_dir: str, a version directory (`saved_models/NAME/3`), or a
            model directory (`saved_models/NAME`) for its latest version.
        model: the Keras model to compare with: a model object, its `.keras`
            file or its training output directory. `None` means the
            `.keras` file recorded at export time. Defaults to `None`.
        texts: optional list of extra str or bytes texts to feed.
        atol: float, the largest difference allowed for probabilities and
            scores. Defaults to `1e-5`.
        log: callable that receives each report line as it is known, or
            `None`. Defaults to `print`.

    Returns:
        A `VerificationReport`; `report.passed` tells the outcome.

    Raises:
        FileNotFoundError: `export_dir` does not exist or is not an export.
        ValueError: the export was not written by `keras_linformer.export`,
            or `model` does not fit it.

    Example:

    ```python
    report = keras_linformer.export.verify("saved_models/linformer_classifier")
    assert report.passed, report
    ```
    """
    log = log or (lambda line: None)
    if not isinstance(atol, (int, float)) or isinstance(atol, bool) or not atol > 0:
        raise ValueError(f"atol: must be a positive number. Received: atol={atol!r}")
    if texts is not None and (
        isinstance(texts, (str, bytes))
        or not all(isinstance(text, (str, bytes)) for text in texts)
    ):
        raise ValueError(
            f"texts: must be a list of str or bytes. Received: {texts!r:.100}"
        )
    export_dir = layout.latest_version_dir(export_dir)
    info = serving.read_export_info(export_dir)
    task = info["task"]
    if model is None:
        model = info.get("source_model")
        if model is None or not os.path.isfile(model):
            raise ValueError(
                f"model: the export records no readable source model "
                f"({model!r}); pass the Keras model (or its .keras file) it "
                "was exported from."
            )
    extra = os.path.join(export_dir, warmup.EXTRA_DIR)
    source = sources.load_source(
        task,
        model,
        os.path.join(extra, sources.VOCABULARY_FILE),
        info.get("label_names"),
        info["sequence_length"],
    )
    expected = serving.expected_signatures(info)
    what = (
        f"text classifier, {len(info['label_names'])} classes {info['label_names']}"
        if task == "classifier"
        else f"masked LM, top_k={info['top_k']}, max_masks={info['max_masks']}"
    )
    report = VerificationReport(
        export_dir,
        info,
        f"Verifying {export_dir} ({what}, sequence length {info['sequence_length']}, "
        f"model name {info['model_name']!r})",
    )
    log(report.header)

    def add(check):
        report.checks.append(check)
        log(str(check))

    add(check_layout(export_dir))
    batch = verification_texts(info["sequence_length"], task) + [
        text.encode("utf-8") if isinstance(text, str) else text for text in texts or []
    ]
    reference = KerasReference(source, info)
    report.inputs = cases = reference.cases(batch)
    requests, warmup_check = check_warmup(export_dir, info, expected)
    with tempfile.TemporaryDirectory(prefix="keras_linformer_verify_") as work:
        # Each check is a fresh process that spends most of its time
        # importing TensorFlow: run them side by side, report in order.
        with concurrent.futures.ThreadPoolExecutor(PARALLEL_PROCESSES) as pool:
            show = pool.submit(check_show, export_dir, expected)
            runs = {
                signature: pool.submit(run_cli, export_dir, signature, inputs, work)
                for signature, inputs in cases.items()
            }
            load = pool.submit(run_load, export_dir, cases, requests, work)
            check, report.signatures = show.result()
            add(check)
            for signature, future in runs.items():
                check, outputs = check_run(signature, future.result(), reference, atol, len(batch))
                if outputs is not None:
                    report.cli_outputs[signature] = outputs
                add(check)
            check, report.load_outputs = check_load(
                load.result(), report.cli_outputs, reference, atol
            )
            add(check)
    add(warmup_check)
    log(report.summary())
    return report


class KerasReference:
    """The Keras model's predictions for the inputs fed to the export."""

    def __init__(self, source, info):
        self.source, self.info = source, info
        self.task = info["task"]
        tokenizer = data.make_tokenizer(
            source.vocabulary, mask_token_in_text=self.task == "masked_lm"
        )
        self.encoder = data.TextEncoder(tokenizer, info["sequence_length"])

    def cases(self, texts):
        """`{signature: {input: array}}` for every expected signature."""
        self.texts = np.array(texts, dtype=object)
        self.predictions = None
        self.x = {k: v.numpy() for k, v in self.encoder(self.texts).items()}
        text = {"text": self.texts}
        if self.task == "classifier":
            self.cases_fed = {
                "serving_default": text,
                "predict_token_ids": {
                    "token_ids": self.x["token_ids"],
                    "padding_mask": self.x["padding_mask"],
                },
            }
        else:
            self.cases_fed = {"fill_mask": text, "serving_default": text}
        return self.cases_fed

    def classifier_probabilities(self):
        if self.predictions is None:
            outputs = self.source.model(self.x, training=False)
            self.predictions = np.asarray(
                keras.ops.convert_to_numpy(serving.probabilities_from(self.source.model, outputs)),
                "float64",
            )
        return self.predictions

    def fill_mask(self):
        """`(positions (B, P) with -1 padding, num_masks (B,), probabilities (B, P, V))`."""
        if self.predictions is None:
            self.predictions = self.compute_fill_mask()
        return self.predictions

    def compute_fill_mask(self):
        mask_id = self.source.vocabulary.index(MASK)
        max_masks = self.info["max_masks"]
        is_mask = (self.x["token_ids"] == mask_id) & (self.x["padding_mask"] == 1)
        positions = np.full((len(is_mask), max_masks), -1, "int32")
        for row, found in enumerate(is_mask):
            where = np.flatnonzero(found)[:max_masks]
            positions[row, : len(where)] = where
        logits = self.source.model(
            {**self.x, "mask_positions": np.maximum(positions, 0)}, training=False
        )
        logits = np.asarray(keras.ops.convert_to_numpy(logits), "float64")
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        return positions, is_mask.sum(1).astype("int32"), probabilities

    def compare(self, outputs, atol):
        """Returns `(passed, detail)` for one signature's outputs."""
        if self.task == "classifier":
            return self.compare_classifier(outputs, atol)
        return self.compare_fill_mask(outputs, atol)

    def compare_classifier(self, outputs, atol):
        expected = self.classifier_probabilities()
        probabilities = outputs["probabilities"]
        if probabilities.shape != expected.shape:
            return False, f"probabilities have shape {probabilities.shape}, Keras {expected.shape}"
        error = float(np.abs(probabilities - expected).max())
        label_ids = outputs["label_ids"]
        rows = np.arange(len(label_ids))
        # A tie within `atol` may break either way.
        ids_ok = bool(np.all(expected[rows, label_ids] >= expected.max(-1) - atol))
        names = np.array([name.encode() for name in self.source.label_names], dtype=object)
        labels_ok = list(outputs["labels"]) == list(names[label_ids])
        passed = error <= atol and ids_ok and labels_ok
        detail = (
            f"max |probabilities - Keras| = {error:.1e} (tolerance {atol:g}); "
            f"label_ids {'are' if ids_ok else 'are NOT'} Keras's argmax; "
            f"labels {'match' if labels_ok else 'do NOT match'} label_ids"
        )
        return passed, detail

    def compare_fill_mask(self, outputs, atol):
        positions, num_masks, probabilities = self.fill_mask()
        top_k = self.info["top_k"]
        problems = []
        if not np.array_equal(outputs["num_masks"], num_masks):
            problems.append(f"num_masks {outputs['num_masks'].tolist()} vs Keras {num_masks.tolist()}")
        if not np.array_equal(outputs["mask_positions"], positions):
            problems.append("mask_positions differ from the [MASK] positions of the encoded text")
        valid = positions >= 0
        ids, scores = outputs["top_k_ids"], outputs["top_k_scores"]
        tokens = outputs["top_k_tokens"]
        expected_scores = -np.sort(-probabilities, axis=-1)[..., :top_k]
        error = float(np.abs(scores - expected_scores)[valid].max(initial=0.0))
        if error > atol:
            problems.append(f"max |top_k_scores - Keras| = {error:.1e}")
        picked = np.take_along_axis(probabilities, np.maximum(ids, 0), axis=-1)
        if np.abs(picked - scores)[valid].max(initial=0.0) > atol:
            problems.append("top_k_scores are not Keras's probabilities of top_k_ids")
        top1_ok = bool(np.all((picked[..., 0] >= probabilities.max(-1) - atol)[valid]))
        if not top1_ok:
            problems.append("top-1 is not Keras's argmax")
        vocabulary = np.array([token.encode() for token in self.source.vocabulary], dtype=object)
        if list(tokens[valid].ravel()) != list(vocabulary[ids[valid].ravel()]):
            problems.append("top_k_tokens are not the vocabulary's tokens of top_k_ids")
        unused = ~valid
        if not (
            np.all(ids[unused] == -1) and np.all(scores[unused] == 0) and np.all(tokens[unused] == b"")
        ):
            problems.append("unused slots are not -1 / 0 / ''")
        detail = (
            f"{int(valid.sum())} masks filled, {int(unused.sum())} unused slots; "
            f"max |top_k_scores - Keras| = {error:.1e} (tolerance {atol:g}); "
            f"top-1 {'is' if top1_ok else 'is NOT'} Keras's argmax"
        )
        if problems:
            detail += "; " + "; ".join(problems)
        return not problems, detail


def run_python(code, args, what):
    """Runs `python -c code args` in a fresh process; returns `(ok, stdout, stderr tail)`."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    try:
        result = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=SUBPROCESS_TIMEOUT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return False, "", f"{what} did not finish in {SUBPROCESS_TIMEOUT} s"
    tail = " | ".join(
        line.strip()
        for line in result.stderr.strip().splitlines()[-3:]
        if line.strip()
    )
    if result.returncode != 0:
        return False, result.stdout, f"{what} exited with status {result.returncode}: {tail}"
    return True, result.stdout, tail


def check_layout(export_dir):
    name = "layout"
    problems = []
    if not os.path.basename(os.path.normpath(export_dir)).isdigit():
        problems.append("the directory is not an integer version (TF Serving skips it)")
    required = [
        "saved_model.pb",
        "variables",
        os.path.join(warmup.EXTRA_DIR, warmup.WARMUP_FILE),
        os.path.join(warmup.EXTRA_DIR, sources.VOCABULARY_FILE),
        os.path.join(warmup.EXTRA_DIR, serving.INFO_FILE),
    ]
    missing = [path for path in required if not os.path.exists(os.path.join(export_dir, path))]
    if missing:
        problems.append(f"missing {missing}")
    if problems:
        return Check(name, False, "; ".join(problems))
    return Check(
        name,
        True,
        f"version {os.path.basename(os.path.normpath(export_dir))} holds "
        + ", ".join(required),
    )


SIGNATURE_RE = re.compile(r"^signature_def\['([^']+)'\]:", re.M)
TENSOR_RE = re.compile(
    r"(inputs|outputs)\['([^']+)'\] tensor_info:\s+dtype: (\w+)\s+shape: ([^\n]+)"
)
DTYPE_NAMES = {"DT_STRING": "string", "DT_INT32": "int32", "DT_INT64": "int64", "DT_FLOAT": "float32"}


def parse_show_all(text):
    """`{signature: {"inputs": {key: (dtype, shape)}, "outputs": {...}}}` from `show --all`."""
    signatures = {}
    blocks = SIGNATURE_RE.split(text)
    for name, body in zip(blocks[1::2], blocks[2::2]):
        entry = signatures[name] = {"inputs": {}, "outputs": {}}
        for side, key, dtype, shape in TENSOR_RE.findall(body):
            shape = shape.strip()
            dims = (
                shape
                if shape == "unknown_rank"
                else tuple(int(d) for d in shape.strip("()").split(",") if d.strip())
            )
            entry[side][key] = (DTYPE_NAMES.get(dtype, dtype), dims)
    return signatures


def check_show(export_dir, expected):
    name = "saved_model_cli show --all"
    ok, stdout, error = run_python(
        SAVED_MODEL_CLI, ["show", "--dir", export_dir, "--all"], name
    )
    if not ok:
        return Check(name, False, error), {}
    found = parse_show_all(stdout)
    if "MetaGraphDef with tag-set: 'serve'" not in stdout:
        return Check(name, False, "no MetaGraphDef with tag-set 'serve'"), found
    problems = []
    for signature, (inputs, outputs) in expected.items():
        if signature not in found:
            problems.append(f"signature {signature!r} missing")
            continue
        for side, specs in (("inputs", inputs), ("outputs", outputs)):
            if found[signature][side] != specs:
                problems.append(
                    f"{signature} {side} are {found[signature][side]}, expected {specs}"
                )
    if problems:
        return Check(name, False, "; ".join(problems)), found
    described = "; ".join(
        f"{signature}({', '.join(f'{k}: {d}{list(s)}' for k, (d, s) in inputs.items())})"
        f" -> {', '.join(f'{k}: {d}{list(s)}' for k, (d, s) in outputs.items())}"
        for signature, (inputs, outputs) in expected.items()
    )
    return Check(name, True, f"tag-set 'serve': {described}"), found


def run_cli(export_dir, signature, inputs, work):
    """`saved_model_cli run` on one signature; returns `(outputs or None, error)`."""
    case_dir = os.path.join(work, f"cli_{signature}")
    os.makedirs(case_dir)
    arguments = []
    for key, value in inputs.items():
        path = os.path.join(case_dir, f"{key}.npy")
        np.save(path, value, allow_pickle=True)
        arguments.append(f"{key}={path}")
    out_dir = os.path.join(case_dir, "outputs")
    ok, _, error = run_python(
        SAVED_MODEL_CLI,
        [
            "run", "--dir", export_dir, "--tag_set", serving.SERVE_TAG,
            "--signature_def", signature, "--inputs", ";".join(arguments),
            "--outdir", out_dir,
        ],
        f"saved_model_cli run {signature}",
    )
    if not ok:
        return None, error
    return {
        file[: -len(".npy")]: np.load(os.path.join(out_dir, file), allow_pickle=True)
        for file in sorted(os.listdir(out_dir))
    }, None


def check_run(signature, result, reference, atol, batch_size):
    """Returns `(Check, outputs or None)` for one `run_cli` result."""
    name = f"saved_model_cli run {signature}"
    outputs, error = result
    if outputs is None:
        return Check(name, False, error), None
    passed, detail = reference.compare(outputs, atol)
    fed = "texts" if "text" in reference.cases_fed[signature] else "token-id rows"
    return (
        Check(
            name,
            passed,
            f"fresh process, session loader, tensorflow_text imported; {batch_size} {fed} "
            "(empty, non-ASCII, longer than n, whitespace, invalid UTF-8): " + detail,
        ),
        outputs,
    )


def check_warmup(export_dir, info, expected):
    """Returns `(requests, Check)`: the parsed warmup requests and their check."""
    name = "warmup requests"
    try:
        requests = warmup.read_warmup_requests(export_dir)
    except (OSError, ValueError) as error:
        return [], Check(name, False, str(error))
    problems = []
    if not requests:
        problems.append("the file holds no record")
    for index, request in enumerate(requests):
        where = f"record {index} ({request.signature_name!r})"
        if request.model_name != info["model_name"]:
            problems.append(f"{where}: model_spec.name {request.model_name!r}")
        if request.signature_name not in expected:
            problems.append(f"{where}: no such signature")
            continue
        inputs, _ = expected[request.signature_name]
        if set(request.inputs) != set(inputs):
            problems.append(f"{where}: inputs {sorted(request.inputs)}, expected {sorted(inputs)}")
            continue
        for key, (dtype, shape) in inputs.items():
            value = request.inputs[key]
            if request.dtypes[key] != dtype:
                problems.append(f"{where}: {key} is {request.dtypes[key]}, expected {dtype}")
            elif value.ndim != len(shape) or any(
                want != -1 and got != want for got, want in zip(value.shape, shape)
            ):
                problems.append(f"{where}: {key} has shape {value.shape}, expected {shape}")
    if problems:
        return requests, Check(name, False, "; ".join(problems))
    described = ", ".join(
        f"{r.signature_name}({', '.join(f'{k}: {r.dtypes[k]}{list(v.shape)}' for k, v in r.inputs.items())})"
        for r in requests
    )
    return requests, Check(
        name,
        True,
        f"{len(requests)} PredictionLog records match their signatures: {described}",
    )


def run_load(export_dir, cases, requests, work):
    """Runs every case and warmup request under `tf.saved_model.load` in a fresh process.

    Returns `(outputs by case or None, error, {case: signature}, {case: rows})`.
    """
    case_dir = os.path.join(work, "load")
    os.makedirs(case_dir)
    manifest, rows = {}, {}
    for signature, inputs in cases.items():
        manifest[f"verify_{signature}"] = signature
        np.savez(os.path.join(case_dir, f"verify_{signature}.npz"), **inputs)
    for index, request in enumerate(requests):
        if request.signature_name in cases:
            case = f"warmup_{index}"
            manifest[case] = request.signature_name
            rows[case] = len(next(iter(request.inputs.values())))
            np.savez(os.path.join(case_dir, f"{case}.npz"), **request.inputs)
    with open(os.path.join(case_dir, "cases.json"), "w", encoding="utf-8") as file:
        json.dump(manifest, file)
    ok, _, error = run_python(SAVED_MODEL_LOAD, [export_dir, case_dir], "tf.saved_model.load")
    if not ok:
        return None, error, manifest, rows
    outputs = {}
    for case in manifest:
        path = os.path.join(case_dir, case + ".out.npz")
        if os.path.isfile(path):
            with np.load(path, allow_pickle=True) as archive:
                outputs[case] = {key: archive[key] for key in archive.files}
    return outputs, None, manifest, rows


def check_load(result, cli_outputs, reference, atol):
    """Returns `(Check, {signature: outputs})` for the `run_load` result."""
    name = "tf.saved_model.load"
    outputs_by_case, error, manifest, rows = result
    if outputs_by_case is None:
        return Check(name, False, error), {}
    problems, verified = [], {}
    for case, signature in manifest.items():
        outputs = outputs_by_case.get(case)
        if outputs is None:
            problems.append(f"{case}: no outputs")
        elif case.startswith("verify_"):
            verified[signature] = outputs
            passed, detail = reference.compare(outputs, atol)
            if not passed:
                problems.append(f"{signature}: {detail}")
            expected = cli_outputs.get(signature)
            if expected is not None and not same_outputs(outputs, expected, atol):
                problems.append(f"{signature}: outputs differ from saved_model_cli run's")
        elif any(len(value) != rows[case] for value in outputs.values()):
            problems.append(f"{case}: outputs do not have the request's {rows[case]} rows")
    if problems:
        return Check(name, False, "; ".join(problems)), verified
    return (
        Check(
            name,
            True,
            f"fresh process; signatures {sorted(verified)} match Keras and saved_model_cli "
            f"run; {len(rows)} warmup requests ran",
        ),
        verified,
    )


def same_outputs(first, second, atol):
    if set(first) != set(second):
        return False
    for key, value in first.items():
        other = second[key]
        if value.shape != other.shape:
            return False
        if value.dtype.kind == "f":
            if np.abs(value - other).max(initial=0.0) > atol:
                return False
        elif not np.array_equal(value, other):
            return False
    return True
