"""The quality study driver (`python -m benchmarks.quality`), end to end at toy size.

One Linformer and the Transformer are pretrained on a few of the bundled
news articles and fine-tuned on a few Rotten Tomatoes reviews, each stage
a real `training.pretrain` / `training.finetune` process started by the
study (which itself runs here: it only starts processes and reads their
results); then the same command is run again (it skips the finished runs)
and once with another flag into the same directory (refused).
"""

import csv
import json
import math
import os
import subprocess

import pytest

from benchmarks import outputs
from benchmarks import quality
from benchmarks.harness import runner as cells
from benchmarks.studies import runner
from keras_linformer.training import run_directory
from tests.training.harness import REPOSITORY
from tests.training.harness import read_summary
from tests.training.harness import run_here
from tests.training.harness import run_in_process

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

# A few documents of each split: a pretraining run trains its WordPiece vocabulary on its
# training documents (seconds for 40 news articles), and evaluates every held-out one; four
# and two make enough masked sequences of 16 tokens for its steps and its curves.
TOY = [
    "--linformers", "8:layerwise", "--sequence-length", 16, "--num-layers", 1,
    "--num-heads", 2, "--hidden-dim", 16, "--intermediate-dim", 32,
    "--pretrain-steps", 4, "--pretrain-batch-size", 4, "--checkpoint-every", 2,
    "--datasets", "rotten_tomatoes", "--finetune-lengths", "rotten_tomatoes=16",
    "--finetune-epochs", "rotten_tomatoes=1", "--scratch",
    "--max-train-examples", 4, "--max-eval-examples", 2, "--no-jit-compile", "--seeds", 3,
]
RUN_NAMES = [
    ("pretrain", "transformer-seed3"), ("pretrain", "linformer-k8-layerwise-seed3"),
    ("rotten_tomatoes", "transformer-seed3"), ("rotten_tomatoes", "linformer-k8-layerwise-seed3"),
]


def run_study(arguments):
    """`python -m benchmarks.quality ARGUMENTS` run in this process, in the repository (the
    runs' `python -m training...`, as the study is run); returns what it printed."""
    result = run_here(quality, arguments, cwd=REPOSITORY)
    assert not result.returncode, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def study(tmp_path_factory, matmul_rate):
    """(output dir, results dir, arguments, output of the first and the second run, the
    matmul rates measured).

    Each training run is a process of its own; the study between them needs none. The
    matmul rate "measured" is conftest's `matmul_rate` (measuring it: harness/test_runner.py)."""
    root = tmp_path_factory.mktemp("quality")
    arguments = [*TOY, "--output-dir", root / "runs", "--results-dir", root / "results",
                 "--name", "toy"]
    measured = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cells, "matmul_rate", lambda: measured.append(matmul_rate) or matmul_rate)
        patch.setattr(runner, "_measured", {})  # None measured yet in this process.
        first = run_study(arguments)
        second = run_study(arguments)  # Starts no training process.
    return root / "runs", root / "results", arguments, first, second, measured


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as file:
        assert file.readline().startswith("# python -m benchmarks.quality")
        return list(csv.DictReader(file))


def test_every_run_finishes_in_its_own_directory_with_its_command(study):
    output_dir, _, _, first, _, measured = study
    assert "4 runs, 0 already finished, 4 to run" in first
    rates = set()
    for stage, name in RUN_NAMES:
        directory = output_dir / stage / name
        assert os.path.isfile(directory / "summary.json"), directory
        command = (directory / runner.COMMAND_FILE).read_text().strip()
        assert command in first  # printed before the run
        assert command.endswith(f"--output-dir {directory}")
        # And the commit of the code it ran: this checkout's.
        assert (directory / runner.COMMIT_FILE).read_text().strip() == runner.source_commit()
        assert runner.source_commit().split("-")[0] in subprocess.run(
            ["git", "log", "--format=%h %H", "-1"], capture_output=True, text=True).stdout
        # And the machine, with its matmul rate measured before the run.
        machine = json.loads((directory / runner.MACHINE_FILE).read_text())
        assert machine["machine"] == outputs.machine_description()
        assert machine["matmul_gflops_per_s"] > 0
        rates.add(machine["matmul_gflops_per_s"])
    # The runs took less than runner.MATMUL_RATE_MAX_AGE_S: one measurement served them all.
    assert len(rates) == 1 and len(measured) == 1
    # Fine-tuning starts from the pretrained model of the same name.
    command = output_dir / "rotten_tomatoes" / "linformer-k8-layerwise-seed3" / runner.COMMAND_FILE
    assert f"--pretrained {output_dir / 'pretrain' / 'linformer-k8-layerwise-seed3'}" in (
        command.read_text())
    assert "--seed 3 " in command.read_text()


def test_a_second_run_skips_the_finished_runs(study):
    output_dir, _, _, _, second, _ = study
    assert "4 runs, 4 already finished, 0 to run" in second
    assert "python -m training.pretrain" not in second.replace(
        "python -m benchmarks.quality", "")


def test_another_command_into_the_same_directory_is_refused(study):
    _, _, arguments, _, _, _ = study
    status, stderr = run_in_process(quality, [*arguments, "--pretrain-steps", 6])
    assert status == 2
    assert "holds a finished run of another command" in stderr
    assert "--max-steps 6" in stderr


def test_the_matmul_rate_is_measured_again_once_older_than_its_limit(tmp_path, monkeypatch):
    rates = iter([100.0, 120.0])
    monkeypatch.setattr(cells, "matmul_rate", lambda: next(rates))
    monkeypatch.setattr(runner, "_measured", {})
    for name in "abc":
        (tmp_path / name).mkdir()
    runner.record_machine(tmp_path / "a")
    runner.record_machine(tmp_path / "b")  # Just after: the same measurement.
    runner._measured["at"] -= runner.MATMUL_RATE_MAX_AGE_S + 1
    runner.record_machine(tmp_path / "c")
    assert [runner.recorded_machine({"directory": tmp_path / name})["matmul_gflops_per_s"]
            for name in "abc"] == [100.0, 100.0, 120.0]


def test_a_run_moved_or_linked_elsewhere_still_counts_as_finished(tmp_path):
    moved = tmp_path / "new" / "run"
    moved.mkdir(parents=True)
    (moved / "summary.json").write_text("{}")
    (moved / runner.COMMAND_FILE).write_text(
        f"python -m training.finetune --seed 1 --output-dir {tmp_path / 'old' / 'run'}\n")
    run = dict(module="training.finetune", directory=str(moved),
               argv=["--seed", "1", "--output-dir", str(moved)])
    assert runner.is_finished(run)
    with pytest.raises(ValueError, match="holds a finished run of another command"):
        runner.is_finished(dict(run, argv=["--seed", "2", "--output-dir", str(moved)]))
    assert not runner.is_finished(dict(run, directory=str(tmp_path / "not-run")))


def test_the_csv_holds_every_runs_results(study):
    output_dir, results_dir, _, _, _, _ = study
    rows = read_rows(results_dir / "toy.csv")
    assert [(r["stage"], r["model"]) for r in rows] == [
        ("pretrain", "transformer"), ("pretrain", "linformer-k8-layerwise"),
        ("finetune", "transformer"), ("finetune", "linformer-k8-layerwise"),
    ]
    assert all(r["status"] == "finished" and r["seed"] == "3" for r in rows)
    for row, (stage, name) in zip(rows, RUN_NAMES):
        summary = read_summary(output_dir / stage / name)
        if row["stage"] == "pretrain":
            assert float(row["test_perplexity"]) == pytest.approx(summary["test_perplexity"])
            assert float(row["unigram_test_perplexity"]) == pytest.approx(
                summary["unigram_test_perplexity"])
        else:
            assert float(row["test_accuracy"]) == pytest.approx(summary["test_accuracy"])
            assert row["start"] == "pretrained"
        machine = runner.recorded_machine({"directory": output_dir / stage / name})
        assert row["machine"] == machine["machine"]
        assert float(row["matmul_gflops_per_s"]) == pytest.approx(
            machine["matmul_gflops_per_s"])


def test_the_curves_are_the_logged_validation_perplexities_at_their_steps(study):
    output_dir, results_dir, _, _, _, _ = study
    rows = read_rows(results_dir / "toy-curves.csv")
    for name in ("transformer", "linformer-k8-layerwise"):
        logged = run_directory.logged_scalars(
            output_dir / "pretrain" / f"{name}-seed3" / "logs" / "validation"
        )
        curve = [(int(r["step"]), float(r["validation_perplexity"]))
                 for r in rows if r["model"] == name and r["seed"] == "3"]
        assert [step for step, _ in curve] == [2, 4]  # rounds of 2 steps
        assert [value for _, value in curve] == pytest.approx(
            [value for _, value in logged["epoch_perplexity"]])
        assert all(math.isfinite(value) and value > 1 for _, value in curve)


def test_the_report_and_the_plot_are_written(study):
    _, results_dir, _, _, _, _ = study
    for plot in ("toy-perplexity.png", "toy-accuracy.png"):
        with open(results_dir / plot, "rb") as file:
            assert file.read(8) == b"\x89PNG\r\n\x1a\n"
    report = (results_dir / "toy.md").read_text()
    assert "![fine-tuned test accuracy](toy-accuracy.png)" in report
    assert "| Transformer |" in report and "| Linformer k=8, layerwise |" in report
    assert "have not finished" not in report
    assert f"- {outputs.machine_description()}: 4 runs, a 2048^3 float32 matmul at " in report
    assert "python -m training.finetune" in report  # every run's command


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--linformers", "128"], "expected K:SHARING"),
        (["--linformers", "128:all"], "expected K:SHARING"),
        (["--linformers", "1024:layerwise"], "k = 1024 > --sequence-length 512"),
        (["--scratch", "256:none"], "k = 256 > rotten_tomatoes's --finetune-lengths 128"),
        (["--finetune-lengths", "bbc_news=1024"], "exceeds the pretraining --sequence-length"),
        (["--finetune-epochs", "imdb=1"], "expected DATASET=EPOCHS"),
    ],
)
def test_bad_arguments_are_named(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        quality.parse_args(arguments)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_default_plan_pretrains_each_model_once_and_fine_tunes_it_on_each_dataset():
    _, args = quality.parse_args([])
    all_runs = quality.plan(args)
    runner.check_commands(all_runs)  # every program accepts its flags
    # Seed by seed: the runs of seed 0 first, each in its own directory.
    assert [r["seed"] for r in all_runs] == sorted(r["seed"] for r in all_runs)
    assert {r["seed"] for r in all_runs} == {0, 1, 2}
    assert len({r["directory"] for r in all_runs}) == len(all_runs)
    runs = [r for r in all_runs if r["seed"] == 0]
    assert len(runs) * 3 == len(all_runs)
    pretrained = [r for r in runs if r["stage"] == "pretrain"]
    assert [r["model"] for r in pretrained] == [
        "transformer", "linformer-k64-layerwise", "linformer-k128-layerwise",
        "linformer-k256-layerwise", "linformer-k128-none", "linformer-k128-key_value",
    ]
    for dataset in ("rotten_tomatoes", "bbc_news"):
        tuned = [r for r in runs if r["stage"] == "finetune" and r["dataset"] == dataset]
        assert sorted((r["model"], r["start"]) for r in tuned) == sorted(
            [(r["model"], "pretrained") for r in pretrained]
            + [("transformer", "scratch"), ("linformer-k128-layerwise", "scratch")]
        )
        # The budgets at which the models fit the training split; XLA left to the programs.
        epochs = {"rotten_tomatoes": "3", "bbc_news": "12"}[dataset]
        assert all(r["argv"][r["argv"].index("--epochs") + 1] == epochs for r in tuned)
    assert not any("--jit-compile" in r["argv"] or "--no-jit-compile" in r["argv"]
                   for r in all_runs)
    # Pretraining flags differ only in the attention options.
    strip = {"--attention", "--projection", "--projected-dim", "--sharing", "--output-dir"}

    def rest(argv):
        return [a for i, a in enumerate(argv) if a not in strip and argv[i - 1] not in strip]

    assert all(rest(r["argv"]) == rest(pretrained[0]["argv"]) for r in pretrained)
