"""The main job's projection study (`python -m benchmarks.main_job_study`): plan and report.

Each run is a `training.main` process (tested in tests/test_install.py);
here the plan's flags are parsed by the main job's own parser and the report
is built from run directories holding the files a finished main job leaves.
"""

import csv
import json
import os

import pytest

from benchmarks import main_job_study as study
from benchmarks import quality
from benchmarks.studies import runner
from keras_linformer.programs import main as main_job


def parse(*flags):
    return study.parse_args(list(flags))[1]


def test_runs_differ_only_in_the_projection_and_the_seed(tmp_path):
    runs = study.plan(parse("--models", "transformer", "mean", "linear", "--seeds", "0", "1",
                            "--output-dir", str(tmp_path)))
    assert [(r["model"], r["seed"]) for r in runs] == [
        ("transformer", 0), ("mean", 0), ("linear", 0),
        ("transformer", 1), ("mean", 1), ("linear", 1)]
    parsed = [vars(main_job.parse_args(r["argv"])[1]) for r in runs]
    # The Transformer has no projection: its projection flags are None.
    varying = {"attention", "projection", "projected_dim", "sharing", "seed", "output_dir",
               "export_dir"}
    assert parsed[0]["projected_dim"] is None and parsed[1]["projected_dim"] == 16
    reference = {k: v for k, v in parsed[0].items() if k not in varying}
    assert all({k: v for k, v in p.items() if k not in varying} == reference for p in parsed)
    assert (parsed[0]["attention"], parsed[1]["projection"], parsed[5]["seed"]) == (
        "transformer", "mean", 1)
    assert parsed[2]["output_dir"] == str(tmp_path / "linear-seed0")
    assert parsed[2]["export_dir"] == str(tmp_path / "exports" / "linear-seed0")


def test_short_sequence_rates_run_each_model_at_each_rate_keeping_the_default_names(tmp_path):
    runs = study.plan(parse("--models", "linear", "--seeds", "0", "--short-sequence-rates",
                            "0", "0.5", "--output-dir", str(tmp_path)))
    assert [r["model"] for r in runs] == ["linear", "linear-short0.5"]
    assert runs[1]["directory"] == str(tmp_path / "linear-short0.5-seed0")
    parsed = [main_job.parse_args(r["argv"])[1] for r in runs]
    # Left out at the default rate, 0.
    assert [p.pretrain_short_sequence_rate for p in parsed] == [None, 0.5]
    assert parsed[1].projection == "linear"


def test_no_pretraining_runs_each_model_from_random_weights_under_its_own_name(tmp_path):
    runs = study.plan(parse("--models", "transformer", "mean", "--seeds", "2",
                            "--no-pretraining", "--output-dir", str(tmp_path)))
    assert [r["model"] for r in runs] == ["transformer-scratch", "mean-scratch"]
    assert runs[1]["directory"] == str(tmp_path / "mean-scratch-seed2")
    assert runs[1]["start"] == "main job: from random weights"
    parsed = [main_job.parse_args(r["argv"])[1] for r in runs]
    assert all(p.no_pretraining and p.seed == 2 for p in parsed)
    assert (parsed[0].attention, parsed[1].projection) == ("transformer", "mean")


def test_a_run_without_pretraining_reports_no_perplexity(tmp_path):
    args = parse("--models", "mean", "--seeds", "0", "1", "--no-pretraining", "--output-dir",
                 str(tmp_path / "runs"), "--results-dir", str(tmp_path / "r"))
    runs = study.plan(args)
    directory = os.path.join(runs[0]["directory"], "finetune")
    os.makedirs(directory)
    summary = {"test_accuracy": 0.7, "majority_accuracy": 0.5, "test_examples": 100}
    for path in (directory, runs[0]["directory"]):
        with open(os.path.join(path, "summary.json"), "w") as file:
            json.dump(summary, file)
    paths = study.STUDY.report(runs, args, "python -m benchmarks.main_job_study")
    assert "| mean-scratch | 70.0 | - | - |" in open(paths[1]).read()


def test_no_pretraining_refuses_a_pretraining_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse("--no-pretraining", "--short-sequence-rates", "0", "0.5")
    assert exit_info.value.code == 2
    assert ("argument --short-sequence-rates: a pretraining option, not allowed with "
            "--no-pretraining; received 0.0 0.5") in capsys.readouterr().err


def test_every_study_plans_runs_with_what_the_runner_reads(tmp_path):
    # runner.execute labels, logs and starts each run from these keys.
    from benchmarks import bert_study
    from benchmarks import projection_study

    keys = {"stage", "dataset", "model", "start", "directory", "module", "argv"}
    plans = {
        "main_job_study": study.plan(parse("--output-dir", str(tmp_path))),
        "quality": quality.plan(quality.parse_args([])[1]),
        "projection_study": projection_study.plan(projection_study.parse_args([])[1]),
        "bert_study": bert_study.plan(bert_study.parse_args(["--models", "linear+mlm"])[1]),
    }
    for name, runs in plans.items():
        assert runs, name
        for run in runs:
            assert keys <= set(run), (name, sorted(keys - set(run)))


def finish(run, accuracy, perplexity, exported=True):
    """The summaries a main job leaves: each stage's, then its own once the export passed
    (the fine-tuning's, with the export's path)."""
    finetuning = {"test_accuracy": accuracy, "majority_accuracy": 0.5, "test_examples": 100,
                  "seconds": 1.0}
    for stage, summary in (("pretrain", {"test_perplexity": perplexity,
                                         "unigram_test_perplexity": 600.0, "seconds": 9.0,
                                         "test_accuracy": 0.12}),
                           ("finetune", finetuning),
                           (".", dict(finetuning, export="exports/x/1") if exported else None)):
        os.makedirs(os.path.join(run["directory"], stage), exist_ok=True)
        if summary:
            with open(os.path.join(run["directory"], stage, "summary.json"), "w") as file:
                json.dump(summary, file)


def test_the_report_reads_both_stages_of_each_run(tmp_path):
    args = parse("--output-dir", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "r"),
                 "--seeds", "0", "1")
    runs = study.plan(args)
    finish(runs[0], 0.70, 400.0)  # mean, seed 0
    finish(runs[1], 0.66, 410.0)  # linear, seed 0
    finish(runs[2], 0.72, 420.0)  # mean, seed 1
    finish(runs[3], 0.90, 430.0, exported=False)  # linear, seed 1: killed during its export
    for run in runs:
        with open(os.path.join(run["directory"], runner.COMMAND_FILE), "w") as file:
            file.write(runner.command_line(run))
    # Finished: the main job wrote its own summary, after the export passed.
    assert [runner.is_finished(r) for r in runs] == [True, True, True, False]
    paths = study.STUDY.report(runs, args, "python -m benchmarks.main_job_study")
    markdown = open(paths[1]).read()
    assert ("| mean | 71.0 ± 1.4 [70.0, 72.0] | 410.0 ± 14.1 [400.0, 420.0] | "
            "600.0 ± 0.0 [600.0, 600.0] |") in markdown
    assert "| linear | 66.0 | 410.0 | 600.0 |" in markdown
    assert "1 of 4 runs have not finished." in markdown
    with open(paths[0], newline="") as file:
        assert file.readline() == "# python -m benchmarks.main_job_study\n"
        rows = list(csv.DictReader(file))
    assert [r["status"] for r in rows] == ["finished", "finished", "finished", "unfinished"]
    assert rows[1]["pretrain_test_perplexity"] == "410.0" and rows[1]["pretrain_seconds"] == "9.0"
    # The pretraining's masked-token accuracy, beside the fine-tuning's test accuracy.
    assert (rows[1]["pretrain_masked_token_accuracy"], rows[1]["test_accuracy"]) == ("0.12", "0.66")
