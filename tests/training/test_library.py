"""The training library's small pieces, and the programs' --help."""

import argparse
import importlib
import re

import keras
import numpy as np
import pytest

from keras_linformer import training
from keras_linformer.training import config
from keras_linformer.training import starting_points


@pytest.mark.parametrize(
    "total_steps, every, epochs, steps_per_epoch",
    [(642, 200, 4, 161), (600, 200, 3, 200), (10, 200, 1, 10), (7, 1, 7, 1)],
)
def test_plan_cuts_steps_into_equal_rounds_of_at_most_checkpoint_every(
    total_steps, every, epochs, steps_per_epoch
):
    plan = training.plan_steps(total_steps, every)
    assert (plan.epochs, plan.steps_per_epoch) == (epochs, steps_per_epoch)
    assert total_steps <= plan.total_steps < total_steps + epochs


def test_plan_rejects_zero_steps():
    with pytest.raises(
        ValueError, match="`total_steps` must be a positive integer. Received: total_steps=0"
    ):
        training.plan_steps(0, 10)


def learning_rate_at(optimizer, step):
    optimizer.iterations.assign(step)
    return float(optimizer.learning_rate)


def test_learning_rate_warms_up_linearly_then_decays_to_zero():
    optimizer = training.make_optimizer(1e-3, total_steps=100, warmup_fraction=0.1)
    values = [learning_rate_at(optimizer, step) for step in (0, 5, 10, 55, 100)]
    np.testing.assert_allclose(values, [0.0, 5e-4, 1e-3, 5e-4, 0.0], atol=1e-9)


def test_without_warmup_the_first_step_has_the_peak_learning_rate():
    optimizer = training.make_optimizer(1e-3, total_steps=10, warmup_fraction=0.0)
    assert learning_rate_at(optimizer, 0) == pytest.approx(1e-3)


def test_weight_decay_spares_biases_and_layer_norm():
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), keras.layers.LayerNormalization()]
    )
    for variable in model.trainable_variables:
        variable.assign(np.ones(variable.shape))
    optimizer = training.make_optimizer(1e-1, total_steps=10, warmup_fraction=0.0)
    # Zero gradients: Adam moves nothing, so only decoupled weight decay acts.
    optimizer.apply_gradients(
        [(np.zeros(v.shape, "float32"), v) for v in model.trainable_variables]
    )
    decayed = {v.path for v in model.trainable_variables if np.all(v.numpy() < 1)}
    assert decayed == {"sequential/dense/kernel"}, decayed


def test_architecture_differences_name_each_differing_key():
    saved = dict(hidden_dim=16, num_layers=2, attention="linformer", dropout=0.1)
    assert starting_points.architecture_differences(dict(hidden_dim=16, dropout=0.3), saved) == []
    assert starting_points.architecture_differences(
        dict(hidden_dim=32, attention="transformer"), saved
    ) == [
        "hidden_dim: 32 requested, 16 in the checkpoint",
        "attention: 'transformer' requested, 'linformer' in the checkpoint",
    ]


def test_configuring_replicas_after_tensorflow_started_is_an_error():
    import tensorflow as tf

    tf.constant(0)  # Initialises the devices, if no other test has.
    with pytest.raises(RuntimeError, match="TensorFlow has already initialised its devices"):
        training.configure_cpu_replicas(3)


@pytest.mark.parametrize("text", ["0,2", "3,2", "a,b", "1,2,3"])
def test_profile_batches_must_be_an_ordered_pair_from_1(text):
    with pytest.raises(argparse.ArgumentTypeError, match="FIRST,LAST"):
        config.batch_range(text)


@pytest.mark.parametrize("name", ["pretrain", "finetune", "main"])
def test_help_explains_every_flag(name, capsys):
    program = importlib.import_module(f"keras_linformer.programs.{name}")
    with pytest.raises(SystemExit) as exit_info:
        program.parse_args(["--help"])
    assert exit_info.value.code == 0
    parser = program.parse_args([])[0]
    for action in parser._actions:
        assert action.help and len(action.help) > 10, action.option_strings
    if name != "main":
        assert "refused with --cpu-replicas > 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "TF_CONFIG is not valid JSON"),
        ('{"task": {"type": "worker", "index": 0}}', 'must be a JSON object with "cluster"'),
        ('{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}}', 'must have "worker"'),
        (
            '{"cluster": {"worker": ["localhost"]}, "task": {"type": "worker", "index": 0}}',
            "'localhost'; each must be \"host:port\"",
        ),
        (
            '{"cluster": {"worker": ["a:1", "a:1"]}, "task": {"type": "worker", "index": 0}}',
            "the same address twice: ['a:1']",
        ),
        (
            '{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}',
            "must name this process's job",
        ),
    ],
)
def test_bad_tf_config_is_named(text, message):
    from keras_linformer.training import devices

    with pytest.raises(ValueError) as info:
        devices.read_tf_config({"TF_CONFIG": text})
    assert message in str(info.value)


def test_good_tf_config_is_read():
    from keras_linformer.training import devices

    text = '{"cluster": {"worker": ["h1:2222", "h2:2222"]}, "task": {"type": "worker", "index": 1}}'
    assert devices.read_tf_config({"TF_CONFIG": text})["task"]["index"] == 1
    assert devices.read_tf_config({}) is None


def test_xla_is_the_default_on_one_gpu_but_not_on_cpu(monkeypatch):
    import tensorflow as tf

    from keras_linformer.training import devices

    strategy = tf.distribute.get_strategy()  # One replica.
    physical = {"CPU": ["CPU:0"], "GPU": []}
    monkeypatch.setattr(devices.tf.config, "list_physical_devices",
                        lambda kind=None: physical.get(kind, physical["CPU"]))
    assert devices.resolve_jit_compile(strategy) is False
    assert devices.resolve_jit_compile(strategy, True) is True  # Asked for: XLA on CPU too.
    physical["GPU"] = ["GPU:0"]
    assert devices.resolve_jit_compile(strategy) is True
    assert devices.resolve_jit_compile(strategy, False) is False


@pytest.mark.parametrize("flags, passed", [([], []), (["--jit-compile"], ["--jit-compile"]),
                                           (["--no-jit-compile"], ["--no-jit-compile"])])
def test_the_main_job_passes_its_xla_choice_to_both_stages(flags, passed):
    from keras_linformer.programs import main

    _, args = main.parse_args(flags)
    for stage in main.stage_arguments(args):
        assert [a for a in stage if "jit-compile" in a] == passed


def test_the_main_job_passes_its_short_sequence_rate_to_pretraining_only():
    from keras_linformer.programs import main
    from keras_linformer.programs import pretrain

    _, args = main.parse_args([])
    assert not any("--short-sequence-rate" in stage for stage in main.stage_arguments(args))
    _, args = main.parse_args(["--pretrain-short-sequence-rate", "0.3"])
    pretrain_argv, finetune_argv = main.stage_arguments(args)
    assert pretrain.parse_args(pretrain_argv)[1].short_sequence_rate == 0.3
    assert pretrain.config_from(pretrain.parse_args(pretrain_argv)[1]).short_sequence_rate == 0.3
    assert not any("short-sequence" in a for a in finetune_argv)


@pytest.mark.parametrize("config_class, options, message", [
    ("FinetuningConfig", dict(batch_size=0), "`batch_size` must be a positive integer"),
    ("FinetuningConfig", dict(weight_decay=-1), "`weight_decay` must be a number >= 0"),
    ("PretrainingConfig", dict(checkpoint_every=0), "`checkpoint_every` must be a positive"),
    ("PretrainingConfig", dict(warmup_fraction=1.5),
     r"`warmup_fraction` must be a number in \[0, 1\]"),
    ("FinetuningConfig", dict(learning_rate=float("nan")), "`learning_rate` must be a positive"),
    ("FinetuningConfig", dict(restore_best="no"), "`restore_best` must be True or False"),
    ("FinetuningConfig", dict(dropout=1.0), r"`dropout` must be a number in \[0, 1\)"),
    ("PretrainingConfig", dict(architecture={"num_layer": 1}),
     r"`architecture` must be a dict of backbone_for arguments.*unknown: \['num_layer'\]"),
])
def test_a_config_names_a_bad_option_when_made(config_class, options, message):
    from keras_linformer import training

    with pytest.raises(ValueError, match=message):
        getattr(training, config_class)(output_dir="out", **options)


def test_the_architecture_keys_are_the_backbones_arguments_and_the_attention():
    import inspect

    from keras_linformer.models import LinformerBackbone
    from keras_linformer.training import config

    arguments = set(inspect.signature(LinformerBackbone.__init__).parameters) | {"attention"}
    assert config.ARCHITECTURE_KEYS == arguments - {"self", "kwargs", "dtype", "vocabulary_size"}


def test_a_full_disk_while_saving_a_pretrained_model_leaves_the_previous_files(
        pretrained_dir, monkeypatch):
    import errno
    import os

    from keras_linformer.models import LinformerBackbone

    before = {name: (pretrained_dir / name).read_bytes() for name in os.listdir(pretrained_dir)}
    backbone, vocabulary = starting_points.load_pretrained(pretrained_dir)

    def fill_the_disk(model, directory):
        (pretrained_dir / ".preset.tmp" / "config.json").write_text('{"cut off')
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LinformerBackbone, "save_to_preset", fill_the_disk)
    with pytest.raises(OSError, match=re.escape(
            f"could not write the pretrained model to {pretrained_dir} (No space left on "
            "device); the files there are unchanged")):
        starting_points.save_pretrained(backbone, vocabulary, pretrained_dir)
    assert {name: (pretrained_dir / name).read_bytes()
            for name in os.listdir(pretrained_dir)} == before
    monkeypatch.undo()
    starting_points.save_pretrained(backbone, vocabulary, pretrained_dir)
    assert sorted(os.listdir(pretrained_dir)) == sorted(before)
