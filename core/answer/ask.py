"""What a patient's question asks: its **ask** (the kind of answer wanted) and its **subject**.

The eight asks follow the answer types of consumer drug and health questions in the NLM
consumer health question taxonomy (Kilicoglu et al. 2018, "Semantic annotation of consumer health
questions", BMC Bioinformatics 19:34) and the question types of MedQuAD (Ben Abacha &
Demner-Fushman 2019), merged into what changes the shape of a reply:

``dose``               how much / how often (dosage)
``safety_with``        is X safe with a drug or a state (interactions, contraindications, pregnancy)
``value_meaning``      what a measured value means, or what the normal value is (test results)
``cause``              why it happens (causes, susceptibility)
``what_to_do``         what to do, how to manage, treat, prevent, eat (treatment, prevention, lifestyle)
``when_to_seek_care``  whether or when to see a clinician
``how_to_use``         how to take or use something (usage)
``comparison``         X versus Y, which is better, the difference

and ``information`` for a question that asks none of these (what is X, its symptoms...). Cue
patterns in Korean and English are tried in :data:`ORDER`; when none matches, the question-type
classifier's label (:mod:`core.qtype.model`) maps to an ask (:data:`QTYPE_ASK`). The cues are
short and general on purpose: they name the kind of answer, never a topic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ASKS = ("dose", "safety_with", "value_meaning", "cause", "what_to_do", "when_to_seek_care",
        "how_to_use", "comparison", "information")

_CUES: dict[str, str] = {
    "comparison": (
        r"\bdifferen(?:ce|t)\s+between\b|\bvs\.?\b|\bversus\b|\bcompared?\s+(?:to|with)\b|\bwhich\s+(?:is|one\s+is)\s+"
        r"(?:better|safer|stronger|worse)\b|\bbetter\s+than\b|\bsafer\s+than\b|\b(?:better|safer),?\s+\w+\s+or\s+\w+"
        r"|\bor\b[^?]{0,40}\b(?:better|safer)\b|\bsame\s+(?:as|thing)\b|\bhow\s+(?:is|are|does)\s+\S+\s+differ\b"
        r"|차이|비교|(?:뭐|어느\s*(?:것|거|게|쪽))(?:가|이)?\s*(?:더\s*)?(?:나아|낫|좋|안전)|더\s*(?:나은|낫|좋은|안전한)\s*(?:건|거|것|쪽)"
        r"|랑\s*.{0,12}(?:같은|다른)\s*(?:건가|거|것)|(?:이랑|랑|과|와)\s*\S+\s*중(?:에)?"),
    "dose": (
        r"\bhow\s+(?:much|many)\b(?!\s+(?:does|do|will|would)\s+\w+\s+cost)|\bdos(?:e|es|age|ing)\b|\bmaximum\b|\bmax\b"
        r"|\bhow\s+often\s+(?:can|should|do)\s+(?:i|you|we)\s+(?:take|give|use)\b|\bmg\s+(?:can|should)\b"
        r"|\bmg/kg\b|\btimes\s+a\s+day\b|\bper\s+day\b.*\?|용량|몇\s*(?:mg|밀리|알|정|개|번|회|ml|cc|스푼|봉)"
        r"|얼마나\s*(?:먹|드|복용|줘|주|먹여|먹이)|얼마만큼|최대\s*(?:몇|용량|하루)|하루\s*(?:몇|최대)|몇\s*시간\s*(?:마다|간격)"),
    "how_to_use": (
        r"\bhow\s+(?:do|should|can)\s+(?:i|you|we)\s+(?:use|take|apply|inject|store|give)\b|\bhow\s+to\s+"
        r"(?:use|take|apply|inject|store|give)\b|\bwhen\s+(?:should|do)\s+(?:i|you)\s+take\b|\bwith\s+(?:or\s+without\s+)?food\b"
        r"|\bbefore\s+or\s+after\s+(?:meals?|food|eating)\b|\b(?:in\s+the\s+)?(?:morning|evening|at\s+night|bedtime)\s+or\b|\bempty\s+stomach\b|\btime\s+of\s+day\b|\bmissed?\s+(?:a|my|one|two)?\s*"
        r"(?:dose|pill|tablet|injection)\b|\bforgot\s+(?:to\s+take|my)\b|\bcrush\b|\bsplit\b|\bstart\s+taking\b"
        r"|어떻게\s*(?:먹|복용|사용|써|쓰|뿌리|바르|넣|맞|주사|보관)|사용법|복용법|먹는\s*법|쓰는\s*법|먹는\s*방법"
        r"|식전|식후|공복에\s*(?:먹|복용)|언제\s*(?:먹|복용|맞|바르)|(?:아침|저녁|밤|자기\s*전)에\s*(?:먹|복용|드)|깜빡|까먹|빼먹|잊어버|놓쳤|(?:쪼개|갈아|잘라)\s*(?:먹|서)"),
    "when_to_seek_care": (
        r"\bshould\s+i\s+(?:see|go\s+to|call|visit|get)\s+(?:a|the|my)?\s*(?:doctor|gp|er|a&e|hospital|clinic|nurse|"
        r"urgent|emergency|dentist|pediatrician|paediatrician)|\bdo\s+i\s+need\s+(?:to\s+)?(?:see|go|a\s+doctor|an?\s+appointment)"
        r"|\bwhen\s+(?:should|do)\s+(?:i|we)\s+(?:worry|be\s+worried|see|go|call|seek)|\bis\s+(?:it|this|that)\s+"
        r"(?:serious|an?\s+emergency|worth\s+seeing)|\bneed\s+to\s+(?:see|go\s+to)\b|\bshould\s+(?:we|i)\s+be\s+worried\b"
        r"|\bgo\s+to\s+(?:the\s+)?(?:er|a&e|hospital)\b|\bsee\s+a\s+doctor\b"
        r"|병원(?:에)?\s*(?:가야|가\s*봐야|가봐야|가\s*볼까|가볼까|가도|갈까|언제)|응급실(?:에)?\s*(?:가야|가\s*봐야|가봐야|갈까)"
        r"|진료(?:를)?\s*(?:받아야|봐야)|언제\s*(?:병원|진료|의사)|의사(?:한테|에게|를)?\s*(?:가야|봐야|보여야|만나야)"
        r"|걱정해야|심각한\s*(?:건가|거|가요|걸까)|괜찮을까요\s*병원"),
    "safety_with": (
        r"\bcan\s+(?:i|you|we|he|she|they)\s+(?:take|give|use|drink|have|mix|combine|eat)\b|\bsafe\b|\bsafely\b|\bok(?:ay)?\s+to\b"
        r"|\ballowed\s+to\b|\btogether\b|\binteract|\bwhile\s+(?:pregnant|breastfeeding|on|taking)\b|\bduring\s+pregnancy\b"
        r"|\bwith\s+my\b|\bis\s+it\s+(?:bad|dangerous|harmful|a\s+problem)\s+to\b|\bavoid\s+\w+\s+(?:if|with|when)\b"
        r"|먹어도\s*(?:되|돼|괜찮|될|상관)|(?:써도|발라도|맞아도|마셔도|해도|줘도|먹여도|복용해도|드셔도)\s*(?:되|돼|괜찮|될)|같이\s*(?:먹|복용|드|마)"
        r"|함께\s*(?:먹|복용|드)|안전(?:한|할|해)|상호\s*작용|괜찮(?:을까요|나요|은가요|아요\?)|위험(?:한가|할까|하지|하나)"),
    "value_meaning": (
        r"\bnormal\s+(?:range|level|value|reading|for|heart|blood|temperature|pulse|rate|bp|sugar)|\bis\s+(?:that|this|it|mine|my\s+\w+)\s+"
        r"(?:normal|high|low|bad|good|ok(?:ay)?|too\s+(?:high|low)|dangerous|concerning)\b|\bwhat\s+(?:does|do)\s+(?:my|a|an|the|this)\s+.{0,40}"
        r"\bmean\b|\bwhat\s+should\s+(?:my|a|the)\s+.{0,30}\bbe\b|\bhigh\s+or\s+low\b|\bis\s+(?:a\s+)?\d[\d/.,]*\s*(?:\S+\s+){0,2}(?:normal|high|low|bad|good|ok(?:ay)?|dangerous)\b|\btoo\s+(?:high|low)\b|\bin\s+range\b"
        r"|정상(?:인가|이에요|인지|범위|수치|치|이야|일까|이죠|인데)|높은\s*(?:건가|거|편|가요|건지)|낮은\s*(?:건가|거|편|가요|건지)"
        r"|(?:높|낮)아요\?|\d[\d/.]*\s*(?:mg/dl|%|mmhg|도|이)?\s*(?:이면|면|인데|나왔는데|나오면)\s*.{0,12}(?:인가요|건가요|일까요|정상|높|낮|위험|나쁜|괜찮)|무슨\s*(?:뜻|의미)|의미(?:가|하는)|수치(?:가|는)?\s*(?:어떤|괜찮|나쁜)|괜찮은\s*(?:수치|건가|거)|어느\s*정도(?:가|면)"),
    "cause": (
        r"\bwhy\b|\bwhat\s+(?:causes?|caused|is\s+causing|could\s+cause|makes)\b|\bcause[sd]?\s+(?:of|by)\b|\breason\s+(?:for|why)\b"
        r"|\bdue\s+to\b|\bbecause\s+of\b.*\?|\bcould\s+(?:it|this|that)\s+be\s+(?:from|because|caused|due)\b|\bwhat\s+triggers\b"
        r"|왜|원인|이유(?:가|는)|때문(?:인가|일까|이에요|인지)|(?:때문에|탓에)\s*(?:그런|생기)|생기는\s*(?:건가|거|이유)"),
    "what_to_do": (
        r"\bwhat\s+(?:should|can|do)\s+(?:i|we|you)\s+(?:do|eat|avoid|try|give)\b|\bhow\s+(?:can|do|should)\s+(?:i|we)\s+"
        r"(?:lower|reduce|manage|treat|prevent|stop|get\s+rid|improve|raise|control|lose|help|relieve|ease|bring\s+down)\b"
        r"|\bhow\s+to\s+(?:lower|reduce|manage|treat|prevent|stop|get\s+rid|improve|raise|control|lose|relieve)\b"
        r"|\bwhat\s+(?:foods?|diet|exercise)\b|\b(?:foods?|things)\s+to\s+avoid\b|\btips?\b|\bremed(?:y|ies)\b|\btreatments?\s+for\b"
        r"|\bwhat\s+helps?\b|\banything\s+(?:i|we)\s+can\s+do\b"
        r"|어떻게\s*(?:해야|하면|관리|낮추|줄이|치료|예방|없애|해결|해|조절|올리|빼)|뭘\s*(?:해야|먹어야|먹으면|피해야)|무엇을\s*(?:해야|먹)"
        r"|(?:낮추|줄이|빼|없애|예방하|관리하|치료하|나으|나아지)(?:려면|는\s*법|는\s*방법)|피해야\s*할|좋은\s*(?:음식|운동|방법)"
        r"|관리\s*(?:법|방법)|치료\s*(?:법|방법)|대처|어떻게\s*하죠|방법\s*(?:이|좀)"),
}
ORDER = ("comparison", "dose", "how_to_use", "when_to_seek_care", "safety_with", "value_meaning",
         "cause", "what_to_do")
"""The order cues are tried in: the most specific first ("how much ibuprofen can I take while
pregnant" is a dose question about a state; "is it safe" alone is a safety question)."""
_COMPILED = {ask: re.compile(_CUES[ask], re.I) for ask in ORDER}

QTYPE_ASK = {"dosage": "dose", "interactions": "safety_with", "contraindications": "safety_with",
             "test_result": "value_meaning", "causes": "cause", "susceptibility": "cause",
             "usage": "how_to_use", "treatment": "what_to_do", "prevention": "what_to_do",
             "lifestyle": "what_to_do"}
"""The question type's ask when no cue decides (:data:`core.qtype.model.QTYPES`)."""


@dataclass(frozen=True)
class Ask:
    """A question's ask.

    Attributes:
        label: one of :data:`ASKS`.
        by: ``cue`` (a Korean or English cue matched: ``matched`` holds it), ``qtype`` (the
            question-type label mapped) or ``default``.
        also: other asks whose cues matched too (a dose question asked about pregnancy also
            matches ``safety_with``), in :data:`ORDER`.
    """

    label: str
    by: str
    matched: str = ""
    also: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        """The ask for the trace."""
        return {"label": self.label, "by": self.by, "matched": self.matched, "also": list(self.also)}


def classify_ask(question: str, qtype_label: str | None = None) -> Ask:
    """The ask of ``question`` (Korean or English).

    Args:
        question: the user's question as the models see it.
        qtype_label: the question type (:mod:`core.qtype.model`), the fallback; ``None`` when unknown.
    Returns:
        :class:`Ask`; ``information`` when neither a cue nor the question type names one.
    """
    hits = [(ask, m) for ask in ORDER if (m := _COMPILED[ask].search(question))]
    if hits:
        ask, m = hits[0]
        return Ask(ask, "cue", m.group(0).strip(), tuple(a for a, _ in hits[1:]))
    if qtype_label in QTYPE_ASK:
        return Ask(QTYPE_ASK[qtype_label], "qtype", qtype_label)
    return Ask("information", "default")
