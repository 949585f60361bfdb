"""A short answer to the assistant's question about the user, as the statement it makes (pure).

"What's your name?" / "Ngozi", "How old are you?" / "41", "Any allergies I should know
about?" / "shellfish": the user's turn states nothing on its own, so the rules dropped it,
and with it the answer. Said to a question about the user, the fragment is the user's own
statement about themselves, worded by the question: "My name is Ngozi.", "I am 41.", "My
allergies: shellfish.". A question the templates do not know keeps its own words, in the first
person: "What kind of music do you like?" / "jazz mostly" -> "What kind of music do I like?
Jazz mostly.". Not an answer: "no", "not sure", a question back, a greeting or thanks, and
anything longer than :data:`MAX_WORDS` words (a longer reply states something itself, and the
sentence rules read it).
"""

from __future__ import annotations

import re

from ..text.lexical import split_sentences
from ..text.voice import as_user

__all__ = ["MAX_WORDS", "answered", "question_about_user"]

#: The most words a reply may have to be read as a bare answer.
MAX_WORDS = 6

#: Replies that answer nothing: refusals and doubt (whatever follows), and reactions, thanks,
#: greetings and bare yes or no (alone).
_NON_ANSWER = re.compile(
    r"^\s*(?:(?:not sure|unsure|no idea|idk|dunno|i don['’]?t know|don['’]?t know|rather not|prefer not|"
    r"i['’]?d rather not|it depends|depends|not telling|none of your|pass|skip)\b.*"
    r"|(?:no|nope|nah|none|nothing|never|not really|maybe|perhaps|haha\w*|lol|lmao|hm+|um+|uh+|why|"
    r"what|huh|ok(?:ay)?|k|cool|nice|thanks?|thank you|ty|cheers|hi|hello|hey|bye|yes|yeah|yep|yup|"
    r"sure|whatever|n/?a|same)\b[\s!.?]*)$",
    re.IGNORECASE,
)
#: Words that only lead into the answer ("Just Sam", "it's Ngozi", "oh, 41").
_LEAD = re.compile(
    r"^\s*(?:(?:oh|ah|well|um+|erm|so|haha|lol)[\s,!.]+)*(?:just|only|it['’]?s|its|that['’]?s|"
    r"call me|i['’]?m|im|i am)?\s*",
    re.IGNORECASE,
)

#: What only accepts after the answer ("bex is fine", "Rafa works", "43 please"): not part of it.
_ACCEPT = re.compile(
    r"(?<=\w)[\s,]+(?:(?:is|['’]s|would be|will be)\s+(?:fine|good|ok(?:ay)?|great|perfect|grand)"
    r"|works(?: for me)?|will do|please|pls|plz|thanks|thank you|ta|cheers)\s*$",
    re.IGNORECASE,
)
#: Emoji and other symbols at the end of a reply ("bex is fine 🙂").
_TRAILING_SYMBOLS = re.compile(r"[^\w.!?'’)\]]+$")

#: A question about the user, first-person template for the answer ``{a}`` (and the groups).
_TEMPLATES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"^(?:what|how) should i (?:call|address) you$|^what do you (?:like|want|prefer) to be called$",
            re.I,
        ),
        "Call me {a}.",
    ),
    (
        re.compile(r"^where (?:are you (?:originally )?from(?: originally)?|do you come from)$", re.I),
        "I am from {a}.",
    ),
    (
        re.compile(
            r"^(?:where|(?:which|what) (?:city|town|country|area|part of (?:the )?\w+)) do you (live|stay)"
            r"(?: in)?(?: now| these days)?$",
            re.I,
        ),
        "I {0} in {a}.",
    ),
    (
        re.compile(
            r"^(?:where|(?:which|what) (?:city|town|country|area|part of (?:the )?\w+)) are you "
            r"(based|living)(?: in)?(?: now| these days)?$",
            re.I,
        ),
        "I am {0} in {a}.",
    ),
    (
        re.compile(
            r"^(?:which|what) (?:city|town|country|area|part of (?:the )?\w+) are you in(?: now)?$",
            re.I,
        ),
        "I am in {a}.",
    ),
    (re.compile(r"^how old are you(?: now)?$|^what(?:['’]s| is) your age$", re.I), "I am {a}."),
    (
        re.compile(
            r"^what do you (?:do(?: for (?:work|a living))?|work as)$|^what(?:['’]s| is) your job$", re.I
        ),
        "I work as {a}.",
    ),
    (re.compile(r"^(?:what|which)(?:['’]s| is) your (.+)$", re.I), "My {0} is {a}."),
    (re.compile(r"^(?:what|which) are your (.+)$", re.I), "My {0} are {a}."),
    (re.compile(r"^(?:do you have|have you got) any (.+)$", re.I), "I have {a}."),
    (re.compile(r"^any (.+?)(?: (?:i|we) should know(?: about)?)?$", re.I), "My {0}: {a}."),
]

#: "are you" of a question, in the user's voice ("where are you based" -> "where am I based").
_ARE_YOU = re.compile(r"\bare you\b", re.IGNORECASE)
#: A question about the user: it says "you" or "your", asks what the assistant should know, or
#: what it should pick for the user ("Which size should I look for in the walking boots?").
_ABOUT_YOU = re.compile(
    r"\byou(?:r|rs|rself)?\b|\b(?:i|we) should (?:know|account for|keep in mind|plan for|be aware of)\b"
    r"|\bshould i (?:look for|get|book|order|buy|pick|choose|find|search for|reserve|set)\b",
    re.IGNORECASE,
)
#: The assistant's "should I <do>" in the user's statement of what to do ("which size to look for").
_SHOULD_I = re.compile(r"\bshould i\b", re.IGNORECASE)
#: A wh-question, or one for a list ("Do you have any pets?"); a yes/no question answered by a
#: fragment is not answered by it.
_WH = re.compile(
    r"^\s*(?:what|which|where|who|how|when|any|anything|anyone|do you have any|have you got any|"
    r"do you \w+ anything)\b",
    re.I,
)
#: A job said as one bare noun takes an article ("nurse" -> "a nurse").
_BARE_NOUN = re.compile(r"^[a-z]+$")


#: Questions of the chat itself, whose answers are moods or replies, not facts about the user:
#: how they are, how their day went, what they think or want the assistant to do next.
_CHAT = re.compile(
    r"^(?:how(?:['’]s| is| are| was| were| have| has)? (?:you|your|it|things|everything|life)\b(?! old)|"
    r"how (?:do|did) you (?:feel|find|like)|how (?:can|may|could) i|what(?:['’]s| is) up|"
    r"what (?:do|did) you think|what (?:would|do) you (?:like|want|prefer|need) (?:me )?to|"
    r"what can i|what else|anything else|what are you up to|what(?:['’]s| is) on your mind|"
    r"what do you call|"
    r"(?:how|what) about you|and you)",
    re.IGNORECASE,
)


#: Where a question starts after a lead-in ("For the form: what's...", "Quick one, where...").
_LEAD_IN = re.compile(r"[:;,–—]\s+(?=(?:what|which|where|who|how|when|any)\b)", re.IGNORECASE)


#: A field of a form asked by its name alone ("Quick one for your insurance quote: age?",
#: "Name?", "Date of birth?").
_FIELD = re.compile(
    r"^(?:(?:your|full|first|last|home|work|mobile|email)\s+)?(?P<field>age|name|surname|date of birth|dob|"
    r"birthday|nationality|occupation|job|profession|blood type|blood group|height|weight|"
    r"shoe size|dress size|size|postcode|zip code|address|phone number|email(?: address)?)$",
    re.IGNORECASE,
)
#: What the assistant says it needs of the user, asked as a yes/no question ("The form asks for
#: your blood type, do you know it?").
_NEEDS_YOUR = re.compile(
    r"\b(?:asks? for|needs?|wants?|requires?) your (?P<field>[\w' -]{1,30}?)[,.;:]?\s*"
    r"(?:do you (?:know|have) (?:it|that)|what is it|can you (?:tell|give) me(?: (?:it|that))?|any idea)$",
    re.IGNORECASE,
)


def _as_question(q: str) -> str:
    """A form field (after any lead-in) or a need asked as a question of what it is: "Quick one
    for your insurance quote: age" -> "what's your age"; else ``q``."""
    field = _FIELD.match(re.split(r"[:;,–—]\s+", q)[-1].strip()) or _NEEDS_YOUR.search(q)
    return f"what's your {field.group('field').lower()}" if field else q


def question_about_user(assistant: str) -> str | None:
    """The assistant message's last question, in its last two sentences, when it is a
    wh-question about the user (without its lead-in and question mark), else None."""
    sentences = [s.strip() for s in split_sentences(assistant) if s.strip()]
    if not sentences:
        return None
    # the question may come last or just before one sentence more ("What's your blood type?
    # It's a field on the donor form.")
    # (not a riddle's punchline: "What do you call a fake noodle? An impasta.")
    tail = sentences[-2:] if len(sentences[-1].split()) > 3 else sentences[-1:]
    asked = [s for s in tail if s.endswith("?")]
    if not asked:
        return None
    q = asked[-1].rstrip("?").strip()
    q = re.sub(r"^(?:and|so|also|btw|by the way|out of curiosity|just curious)[,\s]+", "", q, flags=re.I)
    # "For the blood donation form: what's your blood type?": the question after its lead-in
    lead = _LEAD_IN.search(q)
    if lead is not None and not _WH.match(q):
        q = q[lead.end() :]
    elif not _WH.match(q):  # "Quick one for your insurance quote: age?" asks for the age
        q = _as_question(q)
    if not _WH.match(q) or not _ABOUT_YOU.search(q) or _CHAT.match(q):
        return None
    return q


def _answer(reply: str) -> str | None:
    """The answer in a bare reply, or None for a reply that is no answer."""
    text = reply.strip()
    if not text or text.endswith("?") or _NON_ANSWER.match(text):
        return None
    if len(text.split()) > MAX_WORDS:
        return None
    text = _LEAD.sub("", text, count=1).strip().rstrip(".!").strip()
    text = _ACCEPT.sub("", _TRAILING_SYMBOLS.sub("", text)).strip().rstrip(".!,").strip()
    return text or None


def answered(assistant: str, reply: str, *, templated: bool = False) -> str | None:
    """The statement the user's ``reply`` makes as an answer to the ``assistant`` message's
    last question (a wh-question about the user), or None. ``templated``: only for a question
    the templates know ("what should I call you?"), not one kept in its own words."""
    q = question_about_user(assistant)
    a = _answer(reply) if q is not None else None
    if q is None or a is None:
        return None
    for pattern, template in _TEMPLATES:
        m = pattern.match(q)
        if m is None:
            continue
        groups = [g for g in m.groups() if g] or [""]
        if template.startswith("I work as") and _BARE_NOUN.match(a):
            a = ("an " if a[0] in "aeiou" else "a ") + a
        return template.format(*groups, a=a)
    if templated:
        return None
    q = as_user(_SHOULD_I.sub("to", _ARE_YOU.sub("am I", q)))
    return f"{q[0].upper()}{q[1:]}? {a[0].upper()}{a[1:]}."
