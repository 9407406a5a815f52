"""Fixed replies the workflow writes itself: abstaining, partial answers, offline direct answers, notes."""

ABSTAIN = {
    "en": "The knowledge base does not contain the answer to this question.",
    "zh": "知识库中没有找到这个问题的答案。",
}

# Over the closest evidence, when the answer could not be confirmed: the sentences follow, cited.
NOT_CONFIRMED = {
    "en": "Not confirmed: the closest the documents come is:",
    "zh": "未能确认答案，资料中最接近的内容：",
}

CLOSEST_SOURCES = {
    "en": "Closest sources found:",
    "zh": "找到的最接近的资料：",
}

NO_SOURCES = {
    "en": "No related passage was found.",
    "zh": "没有找到相关的段落。",
}

# After a partial support verdict: what the sources leave open.
MISSING = {
    "en": "The sources do not say: {missing}",
    "zh": "资料中没有说明：{missing}",
}

UNVERIFIED_REMOVED = {
    "en": "(Part of the answer could not be verified in the sources and was left out.)",
    "zh": "（部分回答无法在资料中得到证实，已略去。）",
}

GREETING = {
    "en": "Hello! Ask me a question about the documents in the knowledge base, and I will answer with "
    "citations, or tell you when the documents do not say.",
    "zh": "你好！请就知识库中的文档提问，我会给出带引用的回答；如果文档中没有答案，我也会如实告诉你。",
}

THANKS = {
    "en": "You're welcome! Ask me anything else about the documents.",
    "zh": "不客气！还有关于文档的问题，随时问我。",
}

ARITHMETIC = {
    "en": "{expression} = {value}",
    "zh": "{expression} = {value}",
}

# Questions about the conversation (selfcrag.heuristics.conversation): the earlier questions or answers asked for.
# "kept": the thread holds as many turns as it keeps (history_turns), so older ones may be forgotten.
QUESTIONS_RECALLED = {
    "last": {"en": "Your previous question was: {text}", "zh": "你上一个问题是：{text}"},
    "first": {"en": "Your first question was: {text}", "zh": "你的第一个问题是：{text}"},
    "nth": {"en": "Your question {n} was: {text}", "zh": "你的第 {n} 个问题是：{text}"},
    "all": {"en": "Your questions so far:\n{text}", "zh": "你到目前为止问过的问题：\n{text}"},
    "beyond": {
        "en": "There is no question {n}: you have asked {count} so far:\n{text}",
        "zh": "没有第 {n} 个问题：你到目前为止问了 {count} 个：\n{text}",
    },
    "kept": {
        "en": "This conversation keeps its last {turns} questions only, so older ones may be forgotten. "
        "The questions kept, oldest first:\n{text}",
        "zh": "本次对话只保留最近 {turns} 个问题，更早的可能已被忘记。保留的问题（从早到晚）：\n{text}",
    },
}

ANSWERS_RECALLED = {
    "last": {"en": "My previous answer was: {text}", "zh": "我上一次的回答是：{text}"},
    "first": {"en": "My first answer was: {text}", "zh": "我的第一个回答是：{text}"},
    "nth": {"en": "My answer {n} was: {text}", "zh": "我的第 {n} 个回答是：{text}"},
    "all": {"en": "My answers so far:\n{text}", "zh": "我到目前为止的回答：\n{text}"},
    "beyond": {
        "en": "There is no answer {n}: I have answered {count} so far:\n{text}",
        "zh": "没有第 {n} 个回答：我到目前为止回答了 {count} 个：\n{text}",
    },
    "kept": {
        "en": "This conversation keeps its last {turns} turns only, so older ones may be forgotten. "
        "The answers kept, oldest first:\n{text}",
        "zh": "本次对话只保留最近 {turns} 轮，更早的可能已被忘记。保留的回答（从早到晚）：\n{text}",
    },
}

NO_HISTORY = {
    "en": "There is no earlier question in this conversation.",
    "zh": "这次对话中还没有更早的问题。",
}

EMPTY_QUESTION = {
    "en": "Please ask a question.",
    "zh": "请输入一个问题。",
}

# Notes shown with an answer: the question was cut, or a step fell back to its offline method.
QUESTION_CUT = {
    "en": "The question was {total} characters long; only its first {kept} characters were used.",
    "zh": "问题长达 {total} 个字符，只使用了前 {kept} 个字符。",
}

FELL_BACK = {
    "en": "{step} used its offline method: the chat model failed ({reason}).",
    "zh": "{step} 改用了离线方法：聊天模型出错（{reason}）。",
}
