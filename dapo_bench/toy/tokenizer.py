"""A character-level tokenizer for the toy policy, built with ``tokenizers``.

Every printable ASCII character plus ``\\n`` and ``\\t`` is one token (a ``WordLevel`` model
over single characters, with a pre-tokenizer that isolates each character and a ``Fuse``
decoder that joins them back without spaces); any other character maps to ``<unk>``. Special
tokens: ``<pad>`` (id 0), ``<eos>``, ``<unk>``. No BOS is added and no post-processor runs, so
``decode(encode(text)) == text`` for ASCII text. The result is a ``PreTrainedTokenizerFast``
that ``save_pretrained`` writes and ``AutoTokenizer.from_pretrained`` reloads.

Not covered: non-ASCII text (it becomes ``<unk>``), word-level or BPE merges.
"""

from __future__ import annotations

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = ("<pad>", "<eos>", "<unk>")
CHARS = "".join(sorted(set(string.printable) - set("\r\x0b\x0c")))


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in CHARS:
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=512,
    )
