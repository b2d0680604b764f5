"""The fine-tuning study of a pretrained BERT (`python -m benchmarks.bert_study`): plan, report.

The runs themselves are `training.pretrain` and `training.finetune`
processes, tested elsewhere (tests/training/test_from_bert.py runs both on a
tiny BERT); here every planned command is parsed by its program's own parser
and the report is built from run directories holding a finished run's files.
"""

import csv
import json
import os
import re

import pytest

from benchmarks import bert_study as study
from benchmarks.studies import runner
from benchmarks.studies import seeded
from keras_linformer.programs import finetune
from keras_linformer.programs import pretrain


def parse(*flags):
    return study.parse_args(list(flags))[1]


def finetunings(runs):
    return {r["model"]: vars(finetune.parse_args(r["argv"])[1])
            for r in runs if r["stage"] == "finetune"}


def test_every_model_has_the_same_budget_and_tests_its_best_validated_round():
    runs = study.plan(parse("--datasets", "bbc_news", "--seeds", "0", "--models",
                            *study.MODELS))
    runner.check_commands(runs)  # Every command parses with its program's parser.
    parsed = finetunings(runs)
    assert sorted(parsed) == sorted([
        "transformer", "linear-k64", "linear-k128", "mean-k64", "mean-k128",
        "linear-compensated-k64", "linear-compensated-k128", "mean-null4-k64", "mean-null4-k128",
        "linear-k64+mlm", "linear-k128+mlm", "mean-k64+mlm", "mean-k128+mlm",
        "linear-k64+distill", "linear-k128+distill", "mean-k64+distill", "mean-k128+distill",
        "linear-k64+transfer", "linear-k128+transfer"])
    starting_point = {"from_bert", "pretrained", "attention", "projection", "projected_dim",
                      "padding_compensation", "null_slots", "attention_transfer_epochs",
                      "output_dir"}
    reference = {k: v for k, v in parsed["transformer"].items() if k not in starting_point}
    for model, flags in parsed.items():
        assert {k: v for k, v in flags.items() if k not in starting_point} == reference, model
    assert reference["sequence_length"] == 512 and reference["epochs"] == 2
    assert reference["restore_best"] and reference["checkpoint_every"] == 28
    # XLA is the programs' own choice unless the study is told (none on CPU: see #13's A/B).
    assert reference["jit_compile"] is None
    forced = study.plan(parse("--datasets", "bbc_news", "--seeds", "0", "--no-jit-compile"))
    assert all("--no-jit-compile" in r["argv"] for r in forced)
    assert parsed["transformer"]["from_bert"] == "all-minilm-l6-v2"
    assert parsed["transformer"]["attention"] == "transformer"
    assert (parsed["mean-k64"]["projection"], parsed["mean-k64"]["projected_dim"]) == ("mean", 64)
    # A learned E's commands say whether it is compensated, whatever from_bert's default.
    assert {model: (flags["projection"], flags["padding_compensation"])
            for model, flags in parsed.items() if model.endswith("k64")} == {
        "linear-k64": ("linear", False), "mean-k64": ("mean", None),
        "linear-compensated-k64": ("linear", True), "mean-null4-k64": ("mean", None)}
    assert [parsed[m]["null_slots"] for m in ("mean-null4-k64", "mean-k64", "linear-k64")] == [
        4, None, None]
    # Attention transfer runs inside the +transfer model's own fine-tuning, and only there.
    assert {m for m, flags in parsed.items() if flags["attention_transfer_epochs"]} == {
        "linear-k64+transfer", "linear-k128+transfer"}
    assert parsed["linear-k128+transfer"]["attention_transfer_epochs"] == study.TRANSFER_EPOCHS
    assert (parsed["linear-k128+transfer"]["projection"],
            parsed["linear-k128+transfer"]["padding_compensation"]) == ("linear", False)
    rows = {r["model"]: r for r in runs if r["stage"] == "finetune"}
    assert rows["linear-compensated-k64"]["projection"] == "linear"
    assert [rows[m]["padding_compensation"] for m in (
        "linear-k64", "linear-compensated-k64", "mean-k64", "transformer")] == [
        False, True, None, None]
    assert (rows["mean-null4-k64"]["projection"], rows["mean-null4-k64"]["null_slots"],
            rows["mean-k64"]["null_slots"], rows["transformer"]["null_slots"]) == (
        "mean", 4, 0, None)


def test_an_adapted_model_fine_tunes_the_adaptation_it_follows():
    runs = study.plan(parse("--datasets", "rotten_tomatoes", "--seeds", "0", "1",
                            "--models", "transformer", "linear+mlm",
                            "--adaptation-steps", "50"))
    adaptations = [r for r in runs if r["stage"] == "pretrain"]
    assert [r["model"] for r in adaptations] == ["linear-k32+mlm", "linear-k64+mlm"]
    for adaptation in adaptations:
        flags = pretrain.parse_args(adaptation["argv"])[1]
        assert (flags.from_bert, flags.corpus, flags.max_steps, flags.sequence_length) == (
            "all-minilm-l6-v2", ["news_articles"], 50, 128)
        assert (flags.projection, flags.padding_compensation) == ("linear", False)
        users = [r for r in runs if r["stage"] == "finetune"
                 and finetune.parse_args(r["argv"])[1].pretrained == adaptation["directory"]]
        # Every seed fine-tunes it, after it ran.
        assert [r["seed"] for r in users] == [0, 1]
        assert all(runs.index(r) > runs.index(adaptation) for r in users)


def test_masked_lm_and_distillation_adaptations_have_their_own_runs():
    runs = study.plan(parse("--datasets", "bbc_news", "--seeds", "0",
                            "--models", "mean+mlm", "mean+distill", "linear+distill"))
    adaptations = {r["model"]: r for r in runs if r["stage"] == "pretrain"}
    assert sorted(adaptations) == ["linear-k128+distill", "linear-k64+distill",
                                   "mean-k128+distill", "mean-k128+mlm", "mean-k64+distill",
                                   "mean-k64+mlm"]
    # The masked-LM adaptations keep their directory names of before distillation.
    assert adaptations["mean-k64+mlm"]["directory"].endswith(os.path.join("adapted",
                                                                          "mean-k64-n512"))
    assert adaptations["mean-k64+distill"]["directory"].endswith(
        os.path.join("adapted", "mean-distill-k64-n512"))
    expected = {"mean-k64+mlm": ("masked_lm", "mean", 64),
                "mean-k128+mlm": ("masked_lm", "mean", 128),
                "mean-k64+distill": ("distillation", "mean", 64),
                "mean-k128+distill": ("distillation", "mean", 128),
                "linear-k64+distill": ("distillation", "linear", 64),
                "linear-k128+distill": ("distillation", "linear", 128)}
    for name, adaptation in adaptations.items():
        flags = pretrain.parse_args(adaptation["argv"])[1]
        assert (flags.objective, flags.projection, flags.projected_dim) == expected[name]
    tunings = {r["model"]: r for r in runs if r["stage"] == "finetune"}
    assert {name: r["adapted"] for name, r in tunings.items()} == {
        "mean-k64+mlm": "mlm", "mean-k128+mlm": "mlm", "mean-k64+distill": "distill",
        "mean-k128+distill": "distill", "linear-k64+distill": "distill",
        "linear-k128+distill": "distill"}
    for name, tuning in tunings.items():
        assert finetune.parse_args(tuning["argv"])[1].pretrained == adaptations[name][
            "directory"]


def finish(run, accuracy, seconds, fit_cpu_seconds=None, steps=112):
    os.makedirs(run["directory"], exist_ok=True)
    summary = {"test_accuracy": accuracy, "majority_accuracy": 0.25, "test_examples": 200,
               "seconds": seconds, "fit_seconds": 500.0, "tokens_per_second": 1024.0,
               "steps": steps, "total_steps": 112, "selected_round": 3,
               "selected_val_accuracy": accuracy}
    if fit_cpu_seconds is not None:  # Runs from before it was recorded have none.
        summary["fit_cpu_seconds"] = fit_cpu_seconds
    with open(os.path.join(run["directory"], "summary.json"), "w") as file:
        json.dump(summary, file)


def test_the_report_gives_accuracy_throughput_and_wall_time_per_model(tmp_path):
    args = parse("--datasets", "bbc_news", "--seeds", "0", "1", "--models", "transformer",
                 "mean", "--output-dir", str(tmp_path / "runs"),
                 "--results-dir", str(tmp_path / "results"))
    runs = study.plan(args)
    accuracy = {"transformer": [0.96, 0.98], "mean-k64": [0.95, 0.95], "mean-k128": [0.97]}
    for run in runs:
        if run["seed"] < len(accuracy[run["model"]]):
            # The Transformer's runs used 1,000 CPU-s each, the others 500 and 250.
            cpu = {"transformer": 1000.0, "mean-k64": 500.0}.get(run["model"])
            # The Transformer's second seed was resumed after 28 steps: its 300 s are
            # those of its last process, not the run's.
            resumed = run["model"] == "transformer" and run["seed"] == 1
            finish(run, accuracy[run["model"]][run["seed"]],
                   seconds=300.0 if resumed else 600.0,
                   fit_cpu_seconds=cpu if run["seed"] == 0 else cpu and cpu / 2,
                   steps=84 if resumed else 112)
    paths = study.STUDY.report(runs, args, "python -m benchmarks.bert_study")
    markdown = open(paths[1]).read()
    # 1024 tokens/s at n = 512 are 2 examples/s, 1,000 examples in the 500 s of fitting:
    # 1.00 and 2.00 examples per CPU-s (mean 1.50), 2.00 and 4.00 (mean 3.00); 600 s are
    # 10 minutes.
    assert "| transformer | 97.0 ± 1.4 [96.0, 98.0] | - | 2.00 | 1.50 | 10.0 |" in markdown
    # Differences -1 and -3 by seed: mean -2, standard error 1, t(1) = 12.706.
    assert ("| mean-k64 | 95.0 ± 0.0 [95.0, 95.0] | -2.0 [-14.7, +10.7] | 2.00 | 3.00 | 10.0 |"
            in markdown)
    # One seed against the Transformer's two: compared with the same seed's run (96.0),
    # not with the mean over both (97.0), and the seed is named.
    assert "| mean-k128 | 97.0 | +1.0 (seed 0) | 2.00 | - | 10.0 |" in markdown
    assert "1 of 6 runs have not finished." in markdown
    assert ("Resumed, so left out of the wall times: bbc_news transformer seed 1 (last 84 "
            "of 112 steps)." in markdown)
    with open(paths[0], newline="") as file:
        assert file.readline() == "# python -m benchmarks.bert_study\n"
        rows = list(csv.DictReader(file))
    assert [r["selected_round"] for r in rows if r["status"] == "finished"] == ["3"] * 5
    assert os.path.getsize(paths[2]) > 0
    # No run recorded its machine: the report says nothing of machines.
    assert "Machines:" not in markdown and {r["machine"] for r in rows} == {""}


def test_each_run_s_recorded_machine_reaches_the_csv_and_the_report(tmp_path):
    args = parse("--datasets", "bbc_news", "--seeds", "0", "--models", "transformer", "mean",
                 "--projected-dims", "64", "--output-dir", str(tmp_path / "runs"),
                 "--results-dir", str(tmp_path / "results"))
    runs = study.plan(args)
    for run, rate in zip(runs, (150.0, 170.0)):
        finish(run, 0.95, seconds=600.0)
        with open(os.path.join(run["directory"], runner.MACHINE_FILE), "w") as file:
            json.dump({"machine": "2 CPU cores (X)", "matmul_gflops_per_s": rate}, file)
    paths = study.STUDY.report(runs, args, "python -m benchmarks.bert_study")
    rows = read_results(tmp_path)
    assert [(r["machine"], r["matmul_gflops_per_s"]) for r in rows] == [
        ("2 CPU cores (X)", 150.0), ("2 CPU cores (X)", 170.0)]
    assert ("- 2 CPU cores (X): 2 runs, a 2048^3 float32 matmul at 150-170 GFLOP/s before "
            "each." in open(paths[1]).read())


def read_results(tmp_path):
    from benchmarks import outputs

    return outputs.read_csv(tmp_path / "results" / "bert-study.csv")[0]


def test_a_fresh_clone_goes_on_from_the_runs_its_results_csv_records(tmp_path, capsys):
    import shutil

    flags = ["--datasets", "bbc_news", "--seeds", "0", "1", "--models", "transformer",
             "linear+transfer", "--projected-dims", "128", "--output-dir",
             str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results")]
    args = parse(*flags)
    runs = study.plan(args)
    for run, accuracy in zip(runs, [0.97, 0.96, 0.98]):  # Seed 1's linear has not run.
        finish(run, accuracy, seconds=600.0)
    with open(os.path.join(runs[0]["directory"], runner.COMMIT_FILE), "w") as file:
        file.write("abc1234\n")
    study.STUDY.report(runs, args, "python -m benchmarks.bert_study")
    assert [row["commit"] for row in read_results(tmp_path)] == ["abc1234", None, None, None]
    before = open(tmp_path / "results" / "bert-study.md").read()
    assert "| linear-k128+transfer | 96.0 | -1.0 (seed 0) |" in before
    recorded = seeded.recorded_rows(args)
    assert sorted(recorded) == sorted(runner.command_key(runner.command_line(r))
                                      for r in runs[:3])
    # Without the run directories (a fresh clone of the committed CSV), the same runs are
    # finished with the same values...
    shutil.rmtree(tmp_path / "runs")
    study.STUDY.report(runs, args, "python -m benchmarks.bert_study")
    assert open(tmp_path / "results" / "bert-study.md").read() == before
    # ... and none is run again: with every run recorded, nothing runs.
    finish(runs[3], 0.95, seconds=600.0)
    study.STUDY.report(runs, args, "python -m benchmarks.bert_study")
    shutil.rmtree(tmp_path / "runs")
    study.main(flags)
    assert "4 runs, 4 already finished (4 of them recorded in the results), 0 to run" in (
        capsys.readouterr().out)
    assert not os.path.exists(tmp_path / "runs")
    assert [(row["commit"], row["status"]) for row in read_results(tmp_path)] == [
        ("abc1234", "finished"), (None, "finished"), (None, "finished"), (None, "finished")]
    # A run of another command (another learning rate) is not the recorded one.
    other = study.plan(parse(*flags, "--learning-rate", "2e-4"))
    assert not any(runner.command_key(runner.command_line(r)) in recorded for r in other)
    rows = study.collect(other, recorded=seeded.recorded_rows(args))
    assert {r["status"] for r in rows} == {"not run"}
    # A command that plans fewer runs (seed 1 only) keeps the runs the CSV recorded.
    study.main([*flags[:3], "1", *flags[5:]])
    assert [(row["seed"], row["model"]) for row in read_results(tmp_path)] == [
        (1, "transformer"), (1, "linear-k128+transfer"),
        (0, "transformer"), (0, "linear-k128+transfer")]


def test_the_report_gives_each_adaptations_own_measures(tmp_path):
    args = parse("--datasets", "bbc_news", "--seeds", "0", "--models", "mean+distill",
                 "mean+mlm", "--output-dir", str(tmp_path / "runs"),
                 "--results-dir", str(tmp_path / "results"))
    runs = study.plan(args)
    measures = {"mean-k64+distill": {"test_token_error": 0.25, "test_embedding_cosine": 0.95},
                "mean-k64+mlm": {"test_perplexity": 12.5}}
    for run in runs:
        if run["stage"] == "pretrain" and run["model"] in measures:
            os.makedirs(run["directory"])
            with open(os.path.join(run["directory"], "summary.json"), "w") as file:
                json.dump(measures[run["model"]], file)
        elif run["stage"] == "finetune" and run["model"] == "mean-k64+distill":
            finish(run, 0.9, seconds=600.0)
    rows = study.collect(runs)
    row = next(r for r in rows if r["model"] == "mean-k64+distill")
    assert (row["adaptation_token_error"], row["adaptation_embedding_cosine"],
            row["adaptation_perplexity"]) == (0.25, 0.95, None)
    assert next(r for r in rows if r["model"] == "mean-k128+distill")[
        "adaptation_token_error"] is None  # Its adaptation has not run.
    markdown = open(study.STUDY.report(runs, args, "python -m benchmarks.bert_study")[1]).read()
    assert "| mean-k64+distill | distill | 0.250 | 0.9500 | - |" in markdown
    assert "| mean-k64+mlm | mlm | - | - | 12.5 |" in markdown
    assert "mean-k128+distill | distill" not in markdown


def test_projected_dims_choose_the_k_of_every_converted_model():
    runs = study.plan(parse("--datasets", "bbc_news", "--seeds", "0", "--models", "transformer",
                            "mean+distill", "--projected-dims", "64"))
    assert [(r["stage"], r["model"]) for r in runs] == [
        ("pretrain", "mean-k64+distill"), ("finetune", "transformer"),
        ("finetune", "mean-k64+distill")]
    # The same run as without the flag: a study finishes one k first, then the other.
    full = study.plan(parse("--datasets", "bbc_news", "--seeds", "0", "--models", "transformer",
                            "mean+distill"))
    assert all(run in full for run in runs)


@pytest.mark.parametrize("k", ["1000", "96"])
def test_projected_dims_that_do_not_divide_n_are_refused(k, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse("--datasets", "bbc_news", "--projected-dims", "64", k)
    assert exit_info.value.code == 2
    assert (f"argument --projected-dims: k must divide the sequence length of bbc_news "
            f"(n = 512), as pooling needs; received {k}") in capsys.readouterr().err


@pytest.mark.parametrize("edit, message", [
    (lambda text: text.replace(",0.97,", ",ninety,", 1),
     "data row 1, column test_accuracy: 'ninety' is not an accuracy from 0 to 1"),
    (lambda text: text.replace(",0.97,", ",nan,", 1),
     "data row 1, column test_accuracy: nan is not an accuracy from 0 to 1"),
    (lambda text: text.replace(",0.97,", ",97.0,", 1),
     "data row 1, column test_accuracy: 97.0 is not an accuracy from 0 to 1"),
    (lambda text: text.replace(",0.97,", ",,", 1),
     "data row 1 is a finished run without a test_accuracy or test_perplexity"),
    (lambda text: text + text.splitlines()[2] + "\n",
     "data row 3 records the same run as data row 1; keep one of them"),
])
def test_a_results_csv_edited_by_hand_is_refused_naming_the_row(edit, message, tmp_path, capsys):
    flags = ["--datasets", "bbc_news", "--seeds", "0", "--models", "transformer", "mean",
             "--projected-dims", "128", "--output-dir", str(tmp_path / "runs"),
             "--results-dir", str(tmp_path / "results")]
    args = parse(*flags)
    runs = study.plan(args)
    for run, accuracy in zip(runs, [0.97, 0.96]):
        finish(run, accuracy, seconds=600.0)
    study.STUDY.report(runs, args, "python -m benchmarks.bert_study")
    path = tmp_path / "results" / "bert-study.csv"
    path.write_text(edit(path.read_text()))
    with pytest.raises(ValueError, match=re.escape(f"--results-dir: {path}: {message}")):
        seeded.recorded_rows(args)
    before = path.read_text()
    with pytest.raises(SystemExit) as exited:
        study.main(flags)
    assert exited.value.code == 2 and message in capsys.readouterr().err
    assert path.read_text() == before
