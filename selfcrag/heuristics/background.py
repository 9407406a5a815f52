"""Sentences about nothing in particular, one set per language: the evaluator's "unrelated" reference.

The dense signal places a sentence's cosine with the question on the
embedder's scale: 0 is what these sentences score against each other
(unrelated), 1 what each scores against itself (a restatement). The scale is
measured on these fixed sentences, not on the user's documents nor on the
question, so a score means the same on a one-file manual (where every
sentence is on one topic) as on thousands of documents, and an everyday
question is not marked down for sounding like everyday sentences. They cover
everyday topics (weather, sport, cooking, travel, science), the same ones in
both languages.
"""

from __future__ import annotations

BACKGROUND_SENTENCES: dict[str, tuple[str, ...]] = {
    "en": (
        "The museum opens at nine in the morning and closes at five in the evening.",
        "Heavy rain is expected across the northern region this weekend.",
        "She finished the marathon in just under four hours.",
        "The recipe calls for two cups of flour and a pinch of salt.",
        "A triangle's interior angles always add up to 180 degrees.",
        "The company reported higher profits in the third quarter.",
        "Penguins live mostly in the Southern Hemisphere.",
        "Our team lost the final match on penalties.",
        "Jupiter is the largest planet in the solar system.",
        "The concert was postponed because the singer fell ill.",
        "Most adults need seven to nine hours of sleep each night.",
        "The bridge was closed for repairs until the end of May.",
        "The price of coffee beans rose sharply last year.",
        "Volcanic eruptions can affect the climate for several years.",
        "The school holds a science fair every spring.",
        "Whales communicate with songs that travel for miles.",
        "The password must contain at least one number.",
        "The farmers harvested the wheat before the storm arrived.",
        "Regular exercise lowers the risk of heart disease.",
        "The hotel offers free breakfast to all guests.",
        "Children under twelve must be accompanied by an adult.",
        "The spacecraft reached orbit after a ten-minute flight.",
        "The committee meets on the first Monday of each month.",
        "Birds migrate south when the days grow shorter.",
    ),
    "zh": (
        "这家博物馆每天上午九点开门，下午五点闭馆。",
        "本周末北方地区将迎来强降雨。",
        "她用不到四个小时跑完了马拉松。",
        "这道菜需要两杯面粉和少许盐。",
        "三角形的内角和总是一百八十度。",
        "公司第三季度的利润有所增长。",
        "企鹅主要生活在南半球。",
        "我们队在决赛中点球惜败。",
        "木星是太阳系中最大的行星。",
        "由于歌手生病，音乐会延期举行。",
        "大多数成年人每晚需要七到九小时的睡眠。",
        "这座桥因维修关闭到五月底。",
        "去年咖啡豆的价格大幅上涨。",
        "火山喷发可能影响气候好几年。",
        "学校每年春天举办科学展览。",
        "鲸鱼通过能传播很远的歌声交流。",
        "密码必须至少包含一个数字。",
        "农民在暴风雨来临前收完了小麦。",
        "规律运动可以降低心脏病的风险。",
        "酒店为所有住客提供免费早餐。",
        "十二岁以下儿童须由成人陪同。",
        "飞船在十分钟后进入轨道。",
        "委员会每月第一个星期一开会。",
        "白天变短时，候鸟向南迁徙。",
    ),
}
