"""The words question understanding reads (app/domain/understanding.py), in English and Chinese.

Every pattern runs on the normalized question: NFKC (full-width digits and punctuation become ASCII),
lowercase, curly apostrophes straight. Kept small and reviewed: a word added here changes the
intent of every question containing it, so each addition comes with a case in tests/data.
"""

from __future__ import annotations

import re

from app.domain.vocabulary import Intent

# "pay to clear the balance", "paid for it": a verb after "pay to" is a purpose, not a merchant.
_TO_VERB = r"(?:clear|avoid|settle|cover|get|keep|stop|bring|reduce|close|make|be|have|not|pay|finish|zero)\b"

# Intent signals in precedence order: inside one clause the first that matches decides. Requests
# nobody here may serve come first; fees before payment ("late payment fee"); a comparison before
# payment ("why do I owe more although I paid"); a payment *to a merchant* is a charge.
SIGNALS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    (
        "out_of_scope",
        re.compile(
            r"\b(?:credit\s+limit|(?:raise|increase|higher|lower)\s+(?:my\s+)?limit|limit\s+increase|loans?|mortgage"
            r"|password|passcode|pin|log\s?in|sign\s+in|address|phone\s+number|weather|invest\w*|stocks?|crypto"
            r"|bitcoin|lost\s+(?:my\s+)?card|stolen|block\s+(?:my\s+)?card|freeze|frozen|cancel\s+(?:my\s+)?card"
            r"|close\s+(?:my\s+)?account|new\s+card|replace\w*\s+(?:my\s+)?card|rewards?|points|miles|cash\s?back"
            r"|insurance|exchange\s+rate|joke|poem|who\s+are\s+you|are\s+you\s+(?:a\s+)?(?:bot|robot|human|real)"
            r"|open\s+an\s+account|balance\s+transfer|instal+ments?|overdraft|complain\w*|complaint)\b"
            r"|额度|提额|贷款|借钱|借款|房贷|车贷|密码|登录|登陆|地址|手机号|天气|投资|理财|基金|股票|比特币|挂失|卡丢"
            r"|被盗|冻结|锁卡|注销|销户|换卡|补卡|积分|里程|返现|保险|汇率|笑话|你是谁|机器人|真人吗|开户|分期|取现|投诉"
        ),
    ),
    # Paying so as to avoid a fee asks about the payment ("the minimum to pay to avoid a late fee").
    (
        "payment",
        re.compile(
            r"\b(?:pay|paid|payment|repay\w*|minimum|min)\b.*\b(?:avoid\w*|so\s+(?:i|that\s+i)\s+(?:don'?t|do\s+not|won'?t))\b"
            r".*\b(?:fees?|interest|penalt(?:y|ies)|charges?)\b|还.*(?:避免|以免|免得|才不会|才能不|不会产生).*(?:费|利息|滞纳金|罚息)"
        ),
    ),
    (
        "fees_interest",
        re.compile(
            r"\b(?:fees?|interest|intrest|interst|intrst|apr|penalty|penalties|surcharge)\b"
            r"|(?<![消扣花油话免])费|利息|违约金|罚息|滞纳金"
        ),
    ),
    (
        "bill_change",
        re.compile(
            r"\b(?:higher|lower|increase[ds]?|decrease[ds]?|(?:went|gone|go|goes|going)\s+(?:up|down)|dropped"
            r"|jump(?:ed)?|spike[ds]?|doubled|expensive|so\s+(?:much|high|big)|bigger|larger|smaller|differen(?:t|ce)"
            r"|compared|more\s+than|less\s+than|(?:pay|paying|owe|owing|spent|spend|cost|costs|is|was)\s+"
            r"(?:a\s+lot\s+|way\s+|much\s+)?(?:more|less))\b"
            r"|多了|少了|变多|变少|涨|高了|低了|贵|增加|减少|不一样|变了|变化|这么多|这么高|那么多|好多|差别|差额|比上"
        ),
    ),
    (
        "charge",
        re.compile(
            r"\b(?:payment|paid|pay|paying)\s+(?:to|at|for)\s+(?!you|the\s+bank|my\s+(?:bill|card|account)|it\b|"
            + _TO_VERB
            + r")"
            r"|\b(?:don'?t|do\s+not|not|never)\s+(?:recogni[sz]e|know|remember)|\bunknown\b|\bnever\s+(?:made|bought|signed)"
            r"|\bdidn'?t\s+(?:make|buy|order|sign)|\bwho\s+is\b|\bwtf\s+is|\bcharged\s+twice|\bdouble\s+charged"
            r"|不认识|没印象|没买过|不是我|谁扣|哪家"
        ),
    ),
    (
        "payment",
        re.compile(
            r"\b(?:pay|paid|payment|payments|paymnet|pyment|pymt|repay\w*|due|overdue|minimum|min|arrived?|arrives"
            r"|received?|recieved?|recieve|went\s+through|go\s+through|gone\s+through|credited|deadline|autopay"
            r"|direct\s+debit|transfer(?:red)?|unpaid|(?:get|got|receive)\s+my\s+money|sent|settle[ds]?"
            r"|clear(?:ed|ing)?\s+(?:off\s+)?(?:the\s+|my\s+)?(?:whole\s+|full\s+|entire\s+)?(?:balance|bill|debt|card|it))\b"
            r"|还款|还钱|要还|哪天还|几号还|什么时候还|还了|已还|未还|还清|还多少|最少还|最低还|最晚|最迟|到账|到期|逾期"
            r"|缴费|付款|收到|截止|转账|钱到|还的钱|没到|到了吗|到了没"
        ),
    ),
    (
        "charge",
        re.compile(
            r"\b(?:charges?|charged|charging|transactions?|purchases?|merchant|debit(?:ed)?|bought|buy|subscription)\b"
            r"|这笔|那笔|消费|扣款|扣费|交易|商户|买了|买的"
        ),
    ),
    (
        "bill_change",
        re.compile(
            r"\b(?:bills?|bil|statements?|statment|balance|owe|total|this\s+month|last\s+month)\b"
            r"|账单|余额|本月|这个月|上个月|上月|本期|这期|总共|一共|花了"
        ),
    ),
    ("charge", re.compile(r"\bwhat(?:'s|s|\s+is|\s+was)\s+(?:this|that|the)\b|是什么|是啥")),
)

# A question about how the bank works rather than about this statement ("how is interest calculated?",
# "what happens if I only pay the minimum?", "年费能不能免"): the bank's help content answers it when one
# of its passages fits (app/domain/knowledge.py). Not "怎么多了" (why is it more: a bill change).
GENERAL = re.compile(
    r"\bhow\s+(?:do|does|can|could|is|are|would|will|should|long|soon|often|to)\b|\bwhat\s+(?:happens|if)\b"
    r"|\bcan\s+i\b|\bis\s+there\s+(?:an?|any)\b|\bdo\s+you\s+(?:charge|have|offer)\b|\bpolicy\b"
    r"|如何|怎么(?!回事|多|少|这么|那么|又|变|涨|高|低)|怎样|多久|会怎样|会怎么样|能不能|能否|可以.{0,10}吗|有没有|咋"
)

# "why is my bill higher and did my payment arrive": each clause is read on its own; the first one
# asked that this assistant can answer decides (documented in docs/understanding.md).
CLAUSE = re.compile(r"[?!;\n。！；，]+|[.,](?!\d)|\b(?:and|also|plus|but)\b|另外|以及|并且|而且|同时")

HANDOVER = re.compile(
    r"\b(?:speak|talk|chat|connect|transfer|put|get|want|need|give|let)\b.*\b(?:human|humans|person|people|agent"
    r"|representative|rep|operator|someone|somebody|staff|advisor|adviser|manager|supervisor)\b"
    r"|^\W*(?:(?:please|pls|plz)\s+)?(?:an?\s+)?(?:human|agent|operator|representative|live\s+chat)"
    r"(?:\W+(?:please|pls|plz|now|asap|thanks|thx))*\W*$|\b(?:real|live|actual)\s+(?:person|human|agent)\b"
    r"|人工(?!智能)|真人|找客服|联系客服|转客服|客服人员|转接"
)
# Asking about the assistant, or declining a person, is not asking for one.
NOT_HANDOVER = re.compile(
    r"\b(?:are\s+you|r\s+u|is\s+this|am\s+i\s+talking\s+to)\b|\b(?:don'?t|do\s+not|no\s+need)\b.*\b(?:human|agent|person)"
    r"|你是|不用|不要|不需要"
)

# Saying thanks or ok is no question: nothing is taken from the context for it.
ACKNOWLEDGEMENT = re.compile(
    r"^\W*(?:ok|okay|k|kk|thanks?|thank\s+you|thx|ty|cheers|great|cool|got\s+it|perfect|nice|alright|bye|goodbye"
    r"|好的?|谢谢|多谢|明白了?|知道了|嗯+|行|可以|再见|拜拜)\W*$"
)

# A question that only makes sense after another: it takes its intent and subjects from the context.
ELLIPTICAL = re.compile(
    r"\b(?:why|how\s+come|and|really|anything\s+else|what\s+else|any\s+others?|is\s+that\s+(?:it|all|the\s+only)"
    r"|only\s+reason|explain|details?|tell\s+me\s+more|go\s+on|what\s+about|how\s+about"
    r"|avoid\w*|waive[ds]?|get\s+rid\s+of|prevent|again|repeat|by\s+when|how\s+much)\b"
    r"|为什么|为啥|怎么回事|还有别的|还有吗|还有其他|别的呢|就这个|就这些|只有这个|详细|具体|说说|免|避免|呢\W*$"
    r"|再说|重复|多少|几号|哪天"
)
# "and the interest?", "那年费呢", "and the minimum?": the question goes on from the previous turn.
CONTINUATION = re.compile(r"^\W*(?:and|so|then|what\s+about|how\s+about)\b|^\W*那|呢\W*$")
# "the other coffee one", "另一笔咖啡": of the lines a mention fits, the one the context was not about.
OTHER = re.compile(r"\b(?:other|another)\b|另一|另外一|别的")
# Words that point back at what the previous turn was about.
ANAPHOR = re.compile(r"\b(?:it|that|this|those|these|them|they)\b|它|这笔|那笔|这个|那个|这些|那些")
# "what about last month?": the same question about the statement before.
PREVIOUS = re.compile(
    r"\b(?:last|previous|prior)\s+(?:month|statement|bill|period)(?:'s)?|\bmonth\s+before\b|上个月|上月|上期|上一期"
)
PREVIOUS_ASK = re.compile(r"\b(?:what|how)\s+about\b|^(?:\W|and|for|the|so)*$|\bsame\b|呢|^\W*那?\W*$")

# Amounts that point at a line ("the 12 euro one", "12.00 那笔", "那笔12块的"), not at a difference
# ("my bill is 12 higher", "账单多了12元"): a number counts only next to such a marker.
_UNIT = r"(?:euros?|eur|dollars?|bucks|quid|pounds?|usd|gbp|rmb|yuan|元|块钱?|欧元?|美元)?"
_NUMBER = r"[$€£¥]?\s*(\d{1,7}(?:[.,]\d{1,2})?)\s*" + _UNIT + r"(?![a-z0-9])"  # not "the 3rd"
AMOUNT_REFERENCES = (
    re.compile(r"\b(?:the|that|this|a|an|of|for)\s+" + _NUMBER),
    re.compile(_NUMBER + r"\s*(?:one|charge|transaction|purchase|payment|debit|thing)\b"),
    re.compile(_NUMBER + r"\s*的?\s*(?:那笔|这笔|那个|这个|是什么|是啥|扣款|消费|呢)"),
    re.compile(r"(?:那笔|这笔|那个|这个|笔)\s*" + _NUMBER),
    re.compile(r"^\W*" + _NUMBER + r"\s*\?+\W*$"),  # "1299???" asks about that amount; a bare "12.00" does not
)
# A kind of line named by its kind ("why am I paying interest", "all these fees"): every line of that
# kind, when no line of it is named otherwise ("the late fee" is that one only).
KINDS: dict[str, re.Pattern[str]] = {
    "interest": re.compile(r"\b(?:interest|intrest|interst|intrst)\b|利息"),
    "fee": re.compile(r"\bfees?\b|费用"),
}

# Small and reviewed: category -> (words a customer uses, words found in the labels of that kind).
CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "coffee": (
        ("coffee", "coffees", "cafe", "café", "latte", "咖啡"),
        ("cafe", "café", "coffee", "starbucks", "costa", "luckin", "星巴克", "瑞幸", "咖啡"),
    ),
    "gym": (("gym", "fitness", "workout", "健身"), ("gym", "fitness", "健身")),
    "groceries": (
        ("groceries", "grocery", "supermarket", "超市", "买菜"),
        ("mart", "supermarket", "tesco", "lidl", "aldi", "walmart", "grocery", "超市", "盒马", "永辉"),
    ),
    "taxi": (
        ("taxi", "cab", "ride", "打车", "出租车"),
        ("uber", "taxi", "lyft", "bolt", "cab", "滴滴", "出行"),
    ),
    "streaming": (
        ("streaming", "视频会员", "视频"),
        ("netflix", "spotify", "disney", "爱奇艺", "腾讯视频", "优酷"),
    ),
    "delivery": (
        ("food delivery", "takeaway", "takeout", "delivery", "外卖"),
        ("deliveroo", "uber eats", "just eat", "meituan", "美团", "饿了么", "外卖"),
    ),
    "petrol": (("petrol", "gas", "fuel", "加油", "油费"), ("shell", "esso", "petrol", "fuel", "石化", "石油", "加油")),
}

# A further clause adds its intent to a multi-part question ("did my payment arrive, and why is my
# bill higher?") only through these: a bare "balance" or "what is this" in a later clause goes with
# the first clause's intent, as it always did.
SECONDARY = SIGNALS[:-2]

# What a question asks for besides its intent (app/domain/answer_policy.py makes each one a claim the
# answer must hold). Read on the whole normalized question.
NEEDS: dict[str, re.Pattern[str]] = {
    "amount_due": re.compile(
        r"\bhow\s+much\b(?!.*\b(?:more|less|higher|lower|bigger|smaller)\b)|\bminimum\b|\bmin\s+(?:payment|pay|due)\b"
        r"|\bamount\s+(?:due|to\s+pay|owed|owing)\b|还多少|多少钱|最低还|最少还|要还多少|还款额"
    ),
    "due_date": re.compile(
        r"\bwhen\b.*\b(?:pay|due|deadline)\b|\bby\s+when\b|\bdue\s+(?:date|day|by|on)\b|\bdeadline\b|\bwhat\s+date\b"
        r"|什么时候还|什么时候到期|哪天|几号|最晚|最迟|截止|到期"
    ),
    "arrived": re.compile(
        r"\b(?:arriv\w*|receiv\w*|recieve\w*|credited|went\s+through|gone\s+through|go\s+through|reached)\b"
        r"|到账|收到|到了"
    ),
    "cause": re.compile(r"\bwhy\b|\bhow\s+come\b|\breasons?\b|\bexplain\w*\b|\bcaused?\b|为什么|为啥|怎么回事|原因"),
    "more": re.compile(
        r"\banything\s+(?:else|more)\b|\bwhat\s+else\b|\bany\s+others?\b|\bis\s+that\s+(?:it|all)\b|\bonly\s+reason\b"
        r"|还有别的|还有吗|还有其他|别的呢|就这些|就这个|只有这个"
    ),
    "again": re.compile(r"\bagain\b|\brepeat\b|\bonce\s+more\b|再说一遍|再说一次|重复一下|再讲一遍"),
}
