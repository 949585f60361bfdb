"""Dates and time: the calendar dates a text names, and whether a question asks when or a
text says when. Pure functions over constant tables."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

__all__ = [
    "DAY_OF_MONTH",
    "WEEKDAY",
    "asks_plan",
    "asks_when",
    "date_ranges",
    "is_relative",
    "resolve_relative",
    "says_when",
]

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MON = rf"(?P<mon>{_MONTH})\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
#: A day of a month either way round ("14 of June", "20 September", "June 14th"): a pattern
#: with no groups, for other patterns to hold (``write._details``).
DAY_OF_MONTH = (
    rf"(?:[0-3]?\d(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH})\.?|(?:{_MONTH})\.?\s+[0-3]?\d(?:st|nd|rd|th)?)\b"
)
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
#: A day of the week, as a pattern ("monday" .. "sunday"; any case with ``re.I``).
WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_SEASON = r"(?:summer|winter|spring|autumn|fall)"
_TIME_EXPRESSION = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|{WEEKDAY}s?"
    rf"|(?:last|this|next|past)\s+(?:{_TIME_UNIT}|{WEEKDAY}|{_SEASON})"
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


#: A question about what the asker is doing, has on or will do: "Where am I flying in June?",
#: "where are we staying in August?", "What will I do in May?".
_PLAN_QUESTION = re.compile(
    r"\b(?:am i|are we|will (?:i|we)|(?:am i|are we) (?:still )?going to)\s+(?:still\s+)?\w+ing\b"
    r"|\bwill (?:i|we)\b",
    re.IGNORECASE,
)


def asks_plan(text: str) -> bool:
    """Whether a question asks what the asker is doing or will do ("Where am I flying in
    June?"): the dates it names are when the plan is for, not when something was said, and a
    plan is what its latest telling says (a trip rebooked, a lesson moved)."""
    return bool(_PLAN_QUESTION.search(text)) and not asks_when(text)


def says_when(text: str) -> bool:
    """Whether a text places something in time: a relative day ("yesterday", "last week",
    "two months ago"), a weekday, a month or a year ("in 2019"; a bare number is not). The
    turn that answers "when?" usually says one of these; the session date then resolves it."""
    return bool(_TIME_EXPRESSION.search(text))


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_COUNT = r"\d{1,3}|" + "|".join(sorted((re.escape(k) for k in _COUNTS), key=len, reverse=True))
_RELATIVE = re.compile(
    r"\b(?:(?P<day>yesterday|today|tonight|tomorrow|this (?:morning|afternoon|evening)|last night)"
    r"|(?P<rel>last|next|this|past) (?P<unit>week|weekend|month|year|summer|winter|spring|fall|autumn|"
    + "|".join(_WEEKDAYS)
    + r")"
    r"|(?P<count>" + _COUNT + r") (?P<units>days?|weeks?|months?|years?) ago)\b",
    re.IGNORECASE,
)


def _date(d: datetime) -> str:
    return f"{d.day} {d.strftime('%B')} {d.year}"


def _month(d: datetime, shift: int = 0) -> str:
    m = d.month - 1 + shift
    return datetime(d.year + m // 12, m % 12 + 1, 1).strftime("%B %Y")


def _relative(m: re.Match[str], when: datetime) -> str:
    g = m.groupdict()
    if g["day"]:
        day = g["day"].lower()
        shift = -1 if day in ("yesterday", "last night") else 1 if day == "tomorrow" else 0
        return f"on {_date(when + timedelta(days=shift))}"
    if g["rel"]:
        step = {"last": -1, "past": -1, "next": 1, "this": 0}[g["rel"].lower()]
        unit = g["unit"].lower()
        if unit in _WEEKDAYS:
            delta = (_WEEKDAYS.index(unit) - when.weekday()) % 7
            if step < 0:
                delta = delta - 7 if delta else -7
            elif step > 0:
                delta = delta or 7
            return f"on {unit.capitalize()} {_date(when + timedelta(days=delta))}"
        if unit == "week":
            return {-1: "in the week before ", 0: "in the week of ", 1: "in the week after "}[step] + _date(
                when
            )
        if unit == "weekend":
            ahead = (5 - when.weekday()) % 7  # days to the coming Saturday (0: today)
            saturday = when + timedelta(
                days=ahead - 7 if step < 0 else ahead + (7 if step > 0 and not ahead else 0)
            )
            return f"on the weekend of {_date(saturday)}"
        if unit == "month":
            return f"in {_month(when, step)}"
        if unit == "year":
            return f"in {when.year + step}"
        season = "autumn" if unit == "fall" else unit
        return f"in the {season} of {when.year + step}"
    count = g["count"].lower()
    n = int(count) if count.isdigit() else _COUNTS[count]
    units = g["units"].lower()
    if units.startswith("day"):
        return f"on {_date(when - timedelta(days=n))}"
    if units.startswith("week"):
        return f"in the week of {_date(when - timedelta(weeks=n))}"
    if units.startswith("month"):
        return f"in {_month(when, -n)}"
    return f"in {when.year - n}"


_OF = re.compile(r"\s+of\b", re.IGNORECASE)
_PREPOSITIONS = frozenset("for until till by from since before after of to".split())


def resolve_relative(text: str, when: datetime) -> str:
    """``text`` with its relative dates ("yesterday", "last week", "two months ago", "next
    Friday", "last summer") written as the dates they mean, counted from ``when`` (the time
    the text was said): "I went to a support group yesterday" said on 8 May 2023 becomes "I
    went to a support group on 7 May 2023". Other words are left as they are."""

    def repl(m: re.Match[str]) -> str:
        before = text[: m.start()].rstrip().rsplit(" ", 1)[-1].lower()
        if before == "the" or _OF.match(text, m.end()):
            # "the last Thursday of the month", "over the past year", "next week of the trip":
            # an ordinal or a span, not a day counted from the turn
            return m.group()
        out = _relative(m, when)
        if before in _PREPOSITIONS:  # "enough for today" -> "enough for 30 January 2026"
            out = out.split(" ", 1)[1] if out.startswith(("on ", "in ")) else out
        at_start = not text[: m.start()].strip(" \"'“‘(")
        return out[0].upper() + out[1:] if at_start else out

    return _RELATIVE.sub(repl, text)


def is_relative(text: str) -> bool:
    """Whether ``text`` still holds a relative date :func:`resolve_relative` would rewrite."""
    return bool(_RELATIVE.search(text))
