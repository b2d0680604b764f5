"""Two workers on localhost train under MultiWorkerMirroredStrategy through `training.launch`."""

import json
import re

from tests.training.harness import TINY_MODEL, read_summary, run_program, scalars


def test_two_local_workers_pretrain_and_only_the_chief_writes(reviews_file, tmp_path):
    output_dir, log_dir = tmp_path / "out", tmp_path / "logs"
    result = run_program(
        "training.launch", "--workers", 2, "--log-dir", log_dir, "--",
        "python", "-m", "training.pretrain", "--table", reviews_file, *TINY_MODEL,
        "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8, "--epochs", 100,
        "--max-steps", 8, "--checkpoint-every", 4, "--validation-batches", 1,
        "--max-eval-examples", 8, "--output-dir", output_dir, timeout=400,
    )
    chief, other = (log_dir / "worker-0.log").read_text(), (log_dir / "worker-1.log").read_text()
    assert result.returncode == 0, result.stdout + chief[-3000:] + other[-3000:]
    assert "worker 0 exited with status 0" in result.stdout
    assert "worker 1 exited with status 0" in result.stdout
    # Both workers' replicas form one strategy: 8 global steps on 2 replicas.
    for log in (chief, other):
        assert "8 steps of 8 on 2 replica(s), 2 rounds of 4" in log
    assert re.search(r"Round 2/2: loss: [0-9.]+", chief)
    assert "Round 2/2" not in other  # Progress and logs come from the chief only.
    assert read_summary(output_dir)["steps"] == 8
    checkpoint_index = (output_dir / "loop_checkpoints" / "checkpoint").read_text()
    assert '"ckpt-8"' in checkpoint_index
    assert len(scalars(output_dir / "logs" / "train")["epoch_loss"]) == 2
    assert json.loads((output_dir / "run.json").read_text())["batch_size"] == 8


def test_a_bad_tf_config_is_refused_before_training(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 3}}')
    result = run_program("training.pretrain", "--output-dir", tmp_path, "--max-steps", 1)
    assert result.returncode == 2
    assert 'TF_CONFIG["task"] must name this process\'s job and index' in result.stderr
    assert "'index': 3" in result.stderr
