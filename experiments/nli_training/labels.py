"""The label space of the NLI training recipe, shared by training, distillation, calibration and
export (no torch needed to import it)."""

from __future__ import annotations

#: the model's outputs, in order
CLASSES = ("entailment", "neutral", "contradiction")

#: the classes each training label allows (a 2-way "not entailed" row allows neutral or
#: contradiction: the set loss does not claim which)
ALLOWED = {
    "entailment": (1, 0, 0),
    "neutral": (0, 1, 0),
    "contradiction": (0, 0, 1),
    "not_entailment": (0, 1, 1),
}
