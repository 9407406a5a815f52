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
