"""The programs' flags offer the library's names and defaults, spelled without TensorFlow."""

import subprocess
import sys

import pytest

from keras_linformer.programs import cli
from tests.training.harness import REPOSITORY


def test_the_projections_the_flags_offer_are_the_registrys():
    from keras_linformer.layers import projections

    assert projections.names() == tuple(cli.PROJECTIONS)
    for name, class_name in cli.PROJECTIONS.items():
        assert type(projections.get(name)).__name__ == class_name
    assert projections.names(where="sums_positions") == ("linear",)
    assert projections.names(where="trainable") == ("linear", "conv")


def test_padding_compensation_is_on_off_or_left_to_the_default():
    from keras_linformer.programs import finetune

    def compensation(*flags):
        _, args = finetune.parse_args(["--projection", "linear", *flags])
        return cli.architecture_from(args).get("padding_compensation", "default")

    assert compensation() == "default"
    assert compensation("--padding-compensation") is True
    assert compensation("--no-padding-compensation") is False


def test_null_slots_are_a_count_or_left_to_the_default(capsys):
    from keras_linformer.programs import finetune

    _, args = finetune.parse_args(["--null-slots", "4"])
    assert cli.architecture_from(args)["null_slots"] == 4
    _, args = finetune.parse_args([])
    assert "null_slots" not in cli.architecture_from(args)
    with pytest.raises(SystemExit):
        finetune.parse_args(["--null-slots", "-1"])
    assert "--null-slots: must be an integer from 0 to 1024, got -1" in (
        capsys.readouterr().err)


@pytest.mark.parametrize("program, flags, message", [
    ("finetune", ["--table", ""], "argument --table: must not be empty"),
    ("finetune", ["--output-dir", ""], "argument --output-dir: must not be empty"),
    ("pretrain", ["--text-files", "a.txt", ""], "argument --text-files: must not be empty"),
    ("export", ["--model-name", ""], "argument --model-name: must not be empty"),
    ("finetune", ["--text-column", "review"], "argument --text-column: only used with --table"),
    ("finetune", ["--dataset", "bbc_news", "--no-label-check"],
     "argument --no-label-check: only used with --table"),
    ("finetune", ["--encoding", "latin-1"], "argument --encoding: only used with --table"),
    ("pretrain", ["--documents", "paragraph"],
     "argument --documents: only used with --text-files"),
    ("pretrain", ["--table", "t.csv", "--documents", "paragraph"],
     "argument --documents: only used with --text-files"),
    ("pretrain", ["--encoding", "latin-1"],
     "argument --encoding: only used with --text-files or --table"),
])
def test_data_flags_without_their_source_are_refused_not_ignored(program, flags, message,
                                                                 capsys):
    assert message in refusal(program, flags, capsys)


@pytest.mark.parametrize("program, flags, message", [
    ("finetune", ["--attention", "transformer", "--projected-dim", "8"],
     "argument --projected-dim: not allowed with --attention transformer"),
    ("pretrain", ["--attention", "transformer", "--null-slots", "1"],
     "argument --null-slots: not allowed with --attention transformer"),
    ("main", ["--attention", "transformer", "--sharing", "none"],
     "argument --sharing: not allowed with --attention transformer"),
    ("main", ["--no-pretraining", "--pretrain-epochs", "3"],
     "argument --pretrain-epochs: not allowed with --no-pretraining"),
    ("main", ["--no-pretraining", "--pretrain-max-steps", "3"],
     "argument --pretrain-max-steps: not allowed with --no-pretraining"),
])
def test_linformer_flags_that_would_do_nothing_are_refused(program, flags, message, capsys):
    assert message in refusal(program, flags, capsys)


def test_padding_compensation_without_a_projection_summing_positions_is_refused(tmp_path):
    """Checked by the projection's facts once Keras runs; the output directory stays
    unmade."""
    from keras_linformer.programs import finetune
    from tests.training.harness import run_in_process

    status, stderr = run_in_process(finetune, [
        "--projection", "mean", "--padding-compensation", "--output-dir", tmp_path / "run"])
    assert status == 2, stderr
    assert ("argument --padding-compensation: only used with --projection linear (a projection "
            "that sums positions), not mean") in stderr
    assert not (tmp_path / "run").exists()


def test_the_main_job_passes_linformer_flags_to_its_stages_only_for_the_linformer():
    from keras_linformer.programs import main

    _, args = main.parse_args(["--attention", "transformer"])
    pretrain, finetune = main.stage_arguments(args)
    assert "--projection" not in pretrain and "--projected-dim" not in finetune
    _, args = main.parse_args(["--projected-dim", "8"])
    pretrain = main.stage_arguments(args)[0]
    assert pretrain[pretrain.index("--projected-dim") + 1] == "8"
    assert pretrain[pretrain.index("--projection") + 1] == "mean"


def test_the_main_job_offers_every_stage_option_and_refuses_pretraining_ones_without_it(
        capsys):
    from keras_linformer.programs import main
    from keras_linformer.training import config

    parser, args = main.parse_args([])
    flags = {flag for action in parser._actions for flag in action.option_strings}
    for config_class, prefix in ((config.PretrainingConfig, "pretrain-"),
                                 (config.FinetuningConfig, "finetune-")):
        for name, flag in cli.config_flags(config_class, prefix).items():
            assert (flag in flags) == (name not in main.SHARED), flag
    # Left out, the stages get the main job's defaults; given, the value.
    pretrain, finetune = main.stage_arguments(args)
    assert pretrain[pretrain.index("--epochs") + 1] == "2.0"
    assert "--learning-rate" not in pretrain and "--epochs" not in finetune
    _, args = main.parse_args(["--finetune-restore-best", "--pretrain-mask-rate", "0.2",
                               "--finetune-profile-batches", "2,3"])
    pretrain, finetune = main.stage_arguments(args)
    assert pretrain[pretrain.index("--mask-rate") + 1] == "0.2"
    assert "--restore-best" in finetune
    assert finetune[finetune.index("--profile-batches") + 1] == "2,3"
    for flags in (["--pretrain-epochs", "3"], ["--pretrain-corpus", "bbc_news"],
                  ["--pretrain-mask-rate", "0.2"]):
        assert f"argument {flags[0]}: not allowed with --no-pretraining" in refusal(
            "main", ["--no-pretraining", *flags], capsys)


def test_data_flags_with_their_source_keep_their_values_and_defaults():
    from keras_linformer.programs import finetune
    from keras_linformer.programs import pretrain

    _, args = finetune.parse_args(["--table", "t.csv", "--label-column", "y"])
    assert (args.text_column, args.label_column, args.label_check, args.encoding) == (
        "text", "y", True, "utf-8")
    _, args = finetune.parse_args(["--table", "t.csv", "--no-label-check"])
    assert args.label_check is False
    _, args = pretrain.parse_args(["--text-files", "d", "--encoding", "latin-1"])
    assert (args.documents, args.encoding, args.text_column) == ("file", "iso8859-1", "text")


def refusal(program, flags, capsys):
    """What the parser of `keras_linformer.programs.<program>` says on refusing `flags`."""
    import importlib

    with pytest.raises(SystemExit):
        importlib.import_module(f"keras_linformer.programs.{program}").parse_args(flags)
    return capsys.readouterr().err


def heavy_modules_after(code):
    """Runs `code` in a fresh Python; returns (which of TensorFlow, Keras, keras-hub and
    keras_linformer's layers it imported, its output)."""
    probe = ("\nimport sys\nprint(sorted(name for name in ('tensorflow', 'keras', 'keras_hub', "
             "'keras_linformer.layers') if name in sys.modules))\n")
    result = subprocess.run(
        [sys.executable, "-c", code + probe], capture_output=True, text=True, check=True
    )
    return result.stdout.strip().splitlines()[-1], result.stdout + result.stderr


def test_parsing_flags_imports_no_tensorflow():
    loaded, output = heavy_modules_after(
        "from keras_linformer.programs import cli, finetune, main, pretrain\n"
        "pretrain.parse_args([]); finetune.parse_args([]); main.parse_args([])"
    )
    assert loaded == "[]", output


def test_the_launcher_and_its_error_handling_import_no_tensorflow(tmp_path):
    """The launcher starts its workers at once: neither it nor `cli.run`, through which
    every program reports its errors, starts TensorFlow."""
    loaded, output = heavy_modules_after(
        "import sys\n"
        "from keras_linformer.programs import launch\n"
        "try:\n"
        f"    launch.main(['--workers', '2', '--log-dir', {str(tmp_path)!r}, '--',\n"
        "                 sys.executable, '-c', 'print(1)'])\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0, stop.code"
    )
    assert loaded == "[]", output
    assert "worker 1 exited with status 0" in output


def test_errors_map_to_the_documented_exit_statuses():
    from keras_linformer.training import loop

    assert cli.failure(ValueError("--x: bad")) == (2, "error: --x: bad")
    assert cli.failure(FileNotFoundError("gone"))[0] == 2
    assert cli.failure(loop.CheckpointWriteError("disk full")) == (74, "error: disk full")
    assert cli.failure(FloatingPointError("nan"))[0] == 3
    assert cli.failure(loop.Preempted("Preempted at step 3.")) == (
        143, "Preempted at step 3. Run the same command again to resume.")
    status, message = cli.failure(RuntimeError("first line\nsecond line"))
    assert status == 1 and message == (
        "error: RuntimeError: first line (run again with --debug for the traceback)")


def test_a_programs_help_is_its_docstring_up_to_the_first_example_command():
    doc = """Does a thing.

    Longer text.

    python -m some.program --flag
"""
    parser = cli.program_parser("some.program", doc, epilog="After the flags.")
    text = parser.format_help()
    assert text.startswith("usage: python -m some.program ")
    assert "Longer text." in text and "--flag" not in text
    assert text.rstrip().endswith("After the flags.")


def help_of(module, cwd):
    result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=cwd,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_programs_name_each_other_as_this_process_was_started(tmp_path, capsys):
    """`python -m keras_linformer.programs.X` (from any directory) names its siblings that
    way, `python -m training.X` (in a checkout) that way, and anything else (a console
    script, a library call) names the console scripts."""
    from keras_linformer.programs import finetune

    anywhere = help_of("keras_linformer.programs.pretrain", tmp_path)
    assert anywhere.startswith("usage: python -m keras_linformer.programs.pretrain ")
    assert "`python -m keras_linformer.programs.finetune --pretrained DIR`" in anywhere
    checkout = help_of("training.finetune", REPOSITORY)
    assert checkout.startswith("usage: python -m training.finetune ")
    assert "`python -m training.pretrain`" in checkout
    assert "keras-linformer-" not in anywhere + checkout
    with pytest.raises(SystemExit):
        finetune.parse_args(["--help"])
    here = capsys.readouterr().out
    assert here.startswith("usage: keras-linformer-finetune ")
    assert "`keras-linformer-pretrain`" in here


@pytest.mark.parametrize("program, config_class", [("pretrain", "PretrainingConfig"),
                                                   ("finetune", "FinetuningConfig")])
def test_every_config_option_with_help_is_a_flag_that_reaches_the_config(program,
                                                                          config_class):
    import dataclasses
    import importlib

    from keras_linformer.training import config

    module = importlib.import_module(f"keras_linformer.programs.{program}")
    config_class = getattr(config, config_class)
    parser, args = module.parse_args([])
    offered = {flag for action in parser._actions for flag in action.option_strings}
    flags = cli.config_flags(config_class)
    assert set(flags.values()) <= offered
    # Left out, each option keeps the config's default; given, the flag's value.
    made = module.config_from(args)
    for field in dataclasses.fields(config_class):
        if field.name in flags:
            assert getattr(made, field.name) == field.default, field.name
    _, args = module.parse_args(["--warmup-fraction", "0.25", "--update-freq", "epoch",
                                 "--profile-batches", "2,3", "--seed", "7"])
    made = module.config_from(args)
    assert (made.warmup_fraction, made.update_freq, made.profile_batches, made.seed) == (
        0.25, "epoch", (2, 3), 7)
