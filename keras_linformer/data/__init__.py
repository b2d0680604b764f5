"""Data for Linformer pretraining and fine-tuning: corpora, vocabulary, tf.data."""

from keras_linformer.data.corpora import load_bbc_news
from keras_linformer.data.corpora import load_news_articles
from keras_linformer.data.corpora import load_rotten_tomatoes
from keras_linformer.data.encoding import TextEncoder
from keras_linformer.data.masked_lm import mask_tokens
from keras_linformer.data.pipelines import classification_dataset
from keras_linformer.data.pipelines import pretraining_dataset
from keras_linformer.data.splits import SPLIT_FRACTIONS
from keras_linformer.data.splits import Corpus
from keras_linformer.data.splits import Split
from keras_linformer.data.splits import concatenate_corpora
from keras_linformer.data.splits import limit_examples
from keras_linformer.data.splits import split_corpus
from keras_linformer.data.unigram import unigram_perplexity
from keras_linformer.data.user_files import load_table
from keras_linformer.data.user_files import load_text_files
from keras_linformer.data.vocabulary import SPECIAL_TOKENS
from keras_linformer.data.vocabulary import check_vocabulary
from keras_linformer.data.vocabulary import load_vocabulary
from keras_linformer.data.vocabulary import make_tokenizer
from keras_linformer.data.vocabulary import save_vocabulary
from keras_linformer.data.vocabulary import train_vocabulary

__all__ = [
    "SPECIAL_TOKENS", "SPLIT_FRACTIONS", "Corpus", "Split", "TextEncoder",
    "classification_dataset", "concatenate_corpora", "limit_examples", "load_bbc_news",
    "load_news_articles", "load_rotten_tomatoes", "load_table", "load_text_files",
    "load_vocabulary", "make_tokenizer", "mask_tokens", "pretraining_dataset", "save_vocabulary",
    "split_corpus", "train_vocabulary",
]
