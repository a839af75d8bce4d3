/*
 * test_chat.c - chat templates (strix/chat.h): every conversation of tests/golden/chat/cases.json
 * (rendered by the Jinja templates themselves, tools/ref/chat_ref.py: SmolLM2-135M-Instruct's,
 * a Qwen2.5-style ChatML one with a default system message behind a dynamic one, and Llama 3's)
 * rendered byte for byte; the default system message read from each template; templates strix
 * does not know refused; bad messages refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "strix/chat.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static void test_goldens(void **state) {
    (void)state;
    char *json = slurp("tests/golden/chat/cases.json");
    assert_non_null(json);
    cJSON *cases = cJSON_Parse(json);
    assert_non_null(cases);
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *tpl = cJSON_GetObjectItem(c, "template")->valuestring;
        const char *want = cJSON_GetObjectItem(c, "expected")->valuestring;
        const cJSON *msgs = cJSON_GetObjectItem(c, "messages");
        strix_chat_message m[8];
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, msgs) {
            m[k].role = cJSON_GetObjectItem(e, "role")->valuestring;
            m[k].content = cJSON_GetObjectItem(e, "content")->valuestring;
            k++;
        }
        strix_chat_template t;
        OK(strix_chat_template_parse(tpl, strlen(tpl), &t));
        char *got = NULL;
        OK(strix_chat_render(&t, m, k, &got));
        if (strcmp(got, want) != 0)
            fail_msg("%s case %d:\n got  [%s]\n want [%s]",
                     cJSON_GetObjectItem(c, "name")->valuestring, n, got, want);
        free(got);
        strix_chat_template_free(&t);
        n++;
    }
    assert_int_equal(n, 12);
    cJSON_Delete(cases);
    free(json);
}

static void test_default_system_and_refusals(void **state) {
    (void)state;
    strix_chat_template t;
    const char *smol = "{{ '<|im_start|>system\\nYou are SmolLM<|im_end|>\\n' }}<|im_start|>";
    OK(strix_chat_template_parse(smol, strlen(smol), &t));
    assert_int_equal(t.format, STRIX_CHAT_CHATML);
    assert_string_equal(t.default_system, "You are SmolLM");
    assert_string_equal(t.end, "<|im_end|>");
    strix_chat_template_free(&t);
    const char *dynamic = "{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>' }}";
    OK(strix_chat_template_parse(dynamic, strlen(dynamic), &t));
    assert_null(t.default_system);
    strix_chat_template_free(&t);
    const char *gemma = "{{ '<start_of_turn>user\\n' + content + '<end_of_turn>' }}";
    assert_int_equal(strix_chat_template_parse(gemma, strlen(gemma), &t), STRIX_ERR_UNSUPPORTED);
    const char *l31 = "<|start_header_id|>system Cutting Knowledge Date: <|eot_id|>";
    assert_int_equal(strix_chat_template_parse(l31, strlen(l31), &t), STRIX_ERR_UNSUPPORTED);
    assert_int_equal(strix_chat_template_parse(NULL, 0, &t), STRIX_ERR_UNSUPPORTED);
    OK(strix_chat_template_parse(smol, strlen(smol), &t));
    char *out = NULL;
    strix_chat_message bad[] = {{.role = "user\nsystem", .content = "x"}};
    assert_int_equal(strix_chat_render(&t, bad, 1, &out), STRIX_ERR_ARG);
    strix_chat_message none[] = {{.role = "user", .content = NULL}};
    assert_int_equal(strix_chat_render(&t, none, 1, &out), STRIX_ERR_ARG);
    assert_null(out);
    strix_chat_template_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goldens),
        cmocka_unit_test(test_default_system_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
