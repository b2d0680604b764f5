"""The main job's export step: a rerun on a finished run reuses its export; a changed model
gets a new version.

`training.main.export_classifier` is the step `python -m training.main` runs after
fine-tuning (a finished run's fine-tuning returns at once, leaving `classifier.keras` as it
was); the whole job is run from the installed wheel in tests/test_install.py.
"""

import shutil

import keras
import numpy as np

from keras_linformer import export
from keras_linformer.programs import main as main_program


def changed_run(finetune_dir, directory):
    """A copy of the fine-tuning output whose classifier has one weight changed."""
    shutil.copytree(finetune_dir, directory)
    model = keras.saving.load_model(directory / "classifier.keras", compile=False)
    weight = model.weights[-1]
    weight.assign(np.asarray(weight) + 0.5)
    model.save(directory / "classifier.keras")
    return directory


def test_a_rerun_reuses_the_export_and_a_changed_model_gets_a_new_version(
    finetune_dir, classifier_export, tmp_path, capsys
):
    base_dir = tmp_path / "saved_models"
    model_dir = base_dir / "sentiment"
    # The first run's export (export_classifier(finetune_dir, ...), as the main job makes it).
    shutil.copytree(classifier_export, model_dir / "1")

    again = main_program.export_classifier(str(finetune_dir), str(base_dir), "sentiment")
    assert again == str(model_dir / "1")
    assert export.list_versions(model_dir) == [1]
    output = capsys.readouterr().out
    assert f"[3/3] keras-linformer-export {finetune_dir} --base-dir {base_dir}" in output
    assert f"Reused {model_dir / '1'}: it already holds this export of the classifier" in output

    changed = changed_run(finetune_dir, tmp_path / "changed")
    second = main_program.export_classifier(str(changed), str(base_dir), "sentiment")
    assert second == str(model_dir / "2")
    assert f"Exported the classifier in {changed} to {model_dir / '2'}" in (
        capsys.readouterr().out)
    first_info, second_info = (export.read_export_info(p) for p in (again, second))
    assert first_info["fingerprints"]["model"] != second_info["fingerprints"]["model"]
    assert first_info["fingerprints"]["files"] == second_info["fingerprints"]["files"]

    # Version 1 holds the original model, but TF Serving serves version 2: exporting the
    # original again must make it the latest, not point back at version 1.
    third = main_program.export_classifier(str(finetune_dir), str(base_dir), "sentiment")
    assert third == str(model_dir / "3")
    third_info = export.read_export_info(third)
    # The same export (its files' bytes, `contents`, may differ: the SavedModel's own
    # fingerprint.pb does).
    for key in ("files", "model", "export"):
        assert third_info["fingerprints"][key] == first_info["fingerprints"][key], key
