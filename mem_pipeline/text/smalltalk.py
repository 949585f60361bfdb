"""Small talk: the sentences that say nothing durable about the person who says them
(greetings, thanks, acknowledgements, questions and requests to the assistant, passing
moods), told apart from statements, short ones included ("I'm vegan.", "I'm 34.")."""

from __future__ import annotations

import re

from .lexical import content_words, split_sentences, tokens
from .slots import is_attribute, slot_of
from .voice import strip_filler

__all__ = ["FIRST_PERSON", "is_reaction", "is_small_talk", "is_statement", "told_before_asking"]

# Words of greetings, thanks, acknowledgements and goodbyes: a sentence made of them only says
# nothing about the person ("thanks a lot!", "ok cool", "have a nice evening :)").
_SMALL_TALK = frozenset(
    """
    hi hello hey heya hiya yo heyyy hey there morning evening afternoon night good great nice cool
    awesome perfect fine ok okay k kk sure yes yeah yep yup no nope nah thanks thank thx ty cheers
    much lot so very you too welcome bye goodbye see later soon talk tomorrow tonight take care
    have a an the day evening weekend lol haha hahaha lmao wow whoa oh ah ahh hmm hm ugh meh
    sounds got it noted alright right fair enough makes sense all good no worries np indeed
    wild that's that is enough for now again please appreciate it helpful super bad not chilling
    just nm nothing much up what's whats how are doing you're i'm well been news big anyway now
    """.split()
)
# one-off states of the moment: not durable ("I slept badly", "just bored")
_TRANSIENT = re.compile(
    r"\b(?:slept (?:badly|poorly|well|in)|didn['’]?t sleep|tired|sleepy|bored|hungry|thirsty|exhausted|"
    r"knackered|hungover|just woke up|running late|on my way|chilling|in a (?:good|bad) mood|"
    r"procrastinat\w*|killing time|just browsing|(?:just )?(?:asking|checking) for a friend|just curious|"
    r"just wondering|just checking|enough \w+ for (?:today|tonight|now|the day|\d+ \w+ \d{4})|"
    r"(?:it['’]?s|it is|is) (?:so |very |really |super )?(?:raining|sunny|cold|hot|snowing|freezing|boiling|"
    r"humid)|(?:mondays|fridays)\b|one of those days|what a (?:day|week|morning|night)\b|"
    r"glad (?:the|this) (?:week|day)(?:['’]s| is) over|where did the (?:year|time|week|day|summer) go|"
    r"false alarm|nvm|never ?mind|"
    # what one is off to do, and hoping it goes well: "ok back to work, bye", "off to bed",
    # "fingers crossed", "wish me luck"
    r"(?:back|off) to (?:work|it|bed|sleep|the grind|my desk|studying|revising)\b|"
    r"fingers crossed|wish me luck|"
    # what one does this minute: "I make a tea now", "i'm grabbing a coffee", "blotting now"
    r"i['’]?m (?:just |about to )?(?:making|having|grabbing|getting|taking) (?:a|an|some|my) "
    r"(?:\w+ )?(?:tea|coffee|cuppa|snack|drink|shower|bath|nap|break|lunch|dinner|breakfast|walk|bed)\b|"
    r"\bi (?:make|have|grab|get|take) (?:a|an|some|my) (?:\w+ )?(?:tea|coffee|cuppa|snack|drink|"
    r"shower|bath|nap|break|lunch|dinner|breakfast|walk|bed) (?:right )?now\b|"
    r"^\s*\w+ing (?:it )?now\s*(?:[,.!]|$)|"
    r"(?:so |very |really |super )?(?:excited|thrilled|stoked|nervous)\b|ttyl|brb|gtg|g2g|gotta go|"
    # last night's sleep: "running on four hours of sleep", "rough night, ..."
    r"running on (?:about |maybe |like )?\S+ (?:hours?|hrs?|h)(?: of)? sleep|"
    r"^\W*(?:a )?(?:rough|long|late|bad|short|sleepless) night\b|"
    # leaving the chat, and wishing the assistant well: "That's me done for now", "I hope you are fine"
    r"that['’]?s me (?:done|off|out)\b|"
    # a head not yet awake, a night with no sleep: "Brain not working yet", "Cant sleep lol"
    r"\bbrain (?:is |isn['’]?t |not )*(?:working|fried|mush|dead|asleep|off)\b|"
    r"^\W*(?:i )?(?:can['’]?t|couldn['’]?t) sleep\b(?! (?:without|unless|if|when|with|in|on|after|before)\b)|"
    r"^\W*i hope (?:you(?:['’]re| are)) (?:fine|well|good|ok(?:ay)?|doing well)\b)",
    re.IGNORECASE,
)
# how one feels today, said first, with what caused it or goes with it: "Rough night, the party
# next door went on till 3.", "Running on four hours of sleep and my third espresso.", "Feeling
# kinda meh tbh, rainy sunday vibes"
_FEELING_NOW = re.compile(
    r"^\W*(?:(?:ugh|meh|oof|man|honestly|tbh|lol|so|and|just)[\s,!.]+)*(?:"
    r"(?:a )?(?:rough|long|late|bad|short|sleepless|terrible|awful) night\b|"
    r"running on (?:about |maybe |like |only |just )?\S+ (?:hours?|hrs?|h)(?: of)? sleep|"
    r"(?:i['’]?m |i am )?feeling (?:kinda |kind of |a bit |a little |so |pretty |really |super |very )?"
    r"(?:meh|blah|off|rough|rubbish|crap|groggy|foggy|sluggish|drained|wiped)\b)",
    re.IGNORECASE,
)
# tonight's plan to rest: "an early night would help", "maybe I take hot shower and sleep early"
# (not a habit: "I always sleep early")
_REST_TONIGHT = re.compile(
    r"\b(?:early night|(?:sleep|go to bed|head to bed|turn in|get to bed) early)\b", re.IGNORECASE
)
_HABIT = re.compile(r"\b(?:always|usually|normally|generally|every|each|tend to|most nights|never)\b", re.I)
# what one is in the middle of this very minute: a wait counted in minutes ("been standing here
# 40 min", "been on hold for 25 minutes"), or what one needs within minutes ("need something in 20
# min"); not a habit of so many minutes ("I've been running for 30 minutes every morning")
_MOMENT = re.compile(
    r"\bbeen (?:\w+ing )?(?:here|there|in (?:line|the queue|traffic)|on hold|waiting|stuck|queu\w*|"
    r"standing|sitting)\b[^.!?]*?\b\d+\s*(?:min|mins|minutes)\b|"
    r"\b(?:need|want)\b[^.!?]*?\b(?:in|within|under)\s+(?:like |about |the next )?"
    r"\d+\s*(?:min|mins|minutes)\b",
    re.IGNORECASE,
)
# a request to the assistant: not a statement about the user
_REQUEST = re.compile(
    r"^\s*(?:(?:please|pls|ok|so|anyway|now)[\s,]+)*(?:can|could|would|will) (?:you|u)\b|"
    r"^\s*(?:(?:please|pls|plz|kindly) )?"
    r"(?:tell me|give me|show me|help me|explain|recommend|suggest|find me|remind me|write|translate|"
    r"summari[sz]e|list|define|draft|rewrite|rephrase|reword|shorten|proofread)\b|"
    # how long or short the answer should be: "Please keep it under 80 words."
    r"^\s*(?:(?:please|pls|plz|kindly|and|but|oh|also)[\s,]+)*(?:keep|make) (?:it|them|this|that) "
    r"(?:under|below|within|short|shorter|brief|briefer|concise|to (?:about )?\d)\b|"
    # what to say now: "Cant sleep lol, say something calming"
    r"\b(?:say|tell me) something\b|"
    r"^\s*let['’]?s (?:play|do|try|start|talk|chat|brainstorm|practi[sc]e|write|make|pretend|say)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\s*(hi|hello|hey|hiya|yo|thanks|thank you|thx|cheers|good (morning|afternoon|evening|night)"
    r"|bye|goodbye|see you|ok|okay|sure|cool|great|nice|lol|haha|yes|no|yep|nope|alright"
    r"|sounds good|got it|no worries|you too)\b[\s!.,:)(-]*"
    r"(there|again|so much|a lot|everyone|all|buddy|mate)?[\s!.,:)(-]*$",
    re.IGNORECASE,
)
# a leave-taking, a season's greeting, laughter, a reaction to the assistant's idea or answer,
# or a remark about the conversation itself ("Gotta go, fireworks starting", "Happy new year!!",
# "Lmaooo ok that helped", "I love that idea!", "Quite unrelated.", "A few things for your
# records."): said to the assistant, about nothing of the user's
_EXCHANGE = re.compile(
    r"^\s*(?:(?:oh|ah|ok|okay|right|well|nah+|yeah|ya|yea|yes|yep|no|nope|aw+|haha+|lol)[\s,!.]+)*(?:"
    r"got(?:ta| to) go|gtg|g2g|ttyl|talk (?:to you )?(?:later|soon|tomorrow)|catch you later|speak soon|"
    r"happy (?:new year|birthday|holidays|christmas|easter|diwali|eid|hanukkah|thanksgiving|friday|monday)|"
    r"merry (?:christmas|xmas)|season['’]?s greetings|"
    r"l+o+l+|l+m+f?a+o+|(?:ha){2,}h?|(?:he){2,}|rofl|"
    r"(?:i )?agreed(?=\s*(?:[:;,.!]|$))|(?:i )?(?:love|like) (?:that|this|the) idea|"
    r"(?:great|good|nice|brilliant) (?:idea|point|question|shout|call)|"
    r"that helped|that helps|"
    r"(?:i )?(?:totally |completely |absolutely |fully |so |could(?:n['’]?t| not) )?agree(?: more)?"
    r"(?: with (?:you|that|this|everything))?|"
    r"(?:quite |totally |completely |slightly |somewhat )?(?:unrelated|off[- ]topic|random question)|"
    r"(?:a few|some|two|three) (?:things|notes) for (?:your|the) records?|"
    r"so+ much has happened|scratch that|my (?:mistake|bad))\b",
    re.IGNORECASE,
)
# a "no" to the assistant's question, with nothing of its own: "nah, not this year haha", "Not
# yet.", "nope, not really"
_DECLINE = re.compile(
    r"^\s*(?:nah+|nope|no+|not)\b"
    r"(?:[\s,.!]+(?:not|yet|really|this|that|one|year|time|week|month|at|all|the|moment|right|now|"
    r"sadly|unfortunately|tbh|haha+|lol|hah|:\)|:\())*[\s,.!]*$"
    # "Nah, I'll pass.", "think I'll pass on that one, thanks"
    r"|^\s*(?:(?:nah+|nope|no|no thanks|thanks|hmm+|honestly)[\s,.!]+)*(?:i )?(?:think )?i['’]?ll pass"
    r"(?: on (?:it|that|this|that one|this one))?"
    r"(?:[\s,.!]+(?:thanks|thank you|for now|this time))*[\s,.!]*$"
    # "Hmm, maybe another time.", "not now, thanks"
    r"|^\s*(?:(?:hmm+|nah+|no|ok|okay|thanks)[\s,.!]+)*(?:maybe |perhaps )?(?:another time|some other time|"
    r"later|not (?:now|today|yet))(?:[\s,.!]+(?:thanks|thank you|though))*[\s,.!]*$",
    re.IGNORECASE,
)
# what one has none of, said bare: "No kids.", "No allergies either." (not "No problem", "No idea")
_NONE_OF = re.compile(
    r"^\s*no (?!(?:problem|idea|way|rush|clue|thanks|worries|need|pressure|biggie|probs?|comment|chance|"
    r"doubt|kidding|joke|offen[cs]e|sweat|luck|time|one|body|thing|reason|matter|longer|more|less|"
    r"sorry|wonder)\b)[a-z-]{3,}(?: (?:either|yet|at all))?[\s.!]*$",
    re.IGNORECASE,
)
# what one cannot or does not do, its "I" dropped: "Can't swim.", "dont drive tbh" (not a phrase
# of the exchange: "Don't worry", "Can't wait!", "Can't complain")
_CANNOT = re.compile(
    r"^\s*(?:can['’]?t|cannot|don['’]?t|never)\s+(?!(?:worry|know|care|mind|complain|wait|remember|"
    r"think|bother|forget|ask|panic|rush|stress|tell|say|believe|blame|judge|thank|laugh|be)\b)[a-z]{3,}",
    re.IGNORECASE,
)
# a remark on how others fare, said of no one the memory keeps: "Ha, lucky them.", "Good for you!"
_FARE = re.compile(
    r"^\s*(?:(?:ha+|haha+|oh|ah|aw+|wow|well)[\s,!.]+)?(?:lucky|good for|poor|bless|rather) "
    r"(?:them|you|him|her)(?: (?:haha+|lol|then))?[\s.!,]*$",
    re.IGNORECASE,
)
# a reaction to the assistant's explanation: an interjection, then "ok", "now", "so", "I see"
_UNDERSTOOD = re.compile(r"^\s*(?:ah+|oh+|aha|ohh)\b[\s,!.]*(?:ok(?:ay)?|now|so|i see|right|got it)\b", re.I)
# a remark that something stayed as it was, with no verb and nothing of its own: "Same job
# though.", "Same old, same old.", "Same here!", "same winery thank god"
_SAME = re.compile(
    r"^\s*(?:(?:oh|but|and|still)[\s,]+)*(?:the )?same(?: (?:old|here|as (?:ever|before|always)|"
    r"(?!(?:as|is|was)\b)[a-z]+))?"
    r"(?:[\s,]+(?:though|tho|still|really|,? same old|as before|thank god|thankfully|luckily|phew))*"
    r"[\s.!,]*$",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^\s*(who|what|when|where|why|how|which|whose|do|does|did|can|could|would|will|should|is|"
    r"are|am|was|were|have|has|shall|may|might)\b(?!['’]t)",  # "can't drive" opens no question
    re.IGNORECASE,
)
# a statement without its subject that opens like a question: "do the books for my mum's
# florist", "did the school run", "have a dog and two cats" (not "do my parents know")
_DONE = re.compile(r"^\s*(?:do|does|did|have|has|had)\s+(?:the|a|an|some|two|three)\b", re.I)
# the stems of texting's contractions and particles ("thats", "dunno", "tbh")
_SPOKEN = frozenset({"that", "dont", "dunno", "tbh", "idk", "imo", "ngl", "rn", "lol", "nah"})
#: The speaker's first person ("I", "I'm", "my", "we", "our"...).
FIRST_PERSON = re.compile(r"\b(?:i|i['’]m|i['’]ve|i['’]d|i['’]ll|me|my|mine|we|our|us)\b", re.IGNORECASE)
_THANKS = re.compile(
    r"^\s*(?:(?:oh|ah|ok|okay|great|perfect|right)[\s,!]+)*"
    r"(?:(?:i )?(?:just |really )?(?:wanted|want|wanna) to (?:say )?|i (?:just )?have to say )?"
    r"(?:thanks|thank you|thx|ty|cheers|much appreciated)\b",
    re.IGNORECASE,
)


# an acknowledgement closed by thanks: "Ooh delighted works, ty!", "Joyful works, ta", "that'll do, cheers"
_THANKED = re.compile(r"[\s,.!-]+(?:ty|ta|thx|tnx|thanks|thank you|cheers|tysm)[\s!.:)]*$", re.I)


def is_small_talk(text: str) -> bool:
    """Whether a user turn says nothing about the user: every sentence of it is a greeting,
    thanks or acknowledgement, a question or request to the assistant, or a passing mood."""
    sentences = [s for s in split_sentences(text) if s.strip()]
    return all(not is_statement(strip_filler(s)) for s in sentences)


def is_reaction(sentence: str) -> bool:
    """Whether a sentence only reacts to the other speaker: a greeting, thanks, acknowledgement,
    laughter or a remark on what they said ("Oh wow!", "Good question.", "Haha, thanks!")."""
    s = sentence.strip()
    words = tokens(s)
    return (
        not words
        or all(w in _SMALL_TALK for w in words)
        or bool(_GREETING.match(s) or _THANKS.match(s) or _EXCHANGE.match(s) or _UNDERSTOOD.match(s))
    )


# "I'm allergic to penicillin, is amoxicillin ok?": what the person states, then asks about it
_TOLD_THEN_ASKED = re.compile(
    r"^(?P<told>.+?)\s*(?:,|;|\s[-–—])\s*(?:so|and|but)?\s*(?P<asked>(?:should|shall|is|are|can|could|do|does|did|"
    r"would|will|what|how|which|where|when|who|any|anything)\b[^,;]*)\?+[\s\W]*$",
    re.IGNORECASE,
)
# what only leads into the question ("I was wondering, ...", "quick question, ...", "I'm curious")
_ASKING = re.compile(
    r"\b(?:wonder(?:ing|ed)?|curious|question|asking|ask|thinking|not sure|unsure|confused|"
    r"no idea|idk|random(?:ly)?|help)\b",
    re.IGNORECASE,
)
_FINITE = re.compile(
    r"\b(?:i|we)\s*(?:['’](?:m|ve|d|ll|re)\b|\s+\w+)|\b(?:my|our)\s+\w+(?:\s+\w+)?\s+(?:is|are|was|has|have|\w+s)\b",
    re.IGNORECASE,
)


def told_before_asking(sentence: str) -> str | None:
    """What a question's sentence states before it asks ("I take levothyroxine every morning for
    my thyroid, should I take it before coffee?" -> "I take levothyroxine every morning for my
    thyroid."): a first-person clause with a verb, ahead of a comma and the question. None when
    the sentence asks nothing or states nothing first ("I was wondering, should I ...?")."""
    m = _TOLD_THEN_ASKED.match(sentence.strip())
    if m is None:
        return None
    told = m["told"].strip()
    if len(tokens(told)) < 3 or not _FINITE.search(told) or _ASKING.search(told):
        return None
    return told.rstrip(" ,.;") + "."


def is_statement(sentence: str) -> bool:
    """Whether a sentence states something durable: not a greeting, thanks or acknowledgement
    (made only of such words), a question, a request to the assistant, or a passing mood;
    short first-person statements count ("I'm 34.", "I'm vegan.")."""
    s = sentence.strip()
    words = tokens(s)
    if not s or not words or _GREETING.match(s) or all(w in _SMALL_TALK for w in words):
        return False
    if _THANKS.match(s):  # gratitude, whatever follows ("Thank you so much, that was helpful!")
        return False
    if _THANKED.search(s) and len(words) <= 5 and not FIRST_PERSON.search(s):
        return False  # "Joyful works, ta": the assistant's suggestion taken, with thanks
    if _EXCHANGE.match(s) and not FIRST_PERSON.search(_EXCHANGE.sub("", s)):
        return False
    if _UNDERSTOOD.match(s) and len(words) <= 6 and not FIRST_PERSON.search(s):
        return False  # "Ah, now is clear.", "Ah okay, so is good luck."
    if s.endswith("?") or (_QUESTION_START.match(s) and not s.endswith((".", "!")) and not _DONE.match(s)):
        return False
    if _REQUEST.search(s):
        return False
    if _SAME.match(s):  # "Same job though.": what did not change, said of what was said before
        return False
    if _DECLINE.match(s):  # "nah, not this year haha": a "no" that says nothing more
        return False
    if _FARE.match(s):  # "Ha, lucky them."
        return False
    if _TRANSIENT.search(s) and len(words) <= 8:
        return False
    if _FEELING_NOW.match(s) and len(words) <= 12 and slot_of(s) is None:
        return False
    if _REST_TONIGHT.search(s) and len(words) <= 10 and not _HABIT.search(s):
        return False
    if _MOMENT.search(s) and len(words) <= 12 and not (FIRST_PERSON.search(s) and slot_of(s)):
        return False  # (but "I work at the post office, been on the counter 40 min today")
    if slot_of(s) is None and not [w for w in content_words(s) if w not in _SMALL_TALK and w not in _SPOKEN]:
        return False  # "nah thats my only one lol": texting's "thats", "lol" say nothing
    if FIRST_PERSON.search(s):
        return len(words) >= 2
    # a bare attribute said in passing ("pescatarian btw", "vegan", "non-smoker") is a statement,
    # and so is what one has none of ("No kids.", "No allergies.")
    return len(words) >= 3 or is_attribute(s) or bool(_NONE_OF.match(s) or _CANNOT.match(s))
