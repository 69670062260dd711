"""Texts that test a tokenizer against ``textfold``'s split, shared by the unit test of the index's
automata and the integration test of the real server's tokens."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["TOKEN_TEXTS"]

# Combining marks (also those inside the CJK ranges: U+3099), CJK of every range, other scripts,
# digits of other scripts, joiners, emoji, a supplementary-plane ideograph, format characters.
_TRICKY = "aZé\u0301\u0300\u3099\u302a漢かカ가\u1100ᄀ𠀀ǅ٣Ⅻ½²ߐ\u0915\u093f_.:- \t\n😀\u200d\ufeffx1"
# Characters Python's Unicode database knows (an unassigned one may join a word on the server).
_KNOWN = st.characters(exclude_categories=["Cs", "Cn"])

#: Up to 60 characters, mostly from the tricky ones above.
TOKEN_TEXTS = st.text(alphabet=st.sampled_from(_TRICKY) | _KNOWN, max_size=60)
