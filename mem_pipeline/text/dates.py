"""Dates and time: the calendar dates a text names, and whether a question asks when or a
text says when. Pure functions over constant tables."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

__all__ = ["asks_when", "date_ranges", "says_when"]

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DATE_PATTERNS = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON}(?:,?\s*{_YEAR})?\b", re.I),  # 1 May, 2022
    re.compile(rf"\b{_MON}\s+{_DAY}\b(?:,?\s*{_YEAR})?\b", re.I),  # May 1, 2022
    re.compile(rf"\b{_MON},?\s+{_YEAR}\b", re.I),  # May 2022
    # a month alone only after a preposition ("in May"; not "may" the verb)
    re.compile(rf"\b(?:in|during|since|until|by|of|early|late|mid)[\s-]+{_MON}\b(?!\s+\d)", re.I),
]


def date_ranges(text: str, now: datetime) -> list[tuple[datetime, datetime]]:
    """Calendar dates a text names, as ``[start, end)`` ranges in ``now``'s time zone.

    "on 1 May, 2022" / "May 1, 2022" -> that day; "in May 2022" -> that month; without a year
    ("in May", "on October 24") the latest such date not after ``now``. Relative dates
    ("last week") are not resolved. Used to rank higher what was said on the named dates.
    """
    out: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            groups = m.groupdict()
            mon_word = groups["mon"].lower()
            month = _MONTHS[mon_word]
            day = int(groups["day"]) if groups.get("day") else None
            year = int(groups["year"]) if groups.get("year") else None
            if day is not None and not 1 <= day <= 31:
                continue
            if year is None:
                year = now.year
                if (month, day or 1) > (now.month, now.day):
                    year -= 1
            try:
                if day is not None:
                    start = datetime(year, month, day, tzinfo=now.tzinfo)
                    end = start + timedelta(days=1)
                else:
                    start = datetime(year, month, 1, tzinfo=now.tzinfo)
                    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=now.tzinfo)
            except ValueError:
                continue
            taken.append((m.start(), m.end()))
            out.append((start, end))
    return out


_AUX = r"(?:did|do|does|is|was|were|will|are|has|have|had|can|could|should|would)"
_WHEN_QUESTION = re.compile(
    rf"^\W*when\b|\bwhen\s+{_AUX}\b|\bsince when\b|\bhow long ago\b"
    r"|\b(?:what|which)\s+(?:date|day|week|weekend|month|year|time)\b",
    re.IGNORECASE,
)
_TIME_UNIT = r"(?:days?|weeks?|weekends?|months?|years?|nights?|mornings?|evenings?)"
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_SEASON = r"(?:summer|winter|spring|autumn|fall)"
_TIME_EXPRESSION = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|{_WEEKDAY}s?"
    rf"|(?:last|this|next|past)\s+(?:{_TIME_UNIT}|{_WEEKDAY}|{_SEASON})"
    rf"|(?:\w+|\d+)\s+{_TIME_UNIT}\s+ago"
    r"|january|february|april|june|july|august|september|october|november|december"
    r"|(?:in|since|until|till|by|from|during|around|of)\s+(?:19|20)\d\d)\b"
    r"|\b(?-i:May|March)\b",  # the months that are also words count capitalised only
    re.IGNORECASE,
)


def asks_when(text: str) -> bool:
    """Whether a question asks when something happened ("When did...", "What year...",
    "how long ago"); "when" as a conjunction ("what did she do when she was...") does not."""
    return bool(_WHEN_QUESTION.search(text))


def says_when(text: str) -> bool:
    """Whether a text places something in time: a relative day ("yesterday", "last week",
    "two months ago"), a weekday, a month or a year ("in 2019"; a bare number is not). The
    turn that answers "when?" usually says one of these; the session date then resolves it."""
    return bool(_TIME_EXPRESSION.search(text))
