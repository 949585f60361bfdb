"""Subject and slot: which attribute of whom a statement sets ("where the user lives", "what
Ana's sister does for work", "the user's diet"), so that a correction can find the facts it
replaces by what they are about, not only by how similar they sound.

Transparent rules, no model: a slot family is recognised by its words (live / moved / based in
-> residence; vegetarian / vegan / eat meat -> diet), the subject is the speaker unless the
statement opens on a relation of theirs ("My sister Ana lives in..."), and a few words say that
something stopped ("no longer", "not ... anymore", "quit", "left", "used to"). The value is
what is left of the statement's content words once the slot's own words are taken out.

Some families hold one value at a time (a person lives in one city, eats one diet, drives one
car): a new value there replaces the old. Others hold several (jobs, pets, likes) and change
only when the statement says so ("now", "switched", "no longer").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .lexical import content_words

__all__ = [
    "BECAME",
    "CHANGE_CUE",
    "KIN",
    "OVER",
    "PROFESSION",
    "PROFESSIONS",
    "SINGLE_VALUED",
    "STEP_KIN",
    "Slot",
    "asked_relation",
    "asked_slot",
    "asks_many",
    "asks_now",
    "changes",
    "is_attribute",
    "names_relation",
    "relation_names",
    "says_change",
    "says_current",
    "says_ended",
    "slot_of",
    "speaks_of",
    "states_value",
    "tells_end",
    "tells_history",
]

#: What people do for a living ("I'm a wedding photographer" sets where one works).
PROFESSIONS = (
    r"accountant|actor|actress|air traffic controller|analyst|architect|artist|auditor|baker|barber|barista|"
    r"bartender|bookkeeper|"
    r"builder|butcher|doula|estate agent|florist|hygienist|janitor|lifeguard|paralegal|porter|realtor|"
    r"sommelier|welder|"
    r"carpenter|carer|caregiver|cashier|chef|cleaner|coach|consultant|cook|counsell?or|courier|dentist|"
    r"designer|developer|dietitian|doctor|driver|economist|editor|electrician|engineer|farmer|"
    r"firefighter|gardener|hairdresser|journalist|judge|lawyer|lecturer|librarian|mechanic|midwife|"
    r"musician|nanny|nurse|optician|painter|paramedic|pharmacist|photographer|physician|physicist|"
    r"physio(?:therapist)?|pilot|plumber|police officer|postman|professor|programmer|psychologist|"
    r"radiographer|receptionist|researcher|salesperson|scientist|secretary|social worker|solicitor|"
    r"barrister|stylist|surgeon|surveyor|tailor|teacher|technician|therapist|translator|tutor|vet|"
    r"veterinarian|waiter|waitress|writer|"
    r"illustrator|animator|copywriter|recruiter|interpreter|optometrist|psychiatrist|radiologist|"
    r"an(?:a)?esthetist|p(?:a)?ediatrician|nutritionist|chemist|biologist|geologist|statistician|"
    r"archivist|curator|sculptor|jewell?er|locksmith|joiner|bricklayer|plasterer|roofer|tiler|"
    r"landscaper|fishmonger|shop assistant|sales assistant|bank teller|actuary|underwriter|"
    r"attorney|diplomat|civil servant|(?:youth|support|care|nursery) worker|childminder|"
    r"headteacher|teaching assistant|flight attendant|cabin crew|beekeeper|"
    r"winemaker|brewer|dispatcher|call handler|warehouse operative|zookeeper|park ranger|"
    r"machinist|miner|fisherman|soldier|detective|security guard|housekeeper|"
    r"tour guide|travel agent|videographer|filmmaker|choreographer|sysadmin"
)

#: Roles named after "as a" or "I'm a" ("joined Coolblue as an analytics lead"), but too
#: common as bare words to say work on their own ("take the lead").
_ROLES = (
    r"manager|director|lead|head of \w+|supervisor|administrator|officer|clerk|coordinator|specialist|"
    r"executive|intern|assistant"
)

# family -> the words that name it (matched on the lowercased text)
_FAMILIES: list[tuple[str, re.Pattern[str]]] = [
    (
        "residence",
        re.compile(
            # "living with her and dad again" says with whom, not where: no place, no residence
            # nor does what one does "for a living", the "cost of living" or a "living room"
            # nor "live" said of a performance ("I do live sound", "live music", "a live gig")
            r"\b(?:(?:live|lives|(?<!for a )(?<!cost of )living(?! room))(?! with\b(?!.*\b(?:in|at) \w))"
            r"(?! (?:sound|music|gigs?|shows?|events?|streams?|streaming|bands?|performances?|sessions?|"
            r"concerts?|comedy|jazz|theatre|theater|audio|tv|broadcasts?|sports?|coverage|action|bait|demos?)\b)|"
            r"reside|resides|based in|"
            r"moved (?:(?:up|down|over|across|away|back(?: home)?) )?(?:to|into|in)|moved home to|move to|"
            r"moving to|relocat\w* to|home(?:town| town)? is|"
            r"back in(?! the office| business| action| touch| shape| form| the day| the game|"
            r" (?:january|february|march|april|may|june|july|august|september|october|november|december|"
            r"spring|summer|autumn|fall|winter|\d{4})\b)|settled in|"
            r"new (?:flat|apartment|house) in|"
            # where one rents or flats is where one lives ("flatting in dunedin", "we rent a
            # cottage in Fremantle", "renting in freo again", "bought a house in Bassendean")
            r"flatting in|(?:rent|rents|renting) (?:in|a (?:[\w-]+ ){0,2}in)|"
            # where one is, said as what holds now ("we're in wroclaw these days")
            r"(?:i['’]m|we['’]re|i am|we are) (?:now )?(?:in|over in|out in) (?!(?:a|an|the|my|our|bed|love|"
            r"trouble|charge|hospital|pain|town|work|school|class|therapy|debt|luck|shape|a rush)\b)\w+ "
            r"(?:now|these days|nowadays)|"
            r"(?:bought|buying|buy) (?:a|our|my) (?:[\w-]+ ){0,2}(?:house|flat|apartment|home|place) in|"
            # a transfer to another branch or office moves where one is ("got transferred to the
            # mumbai branch"); a transfer to a team or a school does not
            r"(?:transferred|posted|relocated) to (?:the |our |their |a )?(?:[\w-]+ ){0,2}"
            r"(?:branch|office|site|campus|headquarters|hq|base))\b"
        ),
    ),
    (
        "diet",
        re.compile(
            r"\b(?:vegetarian|vegan|pescatarian|pescetarian|keto|paleo|gluten[- ]free|dairy[- ]free|"
            r"kosher|halal|"
            r"(?:eat|eating|eats|ate) (?:meat|fish|dairy|pork|beef|chicken|seafood|carbs|sugar|eggs|bread)|"
            r"diet)\b"
        ),
    ),
    ("smoking", re.compile(r"\b(?:smok\w*|cigarettes?|vap(?:e|ing)|nicotine)\b")),
    (
        "drinking",
        re.compile(
            r"\b(?:sober|teetotal\w*|(?:drink|drinking) (?:alcohol|beer|wine)|alcohol|booze|boozing|"
            r"pints?(?! of (?:milk|water|juice|squash|blood)))\b"
        ),
    ),
    (
        "relationship",
        re.compile(
            r"\b(?:girlfriend|boyfriend|partner|fianc[ée]e?|married|divorced|engaged|"
            r"(?:i['’]?m|i am|still|been|being|stay(?:ing)?|now|happily) single|"
            r"split up|broke up|breaking up|separated|back together|dating)\b"
        ),
    ),
    (
        # how the user wants to be addressed: "Please address me as Dr. Mensah", "just call me
        # Femke", "you can drop the title" (a call one asks for is no name: "call me tomorrow")
        "address",
        re.compile(
            r"\b(?:address(?:es)? me as|refer to me as|i go by|"
            r"call me (?!back|later|tomorrow|tonight|today|when|if|at|on|after|before|any ?time|asap|"
            r"a taxi|an? \w+ (?:later|tomorrow))[\w'’-]+|"
            r"drop (?:the|my) (?:title|doctor|dr|professor|prof|formalit\w*|mr|mrs|ms|sir|madam)\b)"
        ),
    ),
    (
        "reply_style",  # how the user wants the assistant to answer
        re.compile(
            r"\b(?:your (?:answers?|repl(?:y|ies)|responses?|explanations?)|"
            r"(?:answers?|repl(?:y|ies)|responses?|explanations?) from you|"
            r"(?:prefer|want|like|give me|need) (?:[\w,-]+ ){0,3}"
            r"(?:answers|replies|responses|explanations))\b"
        ),
    ),
    ("phone", re.compile(r"\b(?:phone|iphone|pixel|android|galaxy|smartphone)\b")),
    # what one drives for work ("I drive a forklift", "drives a bus") is no car of one's own
    (
        "car",
        re.compile(
            r"\b(?:car|(?:drive|driving) an?(?! (?:forklift|bus|lorry|truck|taxi|cab|tram|train|"
            r"ambulance|delivery van|van for)\b)|motorbike)\b"
        ),
    ),
    ("age", re.compile(r"\b(?:\d{1,3} years? old|turned \d{1,3}|i(?:['’]?m| am) \d{1,3}\b|aged? \d{1,3})")),
    (
        # where one works from, one arrangement at a time: "I work fully remote", "back in the
        # office 5 days a week", "REMOTE AGAIN", "hybrid now, Tuesdays in the office"
        "arrangement",
        re.compile(
            r"\b(?:(?:fully|full[- ]time|100%|completely|i['’]?m|am|we['’]re|work(?:s|ing)?|went|go(?:ing)?|"
            r"job is|still) remote(?:ly)?|remote (?:again|now|job|work|role|position|worker|first)|"
            r"work(?:s|ing)? from home|wfh|hybrid|return[- ]to[- ]office|office mandate|"
            r"(?:back )?(?:in|into|to|at) the office (?:\d|one|two|three|four|five|every|full|most|again)|"
            r"back (?:in|to|into) the office|"
            r"(?:come|go|going|coming) (?:back )?(?:in)?to the office|"
            r"commut\w* (?:to|into) (?:the|an) office)\b"
            r"|^\W*remote\b"
        ),
    ),
    (
        "work",
        re.compile(
            r"\b(?:work|works|working|job|employer|employed|hired|intern\w*|career|"
            r"quit (?:my|the) job|left (?:my|the) job|company|office|promoted|retired|retirement|"
            r"unemployed|laid off|made redundant|between jobs|startup|start-up|firm|fintech|agency|"
            r"freelanc\w*|self[- ]employed|"
            r"resign(?:ed|ing)? (?:from|at)|handed in (?:my|her|his|their) notice|for a living|"
            r"consultancy|(?:position|role|post) (?:at|with)|new (?:position|role|post)\b)\b"
            rf"|\b(?:i['’]?m|i am|is|as) an? (?:[\w-]+ ){{0,2}}(?:\w+-)?(?:{PROFESSIONS}|{_ROLES})\b"
            # a job said bare, with where: "Air traffic controller at Stanfield airport, 24 years"
            # (not one met there: "Doctor at the clinic said rest")
            rf"|^\W*(?:[\w-]+ ){{0,2}}(?:{PROFESSIONS}) (?:at|for|with|in)\b"
            r"(?!.*\b(?:said|says|told|tells|asked|reckons|thinks|gave|prescribed)\b)"
            # a subject one teaches ("I teach English in an academy", "still teach maths")
            r"|\b(?:i|we|she|he|they|(?!to\b)[a-z]+) (?:still |now |also )?teach(?:es)? (?:[\w-]+ )?"
            r"(?:english|maths?|science|history|geography|music|art|drama|french|spanish|german|italian|"
            r"chemistry|physics|biology|pe|yoga|pilates|piano|guitar|violin|swimming|dance|ballet|"
            r"computing|economics|law|nursing|languages?|esl|efl)\b"
            # a role one took up, whatever it is called ("started as a call handler", "got taken
            # on as a runner", "hired as a picker")
            r"|\b(?:started|starting|began|begun|hired|taken on|took a job|got a job|new job) as an? [\w-]+"
            # a workplace one started at or went back to ("Started at the public library in
            # Observatory", "back at IKEA, on my old team"), not a time, a place of study or a
            # habit ("started at 9", "back at uni", "back at the gym"), and the first days of a
            # job ("First week at Dangote done")
            r"|\b(?:started|starting|began|(?:i['’]?m|i am|guess who['’]s) back) (?:work(?:ing)? )?at "
            r"(?!(?:the |a |an )?(?:\d|(?:gym|uni|university|school|college|home|it|square|night|noon|"
            r"midnight|dawn|first|last|beginning|zero|my|our|his|her|their)\b))(?:the |a |an )?[\w&'’-]+"
            r"|\bfirst (?:day|week|shift|month)s? (?:done |over )?at (?!\d|(?:uni|school|college|the gym)\b)"
            # a business of one's own: "I run a little bakery in Bath", "I manage a garden centre",
            # "I have my own small restaurant here"
            r"|\b(?:i|we) (?:(?:run|manage|own|co-own|opened|set up) (?:my own |our own |a |an |the )|"
            r"have (?:my|our) own )"
            r"(?:[\w-]+ ){0,3}?(?:business|shop|store|restaurant|caf[eé]|bakery|bar|pub|salon|studio|"
            r"clinic|practice|(?:garden )?cent(?:re|er)|farm|garage|hotel|b&b|guesthouse|bistro|deli|gym|"
            r"company|stall|food truck|nursery|workshop|boutique|pharmacy|surgery)\b"
            # "Week one as sous-chef done", "first week as a trainee paralegal"
            r"|\b(?:week|day|month|shift) (?:one|1|done)? ?as (?:an? )?(?:[\w-]+ ){0,2}(?:\w+-)?"
            rf"(?:{PROFESSIONS})\b"
        ),
    ),
    (
        # which shifts one works, one pattern at a time: "on the early shift", "on nights again"
        "shift",
        re.compile(
            r"\b(?:(?:early|late|night|day|morning|evening|afternoon|graveyard|weekend|split) shifts?|"
            r"on (?:nights|days|earlies|lates)|(?:work|works|working) (?:nights|days|weekends)|rota)\b"
        ),
    ),
]
#: Families where a new value replaces the old without being told so.
SINGLE_VALUED = frozenset(
    {
        "residence",
        "diet",
        "smoking",
        "drinking",
        "relationship",
        "phone",
        "car",
        "age",
        "reply_style",
        "address",
        "shift",
        "arrangement",
    }
)

#: Words saying a statement corrects or updates an earlier one.
CHANGE_CUE = re.compile(
    r"\b(?:actually|correction|i meant|no longer|not \w+(?: \w+)? any ?more|anymore|any more|instead|"
    r"now|these days|nowadays|switched|swapped|changed|moved|new|again|back (?:to|in|together)|"
    r"started|joined|quit|stopped|gave up|left|used to|not any longer|lately|"
    # a post taken up: "Folake has taken a position as a branch manager", "took up a role at"
    r"(?:taken|took) (?:up )?(?:a|the) (?:\w+ )?(?:position|job|role|post)|"
    # the first days of a new job: "First week done as a trainee paralegal"
    r"first (?:day|week|shift|month)s? (?:done |over )?(?:as|at)|(?:day|week) one as)\b",
    re.IGNORECASE,
)
_STOPPED = re.compile(
    r"\b(?:no longer|not \w+(?: \w+)? any ?more|anymore|any more|(?<!\bto )quit|stopped|gave up|left|used to|"
    r"don['’]t \w+ any|split up|broke up|resign(?:ed|ing)?|handed in (?:my|her|his|their) notice|"
    r"laid off|made redundant)\b",
    re.IGNORECASE,
)
# a statement of change that names the new value along with the end of the old one ("left
# Maersk and joined Novo Nordisk", "quit the cafe and opened my own bakery")
_MOVED_TO = re.compile(
    r"\b(?:(?:gone|went|going|got) back to|(?:moved|moving|relocated|transferred|posted|switched|changed) "
    r"(?:over |back |up |down |across )?to|"
    r"(?:and|then|now|since|,) (?:have |i['’]ve |i )?(?:joined|opened|started (?:at|with|as|a new|my new)|"
    r"took (?:a|the|up a) (?:new )?(?:job|role|post|position)))\b",
    re.I,
)
# a past-tense mention that tells history, not the current state ("When I lived in Lisbon",
# "when Caroline was a kid")
_HISTORY = re.compile(
    r"\b(?:when|while|back when|before) (?:i|we|he|she|they|(?-i:[A-Z][a-z]+)) (?:still )?"
    r"(?:lived|worked|was|were)\b",
    re.I,
)
# "work" that is not employment: a task one is on ("working on new dance routines"), effort
# ("all the hard work", "working hard"), and what turns out ("it didn't work out", "determined
# to make it work")
_NOT_EMPLOYMENT = re.compile(
    r"\b(?:work(?:s|ed|ing)? (?:on|hard|out)|hard work|work of art|works of|"
    r"mak(?:e|es|ing) (?:it|this|that|things) work|"
    # work as when or with whom, not what one does: "with some lads from work", "before work"
    r"(?:from|after|before) work)\b",
    re.I,
)
#: Step-relations ("my stepdad Gareth" is about Gareth, not the user), for every rule that
#: names kin.
STEP_KIN = r"step-?(?:dad|mum|mom|father|mother|son|daughter|brother|sister)"
KIN = (
    # step- and in-law relations first
    rf"{STEP_KIN}|"
    r"(?:mother|father|sister|brother|son|daughter)-in-law|"
    r"sister|brother|mother|mom|mum|father|dad|son|daughter|wife|husband|partner|girlfriend|boyfriend|"
    r"friend|best friend|cousin|aunt|uncle|grandmother|grandfather|grandma|grandpa|grandad|granddad|"
    r"granny|nan|nana|niece|nephew|"
    r"boss|roommate|flatmate|neighbou?r|colleague"
)
_RELATION = re.compile(
    r"^\s*(?:(?i:actually|so|also|and|oh)[\s,]+)*(?:(?i:my|the user['’]s)|[A-Z][a-z]+['’]s) "
    # "my older brother Malik", "my little sister Jo": who, with a word of age or rank
    r"(?:(?i:older|younger|little|big|baby|eldest|oldest|youngest|twin|late|elder) )?"
    rf"({KIN})(?: ([A-Z][a-z]+))?",
)
# texting drops the "my": "Partner's vegan.", "Grandad ezra turned 90", "Mum had a fall"
_BARE_RELATION = re.compile(rf"^\s*(?i:({KIN}))(?:['’]s)?\b(?: ([A-Z][a-z]+))?")
_SLOT_WORDS = frozenset(
    content_words(
        "live lives living reside based moved move moving relocate relocated home hometown settled back new "
        "work works working job employer employed hired company office career promoted intern "
        "eat eats eating ate diet smoke smoking smoked cigarettes drink drinking alcohol "
        "phone car drive driving years old turned aged actually now again anymore longer quit stopped "
        "started switched changed left used instead these days nowadays"
    )
)


@dataclass(frozen=True)
class Slot:
    """What a statement sets: ``family`` of ``subject`` (lowercased), to ``value`` (its content
    words, sorted), or says that it ``stopped``."""

    family: str
    subject: str
    value: tuple[str, ...]
    stopped: bool = False

    @property
    def single(self) -> bool:
        return self.family in SINGLE_VALUED


#: "my husband", "our dog": a person or animal of one's own, asked about or named.
_MY_RELATION = re.compile(
    rf"\b(?:my|our)\s+(?:(?:older|younger|little|big|baby|eldest|oldest|youngest|twin|late|elder|new)\s+)?"
    rf"({KIN}|dog|cat|puppy|kitten|pup|parrot|rabbit|horse|pet)\b",
    re.IGNORECASE,
)


def asked_relation(question: str) -> str | None:
    """The relation a question asks about, lowercased ("what's my husband called?" ->
    "husband"), or None."""
    m = _MY_RELATION.search(question)
    return m.group(1).lower() if m else None


def names_relation(text: str, relation: str) -> bool:
    """Whether ``text`` speaks of one's own ``relation`` ("My husband Anselm and I run a goat
    farm", "our dog"): what a question about that relation asks about."""
    return any(m.group(1).lower() == relation for m in _MY_RELATION.finditer(text))


#: The name said right after a relation ("my wife Ngozi", "my big sister ngozi is a midwife"):
#: a capitalised word, or in lowercase texting one that a verb or a comma follows.
_GIVEN_NAME = re.compile(
    r"\s*,?\s*(?:(?-i:([A-Z][a-z][\w'’-]*))|([a-z][a-z'’-]+)(?=\s*(?:,|['’]s\b|\s(?:is|was|has|had|and|lives|"
    r"works|just|got|moved|started|left|turned|loves|hates|does|did|will|can|teaches|runs)\b)))",
    re.IGNORECASE,
)
_NOT_A_NAME = frozenset(
    "and but is was has had who just also still now always never really finally too said says got lives "
    "works does did will can the a an he she they it we i me you to in at on for with of".split()
)


def relation_names(text: str, relation: str) -> list[str]:
    """The names ``text`` gives one's own ``relation``, lowercased: "My wife Ngozi is a midwife"
    -> ["ngozi"] for "wife"; "my big sister ngozi is a midwife" -> ["ngozi"]; "my wife teaches
    chemistry" -> []. What lets a question about the relation ("what does my wife do?") find what
    is later said of the person by name alone ("Ngozi swapped the ward for a lecturing job")."""
    out: list[str] = []
    for m in _MY_RELATION.finditer(text):
        if m.group(1).lower() != relation:
            continue
        n = _GIVEN_NAME.match(text, m.end())
        name = n and (n.group(1) or n.group(2))
        if name and name.lower() not in _NOT_A_NAME and name.lower() not in out:
            out.append(name.lower())
    return out


def speaks_of(relation: str, names: Sequence[str] = ()) -> Callable[[str], bool]:
    """Whether a text speaks of one's own ``relation`` (:func:`names_relation`) or names it by
    one of ``names`` (:func:`relation_names`, lowercased): what a question about the relation
    asks about."""
    by_name = (
        re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE) if names else None
    )

    def said(text: str) -> bool:
        return names_relation(text, relation) or (by_name is not None and by_name.search(text) is not None)

    return said


def tells_history(text: str) -> bool:
    """Whether ``text`` tells how things were ("When I lived in Lisbon I cycled", "Caroline used
    to go riding with her dad when she was a kid"): a memory, not the current state."""
    return bool(_HISTORY.search(text))


#: Where a clause of a sentence starts ("we are in Bilbao, Andrés got a job there").
_CLAUSE_START = re.compile(r"[,;.!?]\s+|\s(?:and|but|so)\s")
#: A clause about someone named, or "he"/"she"/"they": "Andrés got a job in the Guggenheim".
_THIRD_PERSON = re.compile(
    r"\s*(?P<who>(?-i:[A-Z][\w'’-]+)|he|she|they) (?:just |also |finally |now |recently )?"
    r"(?:got|gets|is|was|has|had|works|worked|started|starts|landed|found|took|quit|left)\b",
    re.IGNORECASE,
)
_NOT_SOMEONE = frozenset(
    {"i", "we", "it", "this", "that", "there", "work", "job", "life", "everything", "nothing", "which", "who"}
)


def _someone_elses(text: str, pattern: re.Pattern[str]) -> str | None:
    """Who the clause of ``text`` that sets the slot of ``pattern`` is about, when it is a named
    person or a third-person pronoun and not the speaker ("Since october we are in Bilbao,
    Andrés got a job in the Guggenheim": Andrés's work, not the user's); else None."""
    for clause in _CLAUSE_START.split(text):
        if pattern.search(_NOT_EMPLOYMENT.sub(" ", clause.lower())):
            m = _THIRD_PERSON.match(clause)
            if m is None or m.group("who").lower() in _NOT_SOMEONE:
                return None
            return m.group("who").lower()
    return None


def slot_of(text: str, speaker: str = "the user") -> Slot | None:
    """The slot ``text`` sets, or None when it names none (or only tells history: "When I lived
    in Lisbon I cycled", or is a proposal the user agreed to: "I agreed: ..."). ``speaker``:
    whom the first person is."""
    low = text.lower()
    if tells_history(text) or low.startswith("i agreed:"):
        return None  # history, or an assistant's proposal the user took up: sets no attribute
    named = _NOT_EMPLOYMENT.sub(" ", low)
    family = next((name for name, pattern in _FAMILIES if pattern.search(named)), None)
    if family is None:
        return None
    subject = speaker.lower()
    # one's own status
    rel = (_RELATION.match(text) or _BARE_RELATION.match(text)) if family != "relationship" else None
    taken: set[str] = set()
    if rel:
        # "my wife Folake" is Folake, as "Folake has taken a position ..." later says of her
        kin, name = (w.lower() if w else None for w in rel.groups())
        subject = name or str(kin)
        taken = set(content_words(f"{kin} {name or ''}"))
    elif family == "work" and (other := _someone_elses(text, _WORK)) is not None:
        subject = other
    taken |= set(content_words(subject))
    value = tuple(sorted({w for w in content_words(text) if w not in _SLOT_WORDS and w not in taken}))
    # "moved to Porto, so not in Lisbon anymore" gives the value that holds now: it did not stop
    stopped = bool(_STOPPED.search(text)) and not _MOVED_TO.search(text)
    return Slot(family, subject, value, stopped=stopped)


# "job", "career" or "work" said of how it feels ("Quiet job, suits me.", "work is mad at the
# moment") names no work; "work at", "job as" and the like do
_BARE_WORK = re.compile(r"\b(?:jobs?|careers?|work(?:s|ing)?)\b(?! (?:at|for|in|as|with)\b)")
_WORK = dict(_FAMILIES)["work"]
#: A profession named anywhere (``PROFESSIONS`` as one pattern).
PROFESSION = re.compile(rf"\b(?:{PROFESSIONS})\b", re.IGNORECASE)


def states_value(text: str) -> bool:
    """Whether ``text`` says what its slot holds, not only how it is: "I'm a librarian at the
    Mitchell" says where the user works, "Quiet job, suits me." sets the work slot by its word
    but tells only what the job is like."""
    slot = slot_of(text)
    if slot is None:
        return False
    if slot.family != "work":
        return True
    low = text.lower()
    return bool(_WORK.search(_BARE_WORK.sub(" ", _NOT_EMPLOYMENT.sub(" ", low))) or PROFESSION.search(low))


# what a question asks about, by family: the words of its statements and the questions' own
_ASKED: list[tuple[str, re.Pattern[str]]] = [
    (
        "residence",
        re.compile(
            r"\bwhere (?:do|does|did) \w+ live\b|\bwhere (?:am i|is \w+|are we) (?:living|based|staying)\b|"
            r"\b(?:which|what) (?:city|town|country|neighbou?rhood)\b|\bhome ?town\b|"
            # "my address" is where one lives; "how should you address me?" is a form of address
            r"\baddress\b(?! (?:me|him|her|them|us)\b)"
        ),
    ),
    ("shift", re.compile(r"\b(?:shifts?|rota|days or nights|nights or days)\b")),
    (
        "arrangement",
        re.compile(
            r"\b(?:(?:work|working) (?:from home|remotely)|from home or|remote(?:ly)?|wfh|hybrid|"
            r"(?:in|to|from|into) (?:the|an) office|commute)\b"
        ),
    ),
    (
        "work",
        re.compile(r"\b(?:profession|occupation|career|employer|for a living|still working|job|jobs)\b"),
    ),
    (
        "diet",
        re.compile(r"\b(?:can|could|should|may) (?:i|we|\w+) (?:eat|have)\b|\bdiet\b|\bdietary\b"),
    ),
    ("age", re.compile(r"\bhow old\b|\bwhat age\b|\bmy age\b")),
    ("address", re.compile(r"\b(?:address me|call me|refer to me|to be called|like being called)\b")),
]
# "When do I usually work?", "How long have I lived here?": a time or a count, not the value
_ASKS_OTHER = re.compile(r"^\W*(?:when|why|how (?:long|often|many|much|far|come))\b")
_ASKER = re.compile(r"\b(?:i|i['’]m|me|my|am i|do i|we|we['’]re|our|us)\b", re.IGNORECASE)


def asked_slot(question: str) -> str | None:
    """The slot a question asks about, as stored facts name theirs (``"the user/residence"``),
    or None: "which city am I in?" -> where the user lives, "can I eat salmon?" -> the user's
    diet, "am I still working?" -> the user's work. Only questions in the first person: whose
    attribute a question about someone else asks for is left to the other signals."""
    if not _ASKER.search(question):
        return None
    low = question.lower()
    family = next((name for name, pattern in _ASKED if pattern.search(low)), None)
    if family is None and not _ASKS_OTHER.match(low):
        family = next((name for name, pattern in _FAMILIES if pattern.search(low)), None)
    if family is None or _RELATION.match(question) or re.search(r"\bmy (?:" + KIN + r")\b", low):
        return None  # "where does my sister live?" asks for hers, not the user's
    return f"the user/{family}"


#: Slot families whose bare value says something of the speaker ("vegan", "sober", "61").
_BARE = frozenset({"diet", "smoking", "drinking", "age"})


#: Conditions and traits that, said bare, are about the speaker ("asthmatic. mild tho", "night
#: owl tbh", "colour-blind", "lactose intolerant").
_TRAIT = re.compile(
    r"\b(?:asthmatic|asthma|diabetic|epileptic|coeliac|celiac|dyslexic|autistic|adhd|"
    r"colou?r[- ]?blind|lactose[- ]intolerant|(?:allergic|intolerant) to|"
    r"night owl|early bird|(?:morning|night|evening) person|left[- ]handed|right[- ]handed|"
    # a status said bare ("No need, divorced.", "widowed, sadly")
    r"divorced|widowed|widow(?:er)?|divorcee|single (?:mum|mom|dad|parent)|separated|married|engaged|"
    r"pregnant|retired)\b",
    re.IGNORECASE,
)


def is_attribute(text: str) -> bool:
    """Whether ``text`` names the speaker's diet, smoking, drinking or age, or a condition,
    trait or status of theirs, so that it says something about them without a first person
    ("pescatarian btw", "non-smoker", "asthmatic", "night owl tbh")."""
    slot = slot_of(text)
    return (slot is not None and slot.family in _BARE) or bool(_TRAIT.search(text))


def changes(text: str) -> bool:
    """Whether ``text`` says that something changed or was corrected."""
    return bool(CHANGE_CUE.search(text))


#: Wordings that say something is over, whatever it was ("I've gone off Arctic Monkeys", "not
#: into it any more"): shared with the reconciler's change rule (``write.reconcile``).
#: What is one's own now, said as a change ("pho has become my go-to comfort meal"): shared with
#: the reconciler's change rule (``write.reconcile``).
BECAME = r"(?:has|have) become my|became my"
OVER = r"gone off|went off|done with|over (?:it|them)|got rid of|didn['’]t last|not into|no more"
#: ... and those that say it here, beyond a slot's own (_STOPPED): "cancelled my gym
#: membership", "Barcelona didn't work out", "St Mary's was his old school".
_ENDED = re.compile(
    rf"\b(?:{OVER}|sold (?:my|the|our)|cancell?ed|didn['’]t work out|ex-|"
    r"(?:was|were) (?:my|his|her|their|our) (?:old|former|previous))",
    re.IGNORECASE,
)
#: A question about the past, or about something ending ("what did I use to...", "did I quit").
_PAST = re.compile(
    r"\b(?:did|was|were|used to|use to|before|ago|last|ever|previous\w*|old|former\w*|quit|"
    r"stop\w*|cancel\w*|gave up|give up|leave|left|anymore|any more|longer|still|history)\b",
    re.IGNORECASE,
)


#: What says the current value next to an ending ("it's city breaks for me now", "the new
#: place", "I swim instead").
_CURRENT = re.compile(
    r"\b(?:now|instead|these days|nowadays|currently|new|switched to|moved (?:to|in)|started|"
    # a state one is back in: "aaand i'm freelance again lol, quit the agency"
    r"(?:i['’]?m|i am|we['’]re|we are) (?:[\w-]+ ){1,2}again)\b",
    re.IGNORECASE,
)


def tells_end(text: str) -> bool:
    """Whether ``text`` says that something stopped or is over, whatever else it says ("I quit
    yoga, reformer pilates now", "I've gone off crisps, chickpeas are my thing now"); a new date
    or detail ("it's on 21 June now") is no end."""
    return bool(_STOPPED.search(text) or _ENDED.search(text))


def says_ended(text: str) -> bool:
    """Whether ``text`` only says that something stopped or is over ("I quit my job", "I've
    gone off Arctic Monkeys", "Barcelona didn't work out"): history, not the current state. A
    statement that also gives what holds now ("I'm done with beach holidays, it's city breaks
    for me now") is not."""
    ended = bool(_STOPPED.search(text) or _ENDED.search(text))
    return ended and not _CURRENT.search(text) and not _MOVED_TO.search(text)


#: A statement that says it holds at present ("..., I'm a margherita person now").
_NOW = re.compile(r"\b(?:now|these days|nowadays|currently|at the moment)\b", re.IGNORECASE)


def says_current(text: str) -> bool:
    """Whether ``text`` says that what it tells holds now ("I'm into korean dramas now", "these
    days I cycle to work", "I quit smoking now"), and is neither only about something ending
    nor a plan ("now I'm thinking of moving")."""
    return bool(_NOW.search(text)) and not says_ended(text) and not _PLANNING.search(text)


_PLANNING = re.compile(r"\b(?:thinking (?:of|about)|might|maybe|planning|plan to|going to|will)\b", re.I)


#: A statement that gives what holds after a change: "back on oat milk", "decaf again",
#: "switched to", "these days it's ...", "..., chickpeas are my thing now", "from this week",
#: "pho has become my go-to".
_CHANGE = re.compile(
    r"\b(?:now|these days|nowadays|lately|currently|at the moment|instead|again|for good|from now on|"
    rf"from this week|back (?:on|to|in|into)|switched|swapped|changed|moved|relocated|{BECAME}|"
    # a taste one has come to: "I've become a total dog person", "I've completely come round to
    # winter"
    r"(?:i|we)(?:['’]ve| have) (?:\w+ )?(?:become|come (?:a)?round to|turned into|converted to|"
    r"gone all in on)|"
    # what a new job, home or baby changed: "Since the new job it's just a black americano"
    r"since (?:the|my|our) new \w+)\b",
    re.IGNORECASE,
)


def says_change(text: str) -> bool:
    """Whether ``text`` gives what holds after a change ("ok back on oat milk for good",
    "Decaf again", "these days it's Albariño for me"): not a statement that only says
    something ended ("I'm not at the dental practice anymore", :func:`says_ended`), which
    tells nothing of the other things said before, nor a plan ("now I'm thinking of moving")."""
    return bool(_CHANGE.search(text)) and not says_ended(text) and not _PLANNING.search(text)


#: A question after several things at once: "What are my hobbies?", "tell me about myself".
_MANY = re.compile(
    r"\b(?:hobbies|interests|pastimes|passions|likes|dislikes|preferences|favou?rites|tastes|"
    r"anything|everything|what else|(?:tell me|what do you know) about (?:me|myself))\b"
    r"|^\W*what (?:do|did) (?:i|we) (?:like|enjoy|love)(?: doing| to do)?\W*$"
    r"|^\W*what am i into\W*$",
    re.IGNORECASE,
)


def asks_many(question: str) -> bool:
    """Whether a question asks for several things at once ("What are my hobbies?", "what am I
    into?", "tell me about myself"), not one that a later statement may have changed ("what
    music am I into?")."""
    return bool(_MANY.search(question))


#: How the assistant should treat the asker now ("Which language should you reply in?"): a
#: question about the asker's standing wishes, though it names them in no word.
_TO_ASSISTANT = re.compile(r"\bshould you\b", re.IGNORECASE)


#: A question in the present tense after what, which, where or who: "where does ngozi live?",
#: "What breed is Waffles?", "What does Lena do for work?".
_STATE_QUESTION = re.compile(r"^\W*(?:what|which|where|who)\b[^?]*?\b(?:does|do|is|are|has|have)\b", re.I)


def asks_state(question: str) -> bool:
    """Whether a question asks how things stand now, for the asker (:func:`asks_now`) or for
    anyone ("where does ngozi live?", "What breed is Waffles?"), so that what was said later
    on the same thing answers it before what it replaced. A question about the past ("What
    did Caroline research?") or an ending ("is she still at Moi?") does not."""
    return asks_now(question) or bool(_STATE_QUESTION.match(question) and not _PAST.search(question))


def asks_now(question: str) -> bool:
    """Whether a question asks the asker about their present ("which band do I like?"), not
    about the past or an ending ("what did I use to eat?", "did I quit?", "am I still at
    Deloitte?"), where a statement of an ending may be the answer, nor about someone else."""
    return bool(_ASKER.search(question) or _TO_ASSISTANT.search(question)) and not _PAST.search(question)
