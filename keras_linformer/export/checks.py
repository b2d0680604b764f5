"""`verify`: loads an export as TF Serving does and checks it against its Keras model
(docs/serving.md)."""

import json
import os
import pathlib
import re
import tempfile

import numpy as np

from keras_linformer.export import fingerprints
from keras_linformer.export import layout
from keras_linformer.export import loaders
from keras_linformer.export import serving
from keras_linformer.export import sources
from keras_linformer.export import warmup
from keras_linformer.export.reference import KerasReference
from keras_linformer.export.report import Check
from keras_linformer.export.report import VerificationReport
from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import first_line

# The names of the checks that load the export, and of the loader runs behind them.
SHOW_CHECK = "saved_model_cli show --all"
LOAD_CHECK = "tf.saved_model.load"


def verify(export_dir, model=None, texts=None, atol=1e-5, log=print, python=None):
    """Loads an export the way TF Serving does and compares it with the Keras model.

    Each check, listed in docs/serving.md, is a line of the report; if the fingerprints of
    the `assets.extra/` files fail, the rest is skipped.

    Args:
        export_dir: str, a version directory (`saved_models/NAME/3`), or a model directory
            (`saved_models/NAME`) for its latest version.
        model: the Keras model to compare with: a model object, its `.keras` file or its
            training output directory; `None` means the `.keras` file recorded at export.
            Defaults to `None`.
        texts: optional list of extra str or bytes texts to feed with the built-in ones.
        atol: float, the largest difference allowed in probabilities and scores. Defaults
            to `1e-5`.
        log: callable receiving each report line as it is known, or `None`. Defaults to `print`.
        python: str or `None`, the Python (with TensorFlow, tensorflow-text and NumPy) that
            loads the export; `None`: this one. Defaults to `None`.

    Returns:
        A `VerificationReport`; `report.passed` tells the outcome.
    """
    log = log or (lambda line: None)
    check_number("atol", atol, 0, include_low=False)
    if isinstance(texts, (str, bytes)) or not all(isinstance(t, (str, bytes)) for t in texts or []):
        raise ValueError(f"`texts` must be a list of str or bytes. Received: texts={texts!r:.100}")
    export_dir = layout.latest_version_dir(export_dir)
    info = layout.read_export_info(export_dir)
    task = info["task"]
    if model is None:
        model = info.get("source_model")
        if model is None or not os.path.isfile(model):
            raise ValueError(f"model: the export records no readable source model ({model!r}); "
                             "pass the Keras model (or its .keras file) it was exported from.")
    built_in = serving.hard_texts(info["sequence_length"], task)
    extra_texts = [text.encode("utf-8") if isinstance(text, str) else text for text in texts or []]
    batch = built_in + extra_texts
    max_batch_size = info.get("max_batch_size")
    if max_batch_size is not None and len(batch) > max_batch_size:
        raise ValueError(
            f"texts: {len(extra_texts)} texts and the {len(built_in)} built-in ones make a batch "
            f"of {len(batch)}, over the export's max_batch_size {max_batch_size}; pass at most "
            f"{max(max_batch_size - len(built_in), 0)} texts.")
    what = (f"text classifier, {len(info['label_names'])} classes {info['label_names']}"
            if task == "classifier"
            else f"masked LM, top_k={info['top_k']}, max_masks={info['max_masks']}")
    header = (f"Verifying {export_dir} ({what}, sequence length {info['sequence_length']}, "
              f"model name {info['model_name']!r})")
    report = VerificationReport(export_dir, info, header)
    log(header)

    def add(check):
        report.checks.append(check)
        log(str(check))

    add(check_layout(export_dir))
    add(check_fingerprints(export_dir, info))
    if not report.checks[-1].passed:
        log(report.summary())
        return report
    vocabulary = os.path.join(export_dir, layout.EXTRA_DIR, sources.VOCABULARY_FILE)
    source = sources.load_source(task, model, vocabulary, info.get("label_names"),
                                 info["sequence_length"])
    expected = layout.expected_signatures(info)
    reference = KerasReference(source, info)
    report.inputs = cases = reference.cases(batch)
    requests, warmup_check = check_warmup(export_dir, info, expected)
    with tempfile.TemporaryDirectory(prefix="keras_linformer_verify_") as work:
        # One fresh process runs every loader: it mostly imports TensorFlow.
        programs = {SHOW_CHECK: (loaders.CLI_LOADER, ["show", "--dir", export_dir, "--all"])}
        out_dirs = {}
        for signature, inputs in cases.items():
            programs[run_check(signature)], out_dirs[signature] = (
                loaders.cli_program(export_dir, signature, inputs, work))
        programs[LOAD_CHECK], load_dir, load_cases = load_program(export_dir, cases, requests,
                                                                  work, max_batch_size)
        outcomes = loaders.run_together(programs, python)
        check, report.signatures = check_show(outcomes[SHOW_CHECK], expected)
        add(check)
        for signature, out_dir in out_dirs.items():
            check, outputs = check_run(signature, outcomes[run_check(signature)], out_dir,
                                       reference, atol, len(batch))
            if outputs is not None:
                report.cli_outputs[signature] = outputs
            add(check)
        check, report.load_outputs = check_load(outcomes[LOAD_CHECK], load_dir, load_cases,
                                                report.cli_outputs, reference, atol,
                                                max_batch_size)
        add(check)
    add(warmup_check)
    log(report.summary())
    return report


def run_check(signature):
    return f"saved_model_cli run {signature}"


def outcome(name, problems, detail):
    """A Check that fails with `problems` (joined), else passes with `detail`."""
    if problems:
        return Check(name, False, "; ".join(problems))
    return Check(name, True, detail)


def check_layout(export_dir):
    problems = []
    version = os.path.basename(os.path.normpath(export_dir))
    if not version.isdigit():
        problems.append("the directory is not an integer version (TF Serving skips it)")
    required = ["saved_model.pb", "variables"] + [
        os.path.join(layout.EXTRA_DIR, name)
        for name in (warmup.WARMUP_FILE, sources.VOCABULARY_FILE, layout.INFO_FILE)
    ]
    missing = [path for path in required if not os.path.exists(os.path.join(export_dir, path))]
    if missing:
        problems.append(f"missing {missing}")
    return outcome("layout", problems, f"version {version} holds " + ", ".join(required))


def exported_lines(file_name, record, info):
    """The recorded class names or the source model's vocabulary, if they match `record`."""
    lines = None
    if file_name == sources.LABELS_FILE:
        lines = info.get("label_names")
    elif file_name == sources.VOCABULARY_FILE and info.get("source_model"):
        path = os.path.join(os.path.dirname(info["source_model"]), sources.VOCABULARY_FILE)
        if os.path.isfile(path):
            lines = fingerprints.read_lines(path)
    if lines is not None and fingerprints.lines_sha256(lines) == record["sha256"]:
        return lines
    return None


def check_fingerprints(export_dir, info):
    """The files beside the SavedModel against the fingerprints `export_info.json` records."""
    recorded = info.get("fingerprints")
    if not recorded:
        return Check("fingerprints", True, f"{layout.INFO_FILE} records no fingerprints "
                     "(written before exports recorded them): vocab.txt and labels.txt not checked")
    files = recorded.get("files") or {}
    problems, described = [], []
    for file_name, record in files.items():
        where = f"{layout.EXTRA_DIR}/{file_name}"
        path = os.path.join(export_dir, layout.EXTRA_DIR, file_name)
        lines = exported_lines(file_name, record, info)
        problem = fingerprints.check_file(path, where, record, lines)
        if problem is None:
            described.append(f"{where} ({record['lines']} lines, sha256 {record['sha256'][:12]})")
        else:
            problems.append(problem)
    labels = files.get(sources.LABELS_FILE)
    label_names = info.get("label_names")
    if labels is not None and fingerprints.lines_sha256(label_names or []) != labels["sha256"]:
        problems.append(f"{layout.EXTRA_DIR}/{layout.INFO_FILE}: label_names "
                        f"{label_names!r:.200} do not match the fingerprint of the exported "
                        f"{sources.LABELS_FILE}")
    contents = recorded.get("contents")
    if contents:
        problem = fingerprints.check_contents(export_dir, contents)
        if problem is None:
            described.append(f"the {len(contents)} files of the export")
        else:
            problems.append(problem + "; export again")
    if problems or not described:
        problems = problems or [f"{layout.INFO_FILE} records fingerprints of no file"]
        problems[-1] += (". The served model still holds what was exported, but clients and "
                         "this check read these files: restore them (from the training run) or "
                         "export again. The other checks were skipped: they compare the served "
                         "model with one built from these files")
    detail = " and ".join(described) + f" match the fingerprints in {layout.INFO_FILE}"
    return outcome("fingerprints", problems, detail)


SIGNATURE_RE = re.compile(r"^signature_def\['([^']+)'\]:", re.M)
TENSOR_RE = re.compile(
    r"(inputs|outputs)\['([^']+)'\] tensor_info:\s+dtype: (\w+)\s+shape: ([^\n]+)")
DTYPE_NAMES = {"DT_STRING": "string", "DT_INT32": "int32", "DT_INT64": "int64",
               "DT_FLOAT": "float32"}


def parse_show_all(text):
    """`{signature: {"inputs": {key: (dtype, shape)}, "outputs": {...}}}` from `show --all`."""
    signatures = {}
    blocks = SIGNATURE_RE.split(text)
    for name, body in zip(blocks[1::2], blocks[2::2]):
        entry = signatures[name] = {"inputs": {}, "outputs": {}}
        for side, key, dtype, shape in TENSOR_RE.findall(body):
            shape = shape.strip()
            if shape != "unknown_rank":
                shape = tuple(int(d) for d in shape.strip("()").split(",") if d.strip())
            entry[side][key] = (DTYPE_NAMES.get(dtype, dtype), shape)
    return signatures


def describe_specs(specs):
    return ", ".join(f"{key}: {dtype}{list(shape)}" for key, (dtype, shape) in specs.items())


def check_show(result, expected):
    """Returns `(Check, signatures found)` for the outcome of `saved_model_cli show --all`."""
    ok, stdout, error = result
    if not ok:
        return Check(SHOW_CHECK, False, error), {}
    found = parse_show_all(stdout)
    if "MetaGraphDef with tag-set: 'serve'" not in stdout:
        return Check(SHOW_CHECK, False, "no MetaGraphDef with tag-set 'serve'"), found
    problems = []
    for signature, (inputs, outputs) in expected.items():
        if signature not in found:
            problems.append(f"signature {signature!r} missing")
            continue
        for side, specs in (("inputs", inputs), ("outputs", outputs)):
            if found[signature][side] != specs:
                problems.append(
                    f"{signature} {side} are {found[signature][side]}, expected {specs}")
    described = "; ".join(f"{signature}({describe_specs(inputs)}) -> {describe_specs(outputs)}"
                          for signature, (inputs, outputs) in expected.items())
    return outcome(SHOW_CHECK, problems, f"tag-set 'serve': {described}"), found


def check_run(signature, result, out_dir, reference, atol, batch_size):
    """Returns `(Check, outputs or None)` for one `cli_program` outcome."""
    outputs, error = loaders.read_cli_outputs(result, out_dir)
    if outputs is None:
        return Check(run_check(signature), False, error), None
    passed, detail = reference.compare(outputs, atol)
    fed = "texts" if "text" in reference.cases_fed[signature] else "token-id rows"
    detail = (f"fresh process, session loader, tensorflow_text imported; {batch_size} {fed} "
              "(empty, non-ASCII, longer than n, whitespace, invalid UTF-8): " + detail)
    return Check(run_check(signature), passed, detail), outputs


def check_warmup(export_dir, info, expected):
    """Returns `(requests, Check)`: the parsed warmup requests and their check."""
    name = "warmup requests"
    try:
        requests = warmup.read_warmup_requests(export_dir)
    except (OSError, ValueError) as error:
        return [], Check(name, False, str(error))
    problems = [] if requests else ["the file holds no record"]
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
            elif value.ndim != len(shape) or any(want != -1 and got != want
                                                 for got, want in zip(value.shape, shape)):
                problems.append(f"{where}: {key} has shape {value.shape}, expected {shape}")
    specs = [(r.signature_name, {k: (r.dtypes[k], v.shape) for k, v in r.inputs.items()})
             for r in requests]
    described = ", ".join(f"{name}({describe_specs(spec)})" for name, spec in specs)
    detail = f"{len(requests)} PredictionLog records match their signatures: {described}"
    return requests, outcome(name, problems, detail)


def load_program(export_dir, cases, requests, work, max_batch_size):
    """`(program, case directory, cases)` running the cases, the warmup requests and one batch
    too large per signature under `tf.saved_model.load`."""
    case_dir = os.path.join(work, "load")
    os.makedirs(case_dir)
    manifest = {}

    def add(case, signature, inputs):
        manifest[case] = {"signature": signature, "refused": case.startswith("refused_"),
                          "rows": len(next(iter(inputs.values())))}
        np.savez(os.path.join(case_dir, f"{case}.npz"), **inputs)

    for signature, inputs in cases.items():
        add(f"verify_{signature}", signature, inputs)
    for index, request in enumerate(requests):
        if request.signature_name in cases:
            add(f"warmup_{index}", request.signature_name, request.inputs)
    if max_batch_size is not None:
        over = np.arange(max_batch_size + 1)  # Rows repeated to one too many.
        for signature, inputs in cases.items():
            add(f"refused_{signature}", signature,
                {key: np.take(value, over % len(value), axis=0) for key, value in inputs.items()})
    with open(os.path.join(case_dir, "cases.json"), "w", encoding="utf-8") as file:
        json.dump(manifest, file)
    return ("load_and_run", [export_dir, case_dir]), case_dir, manifest


def check_load(result, case_dir, cases, cli_outputs, reference, atol, max_batch_size):
    """Returns `(Check, {signature: outputs})` for the outcome of a `load_program`."""
    ok, _, error = result
    if not ok:
        return Check(LOAD_CHECK, False, error), {}
    problems, verified = [], {}
    for case, entry in cases.items():
        path, signature = os.path.join(case_dir, case), entry["signature"]
        outputs = None
        if os.path.isfile(path + ".out.npz"):
            with np.load(path + ".out.npz", allow_pickle=True) as archive:
                outputs = dict(archive)
        if entry["refused"]:
            batch = f"{signature}: a batch of {max_batch_size + 1}"
            refusal = pathlib.Path(path + ".error.txt")
            message = refusal.read_text(encoding="utf-8") if refusal.is_file() else None
            if message is None:
                problems.append(f"{batch} was not refused, but the export records "
                                f"max_batch_size {max_batch_size}")
            elif "max_batch_size" not in message:
                problems.append(f"{batch} failed without naming the cap: "
                                f"{first_line(message, 200)}")
        elif outputs is None:
            problems.append(f"{case}: no outputs")
        elif case.startswith("verify_"):
            verified[signature] = outputs
            passed, detail = reference.compare(outputs, atol)
            if not passed:
                problems.append(f"{signature}: {detail}")
            expected = cli_outputs.get(signature)
            if expected is not None and not same_outputs(outputs, expected, atol):
                problems.append(f"{signature}: outputs differ from saved_model_cli run's")
        elif any(len(value) != entry["rows"] for value in outputs.values()):
            problems.append(f"{case}: outputs do not have the request's {entry['rows']} rows")
    warmups = sum(case.startswith("warmup_") for case in cases)
    detail = (f"fresh process; signatures {sorted(verified)} match Keras and saved_model_cli "
              f"run; {warmups} warmup requests ran")
    if max_batch_size is not None:
        detail += (f"; a batch of {max_batch_size + 1} is refused by every signature "
                   f"(max_batch_size {max_batch_size})")
    return outcome(LOAD_CHECK, problems, detail), verified


def same_outputs(first, second, atol):
    """Whether two signatures' outputs agree: floats within `atol`, the rest exactly."""

    def same(a, b):  # array_equal compares the shapes too.
        if a.dtype.kind == "f":
            return a.shape == b.shape and np.allclose(a, b, rtol=0, atol=atol, equal_nan=True)
        return np.array_equal(a, b)

    return set(first) == set(second) and all(same(first[k], second[k]) for k in first)
