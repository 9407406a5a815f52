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

Their vectors are the same in every process that uses the same embedder, and
embedding them (48 sentences, twice) cost about 1.3 s of CPU on each ``ask``
with the default model: :func:`remembered_background` reads them from the
copies shipped with the package for the default embedder
(:mod:`selfcrag.embed.remembered`, made by ``scripts/ship_vectors.py``), else from the data folder
(``cache/``), where any other embedder's are kept after its first use. Each is
a NumPy array (never a pickle), named by a digest of the embedder's name and
version and of the sentences, and checked when read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from selfcrag.embed.embedders import Embedder
from selfcrag.embed.remembered import SHIPPED_DIR, RememberedVectors, read_vectors, write_vectors

CACHE_DIR = "cache"

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


def background_cache_file(folder: Path, embedder: Embedder, sentences: Sequence[str]) -> Path:
    """Where the vectors of some background sentences by an embedder are kept.

    Args:
        folder: The cache folder (``<data dir>/cache``).
        embedder: The embedder.
        sentences: The sentences.

    Returns:
        A file named by a digest of the embedder's name, version and size, and of the sentences.
    """
    key = "\n".join([embedder.name, embedder.version, str(embedder.dim), *sentences])
    return folder / f"background-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:24]}.npy"


def remembered_background(embedder: Embedder, sentences: Sequence[str], folder: Path | None) -> Embedder:
    """An embedder that knows the vectors of the background sentences without embedding them again.

    The vectors (as passages and as questions) are read from the shipped copy (``SHIPPED_DIR``) or from
    ``folder`` when a valid one is there; otherwise they are computed and stored in ``folder`` for the next
    process. A damaged, foreign or unreadable file is ignored (and in ``folder``, replaced).

    Args:
        embedder: The index's embedder.
        sentences: Background sentences of one language.
        folder: The cache folder; None computes without storing.

    Returns:
        An embedder answering for ``sentences`` from the stored vectors (and for any other text from ``embedder``).
    """
    sentences = list(sentences)
    shape = (2, len(sentences), embedder.dim)
    vectors = read_vectors(background_cache_file(SHIPPED_DIR, embedder, sentences), shape)
    path = background_cache_file(folder, embedder, sentences) if folder is not None else None
    if vectors is None and path is not None:
        vectors = read_vectors(path, shape)
    if vectors is None:
        vectors = background_vectors(embedder, sentences)
        if path is not None:
            write_vectors(path, vectors)
    return RememberedVectors(
        embedder, dict(zip(sentences, vectors[0], strict=True)), dict(zip(sentences, vectors[1], strict=True))
    )


def background_vectors(embedder: Embedder, sentences: Sequence[str]) -> np.ndarray:
    """Embed background sentences as passages and as questions.

    Args:
        embedder: The embedder.
        sentences: The sentences.

    Returns:
        float32 vectors of shape (2, sentences, dim): as passages, then as questions.
    """
    passages = np.asarray(embedder.embed_passages(sentences), dtype=np.float32)
    questions = np.stack([np.asarray(embedder.embed_question(s), dtype=np.float32) for s in sentences])
    return np.stack([passages, questions])
