"""The from-scratch projection study (`python -m benchmarks.projection_study`): plan and report.

The runs themselves are `training.finetune` processes, tested elsewhere; here
the plan's flags are parsed by finetune's own parser and the report is built
from run directories holding the files a finished run leaves.
"""

import csv
import json
import os

import pytest

from benchmarks import projection_study as study
from keras_linformer.programs import finetune


def parse(*flags):
    return study.parse_args(list(flags))[1]


def test_models_differ_only_in_their_attention_flags():
    runs = study.plan(parse("--datasets", "bbc_news", "--seeds", "0",
                            "--models", *study.MODELS))
    parsed = {run["model"]: vars(finetune.parse_args(run["argv"])[1]) for run in runs}
    attention_flags = {"attention", "projection", "projection_initializer", "projected_dim",
                       "sharing", "padding_compensation", "output_dir"}
    reference = {k: v for k, v in parsed["transformer"].items() if k not in attention_flags}
    for model, flags in parsed.items():
        assert {k: v for k, v in flags.items() if k not in attention_flags} == reference, model
    assert reference["sequence_length"] == 512 and reference["epochs"] == 4
    assert parsed["transformer"]["attention"] == "transformer"
    assert parsed["mean"]["projection"] == "mean" and parsed["mean"]["projected_dim"] == 128
    assert parsed["linear-fairseq"]["projection_initializer"] == "fairseq"
    assert parsed["linear-fairseq"]["padding_compensation"] is None  # The layer's default: on.
    assert parsed["linear-gaussian-uncompensated"]["padding_compensation"] is False


def test_runs_go_by_dataset_then_seed_each_in_its_own_directory(tmp_path):
    runs = study.plan(parse("--seeds", "0", "1", "--models", "transformer", "mean",
                            "--output-dir", str(tmp_path)))
    assert [(r["dataset"], r["seed"], r["model"]) for r in runs][:5] == [
        ("rotten_tomatoes", 0, "transformer"), ("rotten_tomatoes", 0, "mean"),
        ("rotten_tomatoes", 1, "transformer"), ("rotten_tomatoes", 1, "mean"),
        ("bbc_news", 0, "transformer"),
    ]
    assert len({r["directory"] for r in runs}) == len(runs) == 8


def test_projected_dims_run_each_linformer_at_each_k_keeping_the_default_names(tmp_path):
    runs = study.plan(parse("--datasets", "bbc_news", "--seeds", "0", "--models",
                            "transformer", "mean", "--projected-dims", "128", "512",
                            "--output-dir", str(tmp_path)))
    assert [(r["model"], r["projected_dim"]) for r in runs] == [
        ("transformer", None), ("mean", 128), ("mean-k512", 512)]
    # The dataset's own k keeps the name (and directory) a run without the flag has.
    assert [os.path.basename(r["directory"]) for r in runs] == [
        "transformer-seed0", "mean-seed0", "mean-k512-seed0"]
    parsed = vars(finetune.parse_args(runs[2]["argv"])[1])
    assert (parsed["projection"], parsed["projected_dim"]) == ("mean", 512)


def test_a_projected_dim_longer_than_a_datasets_sequence_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse("--projected-dims", "64", "256")
    assert exit_info.value.code == 2
    assert ("argument --projected-dims: k must be at most the sequence length of "
            "rotten_tomatoes (n = 128); received 256") in capsys.readouterr().err


def finish(run, accuracy, majority=0.5):
    directory = run["directory"]
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "summary.json"), "w") as file:
        json.dump({"test_accuracy": accuracy, "majority_accuracy": majority, "test_examples": 100,
                   "seconds": 1.0, "tokens_per_second": 10.0, "total_steps": 2}, file)


def test_the_report_gives_mean_and_spread_over_seeds_against_the_transformer(tmp_path):
    args = parse("--seeds", "0", "1", "2", "--datasets", "rotten_tomatoes", "--models",
                 "transformer", "linear-gaussian", "--output-dir", str(tmp_path / "runs"),
                 "--results-dir", str(tmp_path / "results"))
    runs = study.plan(args)
    accuracies = {"transformer": [0.70, 0.72, 0.74], "linear-gaussian": [0.60, 0.61, 0.65]}
    for run in runs[:-1]:  # The last gaussian seed has not finished.
        finish(run, accuracies[run["model"]][run["seed"]])
    paths = study.STUDY.report(runs, args, "python -m benchmarks.projection_study")
    markdown = open(paths[1]).read()
    assert "| transformer | 72.0 ± 2.0 [70.0, 72.0, 74.0] | - |" in markdown
    # Seeds 0 and 1 against the Transformer's seeds 0 and 1 (71.0), not its three (72.0).
    # Differences -10 and -11: mean -10.5, standard error 0.5, t(1) = 12.706.
    assert ("| linear-gaussian | 60.5 ± 0.7 [60.0, 61.0] | -10.5 [-16.9, -4.1] (seeds 0, 1) |"
            in markdown)
    assert "1 of 6 runs have not finished." in markdown
    with open(paths[0], newline="") as file:
        assert file.readline() == "# python -m benchmarks.projection_study\n"
        rows = list(csv.DictReader(file))
    assert [r["status"] for r in rows].count("finished") == 5
    assert {r["projection_initializer"] for r in rows} == {"", "gaussian"}


def test_the_report_names_other_ks_and_each_seeds_majority_class(tmp_path):
    args = parse("--seeds", "0", "1", "--datasets", "bbc_news", "--models", "mean",
                 "--projected-dims", "128", "256", "--output-dir", str(tmp_path / "runs"),
                 "--results-dir", str(tmp_path / "results"))
    for run in study.plan(args):
        finish(run, 0.9, majority=[0.261, 0.276][run["seed"]])  # Each seed draws its split.
    paths = study.STUDY.report(study.plan(args), args, "command")
    markdown = open(paths[1]).read()
    assert "| model | bbc news (n = 512, k = 128 unless named) | vs Transformer |" in markdown
    assert "| mean-k256 | 90.0 ± 0.0 [90.0, 90.0] | - |" in markdown
    assert "Majority class: bbc news 26.1-27.6 (each seed draws its own split)." in markdown


def test_a_report_without_a_finished_run_is_an_error_and_writes_nothing(tmp_path):
    args = parse("--output-dir", str(tmp_path / "typo"), "--results-dir", str(tmp_path / "r"))
    with pytest.raises(ValueError, match="no finished run under"):
        study.STUDY.report(study.plan(args), args, "command")
    assert not (tmp_path / "r").exists()
