"""The Keras side of a verification: the texts fed, the model's predictions, the comparison."""

import keras
import numpy as np

from keras_linformer import data
from keras_linformer.data.vocabulary import MASK
from keras_linformer.export import layout
from keras_linformer.export import serving


class KerasReference:
    """The Keras model's predictions for the inputs fed to the export."""

    def __init__(self, source, info):
        self.source, self.info = source, info
        self.task = info["task"]
        tokenizer = data.make_tokenizer(source.vocabulary,
                                        mask_token_in_text=self.task == "masked_lm")
        self.encoder = data.TextEncoder(tokenizer, info["sequence_length"])
        # `compare(outputs, atol)`: `(passed, detail)` for one signature's outputs.
        self.compare = (self.compare_classifier if self.task == "classifier"
                        else self.compare_fill_mask)

    def cases(self, texts):
        """`{signature: {input: array}}` for every expected signature; Keras's predictions
        for them become `predictions`."""
        texts = np.array(texts, dtype=object)
        self.x = {k: v.numpy() for k, v in self.encoder(texts).items()}
        feeds = {"text": texts, **self.x}
        self.cases_fed = {name: {key: feeds[key] for key in inputs}
                          for name, (inputs, _) in layout.SIGNATURES[self.task].items()}
        self.predictions = (self.classifier_probabilities() if self.task == "classifier"
                            else self.fill_mask())
        return self.cases_fed

    def classifier_probabilities(self):
        outputs = self.source.model(self.source.model_inputs(self.x), training=False)
        probabilities = serving.probabilities_from(self.source, outputs)
        return np.asarray(keras.ops.convert_to_numpy(probabilities), "float64")

    def fill_mask(self):
        """`(positions (B, P) with -1 padding, num_masks (B,), probabilities (B, P, V))`."""
        mask_id = self.source.vocabulary.index(MASK)
        is_mask = (self.x["token_ids"] == mask_id) & (self.x["padding_mask"] == 1)
        positions = np.full((len(is_mask), self.info["max_masks"]), -1, "int32")
        for row, found in enumerate(is_mask):
            where = np.flatnonzero(found)[: self.info["max_masks"]]
            positions[row, : len(where)] = where
        logits = self.source.model({**self.x, "mask_positions": np.maximum(positions, 0)},
                                   training=False)
        probabilities = keras.ops.softmax(keras.ops.cast(logits, "float64"))
        return positions, is_mask.sum(1).astype("int32"), keras.ops.convert_to_numpy(probabilities)

    def compare_classifier(self, outputs, atol):
        expected = self.predictions
        probabilities, label_ids = outputs["probabilities"], outputs["label_ids"]
        if probabilities.shape != expected.shape:
            return False, f"probabilities have shape {probabilities.shape}, Keras {expected.shape}"
        error = float(np.abs(probabilities - expected).max())
        # A tie within `atol` may break either way.
        picked = expected[np.arange(len(label_ids)), label_ids]
        ids_ok = bool(np.all(picked >= expected.max(-1) - atol))
        names = np.array([name.encode() for name in self.source.label_names], dtype=object)
        labels_ok = list(outputs["labels"]) == list(names[label_ids])
        detail = (f"max |probabilities - Keras| = {error:.1e} (tolerance {atol:g}); "
                  f"label_ids {'are' if ids_ok else 'are NOT'} Keras's argmax; "
                  f"labels {'match' if labels_ok else 'do NOT match'} label_ids")
        return error <= atol and ids_ok and labels_ok, detail

    def compare_fill_mask(self, outputs, atol):
        positions, num_masks, probabilities = self.predictions
        ids, scores, tokens = (outputs[f"top_k_{key}"] for key in ("ids", "scores", "tokens"))
        valid, unused = positions >= 0, positions < 0
        problems = []
        if not np.array_equal(outputs["num_masks"], num_masks):
            problems.append(f"num_masks {outputs['num_masks'].tolist()} vs Keras "
                            f"{num_masks.tolist()}")
        if not np.array_equal(outputs["mask_positions"], positions):
            problems.append("mask_positions differ from the [MASK] positions of the encoded text")
        expected_scores = -np.sort(-probabilities, axis=-1)[..., : self.info["top_k"]]
        error = float(np.abs(scores - expected_scores)[valid].max(initial=0.0))
        if error > atol:
            problems.append(f"max |top_k_scores - Keras| = {error:.1e}")
        picked = np.take_along_axis(probabilities, np.maximum(ids, 0), axis=-1)
        if np.abs(picked - scores)[valid].max(initial=0.0) > atol:
            problems.append("top_k_scores are not Keras's probabilities of top_k_ids")
        top1_ok = bool(np.all((picked[..., 0] >= probabilities.max(-1) - atol)[valid]))
        if not top1_ok:
            problems.append("top-1 is not Keras's argmax")
        vocabulary = np.array([token.encode() for token in self.source.vocabulary], dtype=object)
        if list(tokens[valid].ravel()) != list(vocabulary[ids[valid].ravel()]):
            problems.append("top_k_tokens are not the vocabulary's tokens of top_k_ids")
        if not (np.all(ids[unused] == -1) and np.all(scores[unused] == 0)
                and np.all(tokens[unused] == b"")):
            problems.append("unused slots are not -1 / 0 / ''")
        detail = "; ".join([
            f"{int(valid.sum())} masks filled, {int(unused.sum())} unused slots",
            f"max |top_k_scores - Keras| = {error:.1e} (tolerance {atol:g})",
            f"top-1 {'is' if top1_ok else 'is NOT'} Keras's argmax",
            *problems,
        ])
        return not problems, detail
