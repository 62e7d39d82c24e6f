"""The Mandarin front-end of the two-stage voice: Han and Latin text -> pinyin with tone
sandhi -> the acoustic model's symbols (pinyin.py), from a trimmed phrase table
(pinyin_phrases.py, data/zh_phrases.tsv)."""
