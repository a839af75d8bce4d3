/*
 * test_render.c - strix explain's views (tools/strix/render.c, compiled into this test) of token-
 * and word-level explanations built by hand: "The capital of France is\n\nCafé" cut into the
 * tokens "The", " capital", " of", " France", " is", "\n\n", "Caf\xc3" and "\xa9" (a token ending
 * inside é, the next one holding its last byte). Checks the plain table and the top contributors
 * (exact text), the coloured prompt, the JSON (unit, the tokens' texts, positions, ids, bytes,
 * sums; U+FFFD and \xNN for bytes that are not UTF-8), the SVG and HTML (titles, cells spanning
 * their columns, texts escaped), render_text's cuts, a 300-byte token and a 300-byte predicted
 * token (cut in tables and pictures, whole in JSON; run under ASan+UBSan for overflows),
 * render_group_words' words and their sums (in double), and that a character-model explanation
 * keeps its "char" heading and has no "unit".
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "render.h"

// ---- the token explanation ---------------------------------------------------------------------

#define PROMPT "The capital of France is\n\nCaf\xc3\xa9"
static const int token_start[9] = {0, 3, 11, 14, 21, 24, 26, 30, 31};
static const float token_rel[8] = {0.5f, 1.25f, -0.25f, 2.0f, 0.75f, -0.5f, 0.125f, 0.0625f};
static const int32_t token_ids[8] = {504, 3575, 302, 4649, 314, 198, 12345, 99};

/* The explanation of " Paris" (p = 0.41) after PROMPT, one cell per token. */
static render_explanation token_explanation(void) {
    return (render_explanation){
        .text = (const unsigned char *)PROMPT, .offset = 0, .n_bytes = 31, .n = 8,
        .start = token_start, .relevance = token_rel, .predicted_prob = 0.41f,
        .target_prob = 0.41f, .target_logit = 12.5f, .contrast = -1, .rule = "attnlrp",
        .method = "lrp", .baseline_output = NAN, .conserved_sum = 14.0, .model = "SmolLM2.gguf",
        .sum_out = 14.0, .sum_in = 3.9375, .softmax_gap = NAN, .unit = "token",
        .predicted_text = " Paris", .target_text = " Paris", .cell_ids = token_ids};
}

typedef enum { VIEW_TABLE, VIEW_COLOR, VIEW_TOP3, VIEW_SVG, VIEW_HTML } view;

/* What view v of e prints, as a string (free it). */
static char *rendered(const render_explanation *e, view v) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    int rc = 0;
    switch (v) {
    case VIEW_TABLE: render_prompt(f, e, false); break;
    case VIEW_COLOR: render_prompt(f, e, true); break;
    case VIEW_TOP3: render_top(f, e, 3); break;
    case VIEW_SVG: rc = render_svg(f, e, 64); break;
    case VIEW_HTML: rc = render_html(f, e, 3); break;
    }
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rc, 0);
    assert_non_null(buf);
    return buf;
}

/* The parsed JSON view of e (cJSON_Delete it). */
static cJSON *json_of(const render_explanation *e) {
    char *s = render_json(e);
    assert_non_null(s);
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    return j;
}

static const char *str_at(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static double num_at(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void assert_contains(const char *hay, const char *needle) {
    if (!strstr(hay, needle)) fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

// ---- tables ------------------------------------------------------------------------------------

static void test_table(void **state) {
    (void)state;
    render_explanation e = token_explanation();
    char *t = rendered(&e, VIEW_TABLE);
    assert_string_equal(t, "    pos  token          relevance\n"
                           "      0  'The'          +0.500000\n"
                           "      3  ' capital'     +1.250000\n"
                           "     11  ' of'          -0.250000\n"
                           "     14  ' France'      +2.000000\n"
                           "     21  ' is'          +0.750000\n"
                           "     24  '\\n\\n'         -0.500000\n"
                           "     26  'Caf\\xc3'      +0.125000\n"
                           "     30  '\\xa9'         +0.062500\n");
    free(t);
    t = rendered(&e, VIEW_TOP3);
    assert_string_equal(t, "    pos  token          relevance    share\n"
                           "     14  ' France'      +2.000000    36.8%\n"
                           "      3  ' capital'     +1.250000    23.0%\n"
                           "     21  ' is'          +0.750000    13.8%\n");
    free(t);
    char sums[200];
    render_sums(&e, sums, sizeof sums);
    assert_string_equal(sums, "relevance sums: output 14.000000, input 3.937500");
    const float pos_rel[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    e.relevance_position = pos_rel;
    e.sum_in = 11.9375;
    render_sums(&e, sums, sizeof sums);
    assert_string_equal(sums, "relevance sums: output 14.000000, input 11.937500 "
                              "(tokens 3.937500, positions 8.000000)");
}

static void test_color(void **state) {
    (void)state;
    render_explanation e = token_explanation();
    char *t = rendered(&e, VIEW_COLOR);
    // every cell's glyphs inside its colours; a line break after the cell ending with '\n'
    assert_contains(t, "m capital\x1b[0m");
    assert_contains(t, "m\u23ce\u23ce\x1b[0m\n\x1b[48;2;");
    assert_contains(t, "mCaf\\xc3\x1b[0m");
    assert_contains(t, "m\\xa9\x1b[0m\n");
    free(t);
}

// ---- JSON --------------------------------------------------------------------------------------

static void test_json(void **state) {
    (void)state;
    render_explanation e = token_explanation();
    cJSON *j = json_of(&e);
    assert_string_equal(str_at(j, "unit"), "token");
    assert_string_equal(str_at(j, "prompt"), PROMPT);
    assert_string_equal(str_at(j, "predicted"), " Paris");
    assert_string_equal(str_at(j, "predicted_text"), " Paris");
    assert_string_equal(str_at(j, "target_text"), " Paris");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "contrast")));
    assert_null(cJSON_GetObjectItem(j, "contrast_text"));
    assert_null(cJSON_GetObjectItem(j, "predicted_byte")); // a token has no byte
    assert_null(cJSON_GetObjectItem(j, "target_byte"));
    assert_true(num_at(j, "probability") == 0.41);
    assert_true(num_at(j, "target_logit") == 12.5);
    static const char *const chars[8] = {"The", " capital", " of", " France", " is", "\n\n",
                                         "Caf\\xc3", "\\xa9"};
    const cJSON *pos = cJSON_GetObjectItem(j, "positions");
    assert_int_equal(cJSON_GetArraySize(pos), 8);
    double sum = 0.0;
    for (int i = 0; i < 8; i++) {
        const cJSON *p = cJSON_GetArrayItem(pos, i);
        assert_int_equal((int)num_at(p, "position"), token_start[i]);
        assert_int_equal((int)num_at(p, "id"), token_ids[i]);
        assert_int_equal((int)num_at(p, "byte"), (unsigned char)PROMPT[token_start[i]]);
        assert_string_equal(str_at(p, "char"), chars[i]);
        const cJSON *bytes = cJSON_GetObjectItem(p, "bytes");
        assert_int_equal(cJSON_GetArraySize(bytes), token_start[i + 1] - token_start[i]);
        int last = cJSON_GetArraySize(bytes) - 1;
        assert_int_equal(cJSON_GetArrayItem(bytes, last)->valueint,
                         (unsigned char)PROMPT[token_start[i + 1] - 1]);
        assert_true(num_at(p, "relevance") == token_rel[i]);
        assert_null(cJSON_GetObjectItem(p, "position_relevance"));
        sum += num_at(p, "relevance");
    }
    assert_true(sum == 3.9375);
    assert_true(num_at(j, "relevance_characters_sum") == 3.9375);
    assert_true(num_at(j, "relevance_in_sum") == 3.9375);
    assert_true(num_at(j, "relevance_out_sum") == 14.0);
    cJSON_Delete(j);

    // a contrast token, one that is not valid UTF-8 on its own
    e.contrast_text = "\xc3";
    e.contrast_logit = 10.25f;
    j = json_of(&e);
    assert_string_equal(str_at(j, "contrast"), "\\xc3");
    assert_string_equal(str_at(j, "contrast_text"), "\xef\xbf\xbd");
    assert_null(cJSON_GetObjectItem(j, "contrast_byte"));
    assert_true(num_at(j, "contrast_logit") == 10.25);
    cJSON_Delete(j);
}

// ---- SVG and HTML ------------------------------------------------------------------------------

static void test_svg(void **state) {
    (void)state;
    render_explanation e = token_explanation();
    char *s = rendered(&e, VIEW_SVG);
    assert_contains(s, ">Next token: ' Paris', p = 0.4100</text>");
    assert_contains(s, "explained: logit of ' Paris' = 12.5000 (p = 0.4100), rule attnlrp");
    // " capital": 8 columns of 11 px from column 3 (x = 16 + 33), one glyph per character but
    // the space
    assert_contains(s, "<g><title>position 3 ' capital': +1.250000</title><rect x=\"49.0\" "
                       "y=\"70.0\" width=\"88.0\"");
    assert_contains(s, "<text x=\"65.5\" y=\"88.0\" fill=\"#000\">c</text><text x=\"76.5\"");
    // "\n\n": two ⏎, then a new line; "Caf\xc3" with \xc3 small in 3 columns
    assert_contains(s, "<title>position 24 '\\n\\n': -0.500000</title>");
    assert_contains(s, ">\u23ce</text><text x=\"");
    assert_contains(s, "<title>position 26 'Caf\\xc3': +0.125000</title><rect x=\"16.0\" "
                       "y=\"96.0\" width=\"66.0\"");
    assert_contains(s, "font-size=\"12\">\\xc3</text>");
    free(s);

    e.contrast_text = " <b>&\"'";
    e.contrast_logit = 10.25f;
    s = rendered(&e, VIEW_SVG);
    assert_contains(s, "logit of ' Paris' minus logit of ' &lt;b&gt;&amp;\"'' = 2.2500");
    free(s);
}

static void test_html(void **state) {
    (void)state;
    render_explanation e = token_explanation();
    char *h = rendered(&e, VIEW_HTML);
    assert_contains(h, "<title>strix explain: next token ' Paris'</title>");
    assert_contains(h, "<h1>Next token: <code>' Paris'</code> (p = 0.4100)</h1>");
    assert_contains(h, "data-tip=\"position 3 &#39; capital&#39;: +1.250000\"> capital</span>");
    assert_contains(h, "data-tip=\"position 24 &#39;\\n\\n&#39;: -0.500000\">\u23ce\u23ce"
                       "</span>\n<span");
    assert_contains(h, "&#39;Caf\\xc3&#39;: +0.125000\">Caf\\xc3</span>");
    assert_contains(h, "hover a token for its value");
    assert_contains(h, "     14  ' France'      +2.000000    36.8%\n"); // top contributors
    free(h);
}

/* A prompt whose tokens need escaping: 'a', ' <b>', '&"c"'. */
static void test_escaping(void **state) {
    (void)state;
    static const int start[4] = {0, 1, 5, 9};
    static const float rel[3] = {1.0f, -1.0f, 0.5f};
    render_explanation e = token_explanation();
    e.text = (const unsigned char *)"a <b>&\"c\"";
    e.n_bytes = 9;
    e.n = 3;
    e.start = start;
    e.relevance = rel;
    e.cell_ids = NULL;
    e.predicted_text = "<&>";
    char *s = rendered(&e, VIEW_SVG);
    assert_contains(s, "Next token: '&lt;&amp;&gt;'");
    assert_contains(s, "<title>position 1 ' &lt;b&gt;': -1.000000</title>");
    assert_contains(s, "<title>position 5 '&amp;\"c\"': +0.500000</title>");
    assert_contains(s, ">&lt;</text>");
    assert_contains(s, ">&amp;</text>");
    assert_contains(s, ">&quot;</text>");
    assert_null(strstr(s, "><</text>"));
    free(s);
    char *h = rendered(&e, VIEW_HTML);
    assert_contains(h, "data-tip=\"position 1 &#39; &lt;b&gt;&#39;: -1.000000\"> &lt;b&gt;"
                       "</span>");
    assert_contains(h, "data-tip=\"position 5 &#39;&amp;&quot;c&quot;&#39;: +0.500000\">"
                       "&amp;\"c\"</span>");
    assert_contains(h, "next token '&lt;&amp;&gt;'</title>");
    free(h);
    cJSON *j = json_of(&e);
    assert_string_equal(str_at(j, "predicted_text"), "<&>");
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "positions"), 2),
                               "char"), "&\"c\"");
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "positions"), 0),
                                    "id"));
    cJSON_Delete(j);
}

// ---- long cells --------------------------------------------------------------------------------

static void test_render_text(void **state) {
    (void)state;
    char buf[64];
    const unsigned char *s = (const unsigned char *)"abcdef";
    assert_int_equal(render_text(s, 6, false, 3, buf, sizeof buf), 6);
    assert_string_equal(buf, "abc\u2026");
    assert_int_equal(render_text(s, 6, false, 0, buf, sizeof buf), 6);
    assert_string_equal(buf, "abcdef");
    render_text(s, 6, false, 6, buf, sizeof buf);
    assert_string_equal(buf, "abcdef"); // exactly max characters: no "…"
    render_text(s, 6, false, 0, buf, 8); // 8 bytes: 4 characters, "…", NUL
    assert_string_equal(buf, "abcd\u2026");
    render_text(s, 6, false, 0, buf, 7);
    assert_string_equal(buf, "abc\u2026");
    render_text(s, 4, false, 0, buf, 5); // a character before the last keeps room for "…"
    assert_string_equal(buf, "a\u2026");
    render_text(s, 1, false, 0, buf, 4); // the last one needs none
    assert_string_equal(buf, "a");
    const unsigned char *m = (const unsigned char *)"\n\t\xc3\xa9\xc3 '\x01";
    render_text(m, 8, false, 0, buf, sizeof buf);
    assert_string_equal(buf, "\\n\\t\xc3\xa9\\xc3 \\'\\x01");
    render_text(m, 8, true, 0, buf, sizeof buf);
    assert_string_equal(buf, "\u23ce\u21e5\xc3\xa9\\xc3 '\\x01");
}

/* A 300-byte token: 100 'x', 50 é (100 bytes), 100 bytes 0xff (not UTF-8: \xff, 4 bytes and 3
 * columns each), and a 300-byte predicted token. */
static void test_long_token(void **state) {
    (void)state;
    unsigned char text[303];
    text[0] = 'A';
    memset(text + 1, 'x', 100);
    for (int k = 0; k < 50; k++) memcpy(text + 101 + 2 * k, "\xc3\xa9", 2);
    memset(text + 201, 0xff, 100);
    text[301] = '!';
    text[302] = '\0';
    static const int start[4] = {0, 1, 301, 302};
    static const float rel[3] = {0.25f, 1.0f, -0.5f};
    char predicted[301];
    memcpy(predicted, text + 1, 300);
    predicted[300] = '\0';
    render_explanation e = token_explanation();
    e.text = text;
    e.n_bytes = 302;
    e.n = 3;
    e.start = start;
    e.relevance = rel;
    e.predicted_text = e.target_text = e.contrast_text = predicted;
    char want[128];
    snprintf(want, sizeof want, "      1  '%.24s\u2026'     +1.000000", (const char *)text + 1);
    char *t = rendered(&e, VIEW_TABLE);
    assert_contains(t, "    pos  token                           relevance\n"); // 24, …, '''
    assert_contains(t, want);
    free(t);
    t = rendered(&e, VIEW_TOP3);
    assert_contains(t, want);
    free(t);
    free(rendered(&e, VIEW_COLOR));
    char *s = rendered(&e, VIEW_SVG);
    // cut to 64 columns: 63 of them 'x', "…" in the last; its own line
    assert_contains(s, "<rect x=\"16.0\" y=\"96.0\" width=\"704.0\"");
    assert_contains(s, "\u2026</text></g>");
    assert_contains(s, "Next token: 'xxxxxxxxxxxxxxxxxxxxxxxx\u2026'");
    free(s);
    char *h = rendered(&e, VIEW_HTML);
    assert_contains(h, "\xc3\xa9\\xff\\xff"); // the page shows the whole token
    free(h);
    cJSON *j = json_of(&e);
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "positions"), 1);
    assert_int_equal(strlen(str_at(p, "char")), 100 + 100 + 4 * 100);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "bytes")), 300);
    assert_int_equal(strlen(str_at(j, "predicted")), 600);
    assert_int_equal(strlen(str_at(j, "contrast_text")), 100 + 100 + 3 * 100); // U+FFFD
    cJSON_Delete(j);
}

// ---- words -------------------------------------------------------------------------------------

static void test_words(void **state) {
    (void)state;
    render_explanation e = token_explanation();
    const float pos_rel[8] = {1e8f, 1.0f, -1e8f, 0.0f, 0.0f, 0.0f, 0.25f, 0.5f};
    assert_int_equal(render_group_words(&e, token_rel, pos_rel), 0);
    assert_string_equal(e.unit, "word");
    assert_null(e.cell_ids);
    assert_int_equal(e.n, 7); // "Caf\xc3" and "\xa9" join: é whole again
    static const int want_start[8] = {0, 3, 11, 14, 21, 24, 26, 31};
    static const float want_rel[7] = {0.5f, 1.25f, -0.25f, 2.0f, 0.75f, -0.5f, 0.1875f};
    for (int i = 0; i <= 7; i++) assert_int_equal(e.start[i], want_start[i]);
    for (int i = 0; i < 7; i++) assert_true(e.relevance[i] == want_rel[i]);
    assert_true(e.relevance_position[6] == 0.75f);
    char *t = rendered(&e, VIEW_TABLE);
    assert_contains(t, "    pos  word           relevance\n");
    assert_contains(t, "     26  'Caf\xc3\xa9'         +0.187500\n");
    free(t);
    cJSON *j = json_of(&e);
    assert_string_equal(str_at(j, "unit"), "word");
    const cJSON *last = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "positions"), 6);
    assert_string_equal(str_at(last, "char"), "Caf\xc3\xa9");
    assert_null(cJSON_GetObjectItem(last, "id"));
    assert_true(num_at(j, "relevance_characters_sum") == 3.9375);
    cJSON_Delete(j);
    render_group_free(&e);

    // pieces of a word and punctuation join the word before; a whitespace token is a word, and
    // so is what follows it; sums in double (in float 1e8 + 1 - 1e8 would be 0)
    static const char text[] = "Hello, world! \nx";
    static const int start[9] = {0, 3, 5, 6, 12, 13, 14, 15, 16};
    static const float rel[8] = {1e8f, 1.0f, -1e8f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    render_explanation w = token_explanation();
    w.text = (const unsigned char *)text;
    w.n_bytes = 16;
    w.n = 8;
    w.start = start;
    assert_int_equal(render_group_words(&w, rel, NULL), 0);
    assert_int_equal(w.n, 5); // "Hello," " world!" " " "\n" "x"
    static const int wstart[6] = {0, 6, 13, 14, 15, 16};
    static const float wrel[5] = {1.0f, 5.0f, 4.0f, 5.0f, 6.0f};
    for (int i = 0; i <= 5; i++) assert_int_equal(w.start[i], wstart[i]);
    for (int i = 0; i < 5; i++) assert_true(w.relevance[i] == wrel[i]);
    assert_null(w.relevance_position);
    render_group_free(&w);
}

/* A character-model explanation (unit NULL) keeps its headings and JSON keys. */
static void test_characters(void **state) {
    (void)state;
    static const float byte_rel[4] = {1.0f, 2.0f, 0.25f, 0.5f};
    render_explanation e = {.text = (const unsigned char *)"ab\xc3\xa9", .n_bytes = 4,
                            .predicted = 'c', .target = 'c', .contrast = -1,
                            .baseline_output = NAN, .conserved_sum = NAN, .softmax_gap = NAN};
    assert_int_equal(render_group_utf8(&e, byte_rel, NULL), 0);
    assert_int_equal(e.n, 3);
    assert_true(e.relevance[2] == 0.75f);
    char *t = rendered(&e, VIEW_TABLE);
    assert_string_equal(t, "    pos  char       relevance\n"
                           "      0  'a'        +1.000000\n"
                           "      1  'b'        +2.000000\n"
                           "      2  '\xc3\xa9'        +0.750000\n");
    free(t);
    cJSON *j = json_of(&e);
    assert_null(cJSON_GetObjectItem(j, "unit"));
    assert_null(cJSON_GetObjectItem(j, "predicted_text"));
    assert_int_equal((int)num_at(j, "predicted_byte"), 'c');
    assert_string_equal(str_at(j, "predicted"), "c");
    cJSON_Delete(j);
    char *s = rendered(&e, VIEW_SVG);
    assert_contains(s, ">Next character: 'c', p = 0.0000</text>");
    free(s);
    render_group_free(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),        cmocka_unit_test(test_color),
        cmocka_unit_test(test_json),         cmocka_unit_test(test_svg),
        cmocka_unit_test(test_html),         cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_render_text),  cmocka_unit_test(test_long_token),
        cmocka_unit_test(test_words),        cmocka_unit_test(test_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
