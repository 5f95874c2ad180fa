"""The clinical findings of one message, for triage layer 1 (SPEC.md §11 "Emergency triage").

From the message and the slots the extractor found (:class:`core.extraction.Slots`), this
module collects what the discriminators of :mod:`core.safety.rules` need:

- **signs** (:mod:`core.safety.signs`) present now, each dropped when its context says
  otherwise: negated in its clause (``가슴 통증은 없어요``, ``no chest pain``) or reassured
  (``숨 쉬는 건 괜찮아요``, ``breathing is fine``), past and not again (``3년 전에 기절한 적``,
  ``years ago``, a scar), only asked about (``뇌졸중 증상이 뭐예요?``), hypothetical or fiction
  (``what should I do if someone...``, ``소설``), or family history (``가족력``, ``runs in the
  family``). A relative's event now (``아버지가 쓰러지셨어요``) is not family history: it counts;
- **numbers** of whoever is affected (the extractor keeps only the user's own): temperature
  (°C; °F converted), SpO2 (%), glucose (mg/dL; mmol/L × 18.016), blood pressure (mmHg);
- **age** of the affected person in months when a baby or child is named (``생후 6주``,
  ``2 month old``, ``newborn``), **pregnancy** and its week, **medication classes**
  (anticoagulant, insulin or sulfonylurea, chemotherapy or immunosuppression) from the
  extracted concepts (UMLS CUI, any status but negated / stopped / topic) and from drug names
  the concept table lacks (DOACs, ``blood thinner``, ``항암``).

Suppression rules are the first extractor's, kept (they were tuned on ``bot/bench/data/extraction_eval.jsonl``),
with reassurance, family history and healed scars added. NegEx / ConText: Chapman et al. 2001,
Harkema et al. 2009.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from core.safety.framing import Framing, mask
from core.safety.lethal import LETHAL_SIGNS, lethal_reason, past_and_recovered, sleep_figure, sleep_through_night
from core.safety.signs import compiled

# -- context of a sign -------------------------------------------------------------------------
_NEG_AFTER_KO = re.compile(r"^.{0,12}?(?:(?:은|는|이|가|도)\s*음성(?!\s*(?:메시지|통화|인식))|없어|없습|없고|없었|없는데|없음|없이|안\s*나요|않아|않았|않습|않고|아니에|아닙|아니고|아니라|아녜|업어|업고|업는)")
_REASSURE_AFTER = re.compile(
    r"^.{0,14}?(?:괜찮|정상|멀쩡|편해|편하게|편하고|편안|잘\s*쉬|잘\s*쉬어|문제\s*없|또렷)(?!했|았|었|였|는데\s*갑자기)"
    r"|^[^.!?;]{0,25}?\b(?:is|are|feels?|seems?|looks?|sounds?)\s+(?:completely\s+|totally\s+|perfectly\s+|absolutely\s+)?"
    r"(?:fine|normal|ok|okay|good|easy|pink|clear)\b"
    r"|^\s*(?:fine|normal|ok|okay|is\s+fine|completely\s+normal)\b|^\s*(?:were|was|are|is|came\s+back|test(?:ed)?)?\s*(?:negative|neg|zero)\b", re.I)
_NEG_BEFORE_EN = re.compile(
    r"\bnot\s*$|\bnot\s+(?:thinking\s+about|going\s+to|planning\s+(?:to|on))\s*$"
    r"|\b(?:no|not\s+having|never\s+had|without|not\s+had)\s+(?:any\s+)?(?:thoughts?|intentions?|plans?|urges?|ideas?)\s+(?:of|to|about)\s*$"
    r"|\b(?:nobody|no\s*one|none\s+of\s+(?:us|them)|neither\s+of\s+(?:us|them))\b(?:\s+\w+){0,4}\s*$|\b(?:no|not|denies|denied|without|never|negative for"
    r"|(?:do|does|did)\s+not|don'?t|doesn'?t|didn'?t|haven'?t|hasn'?t|isn'?t|wasn'?t|aren'?t|dont|didnt|doesnt|nor)\b(?:\s+\w+){0,3}\s*$", re.I)
_REASSURE_BEFORE = re.compile(r"(?:\bnormal\b|\bfine\b|괜찮은데|정상인데)\s*$", re.I)
_INFO_KO = re.compile(
    r"소설|드라마|영화|과제|숙제|학생인데|공부하|왜\s|왜요|뭐예요|뭔가요|뭐에요|뭔지|무엇|뭘\s|어떻게(?!\s*(?:해야|하죠|해요|하나요|할까요|하면\s*(?:돼|되|좋)|해\s*(?:야|줘|주)))|(?:으면|면)\s.{0,25}(?:나요|까요|가요|해요|돼요|되나요|돼요)\s*\?|다른가요|같은\s*(?:건가요|말인가요)|뜻이에요"
    r"|어떤\s*(?:증상|게|것|신호|말)|어떻게\s*(?:알|구별|대처)|징후|알려\s*주|설명|예방|차이가|차이는|란\??$|이란|증상(?:은|이|들은)\s*(?:뭐|무엇|어떤)|기준이|언제\s*(?:가야|응급실|써야|쓰|사용|맞아야|놓아야)|얼마나\s*(?:가요|지속|오래)|뭐가\s*달라|무엇이\s*달라|어떻게\s*달라|(?:가면|되면|넘으면|지속되면)\s*(?:응급|위험)|몇\s*(?:도|살|번|분)\s*(?:부터|이상|넘게)|같은\s*(?:말|뜻|거|것)(?:이에요|인가요|예요)|무슨\s*뜻|무슨\s*의미|뭘\s*의미")
_INFO_EN = re.compile(
    r"\b(?:(?:nursing|medical|med|pharmacy|paramedic)\s+student|studying\s+(?:for|about)|for\s+(?:a|my)\s+class|novel|story|homework|assignment|tv\s+show|writing\s+a)\b|^\s*can\s+(?:you|i|one)\b"
    r"|\bdifference\s+between\b|^\s*(?:can|could|does|do|is|are)\s+\w+\s+(?:happen|cause|be|turn|look)\b|\bis\s+it\s+(?:possible|safe|dangerous|ok|okay|bad|normal)\b"
    r"|\b(?:what(?:'s|\s+(?:are|is|does|causes?|happens|makes))|what\s+(?:do|should)\s+(?:you|one|people|parents)\b|how\s+(?:do|does|can|should|would|long)\s+(?:you|one|i|we|parents|people|someone|families)\s+\w+|signs?\s+of|symptoms?\s+of|warning\s+signs"
    r"|how\s+(?:do|can|would)\s+(?:i|you|one)\s+(?:tell|know|recognize|recognise|spot)|tell\s+me\s+about|explain|when\s+(?:is|should|do)\b|what\s+(?:temperature|number|level|age|dose)\b|why\s+(?:do|is|are|does)|what\s+does\s+(?:that|it|this)\s+(?:actually\s+)?mean)\b", re.I)
_NOW_KO = re.compile(r"(?:전|아침|새벽|저녁|밤|어제|오후)\s*부터|\d+\s*(?:분|시간)\s*째|지금|방금|갑자기|현재|아까|계속|오늘|제가\s|저\s|저는|저도|아버지가|어머니가|엄마가|아빠가|남편이|아내가|아이가|할머니가|할아버지가|친구가|아기가|애가|와이프가|동생이")
_NOW_EN = re.compile(r"\b(?:since\s+(?:this|last|about|an?|yesterday|lunch|dinner|breakfast|tea)|(?:an?|one|\d+)\s+(?:hour|min\w*)s?\s+ago|for\s+(?:over\s+)?(?:an?|the\s+(?:last|past))\s+(?:hour|few\s+hours|half)|i'?m|i\s+am|i\s+have|i\s+can'?t|i\s+feel|my|right\s+now|just|he'?s|she'?s|he\s+is|she\s+is|is\s+having|currently|suddenly|rn|im)\b", re.I)
_PAST_KO = re.compile(r"[았었였졌셨났왔갔했됐봤]었|지난번|몇\s*년\s*전|\d+\s*(?:세|살)\s*(?:때|에)(?!\s*(?:아기|아이))|한때|했었|었었|였었|\d+\s*년째\s*안|\d+\s*(?:년|달|개월)\s*(?:전|됐)|작년|재작년|예전에|옛날에|어릴\s*때|과거에|적이\s*있|적\s*있|지난달|지난\s*(?:주|해|봄|여름|가을|겨울)|대학생\s*때|고등학생\s*때|진단받으신\s*지|(?:19|20)\d\d년|(?:신생아|아기|갓난아기)\s*때|다\s*나았|완치|그\s*뒤로는?\s*(?:괜찮|없)")
_PAST_EN = re.compile(
    r"\b(?:(?<!fine\s)last\s+night|a\s+few\s+years\s+back|years\s+back|previously|at\s+(?:age\s+)?\d{2}(?!\s*(?:weeks|%|kg))\b|in\s+my\s+(?:twenties|thirties|teens)|years?\s+ago|last\s+(?:year|month|winter|summer|week)|months?\s+ago|in\s+the\s+past|when\s+i\s+was|history\s+of|used\s+to|once\s+had|as\s+a\s+(?:child|kid|teen(?:ager)?|baby|toddler|newborn)"
    r"|growing\s+up|none\s+since|nothing\s+since|never\s+since|in\s+(?:19|20)\d\d|back\s+in|in\s+college|was\s+diagnosed|fully\s+recovered|recovered\s+well|in\s+hospital\s+with|last\s+(?:spring|autumn|fall)|when\s+(?:he|she|they|my\s+\w+)\s+was\s+(?:a\s+)?(?:newborn|baby|toddler|little|younger|small)|(?:been|was|is|are)\s+(?:fine|well|ok|okay|great|good)\s+(?:ever\s+)?since|all\s+healed|cleared\s+up|turned\s+out\s+to\s+be)\b", re.I)
_STILL = re.compile(r"지금\s*(?:도|또|다시|막|계속|너무|갑자기)|오늘|요즘(?!은?\s*(?:괜찮|없|안|잘|증상\s*없))|이번에|\d+\s*(?:분|시간)\s*째|\d+\s*(?:min(?:ute)?s?|hours?)\b|또\s|여전히|계속(?!\s*(?:먹|복용|써|맞|드))|방금|\bright\s+now\b|\band\s+now\b|\bsince\s+(?:last\s+night|yesterday|this\s+morning|breakfast|lunch)\b|(?:어제|어젯밤|아침|새벽|밤)\s*부터|\bnow\s+(?:i|i'?ve|i'?m|he|she|it|they|my|his|her|there)\b(?!\s+(?:just|only|always|usually|carry|avoid|know|keep)|'?s\s+(?:\d|fine|well|ok|okay|healthy|doing|grown))|\bstill\b(?!\s+(?:need|have\s+to|take|carry|show|worry|itch|use|get|wonder))|\btoday\b|\bjust\s+(?:now|had|started|came)\b|\brn\b|\b(?:for\s+)?(?:over\s+)?an\s+hour\b|\bwon'?t\s+stop\b|\bwill\s+not\s+stop\b|안\s*멈|멈추지\s*않", re.I)
_HYPOTHETICAL = re.compile(
    r"\b(?:nursing|medical)\s+student\b|\bscenario\b|\bcase\s+stud(?:y|ies)\b|\bessay\b|\bstatistics\b|\bdissertation\b|\bthesis\b|\bfirst\s+aid\s+(?:course|training|class)\b|\btraining\s+(?:scenario|course|exercise|question)\b|사례\s*문제|시나리오|통계|리포트|레포트|논문|교육\s*(?:중|받|과정)|시험\s*문제|\bfor\s+(?:a|my)\s+(?:class|novel|story|assignment)\b|소설|과제|숙제|학생인데|드라마에서|영화에서|\bin\s+the\s+(?:tv\s+)?show\b|\bwriting\s+(?:a|my)\s+(?:story|novel|character)"
    r"|\bif\s+(?:someone|somebody|a|an|the|you|your|one|they|he|she|my|i\s+(?:find|see|suddenly|ever))\b|\bwhat\s+(?:should|do)\s+(?:you|i|we)\s+do\s+if\b|\bwhat\s+to\s+do\s+if\b"
    r"|\bin\s+case\b|\bwhat\s+would\s+(?:happen|cause|you\s+do)\b|\bwhat\s+if\b|\bsuppose\b|\bhypothetically\b|\bwhat\s+counts\s+as\b|\bhow\s+would\s+i\s+know\b|\bhow\s+do\s+i\s+tell\b|(?:할|될|생길|올)\s*경우|대비해|미리\s*알고|(?:사람|누가|누군가|아이가|옆\s*사람이|노인이|아기가)(?:을|이|가)?\s*.{0,30}?(?:하|되|나|오|보|있으|없으|먹으|삼키|쓰|지|리|이|않으|걸리|생기|아프|다치|막히|부으|쏘이|같으|들)면\s|만약(?:에)?|\bwhat\s+happens\s+if\b|\bwhere\s+should\s+i\s+go\s+if\b|\bwho\s+do\s+i\s+call\s+if\b", re.I)
_FAMILY_HISTORY = re.compile(r"\bwill\s+(?:that|it|this)\s+happen\s+to\s+me\b|저도\s*그렇게\s*될|가족력|집안\s*내력|유전(?:되|이|인|될)|돌아가셨|저도\s*(?:위험|걸릴|조심|검사)|\bmy\s+(?:own\s+)?risk\b|\bat\s+risk\b|\bam\s+i\s+(?:likely|at)\b|\bmake\s+me\s+more\b|\bshould\s+i\s+(?:be\s+)?(?:tested|screened|checked)\b|\bshould\s+my\s+kids\s+be\s+tested\b|\binherited\b|\bruns?\s+in\s+(?:my|the|our)\s+family\b|\bfamily\s+history\b|\bhereditary\b|\bgenetic\b|\bdied\s+of\b|\bdied\s+suddenly\b", re.I)
_JOKE = re.compile(r"농담|\bjk\b|\bjust\s+kidding\b|\bkidding\b|\bembarrass\w*|창피|쪽팔|민망", re.I)
_ACUTE = re.compile(r"지금|방금|갑자기|\bright\s+now\b|\bjust\s+now\b|\bsuddenly\b|\bcurrently\b", re.I)
_MILD_BEFORE = re.compile(r"(?:좀|조금|약간|살짝|\ba\s+bit\b|\bslightly\b|\ba\s+little\b)\s*$", re.I)
_RECOVERED = re.compile(r"지금은\s*(?:괜찮|멀쩡|정상)|그\s*(?:뒤|후)로는?\s*(?:괜찮|없)|\bi'?m\s+(?:fine|ok|okay|alright|better)\s+now\b|(?:i\s+)?feel\s+(?:fine|normal|ok|okay|better)\s+now|now\s+i\s+feel\s+(?:fine|normal|ok)|back\s+to\s+normal|완전히\s*회복", re.I)
_ROUTINE = re.compile(r"하루(?:에)?\s*(?:한|두|세|네|\d)\s*번|매일|아침\s*저녁|식후|식전|\b(?:once|twice|three\s+times|four\s+times|\d\s+times)\s+(?:a|per)\s+day\b|\bdaily\b|\bevery\s+(?:day|morning|night|\d+\s+hours)\b|\bwith\s+(?:meals|each\s+meal)\b|\bat\s+(?:each\s+meal|bedtime)\b|시간마다", re.I)
_MILD = re.compile(r"\b(?:a\s+bit|slightly|a\s+little|mild(?:ly)?|kind\s+of)\b|살짝|조금|약간|쪼금", re.I)
_MILD_SIGNS = {"chest_cardiac", "breathing_severe"}
_MILD_PREFIX_SIGNS = {"floppy", "hard_to_wake", "drowsy"}
_DENIED_STATE = re.compile(r"\b(?:isn'?t|is\s+not|aren'?t|wasn'?t|are\s+not)\s+(?:\w+\s+)?(?:drooping|droopy|swollen|swelling|blue|stiff|bleeding|confused|slurred|numb|weak)", re.I)
_NEG_AFTER_FAR_KO = re.compile(r"^.{0,24}?(?:전혀|절대)\s*(?:없|안|않)|^\S{0,2}(?:거나|이나)\s.{0,22}?(?:없|않|아니)")
_REPORTED_KO = re.compile(r"(?:라고|다고|냐고)\s")
_SCAR = re.compile(r"흉터|자국|\bscars?\b", re.I)
_INTENSIFIER_KO = re.compile(r"^.{0,8}?(?:멈출\s*수(?:가)?\s*없|멈추지\s*않|안\s*멈|멈추질\s*않|참을\s*수(?:가)?\s*없)")
_NEAR_KO = re.compile(r"^\s*(?:할|될|한)\s*(?:것|거)\s*같|^\s*(?:할|한)\s*(?:뻔|듯)")
_CONDITIONAL_KO = re.compile(r"^(?:를|을|이|가|는|은)?\s*(?:[가-힣]{0,3}?(?:다고|라고)\s*)?[가-힣]{0,3}?(?:하|되|나|오|보이|보|있으|없으|으|지|리|이|키|쓰|뜨|들)면\s")
_PERMISSION_KO = re.compile(r"^\S{0,3}(?:도|어도|여도)\s*(?:되|돼|괜찮)")
_GENERIC_AFTER_KO = re.compile(r"^[가-힣]{0,2}\s*(?:증상|경우|사람|환자|분)(?:은|는|이|가|에|에게|을|를|일\s*때)?\s")
_SUBJECT_KO = re.compile(r"제가|저는|저도|내가|나는|아버지가|어머니가|엄마가|아빠가|남편이|아내가|아이가|할머니가|할아버지가|친구가|아기가|애가|와이프가|동생이")
_VITAMIN = re.compile(r"비타민|영양제|유산균|오메가|포도당|vitamin|supplement|glucose\s+tablets|dextrose", re.I)
_NO_REASSURE = {"head_injury", "trauma", "overdose", "extra_dose", "burn", "co_source", "allergen", "suicidal", "nosebleed",
                "farewell", "gratitude", "unreachable", "giving_away", "means_at_hand", "at_the_edge", "intent_time",
                "finality", "gi_blood"}
_MED_NEG_KO = re.compile(r"^\S{0,3}\s*(?:은|는)?\s*(?:안|못)\s*(?:먹|드|맞)")
_CLAUSE = re.compile(r"(?<!\d)[.!?;\n]|[.!?;](?!\d)|(?:(?<=[가-힣]고\s)(?<![다라냐]고\s)|(?<=[가-힣]며\s)|(?<=면서\s)|(?<=[가-힣]서\s))(?!싶)|(?<=요)\s|(?<=[었았했였]다)\s|(?<=니다)\s|(?<=[음함임죠])\s|(?<=[가-힣])(?:는데|은데|인데|지만)\s|\bbut\b|,\s*(?=(?:just|only|and\s+no|no|nothing)\b)", re.I)

# -- numbers -----------------------------------------------------------------------------------
_TEMP = re.compile(
    r"(?:열|체온|고열|temp\w*|fever(?:\s+of)?|running(?:\s+a)?|hit|at|is|of|찍|hot|뜨거|measured|reads?|says|said|shows?|showing|thermometer|체온계|나와|재니)\D{0,14}?(?<![\d.])(\d{2,3}(?:\.\d+)?)\s*(도|℃|°\s*[cf]?|degrees?\s*[cf]?|f\b|c\b)?"
    r"|(?<![\d./])(\d{2}(?:\.\d+)?)\s*(도|℃|°\s*c?)(?!\s*(?:각도|로\s*기울))", re.I)
_OVER = re.compile(r"^\s*(?:도)?\s*(?:가|이)?\s*(?:넘|넘게|넘어|넘었|이상|over|above|plus|\+)", re.I)
_SPO2 = re.compile(r"(?:산소\s*포화도|포화도|spo2|sp02|o2\s*sat\w*|oxigen|oxygen(?:\s+\w+){0,3}|sats?|pulse\s*ox)\D{0,25}?(?<![\d.])(\d{2,3})(?!\d)\s*(?:%|퍼센트|까지|로|on)?", re.I)
_GLUCOSE = re.compile(r"(?:혈당|blood\s*sugar|sugar|glucose|\bbg\b|\bbgl\b)(?:\s*수치)?\D{0,15}?(?<![\d.])(\d{1,3}(?:\.\d+)?)\s*(mmol|mg)?", re.I)
_BP_PAIR = re.compile(r"(?<![\d.])(\d{2,3})\s*/\s*(\d{2,3})(?!\d)")
_BP_CONTEXT = re.compile(r"혈압|\bbp\b|blood\s*pressure", re.I)
_HEART_RATE = re.compile(r"(?:heart\s*rate|pulse|\bhr\b|맥박|심박수?)\D{0,15}?(?<![\d.])(\d{2,3})(?!\d)(?!\s*/)", re.I)
_BP_SINGLE = re.compile(r"(?:혈압|blood\s*pressure|\bbp\b)\D{0,20}?(?<![\d.])(\d{2,3})(?!\s*/)(?!\d)", re.I)

# -- who is affected ---------------------------------------------------------------------------
_NUMERALS = {"한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9, "열": 10,
             "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
             "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_NUM = r"(\d+|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_INFANT_AGE = re.compile(
    r"생후\s*(\d+)\s*(주|개월|달|일)|" + _NUM + r"\s*(주|개월|달|일)\s*(?:된|짜리|밖에\s*안\s*된)?\s*(?:아기|애기|신생아|baby|아이)"
    r"|\b" + _NUM + r"[- ]?(week|month|day|wk|mo)s?[- ]?old|\b" + _NUM + r"\s*(week|month)\s+old\b|" + _NUM + r"\s*(개월|months?)\s*baby", re.I)
_UNDER_3M = re.compile(r"3개월\s*(?:안\s*된|미만|이\s*안\s*된)|\bunder\s+(?:3|three)\s+months\b", re.I)
_NEWBORN = re.compile(r"신생아|\bnewborn\b|\bneonat\w*", re.I)
_CHILD_AGE = re.compile(r"(\d+)\s*(?:살|세)\s*(?:아이|아기|애|딸|아들|손주|조카)|(\d+)[- ]?(?:year|yr)s?[- ]?old\s*(?:son|daughter|child|kid|boy|girl)?|돌\s*지난", re.I)
_CHILD = re.compile(r"\bbubba\b|\blittle\s+one\b|아기|애기|아이|아들|딸|손주|신생아|유아|중학생|초등학생|\bbaby|\bbabys\b|\binfant|\btoddler|\bchild\b|\bkid\b|\bson\b|\bdaughter\b|\bnewborn|\blil\s+one\b", re.I)
_THIRD = re.compile(r"아버지|아빠|어머니|엄마|남편|아내|와이프|할머니|할아버지|친구|동생|형|누나|언니|오빠|동료|아이|아기|애기|아들|딸|손주|며느리|시어머니|부장님|어르신|옆\s*사람"
                    r"|\b(?:my|our)\s+(?:dad|father|mum|mom|mother|husband|wife|partner|son|daughter|baby|kid|child|friend|brother|sister|grand\w+|neighbour|neighbor|roommate|bf|gf|boyfriend|girlfriend)\b"
                    r"|\b(?:a\s+man|a\s+guy|a\s+woman|someone|coworker|colleague|man|woman|teen\w*)\b", re.I)

# -- pregnancy ---------------------------------------------------------------------------------
_PREG_WEEKS = re.compile(r"임신\s*(\d{1,2})\s*주|(\d{1,2})\s*주(?:\s*차)?\s*(?:인데|예요|이에요|임산부|째|,)|(\d{1,2})\s*weeks?\s*(?:pregnant|pregnat|pregant|pregnent|and|,|\()|pregnant\D{0,12}(\d{1,2})\s*weeks?|(\d{1,2})주\b", re.I)
_PREG = re.compile(r"만삭|막달|뱃속|태아|출산\s*예정|\bpreggo\b|\bexpecting\b|\bdue\s+date\b|(?<!\d)[1-4]\d\s*주(?:인데|차|예요|이에요)|\b[1-4]\d\s+weeks?\s+(?:and|with|,)|\b[1-4]\d주\b|임신|임산부|\bpregn\w*|\bpregnat\b|\bpregant\b|\bpregnent\b|임신\s*테스트|pregnancy\s*test|태동|양수|\bwaters\b|\bbaby\s+(?:hasn'?t|not)\s+mov", re.I)
_PREG_NEG = re.compile(r"임신(?:은|이)?\s*(?:아니|안\s*했|하지\s*않)|\bnot\s+pregnant\b|(?:테스트|test)(?:는|은)?\s*(?:음성|negative)|\btest\s+negative\b", re.I)

# -- medication classes ------------------------------------------------------------------------
MED_CUIS: dict[str, frozenset[str]] = {
    "anticoagulant": frozenset({"C0043031", "C1739768", "C1831808", "C0019134", "C0003280"}),
    "antiplatelet": frozenset({"C0070166", "C0085826"}),
    "insulin_or_su": frozenset({"C0021641", "C0907402", "C0061323"}),
    "immunosuppressed": frozenset({"C0025677"}),
}
"""Medication classes by the concept table's UMLS CUIs: warfarin C0043031, rivaroxaban
C1739768, apixaban C1831808, heparin C0019134, anticoagulants C0003280; clopidogrel C0070166,
antiplatelet agents C0085826; insulin C0021641, insulin glargine C0907402, glimepiride
C0061323; methotrexate C0025677."""
_MED_RX: dict[str, re.Pattern[str]] = {
    "anticoagulant": re.compile(
        r"와파린|쿠마딘|자렐토|엘리퀴스|릭시아나|프라닥사|항응고제|혈액\s*희석제|피\s*묽게|피를\s*묽게|blood\s*thinners?|\bwarf\w*|\bwarfrin\b|\bcoumadin\b|\bxarelto\b|\beliquis\b"
        r"|\bpradaxa\b|\blixiana\b|\bsavaysa\b|\bapixaban\b|\brivaroxaban\b|\bdabigatran\b|\bedoxaban\b|\bdoac\b|\bnoac\b|\bheparin\b|\bclexane\b|\benoxaparin\b|\banticoag\w*", re.I),
    "insulin_or_su": re.compile(r"인슐린|란투스|노보래피드|트레시바|글리메피리드|아마릴|당뇨\s*약|당뇨약|\binsulin\b|\blantus\b|\bnovorapid\b|\bgliclazide\b|\bglipizide\b|\bglimepiride\b|\bdiabetes\s+(?:pills|meds|tablets)\b", re.I),
    "chemotherapy": re.compile(r"항암|키모|백혈병|림프종|호중구|\bchemo\w*|\bleuk\w*|\blymphoma\b|\bneutrop\w*|\bneutrophils?\b", re.I),
    "immunosuppressed": re.compile(r"면역\s*억제|이식\s*(?:후|받)|비장\s*(?:절제|제거)|\bimmunosupp\w*|\btransplant\b|\bspleen\s+removed\b|\basplen\w*", re.I),
}
_INACTIVE = {"negated", "stopped", "topic"}
_DIABETES_CUIS = frozenset({"C0011849", "C0011860", "C0011854"})  # diabetes mellitus, type 2, type 1


@dataclass
class Sign:
    """A sign found in the message: its name, the matched text and where it starts."""

    name: str
    matched: str
    start: int


@dataclass
class Findings:
    """What layer 1's rules read. Numbers are ``None`` when not stated.

    Attributes:
        signs: sign name -> its first occurrence that survived the context rules.
        suppressed: sign name -> why its every occurrence was dropped (``negated``,
            ``reassured``, ``past``, ``question``, ``hypothetical``, ``family_history``).
        temperature_c: °C; spo2: %; glucose_mgdl: mg/dL; sbp, dbp: mmHg; heart_rate: beats/min.
        fever_over: the temperature was said as "over N" (``38도가 넘어요``).
        age_months: age of the baby or child the message is about, in months.
        child: a baby or child is the subject; third_person: someone else is.
        pregnant: pregnancy stated and not denied; gestation_weeks: its week.
        meds: medication classes (``anticoagulant``, ``antiplatelet``, ``insulin_or_su``,
            ``chemotherapy``, ``immunosuppressed``).
        question: the message only asks in general; hypothetical: it imagines a case.
        symptom: some symptom is stated now (a sign or an active symptom concept).
        minimised: the writer plays it down ("probably nothing but", "별거 아닌 것 같은데");
            figurative: a figure of speech borrows words of self-harm ("this exam is killing
            me"); see :mod:`core.safety.framing`.
    """

    text: str
    lang: str
    signs: dict[str, Sign] = field(default_factory=dict)
    suppressed: dict[str, str] = field(default_factory=dict)
    temperature_c: float | None = None
    fever_over: bool = False
    spo2: float | None = None
    glucose_mgdl: float | None = None
    sbp: float | None = None
    dbp: float | None = None
    heart_rate: float | None = None
    age_months: float | None = None
    child: bool = False
    third_person: bool = False
    pregnant: bool = False
    gestation_weeks: int | None = None
    meds: set[str] = field(default_factory=set)
    diabetic: bool = False
    question: bool = False
    hypothetical: bool = False
    symptom: bool = False
    minimised: bool = False
    figurative: bool = False

    def has(self, *names: str) -> Sign | None:
        """The first of ``names`` present now, or ``None``."""
        for n in names:
            if n in self.signs:
                return self.signs[n]
        return None

    @property
    def fever(self) -> bool:
        """A fever is stated or measured (temperature ≥ 38 °C, NICE NG143's threshold)."""
        if self.temperature_c is not None:
            return self.temperature_c >= 38.0 or (self.fever_over and self.temperature_c >= 37.9)
        return "fever" in self.signs

    def evidence(self) -> dict[str, Any]:
        """A JSON-serialisable summary for the trace."""
        nums = {k: getattr(self, k) for k in ("temperature_c", "spo2", "glucose_mgdl", "sbp", "dbp", "heart_rate",
                                              "age_months", "gestation_weeks") if getattr(self, k) is not None}
        return {"signs": {k: s.matched for k, s in self.signs.items() if k not in _QUIET},
                "suppressed": self.suppressed, "numbers": nums, "meds": sorted(self.meds),
                "child": self.child, "pregnant": self.pregnant, "question": self.question}


_QUIET = {"symptom_generic", "sudden", "bleeding_any", "many_ill", "dizzy", "trauma", "diabetic", "amount_q", "safe_dosing"}
_BARE_TEMP = re.compile(r"(?<![\d.])(3[5-9]\.\d|4[0-2]\.\d)(?![\d.])")
_TEMP_CONTEXT = re.compile(r"열|체온|아기|애기|fever|temp|hot|baby|infant|newborn|week\s+old|month\s+old", re.I)
_FEVER_SIGN = re.compile(
    r"열(?:이|도)?\s*(?:나|났|있|펄펄|올라|높|많이|심|38|39|40)|고열|발열|열나|열남|(?<![가-힣])열\s*\d|체온이\s*(?:높|3[89]|4[0-2])"
    r"|\bfever\w*|\bfevr\b|\bfebrile\b|\bhigh\s+temp\w*|\brunning\s+a\s+(?:temp|fever)|\bburning\s+up\b|\b(?:a|high|have\s+a|get\s+a|running\s+a)\s+temp(?:erature)?\b|\btemp(?:erature)?\s+(?:is\s+)?(?:high|up)\b", re.I)


def extract_findings(text: str, lang: str, slots: Any = None) -> Findings:
    """Findings of one message.

    Args:
        text: the sanitised message.
        lang: ``ko`` or ``en``.
        slots: the extractor's :class:`core.extraction.Slots` for this message (optional;
            supplies medication CUIs and whether a symptom concept is active).
    Returns:
        :class:`Findings`.
    """
    text = _spaced(text)
    framing = mask(text)
    plain = framing.text  # minimisers blanked: they never lower the severity of what follows
    f = Findings(text=text, lang=lang, minimised=framing.minimised, figurative=framing.figurative)
    f.hypothetical = bool(_HYPOTHETICAL.search(plain))
    f.question = bool((_INFO_KO.search(plain) or _INFO_EN.search(plain))
                      and not (_NOW_KO.search(plain) or _NOW_EN.search(plain)) and not _ASSERT_NOW.search(plain))
    _signs(f, framing)
    _numbers(f, plain)
    _person(f, text)
    _pregnancy(f, text)
    _meds(f, text)
    f.diabetic = "diabetic" in f.signs
    if "burn" not in f.signs:
        f.signs.pop("burn_severe", None)
    f.symptom = bool(set(f.signs) - {"sudden", "many_ill", "co_source", "infection", "diabetic", "trauma",
                                      "amount_q", "safe_dosing", "no_waking"})
    add_slots(f, slots)
    return f


_LATIN_HANGUL = re.compile(r"(?<=[A-Za-z])(?=[가-힣])|(?<=[가-힣])(?=[A-Za-z])")


def _spaced(text: str) -> str:
    """A space between Latin and Hangul letters, so that English words followed by a Korean
    particle (``stiff neck이에요``, ``HI로``) keep their word boundaries."""
    return _LATIN_HANGUL.sub(" ", text)


INTENT_SIGNS = frozenset({"suicidal", "farewell", "gratitude", "unreachable", "giving_away", "means_at_hand",
                          "at_the_edge", "intent_time", "finality", "amount_q", "no_waking"})
"""Signs of self-harm and of intent said through its preparations: read with figures of speech
blanked (:mod:`core.safety.framing`)."""


def _signs(f: Findings, framing: Framing) -> None:
    for name, patterns in compiled().items():
        text = framing.figurative_text if name in INTENT_SIGNS else framing.text
        reason = None
        for rx in patterns:
            for m in rx.finditer(text):
                why = suppression(text, m.start(), m.end(), name)
                if why is None:
                    f.signs[name] = Sign(name, m.group(0), m.start())
                    break
                reason = reason or why
            if name in f.signs:
                break
        if name not in f.signs and reason:
            f.suppressed[name] = reason
    text = framing.text
    m = _FEVER_SIGN.search(text)
    if m:
        why = suppression(text, m.start(), m.end(), "fever")
        if why is None:
            f.signs["fever"] = Sign("fever", m.group(0), m.start())
        else:
            f.suppressed["fever"] = why


def _clause(text: str, start: int, end: int) -> tuple[str, str, str]:
    lo, hi = 0, len(text)
    for b in _CLAUSE.finditer(text):
        if b.end() <= start:
            lo = b.end()
        elif b.start() >= end:
            hi = b.start()
            break
    sent_lo, sent_hi = _sentence(text, start, end)
    return text[lo:start], text[end:hi], text[sent_lo:sent_hi]


_SENTENCE_END = re.compile(r"(?<!\d)[.!?\n]|[.!?](?!\d)")  # a decimal point (38.5) ends nothing


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` offsets of the sentence holding ``text[start:end]``."""
    lo = 0
    for m in _SENTENCE_END.finditer(text, 0, start):
        lo = m.end()
    nxt = _SENTENCE_END.search(text, end)
    return lo, nxt.end() if nxt else len(text)


_LACK = re.compile(r"(?:힘|감각|반응|의식|대답|기운|태동|눈물|소변)(?:이|을|도)?\s*(?:이\s*)?$")


BENIGN_PLAN = re.compile(
    r"\bmov(?:e|ing)\s+(?:abroad|house|out|away|to)\b|\bemigrat\w*|\bretir\w*|\b(?:basic\s+)?training\b|\benlist\w*|\bdeploy\w*|\bdeclutter\w*"
    r"|\bbirthdays?\b|\bwedding\b|\bholiday\b|\bvacation\b|\btrip\b|\bsurgery\b|\boperation\b|\bdiagnos\w*|\bquit(?:ting)?\s+smoking\b"
    r"|\bgraduat\w*|\bleaving\s+(?:my|the)\s+job\b|\b(?:old|new)\s+job\b|\bcelebrat\w*"
    r"|이사|이민|유학|퇴직|퇴사|이직|졸업|은퇴|입대|훈련소|군대|대청소|생일|결혼|여행|수술|진단|금연", re.I)
"""A benign reason for goodbyes, giving things away or putting affairs in order (moving house, a
trip, a new job, an operation): it voids a plan without the means (NHS "Help for suicidal
thoughts" names these signs; they are signs only without such a reason)."""
_BENIGN_USE = re.compile(
    r"\bfor\s+(?:the\s+|a\s+|our\s+)?(?:bbq|barbecue|grill|climb\w*|camping|clay\s+shoot|christmas|gutters?|swing|hunt\w*|shoot\w*|match)\b"
    r"|\b(?:going|go|goes)\s+(?:climbing|camping|hunting|shooting|fishing)\b|\b(?:camping|fishing|tent|guy\s+ropes|anchor|tow\s+rope|shooting\s+club)\b|\bclimbing\b|\bclay\s+shoot\b|\bchristmas\s+lights\b|\brope\s+(?:swing|course|burn)\b"
    r"|\bto\s+(?:clear|clean|paint|fix|put\s+up|hang\s+(?:the\s+)?(?:lights|washing))\b|\bdispose\b|\blocked\s+cabinet\b|\bwork\s+trip\b|\bjet\s+lag\b"
    r"|바비큐|등반|캠핑|낚시|견인|텐트|사격|그네|사냥\s*가|청소하|어떻게\s*버려|출장|시차|잠금\s*보관함", re.I)
_NO_BENIGN_USE = re.compile(r"\b(?:no|without|doesn'?t\s+have\s+a|never\s+uses?\s+(?:a|the))\s+(?:bbq|barbecue|grill)\b|고기도\s*안\s*구", re.I)


def benign_use(text: str) -> bool:
    """A purpose for the means that is not self-harm (a rope for climbing or the gutters, charcoal
    for a barbecue, a shotgun for a clay shoot, weedkiller to dispose of): it voids a plan whose
    only strong sign is the means, unless the purpose is denied ("she has no bbq")."""
    return bool(_BENIGN_USE.search(text)) and not _NO_BENIGN_USE.search(text)


_SOFT_FAREWELL = re.compile(r"goodbye|giving|gave|affairs|belongings|stuff|things|정리|나눠|작별", re.I)
_HEIGHT = re.compile(r"\b(?:bridge|roof|ledge)\b|다리|옥상", re.I)
_OUTING = re.compile(r"\bwatch\w*|\bfireworks?\b|\bview\b|\bphotos?\b|\bsunset\b|\bpicnic\b|\bwalk\w*|\bjog\w*|\bcycl\w*|\bparty\b|\bbbq\b"
                     r"|불꽃|구경|산책|사진|노을|파티", re.I)
"""Being on a bridge or a roof to watch, walk or take photos is an outing, not a height reached."""
_GENERIC_Q = re.compile(r"(?:^|[,.]\s*)(?:can|could|does|do|will|would)\s+(?:a|an)\s+\w+\s+(?:\w+\s+)?(?:cause|make|take|give|lead|trigger|bring|affect)\b", re.I)
_FIRST_PERSON = re.compile(r"\b(?:i|i'?m|i'?ve|me|my|mine|we|our|us)\b", re.I)
"""A question about what a condition can do in general ("can a migraine take away half your
vision?") asks about the condition even when it names a sudden sign; unless the writer is in it."""
_CONTRAST = re.compile(r"\bbut\b|지만\s", re.I)
"""A contrast splits a sentence: a past event before "but" does not make what follows past
("I started iron last week so it's probably that, but my poo is black and I nearly fainted")."""
_NEAR_EN = re.compile(r"\b(?:nearly|almost|about\s+to)\s+$", re.I)
_TANTRUM = re.compile(r"\btantrum|\bwhen\s+(?:he|she|they)\s+(?:doesn'?t|does\s+not|don'?t)\s+want\b|\bon\s+purpose\b|\bplaying\s+(?:dead|possum)\b|\brelax\w*|\bloves?\s+it\b"
                      r"|떼(?:를)?\s*(?:쓸|쓰|부릴)|일부러|장난|힘을\s*(?:쭉\s*)?빼|좋아해", re.I)
_SMALL_BLOOD = re.compile(r"\b(?:streaks?|specks?|spots?|few\s+drops|drops?|smear\w*|tinge\w*|a\s+bit|a\s+little|tiny|trace)\b|\b(?:toilet\s+)?paper\b"
                          r"|\bwhen\s+i\s+wipe\b|휴지에|살짝|조금|약간|묻어|묻었|한두\s*방울", re.I)
_ASSERT_NOW = re.compile(
    r"\bit\s+(?:just\s+)?happened\s+(?:to\s+me\s+)?(?:just\s+now|\d+|an?|a\s+few|ten|five|twenty|half)\b|\b(?:it'?s|that'?s|this\s+is)\s+(?:what'?s\s+)?happening\s+(?:to\s+(?:me|him|her)\s+)?(?:right\s+)?now\b"
    r"|\b(?:hasn'?t|has\s+not|haven'?t)\s+(?:come|gone)\s+back\b|(?:\d+\s*분|방금|아까)\s*전에?\s*그랬|지금\s*그래요|아직\s*안\s*돌아와|지금\s*그런\s*상태", re.I)
"""A sentence that says the symptom asked about is happening: a question then no longer makes
it a general one ("can a migraine make half my vision go black? It happened 10 minutes ago")."""


def suppression(text: str, start: int, end: int, sign: str) -> str | None:
    """Why the sign matched at ``text[start:end]`` does not count now, or ``None`` when it does.

    Returns one of ``negated``, ``reassured``, ``hypothetical``, ``question``,
    ``family_history``, ``past``, ``mild``, ``recovered``, ``joke``, ``routine``; the signs of
    :mod:`core.safety.lethal` are read by :func:`core.safety.lethal.lethal_reason` instead. A
    ``question`` or ``hypothetical`` reason is withdrawn when another sentence says the thing
    is happening now (:data:`_ASSERT_NOW`).
    """
    if sign in LETHAL_SIGNS:
        return lethal_reason(text, _sentence_text(text, start, end), sign, text[start:end])
    why = _framed(text, start, end, sign) or _reason(text, start, end, sign)
    if why in ("question", "hypothetical") and _ASSERT_NOW.search(text):
        return None
    return why


def _framed(text: str, start: int, end: int, sign: str) -> str | None:
    """Reasons of the indirect signs: a near-faint is no faint (it is a sign of shock), a child
    going limp in a tantrum is no floppy child, a streak of blood is no bleed."""
    if sign == "collapse" and _NEAR_EN.search(text[max(0, start - 12):start]):
        return "mild"
    if sign in ("floppy", "lethargic", "hard_to_wake") and _TANTRUM.search(_sentence_text(text, start, end)):
        return "mild"
    if sign == "gi_blood" and _SMALL_BLOOD.search(text[max(0, start - 25):min(len(text), end + 30)]):
        return "mild"
    sentence = _sentence_text(text, start, end)
    if sign == "means_at_hand" and benign_use(sentence):
        return "mild"
    if sign == "collapse" and _SIMILE_KO.match(text, end):
        return "mild"
    if sign in ("suicidal", "overdose") and past_and_recovered(text, sentence):
        return "past"
    if sign == "suicidal" and sleep_figure(text, sentence, text[start:end]):
        return "joke"
    if sign == "suicidal" and sleep_through_night(sentence, text[start:end]):
        return "mild"
    if sign == "overdose" and _OVERDOSE_NOUN.fullmatch(text[start:end].strip()) and _DOSE_QUESTION.search(sentence) \
            and not _INGESTED.search(sentence):
        return "question"
    return None


_SIMILE_KO = re.compile(r"\s*(?:하듯|한\s*듯이?|할\s*듯이)")
"""``기절하듯 잤어요`` (slept like one fainted) is a simile, not a faint."""
_OVERDOSE_NOUN = re.compile(r"(?:an\s+)?overdoses?|과량|과다\s*복용|과다복용|.{0,20}(?:과량|과다\s*복용)", re.I)
_DOSE_QUESTION = re.compile(r"\bhow\s+(?:many|much)\b|\bwhat\b|\bis\s+(?:it|that|an)\b.{0,20}\?|얼마|몇|막으려|예방|\bprevent\w*", re.I)
_INGESTED = re.compile(r"\b(?:took|taken|has\s+had|had|swallowed|drank|ate)\b|먹었|삼켰|드셨|마셨|먹은\s*것\s*같", re.I)
"""A question about what counts as an overdose ("how many ml is an overdose for a 10 kg baby",
"얼마부터 과량이에요") asks about the threshold; nothing was taken."""


def _sentence_text(text: str, start: int, end: int) -> str:
    lo, hi = _sentence(text, start, end)
    return text[lo:hi]


def _reason(text: str, start: int, end: int, sign: str) -> str | None:
    before, after, sentence = _clause(text, start, end)
    matched = text[start:end]
    lack = _LACK.search(matched) or re.search(r"(?:않|없|못|안\s*\S*)$", matched)
    intensified = _INTENSIFIER_KO.search(after)
    neg_after = _NEG_AFTER_KO.search(after) or _NEG_AFTER_FAR_KO.search(after)
    if neg_after and not lack and not intensified and not _REPORTED_KO.search(after[:neg_after.end()]):
        return "negated"
    if sign == "suicidal" and _SCAR.search(sentence) and not _STILL.search(sentence):
        return "past"
    if _DENIED_STATE.search(matched):
        return "negated"
    if sign in _MILD_SIGNS and _MILD.search(matched):
        return "mild"
    if sign in _MILD_PREFIX_SIGNS and _MILD_BEFORE.search(text[max(0, start - 8):start]):
        return "mild"
    if sign == "collapse" and _RECOVERED.search(text):
        return "recovered"
    if sign == "suicidal" and _JOKE.search(text):
        return "joke"
    if sign == "suicidal" and _HEIGHT.search(matched) and _OUTING.search(sentence):
        return "mild"
    if sign == "suicidal" and _SOFT_FAREWELL.search(matched) and BENIGN_PLAN.search(text):
        return "mild"
    if sign in ("collapse", "thunderclap") and _NEAR_KO.search(after):
        return "mild"
    if sign == "overdose" and (_VITAMIN.search(sentence) or _PERMISSION_KO.search(after)):
        return "question"
    if sign == "overdose" and _ROUTINE.search(text):
        return "routine"
    if _CONDITIONAL_KO.search(after) and re.search(r"(?:\?|나요|까요|가요|하나요|되나요|할까요|해야\s*(?:해요|하나요|돼요))\s*$", sentence.strip()):
        return "hypothetical"
    if _GENERIC_AFTER_KO.search(after) and not _SUBJECT_KO.search(sentence):
        return "question"
    if _NEG_BEFORE_EN.search(before) and not re.search(r"\b(?:isn'?t|not|doesn'?t|won'?t|can'?t)\b", text[start:end], re.I):
        return "negated"
    if sign in _MED_RX and _MED_NEG_KO.search(after):
        return "negated"
    if _REASSURE_AFTER.search(after) and sign not in _NO_REASSURE:
        return "reassured"
    if _hypothetical_before(text, start, sentence):
        return "hypothetical"
    if (why := _topic_context(text, after, sentence, sign)) is not None:
        return why
    now = _NOW_KO.search(sentence) or _NOW_EN.search(sentence)
    if (_INFO_KO.search(sentence) or _INFO_EN.search(sentence)) and not now:
        return "question"
    if _GENERIC_Q.search(sentence) and not _FIRST_PERSON.search(sentence):
        return "question"
    if _FAMILY_HISTORY.search(sentence) and not _ACUTE.search(sentence):
        return "family_history"
    scope = before + text[start:end] + after if _CONTRAST.search(sentence) else sentence
    if (_PAST_KO.search(scope) or _PAST_EN.search(scope)) and not _STILL.search(sentence):
        return "past"
    return None


_SUICIDE_TOPIC = re.compile(
    r"통계|자살률|위험\s*(?:신호|요인|징후)|예방|막으려면|상담\s*(?:전화|센터|번호)|핫라인|번호|(?:으로|로)\s*돌아가셨|(?:으로|로)\s*잃"
    r"|(?:어떤|보이는|일반적인|보통)\s*(?:신호|모습|징후)|신호\s*같은|\bsigns?\s+(?:that\s+)?(?:someone|somebody|a\s+person|people)\b|\bwhat\s+(?:should\s+i\s+)?look\s+out\s+for\b"
    r"|\bstatistics\b|\brates?\b|\bwarning\s+signs\b|\bprevent\w*|\bhotline\b|\bhelpline\b|\bcrisis\s+line\b|\bnumber\s+for\b"
    r"|\b(?:died\s+by|lost\s+(?:\w+\s+){0,3}to|deals?\s+with|about)\s+suicide\b|\bsuicide\s+(?:awareness|prevention|risk\s+factors)\b", re.I)
_SUICIDE_SELF = re.compile(r"죽고\s*싶|끝내|저도\s*(?:죽|사라)|\b(?:i|i'?m|i\s+am|i'?ve)\b.{0,20}\b(?:want|going|plan|thinking)", re.I)
_CPR = re.compile(r"심폐\s*소생|\bcpr\b|\bchest\s+compressions?\b|\bcompressions?\b|가슴\s*압박\s*(?:을|은|는|하는|횟수|깊이|속도|방법)", re.I)
_EXPERIENTIAL = re.compile(r"^\s*(?:한|된|난|진|던|은|었던|았던)?\s*적(?:이|은|도)?\s*(?:있|없)")
_RELATIVE_EVENT = re.compile(
    r"(?:아버지|아빠|어머니|엄마|할머니|할아버지|삼촌|이모|고모|언니|오빠|누나|형|동생|집안|가족|친척|조부모)(?:께서|가|이|는|은|도|에)?\s.{0,40}(?:셨|었|았|했|있어요|있어서|있는데|있대요|있습니다)"
    r"|\b(?:my|our)\s+(?:grand\w+|mum|mom|mother|dad|father|aunt|uncle|sister|brother|cousin|family)\b.{0,50}\b(?:had|has|went|was|got|died|lost|from)\b", re.I)
_SELF_SCREEN = re.compile(
    r"(?:저도|저는|제가|제\s*아이|우리\s*아이).{0,40}(?:검사|검진|심전도|조심|예방|위험|유전|받아야|알아야|먹일)|(?:몇\s*살부터|어떻게\s*예방)"
    r"|\b(?:prevent|screen\w*|tested|checked|my\s+(?:own\s+)?risk|am\s+i\s+(?:at|more)|should\s+i\s+(?:get|be|have)|anything\s+i\s+can\s+do)\b", re.I)


def _topic_context(text: str, after: str, sentence: str, sign: str) -> str | None:
    """Context that makes a sign a topic rather than a finding now: suicide as a subject
    (statistics, prevention, warning signs, a relative's death) without the user's own
    intent; CPR's "chest compressions"; an experiential past (``기절한 적 있어서``); a
    relative's condition when the message asks about the user's own screening or prevention
    (family history). Returns the reason or ``None``."""
    if sign == "suicidal" and _SUICIDE_TOPIC.search(sentence) and not _SUICIDE_SELF.search(text):
        return "question"
    if sign in ("chest_cardiac", "chest_any") and _CPR.search(sentence):
        return "question"
    if _EXPERIENTIAL.search(after) and not _ACUTE.search(sentence):
        return "past"
    if _RELATIVE_EVENT.search(sentence) and _SELF_SCREEN.search(text) and not _ACUTE.search(sentence) \
            and not _STILL.search(sentence):
        return "family_history"
    return None


def _hypothetical_before(text: str, start: int, sentence: str) -> bool:
    """A hypothetical or conditional trigger in the sentence that begins at or before the
    sign (``what should I do if someone collapses``), not one that follows it (``my dad
    collapsed, what do I do if he doesn't wake up`` is an emergency)."""
    sent_start = _sentence(text, start, start)[0]
    return any(sent_start + m.start() <= start and not _OBSERVED_KO.search(m.group(0))
               for m in _HYPOTHETICAL.finditer(sentence))


_OBSERVED_KO = re.compile(r"(?:안아\s*(?:올리|들)|들어\s*올리|만지|건드리|깨우|일으키|앉히|세우|눕히|부르)면\s$")
"""Korean "-면" after handling the person ("안아 올리면 축 늘어져요": when I pick him up) is
what happens each time, not a supposition."""


def _numbers(f: Findings, text: str) -> None:
    for m in _TEMP.finditer(text):
        raw, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        value = float(raw)
        unit = (unit or "").lower()
        if "f" in unit or (not unit and 95 <= value <= 110):
            value = round((value - 32) * 5 / 9, 1)
        if 34.0 <= value <= 43.0 and suppression(text, m.start(), m.end(), "temperature") is None:
            f.temperature_c = value if f.temperature_c is None else max(f.temperature_c, value)
            f.fever_over = f.fever_over or bool(_OVER.search(text[m.end():m.end() + 8]))
    if f.temperature_c is None and _TEMP_CONTEXT.search(text):
        for m in _BARE_TEMP.finditer(text):
            if suppression(text, m.start(), m.end(), "temperature") is None:
                f.temperature_c = float(m.group(1))
                break
    for m in _SPO2.finditer(text):
        value = float(m.group(1))
        if 50 <= value <= 100:
            f.spo2 = value if f.spo2 is None else min(f.spo2, value)
    for m in _GLUCOSE.finditer(text):
        value, unit = float(m.group(1)), (m.group(2) or "").lower()
        if unit == "mmol" or (not unit and ("." in m.group(1) or (f.lang == "en" and value < 35))):
            value = round(value * 18.016, 1)
        if 20 <= value <= 1500 and not re.search(r"HbA1c|당화|a1c", text[max(0, m.start() - 10):m.start()], re.I):
            f.glucose_mgdl = value if f.glucose_mgdl is None else f.glucose_mgdl
    if _BP_CONTEXT.search(text):  # plausible readings only (core.extraction.patterns.PLAUSIBLE)
        pair = _BP_PAIR.search(text)
        if pair and 50 <= int(pair.group(1)) <= 300 and 20 <= int(pair.group(2)) <= 200 \
                and int(pair.group(1)) > int(pair.group(2)):
            f.sbp, f.dbp = float(pair.group(1)), float(pair.group(2))
        elif not pair and (single := _BP_SINGLE.search(text)) and 50 <= int(single.group(1)) <= 300:
            f.sbp = float(single.group(1))
    for m in _HEART_RATE.finditer(text):
        if 20 <= int(m.group(1)) <= 250 and suppression(text, m.start(), m.end(), "heart_rate") is None:
            f.heart_rate = float(m.group(1))
            break


def _person(f: Findings, text: str) -> None:
    f.third_person = bool(_THIRD.search(text))
    f.child = bool(_CHILD.search(text))
    if any(s in f.signs for s in ("no_wet_nappies", "fontanelle", "sunken_fontanelle", "high_pitched_cry")):
        f.child = True
    if _NEWBORN.search(text):
        f.age_months = 0.5
    if _UNDER_3M.search(text):
        f.age_months = 2.0
    for m in _INFANT_AGE.finditer(text):
        groups = [g for g in m.groups() if g]
        if len(groups) < 2:
            continue
        n = float(_NUMERALS.get(groups[0].lower(), groups[0]) if not groups[0].isdigit() else groups[0])
        unit = groups[1].lower()
        months = n / 4.345 if unit in ("주", "week", "wk") else n / 30.4 if unit in ("일", "day") else n
        f.age_months = months if f.age_months is None else min(f.age_months, months)
        f.child = True
    if f.age_months is None and (m := _CHILD_AGE.search(text)):
        years = next((g for g in m.groups() if g), None)
        f.age_months = float(years) * 12 if years else 12.0
        f.child = f.child or years is None or float(years) < 16


_WEEKS_ONLY = re.compile(r"\b[2-4]\d\s*(?:weeks?|wks?)\b", re.I)
_OBSTETRIC_CONTEXT = re.compile(r"\bbaby\b|\bwaters?\b|\bfluid\b|\bbleed|\bkicks?\b|\bbump\b|\bcontractions?\b|\bmovements?\b|태동|양수|아기", re.I)


def _pregnancy(f: Findings, text: str) -> None:
    if _PREG_NEG.search(text):
        return
    if not _PREG.search(text) and not (_WEEKS_ONLY.search(text) and _OBSTETRIC_CONTEXT.search(text)):
        return
    f.pregnant = True
    for m in _PREG_WEEKS.finditer(text):
        week = int(next(g for g in m.groups() if g))
        if 4 <= week <= 43:
            f.gestation_weeks = week
            break


def add_slots(f: Findings, slots: Any) -> Findings:
    """Add what the extractor found (``slots``, may be ``None``) to ``f``: medication classes by
    UMLS CUI, diabetes as a condition, and an active symptom concept. Returns ``f``."""
    for c in getattr(slots, "concepts", None) or []:
        if c.status in _INACTIVE:
            continue
        if c.slot == "medication":
            f.meds.update(cls for cls, cuis in MED_CUIS.items() if c.cui in cuis)
        elif c.slot == "condition" and c.cui in _DIABETES_CUIS:
            f.diabetic = True
        elif c.slot == "symptom":
            f.symptom = True
    return f


def _meds(f: Findings, text: str) -> None:
    for cls, rx in _MED_RX.items():
        for m in rx.finditer(text):
            if suppression(text, m.start(), m.end(), cls) not in ("negated", "hypothetical", "family_history"):
                f.meds.add(cls)
                break
