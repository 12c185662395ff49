import pytest

from trainer.errors import TokenizerError
from trainer.policy.tokenizer import CharTokenizer, from_json


def test_roundtrip_and_specials():
    tok = CharTokenizer()
    ids = tok.encode("12+34=46")
    assert tok.decode(ids) == "12+34=46"
    assert tok.decode([tok.bos_id, *ids, tok.eos_id, *tok.encode("9")]) == "12+34=46"  # stops at eos
    assert len({tok.pad_id, tok.bos_id, tok.eos_id}) == 3 and max(ids) < tok.vocab_size


def test_json_roundtrip():
    tok = CharTokenizer()
    again = from_json(tok.to_json())
    assert again == tok and again.encode("7+8=") == tok.encode("7+8=")


def test_unknown_character_is_an_error():
    with pytest.raises(TokenizerError, match="'x'"):
        CharTokenizer().encode("1x2")
