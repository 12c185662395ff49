"""`!function` helpers the task YAMLs name (lm-eval resolves them relative to this directory).

Written for this project after the harness's own HellaSwag and Winogrande preprocessing, so that a real
dataset exported to JSON lines in the Hugging Face field layout scores the same way.
"""

from __future__ import annotations

import re
from typing import Any


def _clean(text: str) -> str:
    # HellaSwag's WikiHow contexts carry bracketed artefacts ("[title]", "[step]").
    text = text.strip().replace(" [title]", ". ")
    return re.sub(r"\[.*?\]", "", text).replace("  ", " ")


def hellaswag_docs(dataset: Any) -> Any:
    def one(doc: dict[str, Any]) -> dict[str, Any]:
        ctx = doc["ctx_a"] + " " + doc["ctx_b"].capitalize()
        return {
            "query": _clean(doc["activity_label"] + ": " + ctx),
            "choices": [_clean(e) for e in doc["endings"]],
            "gold": int(doc["label"]),
        }

    return dataset.map(one)


# Winogrande is scored by partial evaluation: the choices are the contexts (sentence up to the blank with
# each option filled in) and the target is the rest of the sentence, shared by both.
def winogrande_text(doc: dict[str, Any]) -> int:
    return {"1": 0, "2": 1}[str(doc["answer"])]


def winogrande_target(doc: dict[str, Any]) -> str:
    return str(doc["sentence"][doc["sentence"].index("_") + 1 :].strip())


def winogrande_choices(doc: dict[str, Any]) -> list[str]:
    cut = doc["sentence"].index("_")
    return [doc["sentence"][:cut] + opt for opt in (doc["option1"], doc["option2"])]
