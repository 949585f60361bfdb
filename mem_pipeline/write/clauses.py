"""What a correction leaves of a stored fact, and what it puts in its place: rules on the
clauses of one sentence (pure). ``write.reconcile`` decides that a fact is corrected; these say
which of its clauses still hold (:func:`remainder`), what a correction by contrast says holds
instead (:func:`instead`, :func:`substituted`), and whether a change leaves a place
(:func:`left_place`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..text.lexical import content_words, has_clause_verb
from ..text.opinion import polarity
from ..text.slots import slot_of
from ..text.smalltalk import FIRST_PERSON

__all__ = [
    "DAY_WORD",
    "DAY_WORDS",
    "ORDINAL",
    "PAIR",
    "WORKPLACE",
    "based",
    "day_number",
    "day_word",
    "instead",
    "left_place",
    "remainder",
    "sets",
    "substituted",
]

_NAME_WORDS = r"(?:the\s+)?(?:\d{1,3}(?:,\d{3})+|[A-Z0-9][\w'’&.-]*)(?:\s+[A-Z0-9][\w'’&.-]*){0,3}"
_PREPOSITION = r"(?:in|at|on|for|with|to|from|by|near)"
_PREP = rf"(?:{_PREPOSITION}\s+)?"
_PERSON_WORD = re.compile(r"(?:I|I['’]\w+|We|He|She|It|They|You)\b")


def instead(text: str, name: str) -> str | None:
    """What ``text`` says holds in place of ``name`` when it corrects by contrast (pure): "Dev's
    at Channel 4, not the BBC" -> "at Channel 4"; "not the 12th but the 14th" -> "the 14th";
    else None."""
    neg = rf"not\s+(?:in |at |on |a |an |the )?[$£€]?{re.escape(name)}\b"
    if name.lower() in DAY_WORDS:  # "lands on the eleventh of February not the ninth"
        return _other_day(re.sub(neg, " ", text, flags=re.I), name) if re.search(neg, text, re.I) else None
    m = re.search(rf"(?P<a>{_PREP}{_NAME_WORDS}),?\s+{neg}", text) or re.search(
        rf"{neg},?\s+(?:but\s+)?(?P<a>{_PREP}{_NAME_WORDS})", text
    )
    if m is None or re.search(rf"{neg}\s+any ?(?:more|longer)\b", text):
        return None  # "I'm not at Unilever anymore" says what ended, not what holds instead
    a = m.group("a").strip()
    before = text[: m.start("a")].split()
    if (
        _PERSON_WORD.match(a)
        or a.lower() == name.lower()
        or (before and before[-1][:1].isupper() and m.start("a") == m.start() and a[:1].isupper())
    ):
        return None  # "Guus G U U S not Bram": where the name starts is not clear
    return a


#: Who "we" are, said beside the verb, between commas or at the end ("We live in Bergen, my
#: wife and I, in a wooden house"), or as the subject a sentence opens on ("Joost and I are
#: going to Lisbon", "My sister Ana and I run a stall"): no clause of its own.
PAIR = re.compile(
    r"\b(?:my|our) [\w-]+(?: [A-Z][\w-]+)? and (?:i|me)\b(?=\s*(?:[,.;!]|$))"
    r"|(?:^|(?<=[.!?;]\s))(?:(?:my|our) [\w-]+ )?(?-i:[A-Z][\w'’-]+) and (?-i:I)\b",
    re.IGNORECASE,
)

#: A number, or a day of the month by its ordinal ("the 12th").
ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)?")

_UNITS = "first second third fourth fifth sixth seventh eighth ninth".split()
_TEENS = "tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
#: The days of the month in words ("the ninth of February"), by number.
DAY_WORDS: dict[str, int] = {w: i + 1 for i, w in enumerate(_UNITS)}
DAY_WORDS.update({w: i + 10 for i, w in enumerate(_TEENS.split())})
DAY_WORDS.update({"twentieth": 20, "thirtieth": 30, "thirty-first": 31, "thirty first": 31})
DAY_WORDS.update({f"twenty{sep}{w}": 20 + i + 1 for i, w in enumerate(_UNITS) for sep in ("-", " ")})
#: A day of the month said in words, longest first ("twenty-first" before "first").
DAY_WORD = "|".join(sorted((re.escape(w) for w in DAY_WORDS), key=len, reverse=True))
_ANY_DAY = re.compile(rf"\b(?:{DAY_WORD}|\d{{1,2}}(?:st|nd|rd|th))\b", re.IGNORECASE)


def day_number(name: str) -> int | None:
    """The day of the month ``name`` says ("ninth", "twenty-first", "12th", "12"), else None."""
    low = name.lower().strip()
    if low in DAY_WORDS:
        return DAY_WORDS[low]
    digits = ORDINAL.fullmatch(low)
    return int(digits.group(1)) if digits else None


def day_word(n: int) -> str:
    """The day of the month ``n`` in words, hyphenated (21 -> "twenty-first")."""
    return next(w for w, i in DAY_WORDS.items() if i == n and " " not in w)


def _other_day(text: str, name: str) -> str | None:
    """The first day of the month ``text`` says other than ``name`` ("Beatriz lands on the
    eleventh of February not the ninth" -> "eleventh")."""
    old = day_number(name)
    return next((m.group() for m in _ANY_DAY.finditer(text) if day_number(m.group()) != old), None)


def substituted(text: str, name: str, said: str) -> str | None:
    """``text`` with ``said`` in place of ``name`` (pure): "My partner Dev works as a sound
    engineer at the BBC", "BBC", "at Channel 4" -> "... at Channel 4"; a number for a number,
    in the stored fact's own writing ("wedding is on 12 September", "12th", "on the 19th" ->
    "wedding is on 19 September"); None when ``text`` does not name it."""
    if name.lower() in DAY_WORDS or said.lower() in DAY_WORDS:
        return _day_substituted(text, name, said)
    day, new = ORDINAL.fullmatch(name), re.search(r"\d+", said)
    if day and new:
        out = re.sub(rf"\b{day.group(1)}(?=(?:st|nd|rd|th)?\b)", new.group(), text, count=1)
        return None if out == text else out
    prep = re.match(rf"{_PREPOSITION}\s", said, re.I)
    if prep:  # the whole place: "at Guy's Hospital" -> "at St Thomas'"
        where = rf"\b(?i:{_PREPOSITION}\s+(?:the\s+)?{re.escape(name)})(?:['’]s)?\b(?:\s+[A-Z][\w'’-]*)*"
    else:
        where = rf"\b(?i:(?:the\s+)?{re.escape(name)})\b"
    out = re.sub(where, lambda _: said, text, count=1)
    return None if out == text else out


def _day_substituted(text: str, name: str, said: str) -> str | None:
    """``text`` with the day of the month ``said`` in place of ``name``, each written as the
    stored fact writes its day: "flying in on the ninth of February", "ninth", "eleventh" ->
    "... on the eleventh of February"; "on the 9th", "ninth", "eleventh" -> "on the 11th"."""
    old, new = day_number(name), day_number(said)
    if old is None or new is None:
        return None
    for m in _ANY_DAY.finditer(text):
        if day_number(m.group()) == old:
            word = m.group()[:1].isalpha()
            put = day_word(new) if word else f"{new}{_suffix(new)}"
            return text[: m.start()] + put + text[m.end() :]
    return None


def _suffix(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


# where a stored fact splits into clauses that stand alone ("I'm 43 and just started learning to
# skateboard", "I live in Toronto with my wife Priya", "i'm a pharmacist in pune, been doing it
# 6 yrs now")
_CLAUSE = re.compile(r"\s*(?:;|,|\s(?:and|but|while)\s|\s(?=with (?:my|our|his|her|their)\b))\s*", re.I)
_PLACE = r"(?:in|at|from|near|to)\s+(?:the\s+)?"
_COMPANY = re.compile(r"with (?:my|our|his|her|their)\b", re.I)
# a clause that only qualifies the one before it ("near Retiro park", "on the payments team")
_MODIFIER = re.compile(r"(?:in|at|on|near|from|for|by|to|since|until|after|before|around)\b", re.I)
# a phrase with no verb that says what the place before it is ("at Baker & Moss, a small firm")
_APPOSITIVE = re.compile(r"(?:a|an|the)\s", re.I)
# a clause that only repeats the verb of the one before it ("I bank with Barclays, have done
# since I was 16"; "..., been doing it 6 years"): it says more of that clause
_ELLIPSIS = re.compile(
    r"(?:and\s+)?(?:i\s+|we\s+)?(?:(?:have|has|had|'ve)\s+(?:done|been)"
    r"(?=\s*(?:$|[,.!]|since\b|for\b|ever\b|forever\b|all\b|as long\b))|"
    r"been doing (?:it|that|this)\b|always have\b|still do\b)",
    re.I,
)
#: Words that, with a place taken out, leave nothing said ("I work at the Lidl on Hessle Road,
#: mostly on the tills" without Lidl: "I work, mostly on the tills").
_BARE_WORK = frozenset({"work", "works", "worked", "working", "job"})


#: Where one works, as a named place and what qualifies it ("at Spotify, on the payments team").
WORKPLACE = re.compile(r"\b(?:at|for|with) (?:the )?[A-Z][\w&'’.-]*(?: [A-Z][\w&'’.-]*)*.*$")


#: Where a clause of someone's work says they are: a name after "in" that ends the clause, past
#: where they work ("a sound engineer at a small recording studio in Ljubljana", "software tester
#: in Totvs here in Curitiba"), not a department, a month or a day.
_BASED = re.compile(
    r"\b(?:at|for|with|in)\s.+?\s(?:here\s+)?in\s+(?P<place>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)\s*$"
)
_NOT_A_PLACE = re.compile(
    r"(?:HR|IT|QA|R&D|Sales|Marketing|Finance|Legal|Engineering|Operations|Research|Support|Design|"
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|The|A|An)\b"
)


#: The phrase that sets a slot beside the rest of a clause, by slot family: where someone lives
#: ("a marine biologist based in Bergen", "a nurse living in Lisbon"), and where one works from
#: ("working from home for an insurance company", "fully remote at Monzo").
BESIDE: dict[str, re.Pattern[str]] = {}
BESIDE["residence"] = re.compile(
    r",?\s*\b(?:who (?:is |lives )?)?(?:based|living|lives|residing)\s+(?:in|near)\s+\S+"
    r"(?:\s+[A-Z][\w'’-]*)*",
    re.IGNORECASE,
)
BESIDE["arrangement"] = re.compile(
    r",?\s*\b(?:(?:fully|completely|100%)\s+)?(?:from home|remotely|remote|hybrid|"
    r"(?:in|into|from) the office(?:\s+(?:\d|one|two|three|four|five)\s+days?(?:\s+a\s+week)?)?)\b",
    re.IGNORECASE,
)


def based(clause: str) -> str | None:
    """Where a clause of someone's work says they are, as a statement of its own (pure): "I'm a
    test engineer at Siemens in Erlangen" -> "I'm based in Erlangen"; "My sister is a midwife
    at the LRI in Leicester" -> "My sister is based in Leicester"; else None. What a correction
    of the job leaves: a new employer does not say one moved."""
    m = _BASED.search(clause)
    found = slot_of(clause)
    if m is None or _NOT_A_PLACE.match(m.group("place")) or found is None or found.family != "work":
        return None
    return f"{_said(clause[: m.start()])} based in {m.group('place')}"


def _said(before: str) -> str:
    """Who the words ``before`` a phrase say it of, as the opening of a statement (pure): "My
    sister is a midwife" -> "My sister is"; "I'm a nurse", "We are nurses" or no subject ->
    "I'm"."""
    who = re.match(r"\s*(.+?)\s+(?:is|was|'s|’s)\s", before)
    return f"{who.group(1)} is" if who and not re.match(r"(?i:i|we)\b", who.group(1)) else "I'm"


#: who a clause is about when it opens on a relation by name ("My mother-in-law Ngozi", "Our
#: son Kwame", "Ana's sister Rosa")
_NAMED_SUBJECT = re.compile(r"^(?:[Mm]y|[Oo]ur|[A-Z][a-z]+['’]s) [\w-]+(?: [\w-]+)? [A-Z][a-z]+\b")
_PRONOUN = re.compile(r"^(?:(she|he)(?:['’]s\b| is\b)|(she|he)\b)", re.IGNORECASE)


def _named(clause: str, first: str) -> str:
    """``clause`` with a leading "she"/"he" put back as the person the fact's first clause
    named: what a correction leaves of "My mother-in-law Ngozi lands on 9 January, she's
    staying three weeks" is "My mother-in-law Ngozi is staying three weeks", not "She's ..."."""
    who = _NAMED_SUBJECT.match(first)
    pronoun = _PRONOUN.match(clause)
    if who is None or pronoun is None or who.group() == first.strip():
        return clause
    verb = " is" if pronoun.group(1) else ""
    return who.group() + verb + clause[pronoun.end() :]


def remainder(
    text: str,
    touched: Callable[[str], bool],
    value: str | None = None,
    *,
    workplace: bool = False,
    place: bool = False,
    beside: re.Pattern[str] | None = None,
) -> str | None:
    """What a stored fact still says once the clauses a correction ``touched`` are taken out
    (pure): "I'm 43 and just started learning to skateboard" corrected to 34 keeps "Just started
    learning to skateboard". With the corrected ``value`` (a name a statement negates: "not in
    pune anymore"), a touched clause keeps what it says without the place phrase ("i'm a
    pharmacist in pune" -> "i'm a pharmacist"). None when nothing is left that says something
    (two content words, or one in the first person), or nothing was touched: the fact is
    replaced whole. With ``workplace`` (a new job title that names no employer), a touched
    clause keeps where it says one works: "I'm a junior developer at Spotify, on the payments
    team" -> "I'm employed at Spotify, on the payments team". With ``place`` (the caller knows
    the correction says nothing of where one is), a touched clause of work keeps the place it names
    (:func:`based`): "I'm a test engineer at Siemens in Erlangen" -> "I'm based in Erlangen".
    With ``beside`` (the phrase of the slot a correction changed: :data:`BESIDE`), a touched
    clause keeps what it says beside that phrase: "The user is a marine biologist based in
    Bergen" -> "The user is a marine biologist"; "I'm working from home for an insurance company"
    -> "I'm working for an insurance company"."""
    clauses: list[str] = []
    pair = PAIR.search(text)
    mask = "\x00" * len(pair.group()) if pair else ""
    if pair is not None:
        text = text[: pair.start()] + mask + text[pair.end() :]
    for c in (c.strip(" ,;.") for c in _CLAUSE.split(text)):
        if c and clauses and (_MODIFIER.match(c) or (mask and c == mask)):
            clauses[-1] += ", " + c  # "I live in Madrid, near Retiro park": one clause
        elif c:
            clauses.append(c)
    kept, touched_any, dropped, cut = [], False, False, False
    for clause in clauses:
        if not touched(clause):
            if cut and not has_clause_verb(clause) and _APPOSITIVE.match(clause):
                cut = False  # "at Baker & Moss, a mid-size audit firm": what the place cut was
                continue
            cut = False
            if not (
                dropped
                and (not has_clause_verb(clause) or _ELLIPSIS.match(clause))
                and not _COMPANY.match(clause)
                and not polarity(clause)
            ):
                kept.append(clause)
                dropped = False
            # else "I take sertraline, 50mg every morning": a phrase with no verb of its own
            # says more of the clause dropped before it, and goes with it (not who one is with:
            # "I live in Toronto with my wife Priya" after a move still says who Priya is; nor a
            # liking with its "I'm" dropped: "big fan of steak")
            continue
        touched_any, dropped = True, True
        employer = WORKPLACE.search(clause) if workplace else None
        if employer is not None:
            at = re.sub(r"^with\b", "at", employer.group())
            kept.append(f"{_said(clause[: employer.start()])} employed {at}")
            dropped = False
            continue
        where = based(clause) if place else None
        if where is not None and not (value and value.lower() in where.lower()):
            kept.append(where)  # what says more of the job ("mostly folk sessions") goes with it
            continue
        rest = beside.sub("", clause) if beside is not None else clause
        if (
            rest != clause
            and not touched(rest)
            and has_clause_verb(rest)  # "My sister Ana lives in Lisbon" leaves no "My sister Ana"
            and _says_something(rest)
            and not _bare_work(rest)
        ):
            kept.append(rest.strip(" ,"))
            dropped = False
            continue
        if value is not None:
            # the place's own name runs on in capitals ("at Baker & Moss") and takes where it is
            # along, up to three words before a stop ("the aldi in Govan, ...", "the lidl on
            # hessle road, ..."), not the words after it ("to Lisbon for a long weekend")
            name = (
                rf"{re.escape(value)}\b(?:\s+(?:&\s+)?(?-i:[A-Z])[\w'’-]*)*"
                r"(?:\s+(?:in|at|on|of|near)\s+[\w'’-]+(?:\s+[\w'’-]+){0,2}(?=\s*(?:[,;.!?]|$)))?"
            )
            rest = re.sub(rf"\s*{_PLACE}{name}", "", clause, flags=re.I)
            if (
                rest != clause
                and not touched(rest)
                and not sets(rest, "residence")
                and not _bare_work(rest)
                and _says_something(rest)
            ):
                kept.append(rest.strip(" ,"))
                dropped, cut = False, True
    kept = [re.sub(r"^with\s+", "", c, flags=re.I) for c in kept if _says_something(c)]
    if not touched_any or not kept:
        return None
    kept[0] = _named(kept[0], clauses[0])
    out = ", ".join(kept)
    if pair is not None:
        out = out.replace(mask, pair.group())
    return out[:1].upper() + out[1:] + ("" if out.endswith((".", "!")) else ".")


def _bare_work(rest: str) -> bool:
    """Whether what is left of a clause says only that one works ("I work", "I work, mostly on
    the tills" without the place)."""
    head = _CLAUSE.split(rest.strip(" ,"), maxsplit=1)[0]
    return {w.lower() for w in content_words(head)} <= _BARE_WORK


def _says_something(clause: str) -> bool:
    """Two content words, or one said in the first person ("I'm a pharmacist")."""
    words = content_words(clause)
    return len(words) >= 2 or (len(words) == 1 and bool(FIRST_PERSON.search(clause)))


def left_place(text: str, place: str, fact: str = "") -> bool:
    """Whether ``text`` says one is no longer in ``place`` ("I don't live in Leeds anymore",
    "no longer based in Leeds", "moved out of Leeds"); with the ``fact`` it corrects, also
    "she left leicester in april" when the fact says one is *in* it ("a midwife in leicester"):
    leaving a place one was at or worked for ("left Google") is leaving the job."""
    p = re.escape(place)
    return bool(
        re.search(rf"(?:\bnot|n['’]t|\bno longer|\bnever)\b(?:\s+\w+){{0,3}}\s+in\s+{p}\b", text, re.I)
        or re.search(rf"\b(?:moved|relocated)\s+(?:out of|away from|from)\s+{p}\b", text, re.I)
        or (
            bool(re.search(rf"\bleft\s+{p}\b", text, re.I))
            and bool(re.search(rf"\bin\s+{p}\b", fact, re.I))
            and not re.search(rf"\b(?:at|for|with)\s+{p}\b", fact, re.I)
        )
    )


def sets(clause: str, family: str) -> bool:
    """Whether ``clause`` sets an attribute of the ``family`` (``text.slots``: "residence")."""
    found = slot_of(clause)
    return found is not None and found.family == family
