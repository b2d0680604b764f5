"""A model's attention matrices on real texts, and their mean spectrum.

Loads what `python -m benchmarks.spectrum --model` names (the bundled
all-MiniLM-L6-v2, a Hugging Face BERT directory, or a pretraining output of
this project), picks texts that fill n tokens, runs the model's blocks with
`return_attention_scores=True`, and checks a Hugging Face checkpoint's
loading against the NumPy reference of `tools/hf_bert.py`.
"""

import os

import keras
import numpy as np

from benchmarks.analysis.spectrum import AttentionSpectrum
from keras_linformer import data
from tools import hf_bert


def attention_probabilities(backbone, inputs):
    """Every layer's attention probabilities for one batch, as NumPy arrays.

    Runs the backbone's own embedding layers (through its functional graph),
    then its encoder blocks one by one with `return_attention_scores=True`,
    in inference mode. Works for `LinformerBackbone` and for keras-hub's
    `BertBackbone`, the baseline (the same layer names).

    Args:
        backbone: the model.
        inputs: dict with `token_ids`, `segment_ids` and `padding_mask`, `(B, n)`.

    Returns:
        `(sequence_output (B, n, hidden), [probabilities (B, heads, n, m) per layer])`.
    """
    embed = keras.Model(backbone.input, backbone.get_layer("embeddings_dropout").output)
    x = embed(inputs, training=False)
    mask = keras.ops.convert_to_tensor(inputs["padding_mask"])
    encoder = getattr(backbone, "encoder", None)
    if encoder is not None:  # A Linformer stack passes its shared projection.
        x, scores = encoder(x, padding_mask=mask, training=False, return_attention_scores=True)
    else:
        scores = []
        for block in backbone.transformer_layers:
            x, block_scores = block(
                x, padding_mask=mask, training=False, return_attention_scores=True
            )
            scores.append(block_scores)
    return keras.ops.convert_to_numpy(x), [keras.ops.convert_to_numpy(s) for s in scores]


def attention_spectrum(backbone, token_ids, batch_size=4, progress=None):
    """The mean attention spectrum of `backbone` over texts that fill the whole sequence.

    Args:
        backbone: a `LinformerBackbone` (or keras-hub `BertBackbone`).
        token_ids: int array `(texts, n)`, every position a real token (no
            padding: padded rows and columns would change the spectrum).
        batch_size: int, texts per forward pass. Defaults to 4.
        progress: optional callable, called with the number of texts done.

    Returns:
        An `AttentionSpectrum`.
    """
    token_ids = np.asarray(token_ids)
    if token_ids.ndim != 2 or len(token_ids) == 0:
        raise ValueError(
            "`token_ids` must be a non-empty (texts, sequence_length) array. "
            f"Received: shape={token_ids.shape}"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(
            f"`batch_size` must be a positive integer. Received: batch_size={batch_size!r}"
        )
    spectra = []
    for start in range(0, len(token_ids), batch_size):
        batch = token_ids[start:start + batch_size].astype("int32")
        inputs = {
            "token_ids": batch,
            "segment_ids": np.zeros_like(batch),
            "padding_mask": np.ones_like(batch),
        }
        _, probabilities = attention_probabilities(backbone, inputs)
        shapes = {p.shape[1:] for p in probabilities}
        if len(shapes) != 1:
            raise ValueError(
                "Every layer's attention must have the same shape to average the "
                f"spectra; got {sorted(shapes)} (a Linformer with a nonuniform k?)."
            )
        stacked = np.stack(probabilities, axis=1)  # (B, layers, heads, n, m)
        spectra += [AttentionSpectrum.from_matrices(text) for text in stacked]
        if progress is not None:
            progress(len(spectra))
    return AttentionSpectrum.average(spectra)


def full_length_token_ids(token_lists, sequence_length, cls_id, sep_id, limit=None):
    """`[CLS] + the first n - 2 tokens + [SEP]` for every text long enough to fill n.

    Args:
        token_lists: iterable of token-id lists, one per text (no specials).
        sequence_length: int, n (at least 3).
        cls_id, sep_id: int, the ids of `[CLS]` and `[SEP]`.
        limit: optional int, stop after this many texts.

    Returns:
        `(token_ids (texts, n) int32, indices of the texts used)`.
    """
    if (
        isinstance(sequence_length, bool)
        or not isinstance(sequence_length, int)
        or sequence_length < 3
    ):
        raise ValueError(
            "`sequence_length` must be an integer of at least 3 ([CLS], a token, "
            f"[SEP]). Received: sequence_length={sequence_length!r}"
        )
    rows, used = [], []
    for index, tokens in enumerate(token_lists):
        tokens = list(tokens)
        if len(tokens) < sequence_length - 2:
            continue
        rows.append([cls_id] + tokens[: sequence_length - 2] + [sep_id])
        used.append(index)
        if limit is not None and len(rows) >= limit:
            break
    return np.array(rows, dtype=np.int32).reshape(-1, sequence_length), used


def load_model(model):
    """`(backbone, tokenize, tokenizer, name, checkpoint)` for `--model`.

    `tokenize` maps a list of texts to token-id lists without special
    tokens; `tokenizer` knows the special tokens' ids (`token_to_id`);
    `checkpoint` is a dict for the load check of Hugging Face checkpoints
    (their `config` and `weights`), else None.
    """
    if model == "minilm" or os.path.isfile(os.path.join(model, hf_bert.WEIGHTS_FILE)):
        directory = None if model == "minilm" else model
        backbone, config = hf_bert.load_hf_bert(directory)
        tokenizer = hf_bert.make_tokenizer(directory)

        def tokenize(texts):
            return tokenizer([hf_bert.normalize_uncased(text) for text in texts])

        name = (
            "all-MiniLM-L6-v2" if model == "minilm" else os.path.basename(os.path.normpath(model))
        )
        directory = directory or hf_bert.minilm_directory()
        checkpoint = {"config": config, "weights": hf_bert.load_weights(directory)}
        return backbone, tokenize, tokenizer, name, checkpoint
    if os.path.isfile(os.path.join(model, "model.weights.h5")):
        from keras_linformer.training import starting_points

        backbone, vocabulary = starting_points.load_pretrained(model, dropout=0.0)
        tokenizer = data.make_tokenizer(vocabulary)
        return backbone, tokenizer, tokenizer, os.path.normpath(model), None
    raise ValueError(
        f"--model: {model!r} is neither 'minilm' nor a directory with "
        f"{hf_bert.WEIGHTS_FILE} (a Hugging Face BERT) or model.weights.h5 (a "
        "pretraining output of this project)."
    )


def check_against_reference(backbone, checkpoint, token_ids):
    """Max differences of hidden states and attention probabilities from
    `hf_bert.reference_forward`."""
    inputs = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": np.ones_like(token_ids),
    }
    hidden, probabilities = attention_probabilities(backbone, inputs)
    output = backbone(inputs)["sequence_output"]
    reference, reference_probabilities = hf_bert.reference_forward(
        checkpoint["weights"], checkpoint["config"], token_ids
    )
    return {
        "texts": int(len(token_ids)),
        "sequence_output_max_abs_diff": float(
            np.abs(keras.ops.convert_to_numpy(output) - reference).max()
        ),
        "blockwise_output_max_abs_diff": float(np.abs(hidden - reference).max()),
        "attention_max_abs_diff": float(
            max(np.abs(p - r).max() for p, r in zip(probabilities, reference_probabilities))
        ),
    }


def load_texts(corpus, split):
    """The texts of a bundled corpus's split (`--corpus`, `--split`)."""
    loader = {"news_articles": data.load_news_articles, "bbc_news": data.load_bbc_news}[corpus]
    return list(getattr(loader(), split).texts)
