"""Masked-LM pretraining, BERT distillation and classifier fine-tuning on tf.distribute.

`pretrain`, `distill` and `finetune` take a config object or its fields as keyword arguments;
one `Trainer` serves every strategy. docs/training.md shows their use.
"""

from typing import TYPE_CHECKING

from keras_linformer.utils.lazy import lazy_names

# Imported when first used, so that `config` and `run_directory` import without TensorFlow.
__all__ = [
    "DEFAULT_ARCHITECTURE", "DistillationConfig", "FinetuningConfig", "PretrainingConfig",
    "RunConfig", "StepPlan", "Trainer", "build_classifier", "build_distiller",
    "build_masked_lm", "check_jit_compile", "configure_cpu_replicas", "distill", "distribute",
    "finetune", "load_pretrained", "make_optimizer", "make_strategy", "plan_steps", "pretrain",
    "resolve_jit_compile", "save_pretrained", "set_mixed_precision", "set_up_devices",
]
# The modules that define them, `config` (no TensorFlow) first.
_MODULES = ("config", "devices", "distillation", "finetuning", "inputs", "loop", "optimizers",
            "pretraining", "starting_points")

if TYPE_CHECKING:  # The same names, for type checkers and the API reference.
    from keras_linformer.training.config import DEFAULT_ARCHITECTURE
    from keras_linformer.training.config import DistillationConfig
    from keras_linformer.training.config import FinetuningConfig
    from keras_linformer.training.config import PretrainingConfig
    from keras_linformer.training.config import RunConfig
    from keras_linformer.training.devices import check_jit_compile
    from keras_linformer.training.devices import configure_cpu_replicas
    from keras_linformer.training.devices import make_strategy
    from keras_linformer.training.devices import resolve_jit_compile
    from keras_linformer.training.devices import set_mixed_precision
    from keras_linformer.training.devices import set_up_devices
    from keras_linformer.training.distillation import build_distiller
    from keras_linformer.training.distillation import distill
    from keras_linformer.training.finetuning import build_classifier
    from keras_linformer.training.finetuning import finetune
    from keras_linformer.training.inputs import StepPlan
    from keras_linformer.training.inputs import distribute
    from keras_linformer.training.inputs import plan_steps
    from keras_linformer.training.loop import Trainer
    from keras_linformer.training.optimizers import make_optimizer
    from keras_linformer.training.pretraining import build_masked_lm
    from keras_linformer.training.pretraining import pretrain
    from keras_linformer.training.starting_points import load_pretrained
    from keras_linformer.training.starting_points import save_pretrained


__getattr__, __dir__ = lazy_names(__name__, __all__, _MODULES)
