"""The category a fact's slot tells (``text.slots``): where one lives is biography, one's job
work, one's diet a preference (health when it is medical), someone else's attribute a
relationship. Shared by the offline rules (``write.offline.category_of``) and the LLM path,
where a slot the rules recognise outranks the model's label."""

from __future__ import annotations

import re

from ..models import Category
from ..text.slots import slot_of

__all__ = ["slot_category"]

# a diet for medical reasons is health; one chosen for ethics or taste, a preference
_MEDICAL = re.compile(r"\b(allerg\w*|intoleran\w*|coeliac|celiac|diabet\w*|doctor|medical|ibs|crohn)", re.I)
_BY_SLOT = {
    "residence": Category.BIOGRAPHY,
    "age": Category.BIOGRAPHY,
    "work": Category.WORK,
    "relationship": Category.RELATIONSHIP,
    "smoking": Category.HEALTH,
    "drinking": Category.HEALTH,
    "reply_style": Category.PREFERENCE,
}


def slot_category(text: str, speaker: str = "the user") -> Category | None:
    """The category of the slot ``text`` sets, or None when it sets none the rules map (pure)."""
    slot = slot_of(text, speaker)
    if slot is None:
        return None
    if slot.subject != speaker.lower():
        return Category.RELATIONSHIP
    if slot.family == "diet":
        return Category.HEALTH if _MEDICAL.search(text) else Category.PREFERENCE
    return _BY_SLOT.get(slot.family)
