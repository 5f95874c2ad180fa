"""Signs of emergencies said without the obvious words, for triage layer 1.

Merged into :data:`core.safety.signs.SIGNS` (same form: name -> regular expressions, matched
case-insensitively, then dropped by the context rules of :mod:`core.safety.findings` when
negated, past, only asked about or hypothetical). Four groups:

- **intent to die said through its preparations** (NICE NG225 *Self-harm*, 2022, and the NHS
  page *Help for suicidal thoughts*: warning signs include putting affairs in order, giving
  possessions away, saying goodbye, getting the means, talking about being a burden or about
  "not being around"; the WHO *Preventing suicide: a resource for media professionals*, 2023,
  names the same signs). No single one of them is an emergency; :mod:`core.safety.rules`
  fires on two different ones together (a farewell and a time, the means and a time, ...) or
  on a strong one alone (sitting at the edge of a roof);
- **bleeding described by its appearance** (NICE CG141 *Acute upper gastrointestinal
  bleeding*: haematemesis, "coffee-ground" vomit, melaena — black tarry stool — and fresh or
  maroon blood per rectum) and **signs of shock** (NICE CG141 and the Blatchford score: pulse
  ≥ 100, systolic < 100 mmHg, syncope; NHS *Sepsis* / *Shock*: pale, cold, clammy skin,
  fast breathing, dizziness or fainting on standing);
- **a baby or child described by behaviour** (NICE NG143 *Fever in under 5s*, red and amber
  features: no response to social cues, does not wake or does not stay awake, weak,
  high-pitched or continuous cry, reduced feeding, reduced urine output, pale or mottled
  skin; NICE NG240 for the glass test);
- none of the words of the first group needs "suicide", "kill" or "die".
"""

from __future__ import annotations

# Farewell: notes, letters, last messages, thanks and apologies said as an ending.
FAREWELL = [
    r"\b(?:wr[io]te|written|writing|left|leaving|typed|sealed)\b.{0,30}\b(?:letters?|notes?|messages?|cards?)\b.{0,30}\b(?:each\s+of|every(?:one|body)|all\s+(?:of\s+)?(?:my|us|them)|my\s+(?:family|kids|children|parents|wife|husband|partner|friends|mum|mom|dad))\b",
    r"\b(?:letters?|notes?|messages?)\s+(?:to|for)\s+(?:each\s+of|every(?:one|body)|all\s+(?:of\s+)?(?:my|us)|my\s+(?:family|kids|children|parents|friends))\b",
    r"\b(?:the|my|a)\s+(?:letter|note)\s+(?:is|are)\s+(?:sealed|written|ready|on\s+the)\b|\bletters?\s+(?:are|is)\s+(?:sealed|written|on\s+the\s+(?:table|desk|bed))\b",
    r"\bsaid\s+(?:my\s+)?goodbyes?\b|\b(?:my\s+)?last\s+(?:message|text|post|words)\b(?!\s+(?:was|were)\s+(?:about|from))|\bsee\s+you\s+on\s+the\s+other\s+side\b|\bjust\s+wanted\s+(?:someone|somebody|anyone|you)\s+to\s+know\b",
    r"(?:편지|메시지|유서)(?:를|도)?.{0,20}(?:써\s*(?:서|놨|놓|뒀|두고|둔)|남기|봉해|올려놨)|(?:한\s*명씩|한\s*사람씩|가족들한테|가족에게).{0,20}(?:편지|쪽지|메시지)",
    r"마지막\s*(?:메시지|인사|문자|글)|인사(?:도|는)?\s*다\s*(?:했|하고|드렸)|다음\s*생에|누군가(?:는|라도)?\s*알았으면",
]

# Thanks, apologies and love said as an ending (weaker alone: people thank a chatbot too).
GRATITUDE = [
    r"\bthank(?:s|ing|ed)?\s+(?:you\s+)?(?:\w+\s+)?for\s+(?:all\s+)?(?:everything|the\s+help|being\s+there)\b|\bthanking\s+every(?:one|body)\b|\bsorry\s+for\s+(?:everything|all\s+the\s+trouble)\b",
    r"\blook\s+after\s+(?:\w+\s+){1,2}for\s+me\b|\bi\s+love\s+you\s+all\b",
    r"그동안\s*(?:정말\s*)?(?:고마웠|고마워|감사했|미안했)|(?:잘|꼭)\s*부탁(?:한다|해)|사랑한다고?\s*(?:문자|메시지|톡)",
]

# Cannot be reached: phone off, gone from home, locked in, not answering.
UNREACHABLE = [
    r"\b(?:his|her|their)\s+phone\s+(?:is|'s|has\s+been)\s+(?:off|switched\s+off|dead)\b|\b(?:his|her|their)\s+car'?s\s+gone\b|\b(?:his|her|their)\s+car\s+is\s+gone\b|\bnot\s+(?:at\s+)?home\b|\blocked\s+(?:herself|himself|themselves)?\s*in\b|\blocked\s+in\s+the\b",
    r"\b(?:not|isn'?t|won'?t\s+be)\s+answering\b|\bcan'?t\s+(?:reach|get\s+hold\s+of)\b|\bno\s+(?:answer|reply)\b",
    r"(?:전화기|휴대폰|핸드폰|폰)(?:를|을|도)?\s*(?:꺼\s*놨|꺼져|꺼\s*놓|끄고)|차(?:도|가)?\s*없어졌|연락이\s*(?:안\s*(?:돼|되|닿)|두절)|대답(?:이|도)?\s*없|집에\s*(?:안\s*계세|안\s*들어|없)|문(?:을)?\s*잠그고",
]

# Giving things away, settling affairs, ending contracts.
GIVING_AWAY = [
    r"\b(?:gave|giving|given|give)\s+(?:away\s+)?(?:my|all\s+my|his|her|their)\s+(?:\w+\s+){0,2}(?:to|away)\b|\bgave\s+(?:away\s+)?(?:his|her|my)\s+(?:favourite|favorite|best)\b|\bgave\s+(?:his|her|my)\s+\w+\s+away\b",
    r"\b(?:gave|given|giving)\s+(?:her|his|their|my)\s+(?:favourite|favorite)\s+things\s+away\b|\brehom(?:ed|ing)\s+my\b|\bgave\s+my\s+(?:dog|cat|pets?)\s+to\b",
    r"\b(?:put(?:ting)?|got|getting)\s+my\s+affairs\s+in\s+order\b|\bpaid\s+off\s+(?:what\s+i\s+owe|my\s+debts?|everything)\b|\bcancell?(?:ed|ing)\s+my\s+(?:phone|contract|subscriptions?|lease)\b|\bthe\s+arrangements\s+are\s+made\b",
    r"\bupdated\s+my\s+will\b",
    r"(?:물건|짐|옷|책|게임|소지품)(?:을|들을)?.{0,15}(?:다\s*)?(?:나눠\s*주|나눠주|처분)|(?:고양이|강아지|개)(?:는|를)?.{0,10}(?:보내|맡기|입양\s*보내)",
    r"(?:휴대폰|핸드폰|폰|계약)\s*(?:을|도)?\s*해지|빚(?:도|을)?\s*다\s*갚|주변\s*정리|신변\s*정리|보험\s*수익자|다\s*정리해\s*(?:두려|놓으려|뒀)",
]

# The means acquired or at hand (pills saved up or laid out, a rope, charcoal, pesticide, a
# weapon).
MEANS = [
    r"\b(?:stockpil\w*|sav(?:ed|ing)\s+up|hoard\w*|collect(?:ed|ing)|lined\s+up|laid\s+out|counted\s+out)\b.{0,30}\b(?:pills|tablets|meds|them|it|paracetamol|insulin)\b|\b\d{2,3}\s+(?:of\s+)?(?:my\s+)?\w+\s+(?:lined\s+up|laid\s+out|counted\s+out)\b",
    r"\b(?:bottle|box|pack|strip|tub)\s+of\s+(?:(?:my|his|her|\w+'s)\s+){0,2}(?:sleeping\s+)?(?:pills|tablets)\b.{0,40}\b(?:in\s+front\s+of\s+me|on\s+the\s+table|next\s+to\s+me|vodka|whisky|whiskey|wine)\b",
    r"\b(?:the|a)\s+rope\s+(?:is|in|ready)\b|\bbought\s+(?:a\s+)?(?:rope|charcoal|gun|shotgun)\b|\b(?:hunting\s+)?(?:rifle|shotgun|gun)\s+is\s+(?:gone|missing)\b|\b(?:rifle|gun)\s+(?:is\s+)?gone\s+from\b",
    r"(?:수면제|약|알약|진통제|타이레놀|안정제)\s*(?:을|를)?\s*(?:한\s*통|\d+\s*알|몇\s*십\s*알)?.{0,12}(?:모아\s*(?:둔|놨|뒀|놓)|앞에\s*(?:놓|두))|(?:안\s*먹고|몰래)\s*모아\s*(?:둔|놨|뒀)",
    r"(?:끈|밧줄)(?:도|을)?\s*(?:준비|사\s*(?:놨|뒀|왔))|번개탄(?:을|도)?\s*(?:샀|사\s*왔|준비)|농약(?:병)?(?:이|을)?\s*(?:없어졌|사\s*왔|챙겨)|(?:총|엽총)(?:이|을)?\s*없어졌",
]

# At the edge of a height, or choosing one high enough (enough alone).
AT_THE_EDGE = [
    r"\b(?:edge|ledge|railing|parapet)\s+of\s+(?:the|a|my)\s+(?:\w+[- ]?){0,2}(?:roof|bridge|car\s+park|building|cliff|balcony)\b|\b(?:standing|sitting|sat)\s+on\s+(?:the|a)\s+(?:bridge|roof|ledge|railing|parapet)\b|\bwhich\s+(?:overpass|bridge|building|cliff)\b.{0,30}\b(?:high|tall)\s+enough\b",
    r"(?:옥상|난간|다리|육교|베란다)\s*(?:위|끝|난간)?(?:에|에서)\s*(?:걸터)?(?:앉아|서\s*있|올라와|서서)|(?:육교|다리|건물|옥상)(?:\s*중에)?.{0,12}(?:제일|가장)\s*높은",
]

# When: a time set for it.
TIME = [
    r"\btonight(?:'s\s+the\s+night)?\b|\bbefore\s+(?:morning|tomorrow|tonight|the\s+weekend)\b|\bafter\s+(?:this|the)\s+weekend\b",
    r"\bafter\s+my\s+shift\b|\bthis\s+weekend\b",
    r"오늘\s*밤|오늘\s*(?:저녁|새벽)|(?:주말|이번\s*주)\s*(?:지나면|지나고|안에)|퇴근하고",
]

# Finality: not being around, no longer needing things, being free of worry or at rest.
FINALITY = [
    r"\b(?:a\s+)?burden\s+(?:to|on)\s+(?:every(?:one|body)|my\s+family|them|you\s+all|others)\b|\bsorry\s+for\s+being\s+a\s+burden\b|\bbetter\s+off\s+without\s+me\b|\blast\s+message\s+to\s+(?:anyone|everyone)\b",
    r"짐(?:만|이)?\s*(?:돼서|되어서|된\s*것\s*같|될\s*뿐)|(?:제가|내가)\s*남기는\s*마지막",
    r"\bfinally\s+(?:get\s+(?:to\s+)?)?(?:rest|some\s+(?:rest|peace)|at\s+peace|be\s+free)\b|\bget\s+some\s+peace\b|\b(?:won'?t|wont|will\s+not)\s+(?:be\s+)?need(?:ing)?\s+(?:any\s+of\s+)?(?:it|them|this|that|these)\b",
    r"\bnobody\s+(?:will\s+(?:have\s+to|need\s+to)\s+)?worr(?:y|ies)\s+about\s+me\b|\bi\s+won'?t\s+be\s+(?:here|around)\b|\b(?:it'?ll|it\s+will)\s+(?:all\s+)?be\s+(?:done|over)\s+(?:before|by)\b",
    r"\bnot\s+a\s+danger\s+to\s+anyone\s+but\s+myself\b|\bto\s+anyone\b.{0,10}\bmy\s+last\b|\bit'?s\s+quieter\s+up\s+here\b",
    r"(?:이제|드디어)\s*(?:좀|푹)?\s*쉴\s*수\s*있|필요\s*없(?:을|으니)|(?:아무도|다들|누구도)\s*(?:저|나|제)\s*(?:때문에|걱정)|걱정할\s*일\s*(?:없|도\s*없)|(?:제가|내가)\s*없(?:어지|으)면",
    r"준비(?:는|도)?\s*다\s*(?:끝났|됐|했)|(?:여기|위가)\s*조용해서\s*좋",
]

# Bleeding seen: black tarry or maroon stool, coffee-ground vomit, fresh blood in quantity.
GI_BLOOD = [
    r"\b(?:poo|poop|stools?|bowel\s+movements?|motions?|pad|nappy|diaper)\b.{0,40}\b(?:black|jet[- ]black|tarry|tar|maroon|dark\s+red)\b|\b(?:black|tarry|maroon|dark\s+red)\b.{0,25}\b(?:poo|poop|stools?|motions?)\b",
    r"\b(?:black|dark)\b.{0,25}\b(?:sticky|tarry|like\s+tar)\b|\blike\s+(?:black\s+)?tar\b|\bmaroon\b",
    r"\bcoffee[- ]grounds?\b|\blike\s+(?:used\s+)?coffee\b|\b(?:brown|black)\s+(?:gritty|grainy|sandy)\b|\bgritty\s+(?:brown|black|stuff)\b",
    r"\b(?:pure|fresh|bright\s+red|dark\s+red)\s+blood\b.{0,40}\b(?:toilet|loo|bowl|pan|bottom|back\s+passage|sink)\b|\b(?:toilet|bowl|loo)\b.{0,25}\b(?:full\s+of|filling\s+with|filled\s+with)\s+(?:\w+\s+)?blood\b",
    r"\blike\s+pure\s+blood\b|\bdark\s+red\b.{0,10}\bclots\b",
    r"\b(?:cupful|cup|mouthful|bowlful|pint)\s+of\s+(?:fresh\s+|bright\s+|dark\s+)?(?:red\s+)?blood\b",
    r"\bpass(?:ed|ing)\s+(?:a\s+lot\s+of\s+|lots\s+of\s+)?(?:bright\s+red\s+|dark\s+red\s+|fresh\s+)?blood\s+from\s+(?:my|his|her)\s+(?:bottom|back\s+passage|rectum)\b",
    r"(?:변|똥|대변|기저귀).{0,20}(?:짜장|타르|시커멓|새까맣|까맣|검붉|흑색|검은색)|(?:짜장|타르|시커멓|새까맣|검붉은)\s*(?:같은|처럼)?\s*(?:변|똥|대변|게)",
    r"커피\s*(?:찌꺼기|가루|색)|흑갈색.{0,15}(?:토|구토)|(?:검붉은|검붉고).{0,15}(?:덩어리|피)",
    r"(?:변기|화장실).{0,15}(?:피(?:가|로)?\s*(?:가득|잔뜩|차|흥건)|피만\s*나)|피만\s*나왔|(?:선홍색|새빨간|빨간|시뻘건)\s*피(?:가|를)?.{0,15}(?:가득|잔뜩|한\s*컵|콸콸|쏟|변기)|피를\s*(?:한\s*컵|한\s*바가지|잔뜩)",
]

# Signs of shock or of blood loss that matters: fainting or near-fainting on standing, a
# racing heart, cold sweat, pale or grey skin, cold hands, breathing fast, too weak to stand.
SHOCK = [
    r"\b(?:nearly|almost|about\s+to)\s+(?:blacked|black|passed|pass|fainted|faint|collapsed|collapse|keeled)\b|\b(?:blacked|passed)\s+out\b|\bfaint(?:ed|ing)?\b|\bwoozy\b|\blight-?headed\b|\bdizz(?:y|iness)\b",
    r"\bheart\b.{0,20}\b(?:pounding|racing|hammering|beating\s+(?:so\s+)?fast)\b|\b(?:pounding|racing)\s+heart\b",
    r"\bclammy\b|\bcold\s+sweat\b|\b(?:drenched|pouring)\s+(?:in|with)\s+sweat\b|\bsweaty\b|\b(?:very|really|so|deathly)\s+pale\b|\b(?:gone|went|is|looks|he'?s|she'?s|i'?m)\s+(?:all\s+)?(?:grey|gray|ashen|pale|white)\b",
    r"\b(?:hands|feet|skin)\s+(?:are|is|feel|feels|gone)\s+(?:ice\s+)?cold\b|\bcold\s+and\s+clammy\b|\bbreathing\s+(?:fast|quickly|rapidly)\b|\bshaky\b|\bfeel(?:s|ing)?\s+faint\b",
    r"어지러|어지럽|어질어질|핑\s*돌|눈앞이\s*(?:하얘|캄캄|깜깜|노래)|주저앉|쓰러질\s*뻔|(?:정신|의식)(?:을)?\s*잃을\s*뻔|기절할\s*(?:뻔|것)|쓰러지|기절",
    r"심장이\s*(?:너무\s*|막\s*|엄청\s*)?(?:쿵쾅|빨리|빠르게|두근|벌렁|터질)|가슴이\s*(?:두근|벌렁)",
    r"식은땀|땀(?:을|이)?\s*(?:흘리|흥건|뻘뻘|범벅|줄줄)|창백|하얗게\s*질|핏기(?:가)?\s*없|(?:손발|손|몸|피부)(?:이|가)?\s*(?:차갑|차가|싸늘|얼음)",
    r"숨(?:을)?\s*(?:가쁘게|가빠|헐떡)|기운이\s*(?:하나도\s*)?없|손이\s*떨려",
]

# A baby or child: lethargy and reduced responsiveness (NICE NG143 amber / red).
LETHARGIC = [
    r"\blistless\b|\blethargic\b|\brag\s*doll\b|\bjust\s+lies?\s+there\b|\bisn'?t\s+interested\s+in\s+anything\b|\bnot\s+interested\s+in\s+anything\b",
    r"\bonly\s+whimpers\b|\bno\s+energy\s+at\s+all\b|\bwon'?t\s+(?:smile|look\s+at\s+me)\b",
    r"누워만\s*(?:있|있고)|아무것(?:에)?도\s*관심(?:이|을)?\s*없|낑낑(?:거리기만|대기만)|헝겊\s*인형|흐느적|기운이\s*하나도\s*없",
]


SIGNS_INDIRECT: dict[str, list[str]] = {
    "farewell": FAREWELL,
    "gratitude": GRATITUDE,
    "unreachable": UNREACHABLE,
    "at_the_edge": AT_THE_EDGE,
    "giving_away": GIVING_AWAY,
    "means_at_hand": MEANS,
    "intent_time": TIME,
    "finality": FINALITY,
    "gi_blood": GI_BLOOD,
    "shock": SHOCK,
    "lethargic": LETHARGIC,
}
"""The signs above by name (merged into :data:`core.safety.signs.SIGNS`)."""
