"""Text that reaches a matplotlib figure from data (labels, model names, file names)."""
from __future__ import annotations


def plain_text(text: str) -> str:
    """``text`` as matplotlib draws it verbatim: every ``$`` escaped, so it is never math text
    to parse (a label of 3,000 nested braces crashed the parser), and a leading ``_`` kept
    (matplotlib leaves such labels out of a legend)."""
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text
