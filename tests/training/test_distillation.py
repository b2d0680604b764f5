"""Distillation of a converted BERT (`training.distill`, `training.pretrain --objective
distillation`): the losses, the model, and the program."""

import json

import keras
import keras_hub
import numpy as np
import pytest

from keras_linformer.models import LinformerBackbone
from keras_linformer.models import agreement
from keras_linformer.models import attention_of
from keras_linformer.training import distillation
from keras_linformer.training import starting_points
from tests.training.harness import run_here


def stacked(student, teacher):
    return np.stack([student, teacher], axis=2).astype("float32")


def test_the_measures_compare_real_tokens_only(rng):
    teacher = rng.normal(size=(3, 6, 4))
    mask = np.array([[1] * 6, [1] * 3 + [0] * 3, [1] + [0] * 5])
    student = teacher.copy()
    student[mask == 0] = np.nan  # Padded positions: never compared, not even as 0 * NaN.
    teacher_padding = teacher[mask == 0].copy()
    teacher[mask == 0] = np.inf
    perfect = stacked(student, teacher)
    np.testing.assert_allclose(agreement.squared_relative_error(mask, perfect), 0, atol=1e-6)
    np.testing.assert_allclose(agreement.embedding_cosine(mask, perfect), 1, atol=1e-6)
    teacher[mask == 0] = teacher_padding
    student[mask == 0] = 100.0
    perfect = stacked(student, teacher)
    np.testing.assert_allclose(agreement.squared_relative_error(mask, perfect), 0, atol=1e-6)
    np.testing.assert_allclose(agreement.relative_error(mask, perfect), 0, atol=1e-3)
    np.testing.assert_allclose(agreement.embedding_cosine(mask, perfect), 1, atol=1e-6)
    silent = stacked(np.zeros_like(teacher), teacher)
    np.testing.assert_allclose(agreement.squared_relative_error(mask, silent), 1, atol=1e-6)
    # Half the teacher's output on every real token: error 1/2, the same direction.
    half = stacked(np.where(mask[..., None] == 1, teacher / 2, 7.0), teacher)
    np.testing.assert_allclose(agreement.relative_error(mask, half), 0.5, atol=1e-6)
    np.testing.assert_allclose(agreement.embedding_cosine(mask, half), 1, atol=1e-6)
    opposite = stacked(-teacher, teacher)
    np.testing.assert_allclose(agreement.embedding_cosine(mask, opposite), -1, atol=1e-6)


def test_the_sentence_embedding_is_the_mean_over_real_tokens(rng):
    output = rng.normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1] * 5, [1, 1, 0, 0, 0], [0] * 5])
    embedding = keras.ops.convert_to_numpy(agreement.sentence_embedding(output, mask))
    np.testing.assert_allclose(embedding[0], output[0].mean(0), rtol=1e-5)
    np.testing.assert_allclose(embedding[1], output[1, :2].mean(0), rtol=1e-5)
    np.testing.assert_array_equal(embedding[2], 0)  # No real token: zeros, not NaN.
    hostile = np.where(mask[..., None] == 1, output, np.nan).astype("float32")
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(agreement.sentence_embedding(hostile, mask)), embedding)
    # The Distiller's stacked (B, S, 2, H) output: each of its two outputs' embedding.
    stacked = np.stack([output, 3 * output + 1], axis=2)
    both = keras.ops.convert_to_numpy(agreement.sentence_embedding(stacked, mask))
    assert both.shape == (3, 2, 4)
    np.testing.assert_allclose(both[:, 0], embedding, rtol=1e-5)
    np.testing.assert_allclose(both[:, 1], 3 * embedding + np.array([[1], [1], [0]]), rtol=1e-5)


def small_bert():
    keras.utils.set_random_seed(0)
    return keras_hub.models.BertBackbone(
        vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=32,
    )


def texts(rng, count, length=16):
    lengths = rng.integers(3, length + 1, size=(count, 1))
    return {
        "token_ids": rng.integers(5, 50, size=(count, length)).astype("int32"),
        "segment_ids": np.zeros((count, length), "int32"),
        "padding_mask": (np.arange(length)[None] < lengths).astype("int32"),
    }


def test_an_exact_conversion_has_nothing_to_learn(rng):
    """Mean pooling at k = n is the BERT itself (windows of one position)."""
    bert = small_bert()
    student = LinformerBackbone.from_bert(bert, projected_dim=16, projection="mean",
                                          max_sequence_length=16)
    model = distillation.build_distiller(student, bert, keras.optimizers.Adam(1e-3))
    x = texts(rng, 8)
    results = model.evaluate(x, x["padding_mask"], verbose=0, return_dict=True)
    assert results["loss"] < 1e-9 and results["token_error"] < 1e-4, results
    assert results["embedding_cosine"] == pytest.approx(1, abs=1e-6)


def test_the_student_learns_the_teachers_outputs_and_the_teacher_stays(rng):
    bert = small_bert()
    student = LinformerBackbone.from_bert(bert, projected_dim=4, projection="linear",
                                          max_sequence_length=16, dropout=0.0)
    # Damage the student: noise as large as its token embeddings.
    embeddings = student.token_embedding.embeddings
    embeddings.assign(embeddings.numpy() + rng.normal(
        scale=embeddings.numpy().std(), size=embeddings.shape))
    model = distillation.build_distiller(student, bert, keras.optimizers.Adam(3e-3))
    teacher_weights = [w.numpy() for w in bert.weights]
    pooler = student.pooled_dense.kernel.numpy()
    x, held_out = texts(rng, 256), texts(rng, 64)
    before = model.evaluate(held_out, held_out["padding_mask"], verbose=0, return_dict=True)
    model.fit(x, x["padding_mask"], batch_size=32, epochs=8, verbose=0)
    after = model.evaluate(held_out, held_out["padding_mask"], verbose=0, return_dict=True)
    assert after["token_error"] < before["token_error"] / 2, (before, after)
    assert after["embedding_cosine"] > before["embedding_cosine"], (before, after)
    for weight, value in zip(bert.weights, teacher_weights):
        np.testing.assert_array_equal(weight.numpy(), value, err_msg=weight.path)
    np.testing.assert_array_equal(student.pooled_dense.kernel.numpy(), pooler)
    assert set(map(id, model.trainable_weights)) <= set(map(id, student.weights))


def test_a_student_of_another_width_is_refused():
    bert = small_bert()
    other = LinformerBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
                              intermediate_dim=16, max_sequence_length=16, projected_dim=4)
    with pytest.raises(ValueError, match="its hidden_dim 8 differs from the teacher's 16"):
        distillation.Distiller(other, bert)


@pytest.mark.slow
def test_the_program_distils_and_fine_tuning_starts_from_the_result(
        tiny_bert, reviews_file, tmp_path):
    from keras_linformer.programs import pretrain

    output = tmp_path / "distilled"
    result = run_here(pretrain, [
        "--objective", "distillation", "--table", reviews_file,
        "--from-bert", tiny_bert, "--projected-dim", "4", "--sequence-length", "16",
        "--max-steps", "4", "--checkpoint-every", "2", "--batch-size", "8",
        "--learning-rate", "1e-3", "--no-jit-compile", "--output-dir", output,
    ])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Distilling BERT" in result.stdout and "Distillation done" in result.stdout
    record = json.loads((output / "run.json").read_text())
    assert record["task"] == "distillation" and record["from_bert"] == str(tiny_bert)
    summary = json.loads((output / "summary.json").read_text())
    assert summary["total_steps"] == 4
    assert 0 <= summary["test_token_error"] < 1 and -1 <= summary["test_embedding_cosine"] <= 1
    assert summary["test_squared_relative_error"] == pytest.approx(
        summary["test_token_error"] ** 2, rel=0.5)  # A mean of squares against a mean.
    assert not (output / "masked_lm.keras").exists()
    backbone, vocabulary = starting_points.load_pretrained(output)
    assert (attention_of(backbone), backbone.projected_dim, backbone.max_sequence_length) == (
        "linformer", 4, 16)
    assert vocabulary == keras_hub.models.BertTokenizer.from_preset(
        str(tiny_bert)).get_vocabulary()
    # The same command again: a finished run is not redone.
    again = run_here(pretrain, [
        "--objective", "distillation", "--table", reviews_file,
        "--from-bert", tiny_bert, "--projected-dim", "4", "--sequence-length", "16",
        "--max-steps", "4", "--checkpoint-every", "2", "--batch-size", "8",
        "--learning-rate", "1e-3", "--no-jit-compile", "--output-dir", output,
    ])
    assert again.returncode == 0 and "nothing to do" in again.stdout + again.stderr


@pytest.mark.parametrize("flags, message", [
    (["--objective", "distillation"],
     "argument --objective: distillation needs --from-bert"),
    (["--objective", "distillation", "--from-bert", "x", "--projected-dim", "8",
      "--mask-rate", "0.2"],
     "argument --mask-rate: not allowed with --objective distillation"),
    (["--objective", "distillation", "--from-bert", "x", "--attention", "transformer"],
     "argument --attention: transformer not allowed with --objective distillation"),
    (["--objective", "distil"], "argument --objective: invalid choice: 'distil'"),
])
def test_bad_distillation_flags_exit_2_naming_the_flag(flags, message, tmp_path, capsys):
    from keras_linformer.programs import pretrain

    with pytest.raises(SystemExit) as exit_info:
        pretrain.parse_args([*flags, "--output-dir", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_distillation_does_not_overwrite_a_masked_lm_run(tmp_path):
    from keras_linformer.training import run_directory

    run_directory.write_json(tmp_path / run_directory.RUN_FILE, {"task": "masked_lm"})
    with pytest.raises(ValueError, match="`keras-linformer-pretrain`"):
        run_directory.check_output_dir(str(tmp_path), "distillation")


@pytest.mark.parametrize("options, message", [
    ({"short_sequence_rate": 1.5},
     r"`short_sequence_rate` must be a number in \[0, 1\]. Received: short_sequence_rate=1.5"),
    ({"epochs": 0}, "`epochs` must be a positive number. Received: epochs=0"),
    ({"architecture": {"projected_dim": 4, "max_sequence_length": 2}},
     "`max_sequence_length` must be an integer of at least 3. "
     "Received: max_sequence_length=2"),
])
def test_bad_sequence_options_are_refused_before_anything_is_written(
        options, message, tiny_bert, tmp_path):
    # The sequence options are checked as masked-LM pretraining checks them.
    from keras_linformer.data import splits

    texts = [f"document number {i} about a film and a review" for i in range(20)]
    corpus = splits.split_corpus("tiny", texts, [str(i) for i in range(20)])
    output = tmp_path / "distilled"
    options = {"architecture": {"projected_dim": 4}, **options}
    with pytest.raises(ValueError, match=message):
        distillation.distill(corpus, str(output), from_bert=str(tiny_bert), **options)
    assert not output.exists()
