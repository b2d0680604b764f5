"""The built wheel installs and runs outside the repository.

Builds the wheel from a copy of the files it is made of, installs it without its
dependencies into a new virtual environment that borrows them from this one (a `.pth`
file naming this environment's site-packages, so nothing is downloaded), and from a
directory outside the repository runs every program's `--help` and a refusal through its
console script and through `python -m`, a successful run of every console script (the
launcher starting the pretraining script, the main job), imports the layers, and runs the
README's quickstart and BERT conversion.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest

from keras_linformer import programs
from keras_linformer.programs import pretrain as pretrain_program
from tests.test_readme import readme_example

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the wheel is built from (setup.cfg names README.md and LICENSE).
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "LICENSE", "keras_linformer")


def run(arguments, cwd, env=None, timeout=120):
    result = subprocess.run([str(a) for a in arguments], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def build_wheel(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        path = os.path.join(REPOSITORY, name)
        if os.path.isdir(path):
            shutil.copytree(path, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, source / name)
    dist = tmp_path / "dist"
    # Without build isolation: setuptools and wheel come from this environment.
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", dist, source], cwd=tmp_path, timeout=180)
    (wheel,) = dist.glob("keras_linformer-*.whl")
    return wheel


def isolated_environment(tmp_path, wheel):
    """A new virtual environment holding the wheel, its dependencies borrowed from this
    one; returns its bin directory."""
    root = tmp_path / "venv"
    venv.create(root, with_pip=False)
    bin_dir = root / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
         wheel], cwd=tmp_path, timeout=180)
    # Only now: pip would otherwise see this environment's editable keras_linformer.
    site_packages = run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                        cwd=tmp_path).stdout.strip()
    with open(os.path.join(site_packages, "borrowed_dependencies.pth"), "w") as file:
        file.write(sysconfig.get_path("purelib") + "\n")
    return bin_dir


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel installed in a new environment: its bin directory, a directory outside
    the repository and the environment to run in."""
    tmp_path = tmp_path_factory.mktemp("install")
    wheel = build_wheel(tmp_path)
    # What the wheel holds is checked here, once.
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt")))
    assert {name.split("/")[0] for name in names if not name.startswith("keras_linformer-")} == {
        "keras_linformer"}, "the wheel holds the package only"
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith("/LICENSE")
               for name in names)
    for program in programs.PROGRAMS:
        assert f"keras-linformer-{program} = keras_linformer.programs.{program}:main" in (
            entry_points.decode())

    bin_dir = isolated_environment(tmp_path, wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # As a user's shell runs them: TensorFlow's log level left to the programs.
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "TF_CPP_MIN_LOG_LEVEL")}
    env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")
    return bin_dir, elsewhere, env


@pytest.mark.slow
def test_the_wheel_installs_and_runs_anywhere(installed, readme_examples):
    bin_dir, elsewhere, env = installed
    tmp_path = elsewhere.parent
    python = bin_dir / "python"
    for program in programs.PROGRAMS:
        for command in ([bin_dir / f"keras-linformer-{program}"],
                        [python, "-m", f"keras_linformer.programs.{program}"]):
            result = run([*command, "--help"], cwd=elsewhere, env=env)
            named = (f"keras-linformer-{program}" if len(command) == 1
                     else f"python -m keras_linformer.programs.{program}")
            assert result.stdout.startswith(f"usage: {named} "), result.stdout[:300]

    # Importing the layers, from the README examples' process: its first lines.
    imported = readme_examples[1]["import"]
    assert imported["package"].startswith(str(tmp_path / "venv")), imported  # installed copy
    assert imported["training"] == "None"  # The checkout's entry points are not installed.
    assert imported["name"].startswith("linformer_encoder_stack"), imported


# A value each program refuses (exit status 2) as it parses its flags, and the message.
REFUSALS = {
    "main": (["--max-train-examples", "0"], "--max-train-examples: must be a positive integer"),
    "pretrain": (["--batch-size", "0"], "--batch-size: must be a positive integer"),
    "finetune": (["--batch-size", "0"], "--batch-size: must be a positive integer"),
    "export": (["--top-k", "0"], "--top-k: must be a positive integer"),
    "verify": (["--atol", "0"], "--atol: must be a positive number"),
    "query": (["saved_models/sentiment"], "the following arguments are required: TEXT"),
    "launch": (["--workers", "0", "--", "true"], "--workers: must be a positive integer"),
}


@pytest.mark.slow
def test_every_console_script_refuses_bad_input_with_status_2_as_its_module(installed):
    bin_dir, elsewhere, env = installed
    assert sorted(REFUSALS) == sorted(programs.PROGRAMS)
    for program, (arguments, message) in REFUSALS.items():
        errors = []
        for command in ([bin_dir / f"keras-linformer-{program}"],
                        [bin_dir / "python", "-m", f"keras_linformer.programs.{program}"]):
            result = subprocess.run([*map(str, command), *arguments], cwd=elsewhere, env=env,
                                    capture_output=True, text=True, timeout=120)
            assert result.returncode == 2, (command, result.stderr[-2000:])
            assert message in result.stderr, (command, result.stderr[-2000:])
            error = result.stderr.strip().splitlines()[-1].split(": ", 1)[1]
            # Each form names the programs as it was run.
            errors.append(re.sub(r"python -m keras_linformer\.programs\.(\w+)",
                                 r"keras-linformer-\1", error))
        assert errors[0] == errors[1], errors  # The same refusal.


# What each README block's check prints (one JSON line), run after the block; first, before
# any block, the layers are imported in the fresh process.
README_CHECKS = {
    "import": (
        "import importlib.util\n"
        "import keras_linformer\n"
        "from keras_linformer.layers import LinformerEncoderStack\n"
        "print(json.dumps({'package': keras_linformer.__file__,\n"
        "    'training': str(importlib.util.find_spec('training')),\n"
        "    'name': LinformerEncoderStack(num_layers=1, intermediate_dim=8, num_heads=2,\n"
        "                                  sequence_length=8, projected_dim=4).name}))\n"
    ),
    "quickstart": (
        "import keras_linformer\n"
        "from keras_linformer import export\n"
        "# Exportable as the README says, with a vocabulary of its 1,000 ids.\n"
        "vocabulary = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']\n"
        "vocabulary += [f'w{i}' for i in range(995)]\n"
        "path = export.export_classifier(model, vocabulary, ['a', 'b'], base_dir='exports',\n"
        "                                model_name='quickstart')\n"
        "answer = export.query(path, ['w1 w20 w300'])\n"
        "print(json.dumps({'package': keras_linformer.__file__,\n"
        "    'val_accuracy': model.history.history['val_accuracy'][-1],\n"
        "    'max_difference': float(np.abs(restored.predict(tokens[:8], verbose=0)\n"
        "                                   - model.predict(tokens[:8], verbose=0)).max()),\n"
        "    'answer': [answer['labels'].shape, answer['probabilities'].shape]}))\n"
    ),
    "from_bert": (
        "import numpy as np\n"
        "ids = np.full((1, 128), 1000, 'int32')\n"
        "outputs = linformer({'token_ids': ids, 'segment_ids': np.zeros_like(ids),\n"
        "                    'padding_mask': np.ones_like(ids)})\n"
        "print(json.dumps({'bert': bert.count_params(), 'linformer': linformer.count_params(),\n"
        "    'shape': list(outputs['sequence_output'].shape),\n"
        "    'projected_dim': linformer.projected_dim}))\n"
    ),
}


@pytest.fixture(scope="module")
def readme_examples(installed):
    """The layers imported, then the README's quickstart and conversion blocks, as written,
    one after the other in one process (each mostly imports TensorFlow and KerasHub) of the
    installed environment's python, in a directory outside the repository, each followed by
    its check: the working directory and `{"import" or block: what its check printed}`."""
    bin_dir, elsewhere, env = installed
    workdir = elsewhere / "readme"
    workdir.mkdir()
    script = workdir / "example.py"
    script.write_text("import json\n" + "".join(
        checks if name == "import" else f"{readme_example(name)}\n{checks}"
        for name, checks in README_CHECKS.items()))
    result = run([bin_dir / "python", script], cwd=workdir, env=env, timeout=420)
    # The checks' lines, in order, among the blocks' own output.
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(README_CHECKS), result.stdout[-3000:]
    return workdir, {name: json.loads(line) for name, line in zip(README_CHECKS, lines)}


@pytest.mark.slow
def test_the_readme_quickstart_runs_in_the_installed_package(installed, readme_examples):
    workdir, examples = readme_examples
    results = examples["quickstart"]
    assert results["package"].startswith(str(installed[0].parent)), results  # not the checkout
    assert (workdir / "linformer.keras").exists()
    assert results["max_difference"] < 1e-6, results
    # The task is learnable: it finishes well above chance on the held-out 20%.
    assert results["val_accuracy"] > 0.75, results
    assert results["answer"] == [[1], [1, 2]], results


@pytest.mark.slow
def test_the_readme_conversion_runs_in_the_installed_package(readme_examples):
    results = readme_examples[1]["from_bert"]
    assert results["shape"] == [1, 128, 384], results
    assert results["projected_dim"] == 64, results
    assert results["linformer"] < results["bert"], results


@pytest.fixture(scope="module")
def main_job(installed):
    """`keras-linformer-main` from the wheel, on the bundled corpora (a short run): its
    output directory and the finished process."""
    bin_dir, elsewhere, env = installed
    output_dir = elsewhere / "main"
    # One step of each stage on short sequences: what the process spends is start-up,
    # tracing and the export's verification, whatever the sizes.
    result = run([bin_dir / "keras-linformer-main", "--pretrain-documents", 10,
                  "--pretrain-max-steps", 1, "--finetune-max-steps", 1,
                  "--max-train-examples", 32, "--max-eval-examples", 8, "--vocabulary-size", 200,
                  "--sequence-length", 32, "--projected-dim", 8, "--output-dir", output_dir,
                  "--export-dir", output_dir / "exports"], cwd=elsewhere, env=env, timeout=600)
    return output_dir, result


@pytest.mark.slow
def test_the_wheels_main_job_pretrains_finetunes_exports_and_verifies(main_job):
    output_dir, result = main_job
    assert "[1/2] keras-linformer-pretrain " in result.stdout
    assert "[2/2] keras-linformer-finetune " in result.stdout
    export = output_dir / "exports" / "linformer_sentiment" / "1"
    match = re.search(
        r"Main job: test accuracy ([0-9.]+) on 8 held-out reviews .* pretrained \(test "
        rf"perplexity [0-9.]+\) \| export {re.escape(str(export))} ", result.stdout,
    )
    assert match, result.stdout
    assert "PASSED: all" in result.stdout  # The export, verified as TF Serving loads it.
    assert not result.stderr.strip(), result.stderr[-3000:]  # No TensorFlow start-up lines.
    # Written once the export passed: what marks the main job finished.
    summary = json.loads((output_dir / "summary.json").read_text())
    assert summary["export"] == str(export)
    assert summary["test_accuracy"] == float(match.group(1))
    assert ((output_dir / "finetune" / "vocab.txt").read_text()
            == (output_dir / "pretrain" / "vocab.txt").read_text())


def stage_command(stdout, stage):
    """The command the main job printed for one of its stages ("[1/2] COMMAND")."""
    (line,) = [line for line in stdout.splitlines() if line.startswith(f"[{stage}/2] ")]
    return shlex.split(line.split(" ", 1)[1])


@pytest.mark.slow
def test_the_wheels_console_scripts_rerun_export_verify_and_query(installed, main_job):
    """The other console scripts, each exiting 0 (`run` checks) on the main job's results:
    the fine-tuning command it printed, rerun as typed under the launcher (which exits with its
    worker's status; two workers: tests/training/test_multi_worker.py), finds its run finished
    (the pretraining command, which parses as printed, would too: tests/training/
    test_user_mistakes.py); the export finds the main job's export holds this classifier
    (`--reuse-existing`: the main job exported it through the same library call; writing a
    new version: tests/export/test_programs.py), which is verified and answers a text.
    Training through these scripts: tests/training/test_multi_worker.py."""
    bin_dir, elsewhere, env = installed
    output_dir, result = main_job
    pretrain, finetune = (stage_command(result.stdout, stage) for stage in (1, 2))
    assert pretrain[0] == "keras-linformer-pretrain"
    _, args = pretrain_program.parse_args(pretrain[1:])
    assert args.output_dir == str(output_dir / "pretrain")
    run([bin_dir / "keras-linformer-launch", "--workers", 1, "--log-dir", "launch", "--",
         *finetune], cwd=elsewhere, env=env, timeout=300)
    assert "nothing to do" in (elsewhere / "launch" / "worker-0.log").read_text()
    exports = output_dir / "exports"
    export = exports / "linformer_sentiment" / "1"
    assert f"Reused {export}: " in run(
        [bin_dir / "keras-linformer-export", output_dir / "finetune", "--base-dir", exports,
         "--model-name", "linformer_sentiment", "--reuse-existing"],
        cwd=elsewhere, env=env, timeout=300).stdout
    assert "PASSED: all" in run([bin_dir / "keras-linformer-verify", export],
                                cwd=elsewhere, env=env, timeout=300).stdout
    answer = run([bin_dir / "keras-linformer-query", export, "a great fun film"],
                 cwd=elsewhere, env=env, timeout=300).stdout.strip().splitlines()[-1]
    assert json.loads(answer)["text"] == "a great fun film", answer
