"""Devices, distribution strategy, mixed precision and XLA for a training run."""

import contextlib
import json
import math
import os
import signal
import socket
import time

import keras
import tensorflow as tf

from keras_linformer.utils import signals
from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import check_positive_int


def configure_cpu_replicas(cpu_replicas):
    """Splits the CPU into `cpu_replicas` logical devices, for MirroredStrategy without GPUs
    (to test distributed code: they share the cores). Call it before any TensorFlow op.

    Args:
        cpu_replicas: int, the number of logical CPU devices; `1` leaves the CPU as it is.

    Raises:
        ValueError: `cpu_replicas` is not a positive int, or GPUs are visible.
        RuntimeError: TensorFlow has already initialised its devices with another split.
    """
    check_positive_int("cpu_replicas", cpu_replicas)
    if cpu_replicas == 1:
        return
    if tf.config.list_physical_devices("GPU"):
        raise ValueError(f"`cpu_replicas={cpu_replicas}` splits the CPU for machines without "
                         "GPUs, but GPUs are visible and MirroredStrategy trains on them. "
                         "Leave cpu_replicas at 1 (or hide the GPUs with "
                         "CUDA_VISIBLE_DEVICES=).")
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * cpu_replicas)
    except RuntimeError as error:
        if len(tf.config.list_logical_devices("CPU")) == cpu_replicas:
            return  # Already split this way (e.g. a second call).
        raise RuntimeError(f"Cannot split the CPU into {cpu_replicas} logical devices: "
                           "TensorFlow has already initialised its devices. Call "
                           "configure_cpu_replicas before any TensorFlow op runs.") from error


def make_strategy():
    """The strategy for the visible devices: `MirroredStrategy` over every GPU, else over
    several logical CPU devices (`configure_cpu_replicas`), else the default strategy."""
    gpus = tf.config.list_logical_devices("GPU")
    cpus = tf.config.list_logical_devices("CPU")
    if gpus or len(cpus) > 1:
        return tf.distribute.MirroredStrategy([device.name for device in gpus or cpus])
    return tf.distribute.get_strategy()


def check_jit_compile(strategy, jit_compile):
    """Raises ValueError for XLA with several CPU replicas (it fails in TensorFlow 2.21)."""
    if not jit_compile or strategy.num_replicas_in_sync == 1:
        return
    devices = strategy.extended.worker_devices
    if all("GPU" not in device.upper() for device in devices):
        raise ValueError(f"jit_compile=True does not work with MirroredStrategy over "
                         f"{len(devices)} logical CPU devices in TensorFlow 2.21 (XLA "
                         "cannot read a variable held by CPU:1 from CPU:0). Use "
                         "jit_compile with a single CPU replica, or train the replicas "
                         "without jit_compile.")


def resolve_jit_compile(strategy, jit_compile=None):
    """Whether a run under `strategy` compiles its training step with XLA; `None`: for one
    replica in one process on a GPU only (docs/training.md).

    Raises:
        ValueError: `jit_compile=True` where XLA cannot work.
    """
    if jit_compile is None:
        return (strategy.num_replicas_in_sync == 1
                and not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
                and bool(tf.config.list_physical_devices("GPU")))
    check_jit_compile(strategy, jit_compile)
    return bool(jit_compile)


def set_mixed_precision(enabled):
    """Sets Keras's global dtype policy and returns its name: `"mixed_float16"` on GPUs,
    `"mixed_bfloat16"` on CPU, `"float32"` when not `enabled`. Call it before building models."""
    name = "float32"
    if enabled:
        name = "mixed_float16" if tf.config.list_logical_devices("GPU") else "mixed_bfloat16"
    keras.config.set_dtype_policy(name)
    return name


def set_up_devices(cpu_replicas=1, mixed_precision=False, jit_compile=None, deterministic=False,
                   connect_timeout=300.0, log=print):
    """Configures TensorFlow's devices for a training run and returns its strategy: under
    `TF_CONFIG` a `MultiWorkerMirroredStrategy`, else `make_strategy`. Call it before any op.

    Args:
        cpu_replicas: int, logical CPU devices without GPUs; `1` with `TF_CONFIG`.
        mixed_precision: bool, see `set_mixed_precision`.
        jit_compile: bool or `None`, see `resolve_jit_compile`.
        deterministic: bool, enables `tf.config.experimental.enable_op_determinism`.
        connect_timeout: float, with `TF_CONFIG`: seconds to wait for the other workers.
        log: callable for progress messages.

    Raises:
        ValueError: a wrong `TF_CONFIG`, `cpu_replicas` other than 1 with it, or XLA where it fails.
    """
    if deterministic:
        tf.config.experimental.enable_op_determinism()
    if read_tf_config() is not None:
        if cpu_replicas != 1:  # Else `configure_cpu_replicas` checks it.
            raise ValueError("`cpu_replicas` must be 1 with TF_CONFIG (multi-worker training): run "
                             "one worker per host or device. Received: "
                             f"cpu_replicas={cpu_replicas}")
        strategy = make_multi_worker_strategy(connect_timeout, log=log)
    else:
        configure_cpu_replicas(cpu_replicas)
        strategy = make_strategy()
    check_jit_compile(strategy, jit_compile)
    set_mixed_precision(mixed_precision)
    return strategy


def read_tf_config(environ=None):
    """`TF_CONFIG` as a dict (`None` when unset); ValueError naming a wrong field and value."""
    text = (os.environ if environ is None else environ).get("TF_CONFIG", "").strip()
    if not text:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}): {text[:200]!r}") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise ValueError('TF_CONFIG must be a JSON object with "cluster" (e.g. {"worker": '
                         '["host1:port", "host2:port"]}) and "task" (e.g. {"type": "worker", '
                         f'"index": 0}}). Received: {text[:200]!r}')
    cluster, task = config["cluster"], config.get("task")
    unknown = sorted(set(cluster) - {"chief", "worker"})
    if unknown or not cluster.get("worker") and not cluster.get("chief"):
        raise ValueError('TF_CONFIG["cluster"] must have "worker" (and optionally one "chief") '
                         "lists of addresses for MultiWorkerMirroredStrategy. Received: "
                         f"{cluster!r}")
    addresses = []
    for job, jobs_addresses in cluster.items():
        if not isinstance(jobs_addresses, list) or not jobs_addresses:
            raise ValueError(f'TF_CONFIG["cluster"]["{job}"] must be a non-empty list of '
                             f'"host:port" strings. Received: {jobs_addresses!r}')
        for address in jobs_addresses:
            host, _, port = str(address).rpartition(":")
            if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
                raise ValueError(f'TF_CONFIG["cluster"]["{job}"] has the address {address!r}; '
                                 'each must be "host:port" with a port in 1-65535.')
            addresses.append(address)
    repeated = sorted({a for a in addresses if addresses.count(a) > 1})
    if repeated:
        raise ValueError(f"TF_CONFIG lists the same address twice: {repeated}.")
    if len(cluster.get("chief", [])) > 1:
        raise ValueError(f'TF_CONFIG may have one "chief". Received: {cluster["chief"]!r}')
    if (not isinstance(task, dict) or task.get("type") not in cluster
            or type(task.get("index")) is not int
            or not 0 <= task["index"] < len(cluster[task["type"]])):
        sizes = {job: len(a) for job, a in cluster.items()}
        raise ValueError(f'TF_CONFIG["task"] must name this process\'s job and index in the '
                         f"cluster ({sizes}). Received: {task!r}")
    return config


def is_chief(strategy=None, environ=None):
    """Whether this process is the chief (the `chief` task, or worker 0 without one) of
    `strategy`'s cluster, or of `TF_CONFIG`'s without a `strategy`."""
    if strategy is not None:
        return strategy.extended.should_checkpoint
    config = read_tf_config(environ)
    if config is None:
        return True
    task = config["task"]  # `read_tf_config` allows only "chief" and "worker".
    return task["type"] == "chief" or task["index"] == 0 and "chief" not in config["cluster"]


def make_multi_worker_strategy(connect_timeout=300.0, log=print):
    """`MultiWorkerMirroredStrategy` from a checked `TF_CONFIG`, once every other task's
    address answers within `connect_timeout` seconds (TensorFlow's own wait has no limit).

    Raises:
        ValueError: `TF_CONFIG` is wrong, this task's port is taken, or a task did not
            answer in time (naming its address).
    """
    config = read_tf_config()
    check_number("connect_timeout", connect_timeout, 0, include_low=False)
    task = config["task"]
    address = config["cluster"][task["type"]][task["index"]]
    port = int(address.rpartition(":")[2])
    deadline = time.monotonic() + connect_timeout
    # SIGTERM and SIGINT end the process at once (the default action), also inside C++ code.
    with signals.handlers(signal.SIG_DFL, signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
            try:
                listener.bind(("", port))
            except OSError as error:
                raise ValueError(f'TF_CONFIG: this task ({task["type"]} {task["index"]}, '
                                 f"{address}) cannot listen on port {port}: {error.strerror}. "
                                 "Another process holds it; stop it or give this task another "
                                 "port (the same TF_CONFIG cluster on every worker).") from None
            listener.listen(128)
            peers = [peer for addresses in config["cluster"].values() for peer in addresses
                     if peer != address]
            log(f"Waiting up to {connect_timeout:g} s for the other tasks ({', '.join(peers)}).")
            wait_for_addresses(peers, deadline, connect_timeout)
        # A task vanishing between answering and joining: SIGALRM ends the wait.
        signal.alarm(math.ceil(max(deadline - time.monotonic(), 0)) + 60)
        try:
            # Collectives over gRPC on CPU; NCCL is picked automatically on GPUs.
            strategy = tf.distribute.MultiWorkerMirroredStrategy()
        except tf.errors.UnknownError as error:
            if "gRPC server" not in str(error):
                raise
            raise ValueError(f"TF_CONFIG: this task ({address}) could not start its gRPC server "
                             f"({error.message}); the port was probably taken meanwhile.") from None
        finally:
            signal.alarm(0)
    return strategy


def wait_for_addresses(addresses, deadline, connect_timeout):
    """Returns once every `host:port` accepts a TCP connection; ValueError at `deadline`."""
    missing = list(addresses)
    while missing:
        for address in list(missing):
            host, _, port = address.rpartition(":")
            with contextlib.suppress(OSError):
                socket.create_connection((host, int(port)), timeout=1.0).close()
                missing.remove(address)
        if not missing:
            return
        if time.monotonic() > deadline:
            those = "that task has" if len(missing) == 1 else "those tasks have"
            raise ValueError(f"TF_CONFIG: no answer from {', '.join(missing)} within "
                             f"connect_timeout={connect_timeout:g} s: {those} not started, or "
                             "cannot be reached from here. Start every task with the same "
                             "TF_CONFIG cluster (or raise the timeout).")
        time.sleep(0.2)
