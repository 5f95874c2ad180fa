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

_MEDS_EN = (r"(?:pills|tablets|meds|medication|medicine|morphine|insulin(?:\s+pens)?|paracetamol|painkillers|"
            r"sleeping\s+(?:pills|tablets)|antidepressants|codeine|oxy\w*|tramadol)")
_MEDS_KO = r"(?:약|알약|수면제|진통제|타이레놀|안정제|인슐린(?:\s*펜)?|마약성\s*진통제|항우울제|약통|약병)"

# Farewell: goodbye notes and letters, last messages, goodbyes said, a funeral arranged.
FAREWELL = [
    r"\bgoodbye\s+(?:letters?|notes?|messages?|texts?|posts?|videos?|cards?)\b|\bposted\s+(?:a\s+)?goodbye\b|\b(?:said|saying|written|wrote|writing)\s+(?:my\s+|his\s+|her\s+|their\s+)?(?:goodbyes?|byes)\b|\b(?:wr[io]te|written|writing)\s+(?:to\s+)?every(?:one|body)\s+(?:a\s+)?(?:letter|note)\b",
    r"\b(?:letters?|notes?|envelopes?|messages?|cards?)\b.{0,40}\b(?:each\s+of|every(?:one|body)|all\s+of|the\s+kids|my\s+(?:family|kids|children|parents|wife|husband|partner|friends|mum|mom|dad|son|daughter|sister|brother))\b",
    r"\bevery(?:one|body)(?:'s)?\s+(?:has|have|got|gets|will\s+get)\s+(?:got\s+)?(?:their|a|my)\s+(?:letter|note)\b|\b(?:the|my)\s+(?:letters?|notes?)\s+(?:is|are)\s+(?:sealed|written|ready|done|on\s+the\s+\w+)\b",
    r"\bleft\s+(?:a|my|the)\s+note\s+(?:saying|for|on)\b|\b(?:my\s+)?last\s+(?:messages?|texts?|posts?|words|letters?)\b(?!\s+(?:was|were)\s+(?:about|from))",
    r"\bsee\s+you\s+on\s+the\s+other\s+side\b|\b(?:instructions|plans|songs?)\s+for\s+my\s+funeral\b|\bjust\s+wanted\s+(?:someone|somebody|anyone|you)\s+to\s+know\b|\bjust\s+wanted\s+to\s+tell\s+(?:someone|somebody|anyone)\b",
    r"(?:편지|메모|쪽지|유서|메시지)(?:를|도|는)?.{0,20}(?:써\s*(?:서|놨|놓|뒀|두고|둔)|남기|남겼|봉해|올려놨|넣어|다\s*썼|받을|받게|준비)|(?:편지|메모|유서)(?:는|가)?\s*(?:식탁|책상|침대|베개|현관)\s*위에|(?:한\s*명씩|한\s*사람씩|가족들한테|가족에게|모두에게|모두한테|다들).{0,20}(?:편지|메모|메시지)",
    r"\b(?:say|said)\s+(?:bye|goodbye)\s+to\s+(?:someone|somebody|anyone)\b|\bone\s+last\s+(?:chat|talk|message|call)\b|\bjust\s+wanted\s+to\s+(?:tell\s+(?:someone|somebody|anyone)\s+)?(?:say\s+)?(?:bye|goodbye)\b"
    r"|\b(?:good\s*)?night\s+(?:forever|for\s+good)\b|\bgood\s*bye\s+(?:forever|for\s+good)\b|\blove\s+you,?\s+(?:bye|goodbye)\b|\bnote\b.{0,40}\bsorry\b|\bsorry\b.{0,25}\bnote\b",
    r"(?:누구|누군가|아무)(?:한테|에게)(?:라도|나)?\s*.{0,15}(?:인사|안녕|고맙다고|잘\s*있으라고)|잘\s*자\s*영원히|영원히\s*안녕|이제\s*안녕|사랑해\s*안녕"
    r"|(?:미안|잘\s*있어|안녕).{0,20}(?:쪽지|메모|포스트잇|편지)|(?:쪽지|메모|포스트잇)(?:를|을)?.{0,20}(?:미안|잘\s*있어|안녕)",
    r"작별\s*(?:인사|글|편지)|작별하|마지막\s*(?:메시지|인사|글|문자|편지)|인사(?:도|는)?\s*다\s*(?:했|함|하고|드렸)|다음\s*생에|장례식|누군가(?:는|한테|에게)?\s*(?:알았으면|말하고\s*싶었)",
]

# Thanks, apologies and love said as an ending (weaker alone: people thank a chatbot too).
GRATITUDE = [
    r"\bthank(?:s|ing|ed)?\s+(?:you\s+|us\s+|her\s+|him\s+|every(?:one|body)\s+)?(?:\w+\s+)?for\s+(?:all\s+)?(?:everything|the\s+help|the\s+chats?|being\s+there|being\s+my\s+friend)\b|\bthanking\s+(?:every(?:one|body)|us)\b|\bjust\s+want(?:ed)?\s+to\s+(?:thank|say\s+thank)",
    r"\bsorry\s+for\s+(?:everything|all\s+the\s+trouble)\b|['\"]?i'?m\s+sorry['\"]?\s*(?:,|\.)?\s*$|\blook\s+after\s+(?:\w+\s+){1,2}for\s+me\b|\bi\s+love\s+you\s+all\b|\bsaid\s+(?:he|she)\s+loves?\s+(?:me|us)\b|\bwas\s+a\s+good\s+friend\b",
    r"그동안.{0,15}(?:고마웠|고마워|감사했|미안했)|고맙다고\s*(?:하|보내|했)|(?:잘|꼭)\s*부탁(?:한다|해)|사랑한다고?\s*(?:하|문자|메시지|톡)|미안(?:해|하다|해요)['\"]?",
]

# Cannot be reached: phone off, gone from home, locked in, not answering.
UNREACHABLE = [
    r"\b(?:his|her|their)\s+phone\s+(?:is|'s|has\s+been)\s+(?:off|switched\s+off|dead)\b|\b(?:his|her|their)\s+car'?s\s+gone\b|\b(?:his|her|their)\s+car\s+is\s+gone\b|\btook\s+the\s+car\b|\bnot\s+(?:at\s+)?(?:home|his\s+flat|her\s+flat)\b",
    r"\blocked\s+(?:herself|himself|themselves)\s+in\b|\blocked\s+in\s+the\b|\b(?:door|room)\s+(?:is\s+)?locked\b|\bwon'?t\s+(?:let\s+(?:me|us)\s+in|open\s+the\s+door)\b|\bhung\s+up\b",
    r"\b(?:not|isn'?t|won'?t|stopped)\s+(?:answering\s+(?:(?:his|her|their|the)\s+)?(?:phone|calls|texts|anyone|us|the\s+door)|answering\s*$|picking\s+up|replying|responding\s+to\s+(?:texts|calls|messages))\b|\bwon'?t\s+reply\b|\bnot\s+answering\s+(?:and|but)\b|\bcan'?t\s+(?:reach|get\s+hold\s+of)\b|\bno\s+(?:answer|reply)\b|\b(?:been\s+)?gone\s+(?:for\s+)?(?:two|three|four|\d+)\s+hours\b|\bgone\s+out\b",
    r"(?:전화기|휴대폰|핸드폰|폰)(?:를|을|도)?\s*(?:꺼\s*놨|꺼져|꺼\s*놓|끄고)|차(?:도|가|를)?\s*(?:없어졌|가지고\s*나)|연락(?:이|도)?\s*(?:안\s*(?:돼|되|닿|받)|두절)|(?:전화|연락)(?:를|도)?\s*안\s*받|답(?:이|장이|도)?\s*없",
    r"대답(?:이|도)?\s*없|집에(?:도)?\s*(?:안\s*계세|안\s*들어|없)|문(?:을)?\s*(?:잠그|잠갔|잠궜|잠가|안\s*열어)|전화를\s*끊|나간\s*지",
]

# Giving things away, settling affairs, ending contracts.
GIVING_AWAY = [
    r"\b(?:gave|giving|given|give)\s+(?:away\s+)?(?:my|all\s+my|his|her|their|each\s+of\s+us)\s+(?:\w+\s+){0,3}(?:to|away)\b|\bgave\s+(?:away\s+)?(?:his|her|my)\s+(?:favourite|favorite|best)\b|\bgave\s+(?:his|her|my)\s+\w+\s+away\b|\bgave\s+(?:it|them|everything)\s+(?:all\s+)?away\b",
    r"\b(?:has|have|had|been)\s+given\s+away\b|\bgave\s+(?:me|us|each\s+of\s+us)\s+(?:his|her|their)\s+\w+\b|\bleft\s+(?:his|her|their)\s+(?:dog|cat|pets?)\s+with\b|\brehom(?:ed|ing)\s+my\b|\bwho\s+(?:gets|will\s+get|should\s+(?:get|have)|inherits)\s+(?:my|all\s+my)\b|\bgave\s+my\s+(?:dog|cat|pets?)\s+to\b|\bin\s+kennels\s+for\s+good\b",
    r"\b(?:put(?:ting)?|got|getting)\s+my\s+affairs\s+in\s+order\b|\bpaid\s+(?:off\s+)?(?:what\s+i\s+owe|my\s+debts?|my\s+rent\s+to\s+the\s+end)\b|\bcancell?(?:ed|ing)\s+(?:my\s+|everything\b)(?:phone|contract|subscriptions?|lease)?\b|\bthe\s+arrangements\s+are\s+made\b",
    r"\b(?:updated|wrote|written|writing)\s+(?:my|a)\s+will\b|\bwhere\s+(?:his|her|my)\s+will\s+is\b|\binsurance\s+papers\b|\bemptied\s+my\s+(?:bank\s+)?account\b|\b(?:my|the)\s+passwords\b",
    r"(?:물건|짐|옷|책|게임|소지품|화분|액세서리|훈장|돈)(?:을|들을|이랑|과|까지)?.{0,15}(?:다\s*)?(?:나눠\s*주|나눠주|처분|줬|주셨|주고)|(?:고양이|강아지|개)(?:는|를)?.{0,10}(?:보내|맡기|줬|아주\s*보냈)",
    r"(?:휴대폰|핸드폰|폰|계약|다)\s*(?:을|도)?\s*해지|빚(?:도|을)?\s*다\s*갚|월세(?:도)?.{0,10}다\s*냈|누구(?:한테|에게)?\s*줄지|주변\s*정리|신변\s*정리|보험\s*(?:수익자|서류)|유언장|통장\s*돈",
]

# The means acquired or at hand (pills saved up or laid out, a rope, charcoal, a blade in the
# bath, a weapon gone from its place).
MEANS = [
    r"\b(?:stockpil\w*|sav(?:ed|ing)\s+up|hoard\w*)\s+(?:it|them)\b|\b(?:stockpil\w*|sav(?:ed|ing)\s+up|hoard\w*|collect(?:ed|ing)|count(?:ed)?\s+out|lined\s+up|laid\s+out)\b.{0,30}\b" + _MEDS_EN + r"|\b" + _MEDS_EN + r"\b.{0,25}\b(?:lined\s+up|counted\s+out|laid\s+out|are\s+ready|ready\s+for\s+(?:tonight|later)|for\s+later|next\s+to\s+(?:my\s+bed|the\s+(?:vodka|whisky|wine|bed)))\b",
    r"\b(?:bottle|box|boxes|pack|strip|tub)\s+of\s+(?:(?:my|his|her|\w+'s)\s+){0,2}(?:sleeping\s+)?(?:pills|tablets)\b.{0,40}\b(?:in\s+front\s+of\s+me|on\s+the\s+table|next\s+to\s+(?:me|my\s+bed)|vodka|whisky|whiskey|wine|for\s+later|to\s+the\s+car|saved)\b|\btaken\s+the\s+bottle\s+of\s+pills\b|\b(?:pills|tablets)\b.{0,20}\b(?:whisky|whiskey|vodka|wine|booze|the\s+note)\b|\b" + _MEDS_EN + r"\s+(?:are|is)\s+missing\b|\b\d+\s+(?:boxes|bottles|packs|strips)\s+(?:saved|stashed|hidden|put\s+by)\b|\bbought\s+(?:a\s+lot\s+of|loads\s+of|lots\s+of|several\s+(?:boxes|packs)\s+of)\s+" + _MEDS_EN,
    r"\b(?:the|a)\s+rope\s+(?:is|in|ready)\b|\bbought\s+(?:a\s+)?(?:length\s+of\s+)?(?:rope|charcoal|gun|shotgun)\b(?!\s+(?:ladder|swing|toy|lights?|bridge))|\bbeam\b.{0,30}\bhold\b|\brope\s+ready\b",
    r"\b(?:rifle|shotgun|gun|pistol)\b.{0,25}\b(?:is\s+gone|is\s+missing|isn'?t\s+in|not\s+in\s+the|gone\s+from)\b|\b(?:bath|tub)\s+with\s+a\s+(?:blade|razor)\b|\bcharcoal\b.{0,30}\b(?:tap\w*|seal\w*|windows)\b",
    _MEDS_KO + r"(?:을|를|도|은)?\s*(?:한\s*통|\d+\s*알|몇\s*십\s*알|세\s*상자|잔뜩)?.{0,12}(?:모아\s*(?:둔|놨|뒀|놓|두)|세어\s*놨|앞에\s*(?:놓|두)|줄\s*세워|준비(?:해\s*뒀|됐|햇|했)|옆에\s*(?:두|놓)|차에\s*가져다)|(?:안\s*먹고|몰래)\s*모아\s*(?:둔|놨|뒀)|모아\s*(?:둔|놓은|놨던)\s*" + _MEDS_KO + r"|찬장에\s*있던\s*약이\s*없어",
    r"\b(?:rope|cord|extension\s+(?:cord|lead|cable)|belt|cable|ligature|noose|hose(?:pipe)?)\b.{0,30}\b(?:in\s+(?:the|my|his|her)\s+(?:boot|trunk|garage|shed|loft|attic|wardrobe|van|car|bag|cupboard)|under\s+(?:his|her|my|the)\s+bed|fits\s+the\s+exhaust)\b|\b(?:found|there'?s)\s+(?:a\s+)?(?:new\s+)?rope\b|\bsorted\s+the\s+rope\b|\bmeasured\s+the\s+(?:beam|banister|loft\s+hatch)\b|\bgarage\s+locks\s+from\s+(?:the\s+)?inside\b",
    r"\b(?:rifle|shotgun|gun|pistol)\b.{0,30}\b(?:in\s+the\s+(?:shed|car|boot|garage|barn)|out\s+of\s+the\s+(?:safe|cabinet)|to\s+my\s+car|from\s+the\s+safe)\b|\b(?:took|moved|got|taken)\s+(?:his|her|my|the|dad'?s)\s+(?:shotgun|rifle|gun|pistol)\b|\b(?:weedkiller|pesticide|antifreeze|paraquat|poison)\b.{0,25}\b(?:under\s+the\s+sink|hidden|in\s+my\s+(?:bag|room))\b",
    r"\b(?:pills|tablets|meds)\s+(?:are\s+)?in\s+my\s+(?:bag|pocket|car)\b|\btook\s+all\s+the\s+(?:tablets|pills|meds)\s+from\b|\b(?:saved|hoarding|hoarded|stockpiled|saving)\s+(?:up\s+)?(?:his|her|my|their)\s+(?:\w+\s+)?(?:tablets|pills|meds)\b|\b(?:\w+'s\s+)?(?:pills|tablets|meds)\s+to\s+myself\b|\b(?:box\s+of\s+)?razor\s+blades\b|\bgot\s+the\s+blades\b"
    r"|\b(?:floor|crossing|car\s+park|bridge|platform|roof)\b.{0,30}\bno\s+(?:barrier|fence|railing)\b|\bno\s+(?:barrier|fence|railing)\s+(?:at|on)\s+(?:that|the)\b|\bwhich\s+train\s+passes\b|\bpicked\s+the\s+(?:spot|place|bridge|cliff)\b|\bthe\s+bridge\s+is\s+quiet\b",
    r"(?:트렁크|창고|차고|다락|옷장|침대\s*밑|차|베란다)(?:에|에서)\s*(?:새\s*)?(?:밧줄|줄|끈)|(?:밧줄|줄|끈)(?:은|는|을|를|도|이)?\s*(?:차\s*)?(?:트렁크|창고|차고|다락|옷장|가방|침대\s*밑)(?:에|에서)|(?:밧줄|줄|끈)(?:도|을|를)?\s*(?:샀|사\s*놨)|맞는\s*(?:끈|줄|호스)|안에서\s*잠기",
    r"\b(?:in|inside)\s+the\s+(?:car|van)\s+in\s+the\s+(?:garage|shed)\b.{0,40}\bengine\s+(?:running|on)\b|\bengine\s+running\b.{0,30}\b(?:garage\s+(?:door\s+)?(?:shut|closed)|in\s+the\s+garage)\b|차고.{0,20}(?:시동(?:을)?\s*(?:켜|걸)|배기가스)",
    r"\bbag\s+of\s+charcoal\b|\bgot\b.{0,20}\ba\s+rope\b|번개탄.{0,10}(?:사\s*놨|샀|사\s*뒀)|(?:다리|옥상|철로|선로)(?:에|에는)?\s*사람\s*(?:이\s*)?없",
    r"(?:사냥총|엽총|총)(?:이|을|은)?\s*(?:창고|차|트렁크|차고)에|(?:엽총|사냥총|총)(?:을|를)\s*꺼내|농약.{0,10}(?:숨겨|싱크대)|면도날(?:을|를|도)?\s*(?:몇\s*개|한\s*상자)?\s*(?:사|샀)|난간이?\s*없는|사람\s*없는지\s*봐\s*뒀|(?:선로|건널목|철로).{0,15}(?:시간|외웠|봐\s*뒀)"
    r"|약(?:은|을|도)?\s*(?:가방에\s*)?다\s*챙겼|집에\s*있는\s*약\s*다|(?:약|심장약|혈압약)(?:을|를)?\s*(?:안\s*(?:드시고|먹고)\s*)?모으|약\s*다\s*제\s*거",
    r"(?:끈|밧줄)(?:도|을)?\s*(?:준비|사\s*(?:놨|뒀|왔)|사서)|걸\s*(?:데|곳)(?:를|을)?\s*찾아|번개탄(?:을|도)?\s*(?:샀|사\s*왔|준비)|창문에\s*테이프|농약(?:병)?(?:이|을)?\s*(?:없어졌|사\s*왔|챙겨)|(?:총|엽총)(?:이|을)?\s*(?:장에\s*)?없|(?:면도칼|칼)\s*(?:들고|쥐고)\s*욕조",
]

MEANS.append(r"\b(?:photo|picture|pic|snap)\s+of\s+(?:a\s+)?(?:pile\s+of\s+|all\s+(?:her|his|their|the|my)\s+|the\s+)?(?:pills|tablets|meds|rope|charcoal|blades?|razors?)\b"
             r"|(?:약|알약|수면제|진통제|밧줄|번개탄|면도날|칼).{0,15}(?:사진|찍어\s*보내)")
"""A photo of the means sent to someone (pills piled up, a rope, charcoal)."""

# At the edge of a height, or choosing one high enough (enough alone).
AT_THE_EDGE = [
    r"\b(?:edge|ledge|railing|parapet)\s+of\s+(?:the|a|my)\s+(?:\w+[- ]?){0,2}(?:roof|bridge|car\s+park|building|cliff|balcony|platform)\b|\b(?:sitting|sat|standing)\s+on\s+the\s+(?:ledge|railing|parapet)\b|\bwhich\s+(?:overpass|bridge|building|cliff)\b.{0,30}\b(?:high|tall)\s+enough\b",
    r"\bclimbed\s+(?:over|past)\s+the\s+(?:railing|barrier|fence|parapet)\b|\b(?:at|near|on)\s+the\s+(?:platform\s+)?edge\b.{0,40}\b(?:train|cliff|drop|roof|waiting)\b|\bcliffs?\b.{0,30}\b(?:near|at|by)\s+the\s+edge\b|\blegs\s+(?:are\s+)?over\s+the\s+side\b",
    r"(?:옥상|다리|대교|베란다|육교)\s*(?:위\s*)?난간(?:이야|이에요|이예요|이다|에\s*(?:있|서|앉))|난간\s*(?:위|밖|바깥)(?:이야|이에요|에\s*있)|\bon\s+the\s+(?:ledge|railing|parapet)\s+(?:now|right\s+now)\b",
    r"(?:옥상|난간|다리|육교|베란다|승강장|절벽)\s*(?:위|끝|난간)?(?:에|에서)\s*(?:걸터)?(?:앉아|서\s*있|올라와|서서)|(?:육교|다리|건물|옥상)(?:\s*중에)?.{0,12}(?:제일|가장)\s*높은|난간을\s*넘어|다리를\s*밖으로|(?:절벽|벼랑|낭떠러지).{0,15}(?:끝에|가장자리)",
]

AT_THE_EDGE.append(r"\b(?:sat|sitting|lying|i'?m)\s+(?:\w+\s+){0,2}in\s+the\s+(?:car|van)\s+in\s+the\s+(?:closed\s+|shut\s+)?garage\b.{0,30}\bengine\s+(?:running|on)\b(?!.{0,20}\bwarm)"
                   r"|차고.{0,15}(?:차|차\s*안)(?:에|에서)\s*시동(?:을)?\s*(?:켜|걸)\s*(?:놓고|둔\s*채)")
"""Sitting in a car in a closed garage with the engine running: the means in use now (enough alone)."""

# At a place of jumping or of the railway, said as where one is now (weak alone: people take
# photos on bridges; with a farewell it is the "farewell plus location" warning sign).
AT_PLACE = [
    r"\b(?:i'?m|i\s+am|standing|sitting|sat|up)\s+(?:\w+\s+)?(?:on|at|by)\s+(?:the\s+)?(?:top\s+of\s+(?:the\s+|my\s+)?)?(?:bridge|roof|rooftop|cliff(?:\s*top|\s+edge)?|train\s+tracks|railway(?:\s+line)?|tracks|multi-?storey|car\s+park\s+roof)\b"
    r"|\b(?:pin|location|photo)\b.{0,25}\b(?:bridge|cliff|roof|car\s+park|tracks|railway)\b|\b(?:on|at)\s+the\s+(?:cliff\s*top|top\s+of\s+the\s+(?:multi-?storey|car\s+park|building))\b",
    r"(?:다리|대교|옥상|철길|철로|선로|절벽|주차타워\s*꼭대기|주차장\s*꼭대기|육교)\s*(?:위|옆|앞|끝)?\s*(?:(?:야|예요|이에요|이야)(?![가-힣])|에\s*(?:있어|와\s*있|서\s*있|올라와))"
    r"|(?:다리|대교|절벽|주차타워|옥상|철길)(?:\s*꼭대기)?\s*(?:위치|사진)",
]

# When: a time set for it.
TIME = [
    r"\btonight(?:'s\s+the\s+night)?\b|\bbefore\s+(?:morning|tomorrow|tonight|the\s+weekend)\b|\bby\s+(?:morning|monday|then)\b|\bafter\s+(?:this|the)\s+weekend\b|\bafter\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\bthis\s+weekend\b|\bafter\s+my\s+shift\b",
    r"\bwhen\s+the\s+house\s+is\s+empty\b|\bchosen\s+the\s+date\b|\bfrom\s+tomorrow\b|\btoday'?s\s+the\s+day\b|\bton(?:ite|ight)\b|\b2nite\b|\btonight\s+feels\s+different\b",
    r"\b(?:on\s+|this\s+|next\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?:\s+(?:morning|night|evening|afternoon))?\b|\btomorrow\s+(?:evening|night|after\s+work|morning)\b|\bafter\s+(?:work|midnight|the\s+party|my\s+(?:last\s+)?shift)\b|\bwaiting\s+for\s+the\s+night\b|\bthe\s+date\b|\bwhich\s+day\b",
    r"\bwhen\s+(?:every(?:one|body)(?:'s|\s+is)?|nobody'?s|no\s*one'?s|they(?:'re|\s+are)\s+all|the\s+kids\s+are|the\s+tide|we'?d\s+all\s+be|(?:my\s+|his\s+|her\s+)?(?:wife|husband|mum|mom|dad|flatmate|partner|folks|parents|carer)\s+(?:takes|goes|go|leaves|is|are|doesn'?t))\b|\bonce\s+(?:the\s+kids\s+are\s+asleep|(?:my\s+)?\w+\s+leaves)\b|\b(?:house|flat|place)\s+(?:will\s+be\s+|is\s+)?(?:empty|mine)\b|\bhave\s+the\s+house\b|\bthe\s+house\s+to\s+myself\b|\bempty\s+house\b|\bfrom\s+\d{1,2}\s*(?:am|pm)\b|\bat\s+\d{1,2}[:.]\d\d\b|\bwhat\s+time\s+we\s+leave\b|\bthey\s+are\s+all\s+asleep\b",
    r"[월화수목금토일]요일|집(?:이)?\s*(?:비면|비어|비는)|혼자\s*(?:있을|예요|일\s*때)|(?:다들|가족들|모두|우리)\s*.{0,12}(?:가면|나가면|가고|출근하면|자면|나가냐)|애들\s*재우고|(?:출근|퇴근)\s*(?:하면|끝나고)|야간\s*근무|자정|막차|오후\s*\S+\s*시부터|날짜(?:도|를)?\s*정했|(?:안\s*오는|비는)\s*날|언제\s*.{0,10}(?:가냐|가요|가세요)|가는\s*(?:시간|날)|돌아오기\s*전|마지막\s*출근|여행\s*가(?:는|시는)\s*(?:날|목요일|금요일)",
    r"오늘\s*밤|오늘\s*(?:저녁|새벽)|오늘이\s*그날|(?:주말|이번\s*주|[월화수목금토일]요일)\s*(?:지나면|지나고|안에|이후)|이번\s*주말|오늘\s*안에|퇴근하고|집이\s*비면|날짜(?:를|도)?\s*정했|내일부터는|몇\s*시에\s*갈지|아침이\s*오기\s*전|오늘(?:은|이)?\s*(?:느낌이\s*)?(?:다르|달라)",
]

# Finality: not being around, no longer needing things, others free of them, at rest.
FINALITY = [
    r"\b(?:a\s+)?burden\b|\bbetter\s+off\s+without\s+me\b|\bbetter\s+(?:off\s+)?if\s+i\s+(?:wasn'?t|weren'?t|wasnt|was\s+not)\s+(?:around|here)\b|\blast\s+message\s+to\s+(?:anyone|everyone)\b|\bfree\s+of\s+me\b|\bbetter\s+this\s+way\b|\bmade\s+(?:my|his|her|their)\s+peace\b",
    r"\bfinally\s+(?:get\s+(?:to\s+)?)?(?:rest|some\s+(?:rest|peace)|at\s+peace|be\s+free)\b|\bget\s+some\s+peace\b|\b(?:won'?t|wont|will\s+not)\s+(?:be\s+)?(?:need(?:ing)?|using)\s+(?:any\s+of\s+)?(?:it|them|this|that|these)\b|\bwhere\s+(?:i'?m|she'?s|he'?s|they'?re)\s+going\b",
    r"\bnobody\s+(?:will\s+(?:have\s+to|need\s+to)\s+)?worr(?:y|ies)\s+about\s+me\b|\b(?:won'?t|will\s+not)\s+have\s+to\s+(?:deal\s+with|worry\s+about|put\s+up\s+with|clean\s+up\s+after)\s+me\b|\bi\s+won'?t\s+be\s+(?:here|around)\b",
    r"\b(?:it'?ll|it\s+will|it\s+all|everything\s+will)\s+(?:all\s+)?be\s+(?:done|over)\b|\bit\s+ends\s+(?:tonight|today|here|now)\b|\bnot\s+a\s+danger\s+to\s+anyone\s+but\s+myself\b|\bit'?s\s+(?:very\s+|so\s+)?(?:quiet(?:er)?|calm|peaceful)\s+(?:up\s+)?here\b",
    r"(?:이제|드디어)\s*(?:좀|푹)?\s*쉴\s*수\s*있|쓸\s*일이\s*없|필요\s*없(?:을|으니|어요|다고)|(?:아무도|다들|누구도)\s*(?:저|나|제)\s*(?:때문에|걱정|뒷수습)|(?:저|나)\s*때문에\s*(?:힘들|고생|걱정할)\s*(?:일|사람)?\s*없|걱정할\s*일\s*(?:없|도\s*없)|(?:제가|내가)\s*없(?:어지|으)면|(?:다들|모두|가족들)(?:이)?\s*(?:더\s*)?편할",
    r"짐(?:만|이)?\s*(?:돼서|되어서|된\s*것\s*같|될\s*뿐|이라는|이다)|(?:제가|내가)\s*남기는\s*마지막|준비(?:는|도)?\s*다\s*(?:끝났|됐|했)|(?:여기|위가)\s*(?:조용해서|평온)|평온하네|이제\s*자유|마음\s*정리(?:를)?\s*다|(?:이게|이렇게)\s*(?:다\s*)?(?:나아|낫)|(?:끝이에요|끝이야|끝낼\s*거|끝냄|다\s*끝날|다\s*끝나\s*있)|마음이\s*놓여",
]

# Bleeding seen: black tarry or maroon stool, coffee-ground vomit, fresh blood in quantity.
GI_BLOOD = [
    r"\b(?:poo|poop|stools?|bowel\s+movements?|motions?|pad|nappy|diaper)\b.{0,40}\b(?:black|jet[- ]black|tarry|tar|maroon|dark\s+red|purple|purple-red)\b|\b(?:black|tarry|maroon|dark\s+red)\b.{0,25}\b(?:poo|poop|stools?|motions?)\b",
    r"\b(?:black|dark)\b.{0,25}\b(?:sticky|tarry|like\s+tar)\b|\blike\s+(?:black\s+)?tar\b|\btar-like\b|\bmaroon\b",
    r"\bcoffee[- ]grounds?\b|\blike\s+(?:used\s+)?coffee\b|\b(?:dark\s+brown|brown|black)\s+(?:gritty|grainy|sandy|granules|grains|bits|specks)\b|\bgritty\s+(?:brown|black|stuff)\b",
    r"\b(?:pure|fresh|bright\s+red|dark\s+red)\s+blood\b.{0,40}\b(?:toilet|loo|bowl|pan|bottom|back\s+passage|sink)\b|\b(?:toilet|bowl|loo|pan)\b.{0,25}\b(?:full\s+of|filling\s+with|filled\s+with)\s+(?:\w+\s+){0,3}blood\b|\blike\s+pure\s+blood\b|\bblood\b.{0,20}\bfill(?:s|ed|ing)?\s+(?:up\s+)?the\s+(?:toilet|bowl|pan)\b",
    r"\b(?:lot|lots|loads|large\s+amount|amount)\s+of\s+(?:fresh\s+|dark\s+red\s+|bright\s+red\s+)?blood\s+(?:and|with)\s+clots\b|\bdark\s+red\b.{0,10}\bclots\b|\b(?:vomit\w*|sick|threw\s+up)\b.{0,20}\b(?:clots|dark\s+red)\b",
    r"\b(?:cupful|cup|mouthful|mugful|bowlful|pint)\s+of\s+(?:fresh\s+|bright\s+|dark\s+)?(?:red\s+)?blood\b|\b(?:bringing|brought|chucking)\s+up\s+(?:\w+\s+){0,2}blood\b|\b(?:vomit\w*|threw\s+up)\b.{0,45}\b(?:lot|lots|loads)\s+of\s+(?:fresh\s+)?blood\b",
    r"\bpass(?:ed|ing)\s+(?:a\s+(?:lot|large\s+amount)\s+of\s+|lots\s+of\s+)?(?:bright\s+red\s+|dark\s+red\s+|fresh\s+)?blood\s+from\s+(?:my|his|her)\s+(?:bottom|back\s+passage|rectum)\b",
    r"(?:변|똥|대변|기저귀|stool).{0,20}(?:짜장|타르|시커멓|새까맣|까맣|검붉|흑색|검은색|적갈색|자주색)|(?:짜장|타르|시커멓|새까맣|검붉은)\s*(?:같은|처럼)?\s*(?:변|똥|대변|게)",
    r"커피\s*(?:찌꺼기|가루|색)|흑갈색.{0,15}(?:토|구토)|(?:검붉은|검붉고).{0,15}(?:덩어리|피)|(?:검은|까만|갈색|흑갈색)\s*(?:갈색\s*)?(?:알갱이|모래)|핏덩어리",
    r"(?:변기|화장실).{0,15}(?:피(?:가|로)?\s*(?:가득|잔뜩|차|흥건)|피만\s*나)|피만\s*나왔|(?:선홍색|새빨간|빨간|시뻘건|생)\s*피(?:가|를|랑)?.{0,15}(?:가득|잔뜩|한\s*컵|콸콸|쏟|변기|많이)|피를\s*(?:한\s*컵|한\s*바가지|잔뜩|꽤\s*많이)|생피",
]

# Signs of shock or of blood loss that matters: fainting or near-fainting on standing, a
# racing heart, cold sweat, pale or grey skin, cold hands, breathing fast.
SHOCK = [
    r"\b(?:nearly|almost|about\s+to)\s+(?:blacked|black|passed|pass|fainted|faint|collapsed|collapse|keeled)\b|\b(?:blacked|passed)\s+out\b|\bfaint(?:ed|ing)?\b|\bwoozy\b|\blight-?headed\b|\bdizz(?:y|iness)\b",
    r"\bheart\b.{0,20}\b(?:pounding|racing|hammering|beating\s+(?:so\s+)?fast)\b|\b(?:pounding|racing)\s+(?:heart|heartbeat|pulse)\b|\bpulse\b.{0,15}\b(?:fast|racing|weak|thready)\b",
    r"\bclammy\b|\bcold\s+sweat\b|\b(?:drenched|pouring)\s+(?:in|with)\s+sweat\b|\bsweat(?:y|ing)\b|\b(?:very|really|so|deathly)\s+pale\b|\b(?:gone|went|is|looks|he'?s|she'?s|i'?m|i\s+am)\s+(?:all\s+)?(?:grey|gray|ashen|pale|white)\b",
    r"\b(?:hands|feet|skin)\s+(?:are|is|feel|feels|gone)\s+(?:ice\s+)?cold\b|\bcold\s+and\s+clammy\b|\bbreathing\s+(?:fast|quickly|rapidly)\b|\bbreathless\b|\bshaky\b|\bshivery\b|\bfeel(?:s|ing)?\s+(?:faint|like\s+i'?ll\s+pass\s+out|like\s+passing\s+out)\b|\b(?:room|everything)\s+(?:goes|went|going)\s+(?:black|grey|gray|dark)\b|\breally\s+weak\b",
    r"어지러|어지럽|어질어질|핑\s*돌|눈앞이\s*(?:하얘|캄캄|깜깜|노래|까매)|정신이\s*아득|주저앉|쓰러질\s*(?:뻔|것)|(?:정신|의식)(?:을)?\s*잃을\s*뻔|기절할\s*(?:뻔|것)|쓰러지|쓰러졌|기절|dizzy",
    r"심장이\s*(?:너무\s*|막\s*|엄청\s*)?(?:쿵쾅|빨리|빠르게|두근|벌렁|터질)|가슴이\s*(?:두근|벌렁)|맥박이\s*(?:엄청\s*|너무\s*)?(?:빨라|빠르|약해)",
    r"식은땀|땀(?:을|이)?\s*(?:흘리|흥건|뻘뻘|범벅|줄줄|나)|창백|하얗게\s*질|핏기(?:가)?\s*없|(?:손발|손|몸|피부)(?:이|가)?\s*(?:차갑|차가|차고|싸늘|얼음)",
    r"숨(?:을|이)?\s*(?:가쁘게|가빠|가쁘|헐떡)|기운이\s*(?:하나도\s*)?없|손이\s*떨려|오한|떨고\s*있",
]

# A baby or child: lethargy and reduced responsiveness (NICE NG143 amber / red).
LETHARGIC = [
    r"\blistless\b|\blethargic\b|\brag\s*doll\b|\bjust\s+(?:lies?|lying)\s+there\b|\b(?:isn'?t|not)\s+interested\s+in\s+anything\b|\b(?:very|really|so|unusually|too)\s+(?:sleepy|drowsy|quiet|still)\b",
    r"\bonly\s+whimpers\b|\bno\s+energy\s+at\s+all\b|\bwon'?t\s+(?:smile|look\s+at\s+me)\b|\bbarely\s+respond\w*|\bfalling\s+asleep\s+(?:mid-?feed|during\s+feeds?|at\s+the\s+breast)\b|\bsleeping\s+through\s+(?:feeds|feeding\s+times)\b",
    r"누워만\s*(?:있|있고)|아무(?:것에|것|\s*데)도\s*관심(?:이|을)?\s*없|낑낑(?:거리기만|대기만)|헝겊\s*인형|흐느적|흐물흐물|기운이\s*하나도\s*없|반응이\s*(?:별로|거의)\s*없|(?:너무|계속|자꾸)\s*(?:졸려|자고|잠만)|먹다가\s*(?:자꾸\s*)?잠들|수유\s*시간에도\s*(?:계속\s*)?자",
]


SIGNS_INDIRECT: dict[str, list[str]] = {
    "farewell": FAREWELL,
    "gratitude": GRATITUDE,
    "unreachable": UNREACHABLE,
    "giving_away": GIVING_AWAY,
    "means_at_hand": MEANS,
    "at_the_edge": AT_THE_EDGE,
    "intent_time": TIME,
    "at_place": AT_PLACE,
    "finality": FINALITY,
    "gi_blood": GI_BLOOD,
    "shock": SHOCK,
    "lethargic": LETHARGIC,
}
"""The signs above by name (merged into :data:`core.safety.signs.SIGNS`)."""
