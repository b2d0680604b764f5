"""Training: masked-LM pretraining, distillation of a converted BERT and classifier
fine-tuning on tf.distribute.

One trainer (`Trainer`, in `loop`) serves every `tf.distribute` strategy, multi-worker
included, with checkpoints that survive SIGKILL and SIGTERM. The other pieces are
separate: `devices` (`set_up_devices`: replicas, strategy, precision, XLA checks, from
`TF_CONFIG` when set), `inputs` (distributed input, the step plan), `optimizers`,
`starting_points` (pretrained models on disk, BERTs) and the model builders. `pretrain`,
`distill` and `finetune` take their options as a config object (`PretrainingConfig`,
`DistillationConfig`, `FinetuningConfig`) or as keyword arguments, and share one run flow
(`runs.run`).

Typical use:

```python
from keras_linformer import data, training

# Before any TensorFlow op: 2 replicas on the CPU, or TF_CONFIG's workers.
strategy = training.set_up_devices(cpu_replicas=2)
training.pretrain(data.load_news_articles(), "runs/pretrain", strategy=strategy)
training.finetune(
    data.load_rotten_tomatoes(), "runs/finetune", pretrained="runs/pretrain",
    strategy=strategy,
)
```
"""

import importlib
from typing import TYPE_CHECKING

# The names this package offers and the modules that define them, imported when first used,
# so that its TensorFlow-free modules (`config`, `run_directory`) import without TensorFlow
# (the programs parse their flags before it starts).
_MODULES = {
    "config": ("DEFAULT_ARCHITECTURE", "DistillationConfig", "FinetuningConfig",
               "PretrainingConfig", "RunConfig"),
    "devices": ("check_jit_compile", "configure_cpu_replicas", "make_strategy",
                "resolve_jit_compile", "set_mixed_precision", "set_up_devices"),
    "distillation": ("build_distiller", "distill"),
    "finetuning": ("build_classifier", "finetune"),
    "inputs": ("StepPlan", "distribute", "plan_steps"),
    "loop": ("Trainer",),
    "optimizers": ("make_optimizer",),
    "pretraining": ("build_masked_lm", "pretrain"),
    "starting_points": ("load_pretrained", "save_pretrained"),
}
_NAMES = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_NAMES)

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


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
