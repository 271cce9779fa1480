#!/usr/bin/python3
"""Writes src/sparsetrain/text/bert_unicode_tables.inc: the Unicode tables of BERT's uncased
BasicTokenizer (src/sparsetrain/text/bert_basic_tokenizer.cpp), taken from Python's unicodedata,
which is what BERT's Python tokenizer consults.

usage: /usr/bin/python3 scripts/make_bert_unicode_tables.py > src/sparsetrain/text/bert_unicode_tables.inc

Tables (code point ranges are inclusive and sorted):
  kControl      category C* (Cc, Cf, Cs, Co, Cn) except tab, newline and carriage return:
                dropped from the text
  kWhitespace   tab, newline, carriage return, category Zs (BERT's _is_whitespace), and U+2028
                and U+2029: the characters that separate words, as Python's str.split() sees
                the text after the control characters are gone
  kPunctuation  category P*, and the ASCII symbols 33-47, 58-64, 91-96, 123-126: each one
                becomes a word of its own
  kNonspacing   category Mn: dropped after the canonical decomposition
  kFold         each code point whose lower-case form, canonically decomposed (NFD), with the Mn
                marks dropped, is not the code point itself: what it becomes (1 to 3 code
                points). Leaves out what bert_basic_tokenizer.cpp does itself (ASCII; Hangul
                syllables, decomposed by the algorithm of Unicode's chapter 3.12) and the code
                points that never reach the folding (C*, Mn, kWhitespace)

The script checks the assumptions bert_basic_tokenizer.cpp rests on and stops if one fails, so a
new Unicode version cannot silently change what the code means."""
import sys
import unicodedata

MAX_CODE_POINT = 0x10FFFF


def category(cp):
    return unicodedata.category(chr(cp))


def is_control(cp):
    return chr(cp) not in "\t\n\r" and category(cp).startswith("C")


def is_punctuation(cp):
    ascii_symbol = 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
    return ascii_symbol or category(cp).startswith("P")


def is_whitespace(cp):
    return chr(cp) in "\t\n\r" or category(cp) == "Zs" or cp in (0x2028, 0x2029)


def is_hangul_syllable(cp):
    return 0xAC00 <= cp <= 0xD7A3


def is_cjk(cp):
    return any(
        lo <= cp <= hi
        for lo, hi in [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
                       (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)])


def fold(cp):
    decomposed = unicodedata.normalize("NFD", chr(cp).lower())
    return [ord(c) for c in decomposed if unicodedata.category(c) != "Mn"]


def hangul_decomposition(cp):
    s = cp - 0xAC00
    parts = [0x1100 + s // 588, 0x1161 + (s % 588) // 28]
    if s % 28:
        parts.append(0x11A7 + s % 28)
    return parts


def ranges(predicate):
    out, start = [], None
    for cp in range(MAX_CODE_POINT + 1):
        if predicate(cp):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, MAX_CODE_POINT))
    return out


def check(condition, what):
    if not condition:
        sys.exit(f"make_bert_unicode_tables: assumption broken: {what}")


def folds():
    table = []
    for cp in range(128, MAX_CODE_POINT + 1):
        cat = category(cp)
        if cat.startswith("C") or cat in ("Mn", "Zs") or cp in (0x2028, 0x2029):
            continue
        result = fold(cp)
        if is_hangul_syllable(cp):
            check(result == hangul_decomposition(cp), f"U+{cp:04X} decomposes by the Hangul algorithm")
            continue
        if result == [cp]:
            continue
        check(1 <= len(result) <= 3, f"U+{cp:04X} folds to 1 to 3 code points")
        for r in result:
            check(not category(r).startswith("C") and category(r) not in ("Mn", "Zs"),
                  f"U+{cp:04X} folds to no control, mark or space")
            check(is_cjk(r) == is_cjk(cp), f"U+{cp:04X} folds to CJK only from CJK")
        check(len(result) == 1 or not is_cjk(cp), f"CJK U+{cp:04X} folds to one code point")
        check([x for r in result for x in fold(r)] == result, f"folding U+{cp:04X} twice changes nothing")
        table.append((cp, result))
    for cp in range(128):
        expected = [cp + 32] if 65 <= cp <= 90 else [cp]
        check(fold(cp) == expected, f"ASCII U+{cp:04X} folds as A-Z to a-z")
    return table


def print_cells(cells):
    """Array elements, as many to a line as fit in 120 columns."""
    line = ""
    for cell in cells:
        if len(line) + 1 + len(cell) > 116:
            print("   " + line)
            line = ""
        line += " " + cell
    print("   " + line)


def check_whitespace():
    for cp in range(MAX_CODE_POINT + 1):
        if chr(cp).isspace():
            check(is_control(cp) or is_whitespace(cp), f"str.split() splits at U+{cp:04X} only if it separates")
        if is_whitespace(cp):
            check(chr(cp).isspace() and not is_control(cp), f"U+{cp:04X} separates words for str.split()")


def write_ranges(name, what, table):
    print(f"// {what}: {len(table)} ranges.")
    print(f"constexpr CodeRange {name}[] = {{")
    print_cells([f"{{0x{lo:04X}, 0x{hi:04X}}}," for lo, hi in table])
    print("};")
    print()


def main():
    check_whitespace()
    control = ranges(is_control)
    whitespace = ranges(is_whitespace)
    punctuation = ranges(is_punctuation)
    nonspacing = ranges(lambda cp: category(cp) == "Mn")
    fold_table = folds()
    print("// Generated by scripts/make_bert_unicode_tables.py with Python "
          f"{sys.version.split()[0]}'s unicodedata (Unicode {unicodedata.unidata_version}); do not edit.")
    print("// Included by bert_basic_tokenizer.cpp only.")
    print("// clang-format off")
    print()
    write_ranges("kControl", "Category C* except tab, newline and carriage return", control)
    write_ranges("kWhitespace", "Tab, newline, carriage return, category Zs, U+2028 and U+2029", whitespace)
    write_ranges("kPunctuation", "Category P* and the ASCII symbols", punctuation)
    write_ranges("kNonspacing", "Category Mn", nonspacing)
    print(f"// Lower-cased, NFD, Mn dropped, where that changes the code point: {len(fold_table)} entries.")
    print("constexpr Fold kFold[] = {")
    cells = []
    for cp, result in fold_table:
        parts = ", ".join(f"0x{r:04X}" for r in result)
        cells.append(f"{{0x{cp:04X}, {{{parts}}}}},")
    print_cells(cells)
    print("};")
    print("// clang-format on")


if __name__ == "__main__":
    main()
