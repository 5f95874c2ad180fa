"""How a message frames what it says: understatement and figures of speech, for triage layer 1.

Two kinds of framing change nothing about the danger of what a message describes, yet look like
the context that rightly drops a sign (negation, reassurance, a general question):

- **minimisers**: "it's probably nothing but…", "sorry if this is silly", "not a big deal",
  "it's probably fine though, right?", "별거 아닌 것 같은데", "괜히 호들갑인가 싶은데",
  "괜찮겠죠?". People play an emergency down, ask permission to wait, or hide it in a routine
  question (NHS 111 call-handler guidance and the wait-and-see presentations of NICE CG95 and
  NG128 describe the delay this causes). A minimiser must never lower the severity of what
  follows, so :func:`mask` blanks it out before the context rules read the message;
- **figures of speech** that borrow the words of self-harm ("this exam is killing me",
  "I'm dying to know", "배고파 죽겠어", "웃다가 죽는 줄 알았어요"): blanked out for the
  self-harm signs only, so "killing me" in "my chest is killing me" still counts as pain.

Blanking keeps every offset (each character becomes a space), so the sign matches and their
context windows stay aligned with the original text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MINIMISER = re.compile(
    # English: the frame only ("probably (just)", "nothing serious"), never the finding after it
    r"\b(?:it'?s|this\s+is|that'?s|its)?\s*(?:probably|prob|most\s+likely|likely|maybe)\s+(?:nothing|fine|ok|okay|overreacting|overthinking|being\s+(?:silly|dramatic|paranoid))\b"
    r"|\b(?:it'?s|its|this\s+is|that'?s)\s+(?:probably|most\s+likely|likely|maybe)\s+(?:just\s+)?"
    r"|\b(?:probably|maybe)\s+just\b|\b(?:i'?m|i\s+am)\s+(?:probably\s+)?(?:overreacting|overthinking|being\s+(?:silly|dramatic|paranoid))\b"
    r"|\b(?:might|could)\s+be\s+nothing\b|\bi'?m\s+sure\s+it'?s\s+nothing\b|\bnothing\s+serious\b|\bhopefully\s+nothing\b"
    r"|\b(?:sorry|apologies)\s+(?:if\s+this\s+is\s+(?:silly|stupid|a\s+silly\s+question)|to\s+bother\s+(?:you)?|for\s+bothering\s+you)\b"
    r"|\b(?:don'?t|do\s+not)\s+want\s+to\s+(?:waste\s+anyone'?s\s+time|waste\s+your\s+time|overreact|make\s+a\s+fuss|bother\s+anyone|be\s+dramatic)\b"
    r"|\b(?:not|no)\s+a?\s*big\s+deal\b|\bno\s+rush\b|\bnot\s+urgent\b|\b(?:silly|quick|stupid|random)\s+question\b|\bjust\s+(?:wondering|curious|a\s+query|asking)\b"
    # English: hoping to be told it can wait
    r"|\b(?:it'?s|he'?s|she'?s|they'?re)\s+(?:probably\s+)?(?:fine|ok|okay)\s*(?:though)?\s*,?\s*right\s*\?"
    r"|\b(?:he|she|they|it)\s+seems?\s+(?:fine|ok|okay|alright)\b|\b(?:he|she)\s+says?\s+(?:he'?s|she'?s|it'?s)\s+(?:fine|ok|okay|nothing)\b|괜찮다고(?:는)?\s*하(?:는데|시는데)|\bcan\s+i\s+(?:just\s+)?(?:sleep\s+it\s+off|wait\s+(?:till|until|for)\s+(?:the\s+)?morning)\b"
    # Korean: the frame only
    r"|별거\s*아닌?\s*(?:것\s*같은데|거\s*같은데|데|질문인데)(?:요)?|별거\s*아니(?:겠지만|겠죠|길)|별일\s*아닐\s*(?:수도\s*있는데|것\s*같은데|텐데)|별일\s*아니(?:겠죠|겠지만|길)"
    r"|괜히\s*(?:호들갑|유난|걱정|신고하기)\S*|호들갑(?:인가|일\s*수도|떠는)\S*|유난\s*(?:떠는|스러운)\s*(?:것|거)\s*같(?:지만|은데|아서)?"
    r"|제가\s*(?:너무\s*)?(?:예민한|과민한|생각이\s*많은|걱정이\s*많은)\s*(?:건지|거지)(?:\s*모르겠(?:는데|지만))?|과민\s*반응(?:하는\s*(?:건지|거지))?(?:\s*몰라도)?"
    r"|급한\s*(?:건|게)\s*아닌데|그냥\s*여쭤보는\s*(?:건데|거예요)|간단한\s*질문인데|궁금한\s*게\s*있는데"
    # Korean: hoping to be told it can wait
    r"|(?:자고\s*나면\s*)?괜찮(?:은\s*거)?겠죠\s*\??|괜찮은\s*거죠\s*\??|멀쩡해\s*보이(?:긴|기는)\s*해요",
    re.I)

_FIGURE = re.compile(
    r"\b(?:is|are|'s|'re|was|were)\s+(?:absolutely\s+|literally\s+|actually\s+)?killing\s+me\b|\bdying\s+(?:to|for)\b|\bdying\s+of\s+(?:hunger|boredom|laughter|embarrassment|curiosity|thirst|heat)\b"
    r"|\b(?:could|would|'d)\s+(?:murder|kill\s+for|die\s+for)\b|\b(?:rather|sooner)\s+die\s+than\b|\bto\s+die\s+for\b|\b(?:nearly|almost)\s+died\s+(?:laughing|of\s+(?:embarrassment|laughter|shame|boredom))\b"
    r"|\b(?:dead\s+tired|bored\s+to\s+death|scared\s+(?:me\s+)?to\s+death|starving\s+to\s+death|the\s+death\s+of\s+me|die\s+of\s+(?:embarrassment|shame))\b"
    r"|\b(?:will|'ll|gonna|going\s+to)\s+kill\s+me\s+if\b|\bkill\s+me\s+now\s+lol\b"
    r"|죽겠(?:어|네|다|음|어요|네요|습니다|더라)|죽을\s*맛|죽는\s*줄\s*알았|죽을\s*(?:것|거)\s*같(?:아요|았어요)?\s*ㅋ|(?:웃다가|웃겨서|웃겨)\s*죽"
    r"|차라리\s*죽는\s*게\s*낫|죽어도\s*(?:싫|안\s*(?:해|가|먹))|(?:날|나를)\s*죽이려\s*(?:들|할)",
    re.I)


_SOFTENER = re.compile(
    r"\b(?:probably|most\s+likely|i\s+think\s+it'?s\s+just|i'?m\s+sure\s+it'?s)\b|(?:이|때문이)겠지만|(?:인|한)\s*것\s*같(?:긴\s*한데|기도\s*하고|은데요?)"
    r"|그런\s*것\s*같긴\s*한데|(?:것|거)\s*같긴\s*한데", re.I)
"""Softeners that only count as understatement (not blanked: a finding may sit inside them, as in
"뇌졸중인 것 같은데요")."""


@dataclass(frozen=True)
class Framing:
    """A message with its framing blanked out.

    Attributes:
        text: the message with every minimiser replaced by spaces (same length).
        figurative_text: ``text`` with figures of speech also blanked (for the self-harm signs).
        minimised: a minimiser was found; figurative: a figure of speech was found.
    """

    text: str
    figurative_text: str
    minimised: bool
    figurative: bool


def _blank(text: str, rx: re.Pattern[str]) -> tuple[str, bool]:
    found = False
    chars = list(text)
    for m in rx.finditer(text):
        if m.end() > m.start():
            found = True
            chars[m.start():m.end()] = " " * (m.end() - m.start())
    return "".join(chars), found


def mask(text: str) -> Framing:
    """Blank the minimisers (and, separately, the figures of speech) of ``text``.

    Args:
        text: the message (any length; offsets are kept).
    Returns:
        :class:`Framing`.
    """
    plain, minimised = _blank(text, _MINIMISER)
    figurative_text, figurative = _blank(plain, _FIGURE)
    return Framing(plain, figurative_text, minimised or bool(_SOFTENER.search(text)), figurative)
