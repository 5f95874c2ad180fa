"""Emergency triage: red flags in Korean and English, checked before anything else runs.

The red flags follow the "call an ambulance" lists of public guidance: NHS "When to call 999"
(chest pain that spreads or comes with sweating, stroke signs by FAST: face drooping, arm
weakness, speech difficulty; sudden worst headache; struggling to breathe; heavy bleeding;
fainting or sudden confusion; a seizure; a severe allergic reaction; self-harm or suicidal
thoughts; an overdose or poisoning) and the Korea Disease Control and Prevention Agency's
heart attack and stroke warning signs (심근경색·뇌졸중 조기증상). The patterns favour recall:
a missed emergency costs more than an unneeded referral. A match is dropped only when the same
clause negates it (``가슴 통증은 없어요``, ``no chest pain``), when the sentence only asks
about the condition in general (``뇌졸중 증상이 뭐예요?``), or when it happened in the past and
is not happening now (``3년 전에 기절한 적이 있어요``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CATEGORIES = ("suicide", "overdose", "chest_pain", "stroke", "breathing", "anaphylaxis",
              "bleeding", "syncope_confusion", "seizure")
"""Red-flag categories, in the order a reply addresses them when several match."""

_RX: dict[str, list[str]] = {
    "chest_pain": [
        r"가슴\s*(?:한가운데|가운데|중앙|한복판)?(?:가|이|에)?\s*(?:꽉\s*)?(?:눌리|짓눌|조이|조여|돌로\s*누르|무겁고\s*답답|답답하고\s*무겁)",
        r"\b(?:breastbone|sternum)\b.{0,40}\b(?:pain|pressure|crush\w*|squeez\w*|spread\w*)\b|\b(?:pain|pressure|crush\w*)\b.{0,30}\b(?:breastbone|sternum)\b",
        r"\b(?:squeez\w*|crush\w*|pressure|tightness|heaviness|vise|vice)\b.{0,15}\b(?:in|on|across)\s+(?:my|his|her|the)\s+chest\b",
        r"\bchest\b.{0,30}\b(?:killing|vise|vice|crushing|squeez\w*)\b",
        r"\bchest\b.{0,40}\b(?:going|goes|spreading|spreads|radiating|moving|shooting)(?:\s+(?:up|down))?\s+(?:to|into|down|up)\s+(?:my\s+|his\s+|her\s+)?(?:left\s+)?(?:arm|jaw|neck|back|shoulder)",
        r"(?:\bchest\b|가슴).{0,60}(?:\bleft arm|왼팔|왼쪽\s*팔).{0,25}(?:tingl\w*|numb\w*|저리|저려|아파|아프)",
        r"\bchest\b.{0,40}\b(?:grey|gray|ashen|pale and sweaty)\b|\b(?:grey|gray|ashen)\b.{0,40}\bchest\b",
        r"가슴(?:이|에|쪽이)?.{0,10}(?:뻐근하고|묵직하고|조이고|조여오고|짓눌리고).{0,30}(?:땀|식은땀|숨|토할|구역|어지)",
        r"가슴.{0,12}(?:쥐어짜|짓누르|조이|조여|조이는|찢어지|터질\s*(?:것|듯)|누르는\s*듯|압박|꽉\s*막히|묵직)",
        r"가슴.{0,15}(?:아프|아파|통증|답답).{0,30}(?:왼팔|팔|턱|어깨|등|목)(?:으로|로|까지|이|도)?\s*.{0,4}(?:퍼지|퍼져|퍼졌|뻗|내려|저리|저려|아프|아파|당기|당겨)",
        r"가슴(?:을|이)?\s*(?:움켜|부여잡|붙잡|쥐어)|가슴.{0,10}(?:너무|심하게|엄청|극심하게)\s*(?:아파|아프)",
        r"가슴.{0,15}(?:아프|아파|통증|답답).{0,30}(?:식은땀|땀이\s*(?:나|흘|줄)|숨이\s*차|숨쉬기|구역|토할|어지러)",
        r"(?:갑자기|심하게|극심한|너무\s*심하게|엄청)\s*가슴(?:이|에)?\s*(?:아프|아파|통증)",
        r"(?:심근경색|심장마비|협심증).{0,6}(?:온\s*(?:것|거)\s*같|인\s*(?:것|거)\s*같|이\s*온\s*(?:것|거)|일\s*수도)",
        r"\bchest\b.{0,25}\b(?:crushing|squeezing|pressure|tight(?:ness)?|heavy|heaviness|elephant|vice)\b",
        r"\b(?:crushing|squeezing|severe|sudden|terrible|bad|intense|sharp)\s+chest\s+(?:pain|pressure|tightness)",
        r"\bchest\b.{0,30}\b(?:spread|radiat|going|moving|shoot|travel)\w*\s+(?:to|down|into|up)\s+(?:my\s+|his\s+|her\s+)?(?:left\s+)?(?:arm|jaw|neck|back|shoulder)",
        r"\bchest\s+(?:pain|pressure|tightness|hurts?).{0,40}\b(?:sweat\w*|clammy|nause\w*|short of breath|can'?t breathe)",
        r"\b(?:having|is having)\s+a\s+heart\s+attack\b",
        r"\belephant\b.{0,30}\bchest\b|\b(?:pressure|weight|squeez\w*|crush\w*)\b.{0,20}\bon\s+(?:my|his|her)\s+chest\b",
    ],
    "stroke": [
        r"\b(?:arm|leg)\s+and\s+(?:arm|leg)\b.{0,30}\b(?:numb|heavy|weak|dead)\b|\btyping\s+(?:this\s+)?with\s+one\s+hand\b",
        r"발음이\s*(?:뭉개|꼬|어눌|샌|이상|새)|말(?:씀)?(?:을|이)?\s*(?:이상하게|못\s*알아듣게|알아들을\s*수\s*없게)\s*(?:해|하|나)",
        r"말(?:씀)?(?:을|이)?\s*(?:한마디도|전혀|갑자기|잘).{0,6}(?:못|안)\s*(?:하|나오)",
        r"(?:오른|왼)(?:손|팔|발|다리|쪽\s*(?:팔|다리|손|발|팔다리))(?:으로|에|이|가|을|를)?.{0,15}(?:못\s*잡|힘이|마비|감각이|안\s*움직|움직이지|떨어뜨|축\s*늘어)",
        r"(?:한쪽|왼쪽|오른쪽)\s*(?:팔다리|팔|다리|손|발)(?:에|이|가)?.{0,12}(?:힘이|감각이|마비|저리고\s*힘)",
        r"숟가락(?:을|이)?.{0,8}(?:떨어뜨|놓치)|(?:한쪽|오른쪽|왼쪽)?\s*눈이\s*(?:갑자기\s*)?(?:안\s*보|까매|까맣|캄캄|커튼)",
        r"\bgibberish\b|\bgarbled\b|\bjumbled\s+words\b|\bwords\b.{0,15}\b(?:jumbled|wrong|mixed up|slurr\w*)\b",
        r"\b(?:arm|leg|hand|side)\b.{0,15}\b(?:just\s+)?(?:hangs?|hanging|dangling|limp|dead|won'?t\s+move|can'?t\s+move|gave\s+out)\b",
        r"\bcan'?t\s+find\s+(?:his|her|my|the)\s+words\b|\bvision\b.{0,15}\b(?:went|gone|going)\s+(?:black|dark|dim)|\bcurtain\b.{0,20}\b(?:eye|vision)\b",
        r"(?:얼굴|입|입꼬리|입가)(?:이|가|의|도|\s)?.{0,8}(?:처지|처졌|비뚤|돌아갔|돌아가|마비|일그러)",
        r"(?:한쪽|한\s*쪽|왼쪽|오른쪽|반쪽)\s*(?:팔|다리|몸|손|얼굴)(?:이|에|가|과|이랑|하고|도)?.{0,12}(?:힘이\s*(?:없|빠|안)|마비|감각이\s*없|안\s*움직|못\s*움직|움직이지|들\s*수\s*(?:가\s*)?없|못\s*들|저리고\s*힘)",
        r"(?:팔|다리)(?:에|이|가)?\s*갑자기.{0,10}(?:힘이\s*(?:없|빠)|마비|안\s*움직)",
        r"말(?:이|을|투가)?\s*.{0,6}(?:어눌|안\s*나와|안\s*나오|못\s*하|꼬이|꼬여|이상하게\s*나)|발음이\s*(?:꼬|이상|어눌|샌)",
        r"(?:갑자기|난생\s*처음|인생\s*최악|최악의|평생\s*처음|벼락).{0,15}(?:두통|머리가?\s*(?:아파|아프|깨질|터질))",
        r"머리가\s*(?:깨질|쪼개질)\s*(?:듯|것\s*같)",
        r"(?:뇌졸중|중풍|뇌경색|뇌출혈).{0,6}(?:온\s*(?:것|거)\s*같|인\s*(?:것|거)\s*같|이\s*온\s*(?:것|거)|일\s*수도|증상이\s*(?:있|나타|보여))",
        r"갑자기.{0,10}(?:한쪽\s*눈이|눈이\s*안\s*보|시야가\s*(?:안|까맣|사라))",
        r"\bface\b.{0,15}\b(?:droop\w*|dropp\w*|numb on one side|lopsided|uneven)",
        r"\b(?:drooping|droopy|lopsided)\s+(?:face|mouth|smile)",
        r"\b(?:one|left|right)[- ]sided\s+(?:weakness|numbness|paralysis)",
        r"\b(?:weak(?:ness)?|numb(?:ness)?)\b.{0,15}\b(?:one side|left side|right side)",
        r"\b(?:can'?t|cannot|unable to|couldn'?t)\s+(?:lift|raise|move|feel)\s+(?:my\s+|his\s+|her\s+)?(?:left\s+|right\s+)?(?:arm|leg|hand)",
        r"\bslurr\w+\b|\bspeech\b.{0,10}\b(?:garbled|slurred|strange|weird)|\b(?:can'?t|cannot|unable to)\s+(?:get\s+(?:the\s+|my\s+|his\s+|her\s+|any\s+)?words\s+out|speak\s+properly|form\s+words)",
        r"\b(?:suddenly\s+)?(?:can'?t|cannot|couldn'?t)\s+(?:speak|talk)\b",
        r"\bworst\s+headache\b|\bthunderclap\s+headache\b|\bsudden(?:ly)?\b.{0,15}\b(?:severe|worst|splitting|excruciating|explosive)\s+headache",
        r"\b(?:having|is having)\s+a\s+stroke\b|\bthink\b.{0,20}\bstroke\b",
        r"\bsudden(?:ly)?\b.{0,15}\b(?:lost|loss of|can'?t see|went blind)\b",
    ],
    "breathing": [
        r"목에\s*(?:뭐가\s*)?걸(?:렸|려).{0,20}(?:숨|소리|말|기침도)",
        r"(?:산소\s*포화도|spo2|sp02|o2\s*sat\w*|oxygen(?:\s+\w+){0,3})\D{0,25}(?<!\d)(?:[1-8]\d)\s*%",
        r"\bout\s+of\s+breath\b.{0,25}\b(?:lying|sitting|resting|at rest)\b",
        r"숨(?:을|이)?.{0,6}(?:안\s*쉬어|못\s*쉬|막혀|막힐|가빠서|차서)\s*.{0,8}(?:말|못|힘들|죽)",
        r"(?:흡입기|벤토린|네뷸라이저).{0,25}(?:안\s*들|소용|효과가\s*없|안\s*나아|듣지\s*않)|갈비뼈.{0,12}(?:들어가|쑥|움푹)|쌕쌕.{0,10}(?:심해|못|안\s*쉬)",
        r"\bcan'?t\s+(?:finish|complete)\s+(?:a|my)\s+sentence|\bcan'?t\s+(?:speak|talk)\s+in\s+(?:full\s+)?sentences",
        r"\bbreathless\b.{0,20}\b(?:sitting|at rest|lying|resting|in bed)\b|\bso\s+short\s+of\s+breath\b",
        r"\b(?:inhaler|albuterol|nebuli[sz]er|puffer|ventolin)\b.{0,50}\b(?:not|nothing|isn'?t|doesn'?t|no|won'?t)\s+(?:help\w*|work\w*|doing)",
        r"\bribs?\b.{0,10}\b(?:suck\w*|pull\w*|sink\w*)\s+in\b|\bgrunting\b|\bcan'?t\s+get\s+a\s+(?:full|deep|proper)\s+breath\b",
        r"\blips?\b.{0,15}\bblu\w*|\bblu\w*\s+lips?\b",
        r"숨(?:을|이)?\s*(?:못\s*쉬|쉴\s*수\s*(?:가\s*)?없|안\s*쉬어|안\s*쉬|막혀|막히|넘어갈|차서\s*(?:말을|말이|말도|못|걷)|가빠서\s*(?:말|못))",
        r"숨\s*쉬기(?:가|도)?\s*(?:너무|매우|정말|많이)?\s*(?:힘들|어려|곤란|버거)",
        r"말(?:을|도)?\s*못\s*할\s*(?:정도로|만큼).{0,6}숨|갑자기\s*숨이\s*(?:차|막)",
        r"호흡(?:이)?\s*(?:곤란|이\s*안|을\s*못|이\s*힘들|이\s*어려)",
        r"(?:가만히\s*(?:있어도|앉아\s*있어도)|누워\s*있어도|쉬어도|말만\s*해도)\s*숨",
        r"입술(?:이|도)?\s*(?:파랗|파래|보라|새파)",
        r"질식|숨이\s*넘어|헐떡",
        r"\b(?:can'?t|cannot|can not|unable to|couldn'?t|struggling to|not able to)\s+(?:breathe|catch\s+(?:my|his|her|a)\s+breath)",
        r"\b(?:trouble|difficulty|hard|struggling)\s+(?:to\s+)?breath(?:e|ing)\b",
        r"\bshort(?:ness)?\s+of\s+breath\b.{0,25}\b(?:at rest|resting|sitting|lying|even|can'?t talk|can'?t speak|severe|worse)",
        r"\b(?:severe|extreme)\s+(?:shortness of breath|breathlessness)\b|\bgasping\b|\bchoking\b",
        r"\blips?\b.{0,15}\b(?:blue|purple|grey|gray)\b|\bturning\s+blue\b",
        r"\bcan'?t\s+get\s+(?:enough\s+)?air\b|\bstruggling\s+for\s+(?:air|breath)\b",
    ],
    "bleeding": [
        r"커피\s*(?:찌꺼기|가루)\s*(?:같은|처럼)|(?:까맣고|검고|시커멓고|새까맣고)\s*(?:끈적|물컹|짜장)|짜장\s*같은.{0,10}변",
        r"선홍색\s*피|피를.{0,12}(?:뱉|쏟)|피가.{0,10}(?:젖|흥건|안\s*멈)",
        r"\bbled\s+through\b|\bbleeding\s+through\b|\bcoughed\s+up\b.{0,45}\bblood\b",
        r"(?:수건|거즈|붕대|휴지)(?:이|가)?.{0,10}(?:다\s*)?(?:젖|흥건)",
        r"피(?:가|를)?.{0,12}(?:뿜어|멈추질\s*않|멈추지\s*않|안\s*멈|한\s*바가지|쏟아|줄줄|흥건|계속\s*나와)",
        r"피를.{0,10}토|코피(?:가)?.{0,20}(?:안\s*멈|멈추지|멈추질|\d+\s*(?:분|시간)\s*째|한\s*시간)",
        r"\b(?:vomit\w*|threw\s+up|throwing\s+up)\b.{0,30}\bblood\b|\bcoffee[- ]grounds?\b|\bcoughing\s+up\b.{0,20}\bblood\b",
        r"\b(?:black|dark)\b.{0,20}\b(?:sticky|tarry|like\s+tar)\b|\btarry\b",
        r"\bblood\b.{0,30}\bsoak\w*|\bsoak\w*\b.{0,30}\b(?:towel|towels|bandage|pads?)\b|\bgushing\s+blood\b|\bblood\b.{0,10}\bgushing\b",
        r"피(?:가|를)?\s*(?:토했|토해|토하|토함|계속\s*(?:나|흘)|멈추지\s*않|안\s*멈|멎지\s*않|안\s*멎|많이\s*(?:나|흘)|쏟|철철|펑펑|콸콸|한\s*움큼|한\s*컵)",
        r"기침(?:할\s*때(?:마다)?|하면|하니까|하는데)?.{0,10}피(?:가|를)\s*(?:나|토|뱉|쏟|한)",
        r"토혈|객혈|각혈|하혈(?:이|을)?\s*(?:심|많|계속)",
        r"(?:검은|까만|시커먼|새까만)\s*(?:변|똥|대변).{0,20}(?:어지|쓰러|기운이\s*없|식은땀)",
        r"출혈(?:이)?\s*(?:심|멈추지|안\s*멈|계속|많)|대량\s*출혈",
        r"\b(?:vomit(?:ing|ed)?|throwing up|threw up|coughing up|coughed up|spitting up)\s+(?:up\s+)?(?:blood|bright red)",
        r"\bbleeding\b.{0,15}\b(?:won'?t|will not|doesn'?t|does not|not)\s+stop|\b(?:won'?t|can'?t|cannot)\s+stop\s+(?:the\s+)?bleeding",
        r"\b(?:heavy|heavily|severe|uncontrolled|profuse)\s+bleed|\bbleeding\s+(?:heavily|badly|a lot)",
        r"\b(?:lots|a lot|so much)\s+of\s+blood\b|\bblood\b.{0,10}\b(?:pouring|gushing|spurting)\b",
        r"\bsoak\w*\b.{0,25}\bpads?\b.{0,15}\bhour\b",
        r"\b(?:black|tarry)\b.{0,10}\b(?:stools?|poop)\b.{0,40}\b(?:dizz\w*|faint\w*|weak|light-?headed)",
    ],
    "syncope_confusion": [
        r"\bdropped\s+to\s+the\s+(?:ground|floor)\b|\bdoesn'?t\s+seem\s+to\s+know\b",
        r"(?:불러도|말을\s*걸어도|흔들어도)\s*(?:대답|반응)(?:을|이)?\s*(?:안|없|못)|깨워도.{0,10}(?:못|안)\s*(?:일어|떠|깨)|눈을\s*(?:잘\s*)?못\s*떠",
        r"못\s*알아보|여기가\s*어딘지.{0,8}모르|날짜도\s*(?:몰|모르)|엉뚱한\s*(?:소리|말)|고개를\s*(?:툭\s*)?떨구|축\s*처져|의식이\s*(?:흐릿|희미|없)",
        r"\b(?:isn'?t|not|no\s+longer|stopped)\s+respond\w*|\bdropped\s+to\s+the\s+floor\b|\b(?:keep|keeps|kept)\s+blacking\s+out\b",
        r"\bno\s+idea\s+(?:what|where|who)\b|\bdoesn'?t\s+know\s+(?:what\s+year|what\s+day|where|who)\b|\bcan'?t\s+keep\s+(?:her|him|them)\s+awake\b",
        r"\bkeeps?\s+asking\s+the\s+same\s+question\b",
        r"쓰러졌|쓰러지셨|쓰러져서|쓰러져\s*(?:있|계)|기절|실신|졸도",
        r"의식(?:을|이)?\s*(?:잃|없|흐려|저하|이\s*없|을\s*잃)|정신을\s*잃",
        r"깨워도\s*(?:안\s*일어|반응|못\s*일어|일어나지)|반응이\s*없",
        r"횡설수설|사람을\s*(?:못\s*알아|알아보지\s*못)",
        r"갑자기.{0,12}(?:헛소리|엉뚱한\s*말|혼란스러|정신이\s*없어|말을\s*못\s*알아)",
        r"\b(?:fainted|passed out|blacked out|lost consciousness|collapsed|unconscious|unresponsive)\b",
        r"\b(?:won'?t|will not|can'?t|cannot)\s+wake\b|\bnot\s+waking\s+up\b",
        r"\b(?:suddenly|very|became|got|is|seems)\s+(?:very\s+)?(?:confused|disoriented)\b",
        r"\bdoesn'?t\s+(?:recognize|know)\s+(?:me|us|where)\b|\btalking\s+nonsense\b",
    ],
    "seizure": [
        r"몸이\s*(?:갑자기\s*)?(?:굳|뻣뻣)|(?:덜덜|부들부들|바들바들)\s*떨.{0,10}(?:의식|눈|팔다리|몸)|팔다리가.{0,10}(?:덜덜|부들부들|규칙적으로)",
        r"\bwent\s+(?:rigid|stiff)\b|\btwitching\s+all\s+over\b|\bjerking\s+rhythmically\b|\bfoam\w*\s+at\s+(?:the|his|her)\s+mouth\b|\bstiff\s+and\s+jerking\b",
        r"눈이\s*(?:돌아가|뒤집|돌아갔|흰자)|팔다리를?.{0,8}(?:떨|버둥|부들)|온몸을?\s*(?:떨|부들|뻣뻣)|몸이\s*뻣뻣해",
        r"\b(?:went|goes|going|is|was)\s+stiff\b.{0,30}\bjerk\w*|\bshaking\s+all\s+over\b|\beyes?\s+(?:rolled|rolling)\s+(?:back|up)\b|\bjerking\b.{0,20}\b(?:all\s+over|uncontrollably|arms|legs)\b",
        r"(?<!근육\s)(?<!근육)(?<!눈\s)(?<!눈)(?<!눈꺼풀\s)(?<!공황\s)(?<!공황)(?<!천식\s)경련(?:을|이|하|중|해|을\s*해|을\s*일으)",
        r"(?<!공황\s)(?<!공황)(?<!천식\s)(?<!천식)(?<!불안\s)발작(?:을|이|하|중|해|이\s*와|이\s*왔)",
        r"경기(?:를|가)\s*(?:해|일으|하|와|났)|거품을\s*(?:물|흘)|간질\s*발작|뇌전증\s*발작",
        r"\b(?:having|is having|just had|started having)\s+(?:a\s+|an?other\s+|\w+\s+)?(?:seizure|fit|convulsion)s?\b|\bseizures?\s+back\s+to\s+back\b",
        r"\bafter\s+(?:a|his|her|my)\s+seizure\b|\bjust\s+came\s+to\b|\bseizing\b|\bconvuls(?:ing|ions?|ed)\b|\bfoaming\s+at\s+the\s+mouth\b",
    ],
    "anaphylaxis": [
        r"목구멍이\s*(?:좁아|막히|조여)|두드러기.{0,40}(?:쌕쌕|숨|어지)",
        r"\bhives\b.{0,50}\b(?:wheez\w*|can'?t\s+breathe|throat|faint\w*|dizz\w*)",
        r"\ballerg\w*\b.{0,100}\b(?:throat|tongue|lips?)\b.{0,25}\b(?:swell\w*|swollen|tight\w*|closing)",
        r"(?:목|혀|입술|얼굴|목구멍|눈)(?:이|가|도|까지)?\s*.{0,8}(?:부어|붓고|부었|붓는|부풀|조여).{0,25}(?:숨|호흡|삼키|말이)",
        r"아나필락시스|알레르기.{0,15}(?:쇼크|숨이|호흡)|목(?:이|구멍이)\s*(?:막히|조여|조이|부어\s*올|붓)",
        r"(?:벌에|벌한테|벌한테서)\s*쏘.{0,30}(?:숨|어지|온몸|목이|입술)",
        r"(?:숨|호흡).{0,15}(?:얼굴|입술|목|혀)(?:이|가|도)?\s*(?:부어|붓|부풀)",
        r"온몸에\s*두드러기.{0,25}(?:숨|어지|부어|붓)",
        r"\banaphyla\w+|\b(?:used|gave|injected)\s+(?:my|his|her|an|the)\s+epi-?pen\b",
        r"\b(?:throat|tongue|lips?|face)\b.{0,20}\b(?:swell\w*|swollen|closing|tight)\b.{0,40}\b(?:breath\w*|swallow\w*|talk\w*|wheez\w*)",
        r"\bthroat\b.{0,10}\b(?:closing|closing up|tight(?:ening)?)\b",
        r"\b(?:bee|wasp|hornet)\s+sting\w*\b.{0,60}\b(?:swell\w*|breath\w*|dizz\w*|hives)",
        r"\bhives\s+all\s+over\b.{0,40}\b(?:breath\w*|dizz\w*|faint\w*|swell\w*)",
    ],
    "suicide": [
        r"안\s*깨어났으면|(?:한강|다리|옥상)(?:에|으로|로)?\s*(?:가려고|갈\s*거|올라)|따라갈\s*거|유서",
        r"\bnot\s+wake\s+up\b|\bbought\s+(?:the|a)\s+rope\b|\bhow\s+i'?d\s+do\s+it\b|\b(?:highest|tallest)\s+bridge\b|\bwhich\s+bridge\b|\bsaving\s+up\s+(?:my\s+)?(?:pills|sleeping\s+pills|meds)\b",
        r"못\s*버티겠|편지(?:도|를)?.{0,8}(?:써\s*놨|써놨|써\s*뒀|남겼)|뛰어내리|없어지면.{0,12}(?:편해|나을)|약(?:도|을)?\s*(?:다\s*)?모아\s*(?:놨|뒀|두었)",
        r"죽(?:을|는)\s*방법|목을?\s*매|다\s*정리하고\s*(?:떠나|가)|영원히\s*(?:잠들|자고)|안\s*깨어나고\s*싶",
        r"\bcan'?t\s+(?:do|take)\s+this\s+any\s*more\b|\bgoodbye\s+(?:letters?|notes?|messages?)\b|\bsuicide\s+note\b|\bbetter\s+off\s+without\s+me\b",
        r"\bhow\s+many\b.{0,25}\bpills\b.{0,25}\b(?:take|kill|enough)\b|\bnever\s+wake\s+up\b|\bplan\s+to\s+(?:kill|end|hurt)\b",
        r"\bkill\s+(?:himself|herself|themselves)\b|\bon\s+(?:the|a)\s+(?:bridge|roof|ledge)\b|\bdon'?t\s+see\s+the\s+point\b|\bend(?:ing)?\s+it\b",
        r"\bgiving\s+(?:away\s+)?(?:my|all\s+my)\s+(?:stuff|things|belongings)\s*(?:away)?\b",
        r"죽고\s*싶|자살|자해|목숨을\s*끊|극단적(?:인)?\s*(?:선택|생각)|살기\s*싫|살고\s*싶지\s*않|사라지고\s*싶",
        r"죽어\s*버리|죽어버리|없어지고\s*싶|세상을\s*떠나고\s*싶|손목을\s*(?:그|긋)|뛰어내리고\s*싶|유서를",
        r"삶을\s*(?:끝내|포기)|인생을\s*끝내|다\s*끝내고\s*싶|그만\s*살고\s*싶",
        r"\bsuicid\w*|\bkill(?:ing)?\s+myself\b|\bend(?:ing)?\s+(?:my\s+life|it\s+all|my\s+own\s+life)\b",
        r"\b(?:want|wanna|wish)\s+(?:to\s+)?(?:be\s+)?dead\b|\b(?:want|wanna)\s+(?:to\s+)?die\b|\bbetter\s+off\s+dead\b",
        r"\bdon'?t\s+want\s+to\s+(?:live|be\s+(?:here|alive)|wake\s+up|exist)\b|\bno\s+reason\s+to\s+live\b",
        r"\bself[- ]harm\w*|\b(?:hurt|hurting|cut|cutting|harm|harming)\s+myself\b|\btake\s+my\s+(?:own\s+)?life\b",
        r"\bnot\s+worth\s+living\b|\bdisappear\s+forever\b",
    ],
    "overdose": [
        r"(?:두|세|네|다섯|여섯|일곱|여덟|아홉|열|열두|열다섯|스무|서른|몇|\d+)\s*알\s*(?:넘게|이상|정도|쯤)?\s*(?:을|를)?\s*(?:다\s*)?(?:먹었|삼켰|드셨|먹은|삼킨)",
        r"(?:농약|락스|세제|살충제|제초제|부동액|표백제).{0,25}(?:드셨|마셨|먹었|삼켰|마신|먹은)",
        r"(?:알|정|알약)(?:이랑|과|하고|에)?.{0,15}(?:소주|맥주|술|와인|양주|보드카).{0,15}(?:같이|함께|마셨|먹었)",
        r"\bswallowed\s+(?:some|a\s+few|several|\d+)\s+of\b|\b\d+\s+(?:are|were)\s+missing\b|\btook\s+(?:my|his|her)\s+\w+\s+(?:twice|three\s+times|again)\b",
        r"(?:세제|락스|농약|살충제|부동액|표백제|쥐약|건전지|배터리).{0,10}(?:삼켰|먹었|마셨|마신|먹은|삼킨|깨물)",
        r"(?:약|알약|타이레놀|수면제|진통제|혈압약|당뇨약|인슐린|안정제|항우울제)(?:을|를|도)?.{0,20}(?:두\s*번|세\s*번|여러\s*번|열\s*알|\d+\s*알|한\s*움큼|잔뜩|왕창|많이|한\s*통)\s*(?:이나|나|씩|넘게|정도)?\s*(?:먹|드셨|드시|삼켰|맞)",
        r"\b(?:swallowed|ate|drank|bit\s+into|got\s+into|chewed)\b.{0,30}\b(?:detergent|dishwasher\s+pods?|laundry\s+pods?|tide\s+pods?|bleach|cleaner|antifreeze|pesticide|rat\s+poison|batter(?:y|ies)|lighter\s+fluid)",
        r"\btook\s+(?:like\s+|about\s+|maybe\s+|around\s+)?\d+\s+[a-z]+|\btook\s+a\s+(?:bunch|handful|lot|ton)\s+of\b",
        r"\b(?:oxy\w*|xanax|valium|percocet|fentanyl|heroin|opioids?|benzos?|sleeping\s+pills)\b.{0,40}\b(?:vodka|alcohol|beer|wine|booze|whiskey|drinks?)\b|\b(?:vodka|alcohol|beer|wine|booze)\b.{0,40}\b(?:oxy\w*|xanax|valium|percocet|fentanyl|opioids?|benzos?|sleeping\s+pills)\b",
        r"(?:약|알약|수면제|진통제|타이레놀|혈압약|당뇨약|안정제|신경안정제|항우울제|인슐린).{0,15}(?:한꺼번에|한\s*번에|왕창|통째로|한\s*통|한\s*움큼|과다\s*복용|과량|너무\s*많이|\d+\s*(?:알|개|정)(?:을|를|이나|씩)?\s*(?:다|한꺼번에|먹었|삼켰))",
        r"과다\s*복용(?:했|을\s*했|한\s*것\s*같)|과량\s*복용|음독|농약(?:을)?\s*(?:마셨|먹었|마신)|락스(?:를)?.{0,8}(?:마셨|먹었)|중독된\s*(?:것|거)\s*같",
        r"\boverdos(?:ed|ing|e)\b",
        r"\b(?:took|swallowed|taken)\s+(?:too\s+many|a\s+lot\s+of|all\s+(?:my|of\s+my|the)|a\s+whole\s+(?:bottle|box|pack)|\d+\s+(?:pills|tablets|capsules))",
        r"\b(?:took|swallowed|taken)\b.{0,40}\b(?:all\s+at\s+once|at\s+once|in\s+one\s+go)\b",
        r"\b(?:took|swallowed|taken)\s+(?:like\s+|about\s+|around\s+|maybe\s+)?\d+\s+of\s+(?:my|his|her|the)\b",
        r"\b(?:drank|swallowed|ingested)\s+(?:some\s+)?(?:bleach|antifreeze|poison|pesticide|weed\s*killer)\b|\bpoisoned\b",
    ],
}

_COMPILED = {cat: [re.compile(p, re.I) for p in pats] for cat, pats in _RX.items()}
# Two-part rules: the first pattern is the sign, the second its context anywhere in the message.
_COMPOUND = {
    "anaphylaxis": [(re.compile(r"(?:목|목구멍|혀|입술|얼굴|입안)(?:이|가|도|까지)?.{0,8}(?:조여|조이|부어|붓|부었|퉁퉁|막혀|막히)"),
                     re.compile(r"알레르기|알러지|먹고|먹었|먹은|쏘|주사|맞고|약을|새우|땅콩|계란|우유|갑각류|토해|숨"))],
}

_NEG_AFTER_KO = re.compile(r"^.{0,12}?(?:없어|없습|없고|없었|없는데|없음|안\s*나요|않아|않았|않습|아니에|아닙|아니고)")
_NEG_BEFORE_EN = re.compile(r"\bnot\s*$|\bnot\s+(?:thinking\s+about|going\s+to|planning\s+(?:to|on))\s*$|\b(?:no|denies|denied|without|never|negative for|(?:do|does|did)\s+not|don'?t|doesn'?t|didn'?t|haven'?t|hasn'?t)\b(?:\s+\w+){0,3}\s*$", re.I)
_INFO_KO = re.compile(r"소설|드라마|영화|과제|숙제|학생인데|공부하|왜\s|뭐예요|뭔가요|뭐에요|무엇|뭘\s|어떻게|(?:으면|면)\s.{0,25}(?:나요|까요|가요|해요|돼요)\s*\?|어떤\s*(?:증상|게|것)|어떻게\s*(?:알|구별|대처|해야)|징후|알려\s*주|설명|예방|차이가|란\??$|이란|증상(?:은|이|들은)\s*(?:뭐|무엇|어떤)")
_INFO_EN = re.compile(r"\b(?:student|studying|for\s+(?:a|my)\s+class|novel|story|homework|assignment)\b|^\s*can\s+(?:you|i|one)\b|\bdifference\s+between\b|^\s*(?:can|could|does|do|is|are)\s+\w+\s+(?:happen|cause|be)\b|\bis\s+it\s+(?:possible|safe|dangerous|ok|okay|bad|normal)\b|\b(?:what\s+(?:are|is|'s|does|do|causes?|happens)|how\s+(?:do|does|can|should)\s+(?:you|one)\s+\w+|signs?\s+of|symptoms?\s+of|warning\s+signs|how\s+(?:do|can|would)\s+(?:i|you|one)\s+(?:tell|know|recognize|spot)|tell\s+me\s+about|explain)\b", re.I)
_NOW_KO = re.compile(r"지금|방금|갑자기|현재|아까|계속|오늘|제가\s|저\s|저는|저도|아버지가|어머니가|엄마가|아빠가|남편이|아내가|아이가|할머니가|할아버지가|친구가")
_NOW_EN = re.compile(r"\b(?:i'?m|i\s+am|i\s+have|i\s+can'?t|i\s+feel|my|right\s+now|just|he'?s|she'?s|he\s+is|she\s+is|is\s+having|currently|suddenly)\b", re.I)
_PAST_KO = re.compile(r"했었|었었|\d+\s*년째\s*안|\d+\s*(?:년|달|개월|주)\s*전|작년|재작년|예전에|옛날에|어릴\s*때|과거에|적이\s*있|적\s*있")
_PAST_EN = re.compile(r"\b(?:years?\s+ago|last\s+(?:year|month)|months?\s+ago|in\s+the\s+past|when\s+i\s+was|history\s+of"
                      r"|used\s+to|once\s+had|as\s+a\s+(?:child|kid|teen(?:ager)?|baby)|growing\s+up|none\s+since|in\s+(?:19|20)\d\d)\b", re.I)
_STILL = re.compile(r"지금\s*(?:도|또|다시)|다시|또|여전히|계속|\bright\s+now\b|\bagain\b|\bstill\b|\btoday\b|\bright now\b", re.I)
_HYPOTHETICAL = re.compile(r"\b(?:nursing|medical)\s+student\b|\bfor\s+(?:a|my)\s+(?:class|novel|story|assignment)\b|소설|과제|숙제|학생인데|\bif\s+(?:someone|somebody|a\s+person|a\s+child|you|one)\b|\bwhat\s+(?:should|do)\s+"
                           r"(?:you|i|we)\s+do\s+if\b|(?:사람|누가|누군가)(?:을|이|가)?\s*(?:보면|있으면)", re.I)
_CLAUSE = re.compile(r"[.!?;\n]|(?<=[가-힣])(?:는데|은데|인데|지만)\s|\bbut\b", re.I)


@dataclass(frozen=True)
class RedFlag:
    """A matched red flag: its category (one of :data:`CATEGORIES`) and the matched text."""

    category: str
    matched: str


def red_flags(text: str) -> list[RedFlag]:
    """Red flags in a message, at most one per category, ordered by :data:`CATEGORIES`.

    Args:
        text: the sanitised message (any length; only regular expressions run, no model).
    Returns:
        An empty list when nothing suggests an emergency now.
    """
    found: dict[str, RedFlag] = {}
    for cat in CATEGORIES:
        for rx in _COMPILED[cat]:
            for m in rx.finditer(text):
                if not _suppressed(text, m.start(), m.end(), cat):
                    found[cat] = RedFlag(cat, m.group(0))
                    break
            if cat in found:
                break
        for sign, context in _COMPOUND.get(cat, ()):
            m = sign.search(text)
            if cat not in found and m and context.search(text) and not _suppressed(text, m.start(), m.end(), cat):
                found[cat] = RedFlag(cat, m.group(0))
    return [found[c] for c in CATEGORIES if c in found]


def _clause(text: str, start: int, end: int) -> tuple[str, str, str]:
    lo = 0
    hi = len(text)
    for b in _CLAUSE.finditer(text):
        if b.end() <= start:
            lo = b.end()
        elif b.start() >= end:
            hi = b.start()
            break
    sent_lo = max(text.rfind(ch, 0, start) for ch in ".!?\n") + 1
    sent_hi = min([i for i in (text.find(ch, end) for ch in ".!?\n") if i >= 0] + [len(text)])
    return text[lo:start], text[end:hi], text[sent_lo:sent_hi + 1]


def _suppressed(text: str, start: int, end: int, cat: str) -> bool:
    before, after, sentence = _clause(text, start, end)
    lack = re.search(r"(?:힘|감각|반응|의식|대답|기운)(?:이|을)?\s*$", text[start:end])  # "힘이 없고" is the sign
    if (_NEG_AFTER_KO.search(after) and not lack) or _NEG_BEFORE_EN.search(before):
        return True
    if _HYPOTHETICAL.search(sentence):
        return True
    now = _NOW_KO.search(sentence) or _NOW_EN.search(sentence)
    if (_INFO_KO.search(sentence) or _INFO_EN.search(sentence)) and not now:
        return True
    if (_PAST_KO.search(sentence) or _PAST_EN.search(sentence)) and not _STILL.search(sentence):
        return cat != "suicide" or bool(re.search(r"적이\s*있|했었|\d+\s*년째\s*안|\bused to\b|years?\s+ago", sentence, re.I))
    return False
