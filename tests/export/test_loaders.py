"""The programs that load an export in a fresh process import TensorFlow, not keras_linformer,
and refuse what the export refuses."""

import json
import os
import pkgutil
import sys

import numpy as np
import pytest

from keras_linformer.export import loaders
from keras_linformer.export.loaders import load_and_run
from tests.export.conftest import MAX_BATCH_SIZE

PROGRAMS = ["in_one_process", "load_and_run", "saved_model_cli_with_text_ops"]


def test_every_module_of_the_package_is_a_program():
    # Everything in the directory becomes a top-level module in the loader's
    # process: only the programs may be there.
    assert sorted(module.name for module in pkgutil.iter_modules([loaders.LOADERS_DIR])) == PROGRAMS


@pytest.fixture(scope="module")
def loader_process(masked_lm_export, tmp_path_factory):
    """One fresh loader process (`loaders.run_together`: TensorFlow starts once) that runs
    `saved_model_cli run` on a batch over the masked LM export's cap, then imports every
    program and lists what it imported: `{what: (ok, stdout, stderr tail)}` and the
    directory `saved_model_cli` was told to write its outputs to."""
    work = tmp_path_factory.mktemp("loader_process")
    path = work / "texts.npy"
    texts = np.array([b"the [MASK] sat"] * (MAX_BATCH_SIZE + 1), dtype=object)
    np.save(path, texts, allow_pickle=True)
    (work / "imported.py").write_text(
        "import sys\n\n\ndef main(args):\n"
        + "".join(f"    import {program}  # noqa: F401\n" for program in PROGRAMS)
        + "    print(sorted({m.split('.')[0] for m in sys.modules}"
        " & {'keras_linformer', 'keras_hub', 'keras_nlp'}))\n"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(work))
        outcomes = loaders.run_together({
            "saved_model_cli run": ("saved_model_cli_with_text_ops", [
                "run", "--dir", masked_lm_export, "--tag_set", "serve",
                "--signature_def", "fill_mask", "--inputs", f"text={path}",
                "--outdir", str(work / "outputs"),
            ]),
            "imports": ("imported", []),
        })
    return outcomes, work / "outputs"


def test_a_loader_process_imports_neither_keras_linformer_nor_keras_hub(loader_process):
    """Every program imported, after `saved_model_cli run` ran, in a fresh process."""
    outcomes, _ = loader_process
    ok, stdout, error = outcomes["imports"]
    assert ok, error
    assert stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_the_session_loader_refuses_a_batch_over_the_cap(loader_process):
    """As TF Serving loads it: `saved_model_cli run`, in a fresh process with the text ops.
    (A batch at the cap is served: test_serving.py, under `tf.saved_model.load`.)"""
    outcomes, outputs = loader_process
    ok, _, error = outcomes["saved_model_cli run"]
    assert not ok
    assert (
        f"text: a request may hold at most {MAX_BATCH_SIZE} texts (max_batch_size of this "
        "export)"
    ) in error
    assert not outputs.exists()


def test_load_and_run_writes_the_outputs_of_each_case(classifier_export, tmp_path, capsys):
    texts = np.array([b"the cat sat", b"", b"\xff not utf-8"], dtype=object)
    np.savez(tmp_path / "texts.npz", text=texts)
    case = {"signature": "serving_default", "refused": False}
    (tmp_path / "cases.json").write_text(json.dumps({"texts": case}))
    load_and_run.main([classifier_export, str(tmp_path)])
    assert capsys.readouterr().out.startswith("ran 1 cases on signatures")
    with np.load(tmp_path / "texts.out.npz", allow_pickle=True) as outputs:
        assert sorted(outputs.files) == ["label_ids", "labels", "probabilities"]
        assert outputs["probabilities"].shape == (3, 3)


def test_load_and_run_records_the_refusal_of_a_case_expected_to_fail(
    classifier_export, tmp_path, capsys
):
    np.savez(tmp_path / "over.npz", text=np.array([b"x"] * 1025, dtype=object))
    np.savez(tmp_path / "fits.npz", text=np.array([b"x"] * 2, dtype=object))
    refused = {"signature": "serving_default", "refused": True}
    (tmp_path / "cases.json").write_text(json.dumps({"over": refused, "fits": refused}))
    load_and_run.main([classifier_export, str(tmp_path)])
    capsys.readouterr()
    assert "at most 1024 texts" in (tmp_path / "over.error.txt").read_text()
    assert not (tmp_path / "over.out.npz").exists()
    # A case that was expected to fail but ran has outputs, and no error.
    assert (tmp_path / "fits.out.npz").is_file() and not (tmp_path / "fits.error.txt").exists()


def test_run_reports_a_program_that_fails(tmp_path):
    """Its exit status and the end of what it wrote to stderr. A module that does not exist
    fails without importing TensorFlow; load_and_run on a missing export fails naming it
    (here, in this process). A program that runs and prints: verify's
    `saved_model_cli show --all`, test_serving_classifier.py."""
    ok, _, error = loaders.run("no_such_loader", [], "tf.saved_model.load")
    assert not ok
    assert error.startswith("tf.saved_model.load exited with status 1: ")
    assert "No module named no_such_loader" in error
    missing = os.path.join(tmp_path, "missing")
    with pytest.raises(OSError, match="missing"):
        load_and_run.main([missing, str(tmp_path)])


def test_programs_run_together_each_report_their_outcome_and_a_crash_fails_the_rest(
        tmp_path, monkeypatch):
    """One process runs them in order; each gets its own exit status and output. Those a
    crash leaves unrun fail with the process's status. (Several `saved_model_cli` runs in
    one process: every verification, test_serving_classifier.py.)"""
    (tmp_path / "says.py").write_text(
        "def main(args):\n    print('said', *args)\n    return int(args[0])\n")
    (tmp_path / "crash.py").write_text("import os\n\ndef main(args):\n    os._exit(7)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    outcomes = loaders.run_together({
        "first": ("says", [0]), "second": ("says", [3]), "missing": ("no_such_loader", []),
        "crash": ("crash", []), "after": ("says", [0])})
    assert outcomes["first"] == (True, "said 0\n", "")
    assert outcomes["second"] == (False, "said 3\n", "second exited with status 3: ")
    ok, _, error = outcomes["missing"]
    assert not ok and "No module named 'no_such_loader'" in error
    for name in ("crash", "after"):
        ok, _, error = outcomes[name]
        assert not ok and error.startswith(
            "first, second, missing, crash, after exited with status 7"), error


def test_a_loader_runs_under_the_python_it_is_given(tmp_path):
    # The interpreter of another environment (e.g. an older TensorFlow) runs the program;
    # one that cannot start is reported, naming it.
    script = tmp_path / "python"
    script.write_text(
        f'#!/bin/sh\necho "run by the given python: $*"\nexec {sys.executable} "$@"\n'
    )
    script.chmod(0o755)
    # A module that does not exist keeps the probe fast: the script runs, Python refuses.
    ok, stdout, error = loaders.run("no_such_loader", ["x"], "probe", python=str(script))
    assert stdout.startswith("run by the given python: -m no_such_loader x")
    assert not ok and "No module named no_such_loader" in error
    missing = str(tmp_path / "no-python")
    ok, _, error = loaders.run("load_and_run", [], "the probe", python=missing)
    assert not ok and error.startswith(f"the probe could not start {missing!r}")
