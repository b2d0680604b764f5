"""The spectrum program (`python -m benchmarks.spectrum`): outputs, bad flags and models named."""

import json
import os

import pytest

from benchmarks import spectrum
from keras_linformer.models import backbone_for

TINY = dict(num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16, projected_dim=4,
            max_sequence_length=16, attention="transformer", dropout=0.0)


def test_command_line_on_a_pretrained_checkpoint_writes_every_output(tmp_path, capsys):
    from keras_linformer import data
    from keras_linformer.training import starting_points

    vocabulary = list(data.SPECIAL_TOKENS) + [
        "the", "a", "of", "to", "and", "in", "said", "is", "for", "on", "that", "with",
    ]
    starting_points.save_pretrained(
        backbone_for(**dict(TINY, vocabulary_size=len(vocabulary))), vocabulary,
        tmp_path / "model",
    )
    written = spectrum.main([
        "--model", str(tmp_path / "model"), "--num-texts", "3", "--index", "4",
        "--target", "0.8", "--output-dir", str(tmp_path), "--name", "run",
    ])
    assert sorted(os.path.basename(path) for path in written) == [
        "run-curves.png", "run-heatmap.png", "run.csv", "run.json", "run.md"]
    summary = json.loads((tmp_path / "run.json").read_text())
    assert summary["num_texts"] == 3 and summary["sequence_length"] == 16
    assert summary["index"] == 4 and len(summary["projected_dim"]) == 2
    printed = capsys.readouterr().out
    assert printed.startswith("python -m benchmarks.spectrum --model")
    assert f"projected_dim={summary['projected_dim']}" in printed
    csv_lines = (tmp_path / "run.csv").read_text().splitlines()
    assert csv_lines[1].startswith("layer,head,k_singular_0.8,singular@1,")
    assert len(csv_lines) == 2 + 2 * (2 + 1)  # comment, header, per layer 2 heads + mean
    for image in ("run-curves.png", "run-heatmap.png"):
        assert (tmp_path / image).read_bytes()[:4] == b"\x89PNG"
    assert "projected_dim=" in (tmp_path / "run.md").read_text()


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--target", "1.5"], "--target: must be a number in (0, 1], got 1.5"),
        (["--num-texts", "0"], "--num-texts: must be a positive integer, got 0"),
        (["--index", "x"], "--index: must be a positive integer, got 'x'"),
        (["--measure", "rank"], "--measure: invalid choice: 'rank'"),
    ],
)
def test_bad_flags_are_rejected_naming_the_flag_and_value(flags, named, capsys):
    with pytest.raises(SystemExit) as exit_info:
        spectrum.parse_args(flags)
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err


def test_a_model_that_is_not_a_checkpoint_is_rejected_naming_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        spectrum.main(["--model", str(tmp_path), "--output-dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert f"--model: {str(tmp_path)!r} is neither 'minilm' nor a directory" in (
        capsys.readouterr().err
    )
