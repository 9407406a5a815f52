import subprocess
import sys
import threading

import snowballstemmer

from selfcrag.index.tokenize import detect_language, tokenize


def test_chinese_is_segmented_into_words_without_stopwords():
    terms = tokenize("退款多久能退回？")
    assert "退款" in terms and "退回" in terms
    assert "？" not in terms


def test_chinese_search_mode_emits_parts_of_compounds():
    terms = tokenize("中华人民共和国")
    assert {"中华", "人民", "共和国"} <= set(terms)


def test_english_is_lowercased_stemmed_and_stopwords_dropped():
    assert tokenize("The Backups are Retained") == ["backup", "retain"]


def test_versions_urls_and_numbers_stay_whole():
    terms = tokenize("Aurora v2.1 at api.aurora.example allows 600 requests")
    assert "v2.1" in terms and "600" in terms and "api.aurora.example" in terms


def test_mixed_text_keeps_both_languages():
    terms = tokenize("星火音箱支持 Wi-Fi 吗")
    assert "wi-fi" in terms and "音箱" in terms


def test_detect_language():
    assert detect_language("RCEP具体包括哪些国家") == "zh"
    assert detect_language("difference between russian blue and british blue cat") == "en"
    assert detect_language("") == "en"


def test_dictionary_loaded_from_the_cache_is_the_one_jieba_loads_itself(tmp_path):
    # Fresh processes: one loads the dictionary as selfcrag does, one as jieba does.
    script = (
        "import sys, jieba; from selfcrag.index import tokenize as t\n"
        "jieba.dt.tmp_dir = sys.argv[1]\n"
        "t.load_dictionary() if sys.argv[2] == 'selfcrag' else jieba.initialize()\n"
        "print(len(jieba.dt.FREQ), jieba.dt.total, t.tokenize('中华人民共和国的退款多久能退回'))\n"
    )
    jieba_itself = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), "jieba"], capture_output=True, text=True, check=True
    ).stdout
    # The first run wrote jieba's cache into tmp_path; this one reads it.
    ours = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), "selfcrag"], capture_output=True, text=True, check=True
    ).stdout
    assert (tmp_path / "jieba.cache").exists()
    assert ours == jieba_itself and ours.split()[0] != "0"


def test_a_damaged_dictionary_cache_falls_back_to_jieba(tmp_path):
    (tmp_path / "jieba.cache").write_bytes(b"not marshal data")
    script = (
        "import sys, jieba; from selfcrag.index import tokenize as t\n"
        "jieba.dt.tmp_dir = sys.argv[1]\n"
        "t.load_dictionary(); print(t.tokenize('中华人民共和国'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True)
    assert "人民" in out.stdout


def test_an_english_possessive_is_its_word():
    # "How long is the kettle's power cord?" shared no term with "the kettle" before.
    assert tokenize("the kettle's cord") == tokenize("the kettle cord") == ["kettl", "cord"]
    assert tokenize("Harborview’s office") == tokenize("Harborview office")
    assert tokenize("the 1990's") == ["1990's"]  # a decade, not a possessive


def test_threads_tokenising_at_once_get_the_stems_one_thread_gets() -> None:
    """The ingest tokenises on its reading thread while the main thread does too: a shared stemmer mixed their words.

    Found on 47 files of /usr/share/doc: ``IndexError: string index out of range`` inside snowballstemmer ended
    an ingest. Switching threads every microsecond puts a switch inside nearly every stem of a shared stemmer.
    """
    bases = [
        f"{stem}{ending}"
        for stem in ("connect", "relat", "generat", "condition", "hop", "stud", "nation")
        for ending in ("ing", "ed", "ion", "ions", "ional", "ively", "ness", "ies", "er", "ers", "izations")
    ]
    # Words of this test alone, and other words on each thread: each is stemmed, none comes from the cache.
    words = {n: [f"{base}{letter * k}" for k in range(1, 30) for base in bases] for n, letter in enumerate("qvwz")}
    alone = snowballstemmer.stemmer("english")
    expected = {n: [alone.stemWord(word) for word in some] for n, some in words.items()}
    results: dict[int, list[str] | BaseException] = {}

    def stem_all(n: int) -> None:
        try:
            results[n] = [term for word in words[n] for term in tokenize(word)]
        except BaseException as error:  # the IndexError of a mixed-up stemmer
            results[n] = error

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=stem_all, args=(n,)) for n in words]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    wrong = {n: result for n, result in results.items() if result != expected[n]}
    assert not wrong, {n: str(result)[:200] for n, result in wrong.items()}


def test_a_pdfs_ligatures_give_the_terms_of_the_plain_spelling():
    # LaTeX PDFs hold "ﬀ" (U+FB00) and "ﬁ" (U+FB01): "Grundbegriﬀe" matched no query for "Grundbegriffe".
    assert tokenize("Grundbegri\ufb00e der o\ufb00enen \ufb01le") == tokenize("Grundbegriffe der offenen file")


def test_fullwidth_letters_and_digits_give_the_terms_of_plain_ones():
    assert tokenize("\uff21\uff22\uff23\uff11\uff12\uff13 model") == tokenize("ABC123 model") == ["abc123", "model"]


def test_folding_compatibility_forms_leaves_chinese_words_as_they_were():
    # NFKC leaves unified ideographs alone; fullwidth punctuation between them is no term either way.
    assert tokenize("中华人民共和国的退款，多久能退回？") == [
        *("中华", "华人", "人民", "共和", "共和国", "中华人民共和国"),
        *("退款", "多久", "退回"),
    ]
    # A Kangxi radical standing for an ideograph (U+2F45 for 方) is that ideograph's word.
    assert tokenize("东\u2f45航空") == tokenize("东方航空")
