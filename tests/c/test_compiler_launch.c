/* The launch record parser: good records, normalization, and every kind of bad one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/check.h"
#include "compile/compiler.h"

static kf_launch L;
static char err[512];

static kf_status parse(const char *json)
{
    memset(&L, 0x5a, sizeof L); /* the parser must not depend on prior contents */
    err[0] = 0;
    return kf_launch_parse(json, &L, err, sizeof err);
}

/* A bad record: KF_ERR_INVALID, a message mentioning `what`, and `L` left untouched. */
static void bad(const char *json, const char *what, int line)
{
    kf_status st = parse(json);
    int ok = st == KF_ERR_INVALID && strstr(err, what) != NULL;
    unsigned char canary[sizeof L];
    memset(canary, 0x5a, sizeof canary);
    ok = ok && memcmp(&L, canary, sizeof L) == 0;
    if (!check_report(ok, __FILE__, line, "bad record rejected")) {
        printf("     record: %s\n     status %d, err \"%s\" (wanted \"%s\")\n", json, (int)st, err,
               what);
        fflush(stdout);
    }
}
#define BAD(json, what) bad((json), (what), __LINE__)

static void test_good(void)
{
    CHECK_EQ_INT(parse("{\"entry\": \"kf_kernel\", \"grid\": [4096, 1, 1], "
                       "\"block\": [1024, 1, 1], \"smem\": 229376, "
                       "\"args\": [\"const __nv_bfloat16*\", \"__nv_bfloat16*\"]}"),
                 KF_OK);
    CHECK_STR(err, "");
    CHECK_STR(L.entry, "kf_kernel");
    CHECK_EQ_INT(L.grid[0], 4096);
    CHECK_EQ_INT(L.grid[1], 1);
    CHECK_EQ_INT(L.grid[2], 1);
    CHECK_EQ_INT(L.block[0], 1024);
    CHECK_EQ_INT(L.block[1], 1);
    CHECK_EQ_INT(L.block[2], 1);
    CHECK_EQ_INT(L.smem, 229376);
    CHECK_EQ_INT(L.n_args, 2);
    CHECK_STR(L.arg_types[0], "const __nv_bfloat16*");
    CHECK_STR(L.arg_types[1], "__nv_bfloat16*");

    /* host records may leave out grid, block and smem */
    CHECK_EQ_INT(parse("{\"args\": [\"const float*\", \"float*\"], \"entry\": \"_k2\"}"), KF_OK);
    CHECK_STR(L.entry, "_k2");
    CHECK_EQ_INT(L.grid[0] * L.grid[1] * L.grid[2], 1);
    CHECK_EQ_INT(L.block[0] * L.block[1] * L.block[2], 1);
    CHECK_EQ_INT(L.smem, 0);
    CHECK_EQ_INT(L.n_args, 2);

    /* spelling is normalized */
    CHECK_EQ_INT(parse("{\"entry\": \"k\", \"args\": [\"const float *\", \"  float*\", "
                       "\"float const*\", \"double\\t*\", \"const\\tint64_t  * \", \"bool*\"]}"),
                 KF_OK);
    CHECK_EQ_INT(L.n_args, 6);
    CHECK_STR(L.arg_types[0], "const float*");
    CHECK_STR(L.arg_types[1], "float*");
    CHECK_STR(L.arg_types[2], "const float*");
    CHECK_STR(L.arg_types[3], "double*");
    CHECK_STR(L.arg_types[4], "const int64_t*");
    CHECK_STR(L.arg_types[5], "bool*");

    /* every whitelisted element type, const and not */
    static const char *const types[] = {"float", "double", "__half", "__nv_bfloat16",
                                        "__nv_fp8_e4m3", "__nv_fp8_e5m2", "int8_t", "uint8_t",
                                        "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
                                        "uint64_t", "bool"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char json[256], want[64];
        snprintf(json, sizeof json, "{\"entry\":\"k\",\"args\":[\"%s*\",\"const %s *\"]}",
                 types[i], types[i]);
        if (!CHECK_EQ_INT(parse(json), KF_OK)) printf("     %s: %s\n", json, err);
        snprintf(want, sizeof want, "%s*", types[i]);
        CHECK_STR(L.arg_types[0], want);
        snprintf(want, sizeof want, "const %s*", types[i]);
        CHECK_STR(L.arg_types[1], want);
    }

    /* limits, exactly at the edge */
    CHECK_EQ_INT(parse("{\"entry\":\"k\",\"grid\":[2147483647,65535,65535],\"block\":[1024,1,1],"
                       "\"smem\":232448,\"args\":[\"float*\"]}"),
                 KF_OK);
    CHECK_EQ_INT(L.grid[0], 2147483647u);
    CHECK_EQ_INT(L.smem, 232448);
    CHECK_EQ_INT(parse("{\"entry\":\"k\",\"block\":[16,16,4],\"args\":[\"float*\"]}"), KF_OK);
    CHECK_EQ_INT(parse("{\"entry\":\"k\",\"block\":[1,1,64],\"args\":[\"float*\"]}"), KF_OK);
    CHECK_EQ_INT(parse("{\"entry\":\"k\",\"smem\":0,\"grid\":[1.0,2,3],\"args\":[\"float*\"]}"),
                 KF_OK);
    CHECK_EQ_INT(L.grid[0], 1);
    CHECK_EQ_INT(L.grid[2], 3);

    /* 16 arguments is the limit; a 63-character entry too */
    char json[2048];
    int n = snprintf(json, sizeof json, "{\"entry\":\"%s\",\"args\":[",
                     "a23456789012345678901234567890123456789012345678901234567890123");
    for (int i = 0; i < KF_LAUNCH_MAX_ARGS; i++)
        n += snprintf(json + n, sizeof json - (size_t)n, "%s\"int32_t*\"", i ? "," : "");
    snprintf(json + n, sizeof json - (size_t)n, "]}");
    CHECK_EQ_INT(parse(json), KF_OK);
    CHECK_EQ_INT(L.n_args, KF_LAUNCH_MAX_ARGS);
    CHECK_EQ_INT(strlen(L.entry), 63);

    /* err may be NULL */
    CHECK_EQ_INT(kf_launch_parse("{\"entry\":\"k\",\"args\":[\"float*\"]}", &L, NULL, 0), KF_OK);
    CHECK_EQ_INT(kf_launch_parse("{", &L, NULL, 0), KF_ERR_INVALID);
}

static void test_bad_json(void)
{
    BAD("", "not valid JSON");
    BAD("{", "not valid JSON");
    BAD("{\"entry\":\"k\",\"args\":[\"float*\"]} trailing", "not valid JSON");
    BAD("{\"entry\":\"k\",\"args\":[\"float*\"]}{}", "not valid JSON");
    BAD("[1,2,3]", "must be a JSON object");
    BAD("\"kf_kernel\"", "must be a JSON object");
    BAD("null", "must be a JSON object");
    CHECK_EQ_INT(kf_launch_parse(NULL, &L, err, sizeof err), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_launch_parse("{}", NULL, err, sizeof err), KF_ERR_INVALID);

    /* huge input is refused before parsing */
    size_t big = 1 << 20;
    char *s = malloc(big + 1);
    if (CHECK(s)) {
        memset(s, ' ', big);
        memcpy(s, "{\"entry\":\"k\",\"args\":[\"float*\"]}", 31);
        s[big] = 0;
        BAD(s, "longer than");
        free(s);
    }
    /* deep nesting */
    char deep[4096];
    int n = snprintf(deep, sizeof deep, "{\"entry\":\"k\",\"args\":[\"float*\"],\"smem\":");
    for (int i = 0; i < 1500; i++) deep[n++] = '[';
    deep[n] = 0;
    BAD(deep, "not valid JSON");
}

static void test_bad_keys(void)
{
    BAD("{\"entry\":\"k\",\"args\":[\"float*\"],\"extra\":1}", "unknown key \"extra\"");
    BAD("{\"entry\":\"k\",\"args\":[\"float*\"],\"Entry\":\"x\"}", "unknown key");
    BAD("{\"entry\":\"k\",\"args\":[\"float*\"],\"flags\":\"-Xptxas\"}", "unknown key");
    BAD("{\"entry\":\"k\",\"entry\":\"evil\",\"args\":[\"float*\"]}", "given twice");
    BAD("{\"entry\":\"k\",\"args\":[\"float*\"],\"args\":[\"float*\"]}", "given twice");
}

static void test_bad_entry(void)
{
    BAD("{\"args\":[\"float*\"]}", "\"entry\"");
    BAD("{\"entry\":42,\"args\":[\"float*\"]}", "\"entry\"");
    BAD("{\"entry\":null,\"args\":[\"float*\"]}", "\"entry\"");
    BAD("{\"entry\":\"\",\"args\":[\"float*\"]}", "C identifier");
    BAD("{\"entry\":\"a b\",\"args\":[\"float*\"]}", "C identifier");
    BAD("{\"entry\":\"1abc\",\"args\":[\"float*\"]}", "C identifier");
    BAD("{\"entry\":\"k(); system(\\\"x\\\"); void k2\",\"args\":[\"float*\"]}", "C identifier");
    BAD("{\"entry\":\"k\\n#include <x>\",\"args\":[\"float*\"]}", "C identifier");
    BAD("{\"entry\":\"k-1\",\"args\":[\"float*\"]}", "C identifier");
    BAD("{\"entry\":\"k\\u0000x\",\"args\":[\"float*\"]}", "NUL");
    BAD("{\"entry\":\"k\",\"args\":[\"float\\u0000*\"]}", "NUL");
    BAD("{\"entry\":\"caf\\u00e9\",\"args\":[\"float*\"]}", "C identifier");
    BAD("{\"entry\":\"a234567890123456789012345678901234567890123456789012345678901234\","
        "\"args\":[\"float*\"]}",
        "at most 63");
}

static void test_bad_dims(void)
{
    BAD("{\"entry\":\"k\",\"grid\":[1,1],\"args\":[\"float*\"]}", "exactly 3");
    BAD("{\"entry\":\"k\",\"grid\":[1,1,1,1],\"args\":[\"float*\"]}", "exactly 3");
    BAD("{\"entry\":\"k\",\"grid\":[],\"args\":[\"float*\"]}", "exactly 3");
    BAD("{\"entry\":\"k\",\"grid\":4,\"args\":[\"float*\"]}", "array of 3");
    BAD("{\"entry\":\"k\",\"grid\":{\"x\":1},\"args\":[\"float*\"]}", "array of 3");
    BAD("{\"entry\":\"k\",\"grid\":[0,1,1],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"grid\":[-1,1,1],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"grid\":[1.5,1,1],\"args\":[\"float*\"]}", "integer");
    BAD("{\"entry\":\"k\",\"grid\":[\"1\",1,1],\"args\":[\"float*\"]}", "integer");
    BAD("{\"entry\":\"k\",\"grid\":[true,1,1],\"args\":[\"float*\"]}", "integer");
    BAD("{\"entry\":\"k\",\"grid\":[2147483648,1,1],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"grid\":[1,65536,1],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"grid\":[1,1,65536],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"grid\":[1e300,1,1],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"block\":[1025,1,1],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"block\":[1,1,65],\"args\":[\"float*\"]}", "outside");
    BAD("{\"entry\":\"k\",\"block\":[32,32,2],\"args\":[\"float*\"]}", "threads");
    BAD("{\"entry\":\"k\",\"block\":[1024,1024,64],\"args\":[\"float*\"]}", "threads");
    BAD("{\"entry\":\"k\",\"smem\":232449,\"args\":[\"float*\"]}", "smem");
    BAD("{\"entry\":\"k\",\"smem\":-1,\"args\":[\"float*\"]}", "smem");
    BAD("{\"entry\":\"k\",\"smem\":0.5,\"args\":[\"float*\"]}", "smem");
    BAD("{\"entry\":\"k\",\"smem\":\"1024\",\"args\":[\"float*\"]}", "smem");
    BAD("{\"entry\":\"k\",\"smem\":1e20,\"args\":[\"float*\"]}", "smem");
}

static void test_bad_args(void)
{
    BAD("{\"entry\":\"k\"}", "\"args\"");
    BAD("{\"entry\":\"k\",\"args\":\"float*\"}", "\"args\"");
    BAD("{\"entry\":\"k\",\"args\":[]}", "1..16");
    BAD("{\"entry\":\"k\",\"args\":[1]}", "must be a string");
    BAD("{\"entry\":\"k\",\"args\":[null]}", "must be a string");
    BAD("{\"entry\":\"k\",\"args\":[[\"float*\"]]}", "must be a string");

    /* too many, including a huge array */
    static char json[16384];
    int n = snprintf(json, sizeof json, "{\"entry\":\"k\",\"args\":[");
    for (int i = 0; i < KF_LAUNCH_MAX_ARGS + 1; i++)
        n += snprintf(json + n, sizeof json - (size_t)n, "%s\"float*\"", i ? "," : "");
    snprintf(json + n, sizeof json - (size_t)n, "]}");
    BAD(json, "1..16");
    n = snprintf(json, sizeof json, "{\"entry\":\"k\",\"args\":[");
    for (int i = 0; i < 1000; i++)
        n += snprintf(json + n, sizeof json - (size_t)n, "%s\"float*\"", i ? "," : "");
    snprintf(json + n, sizeof json - (size_t)n, "]}");
    BAD(json, "1..16");

    /* not pointers, unknown types, C++ and injection attempts */
    static const char *const types[] = {
        "float",
        "float**",
        "*",
        "const",
        "const *",
        "const const float*",
        "float* const",
        "float*&",
        "float[]",
        "int*",
        "long*",
        "half*",
        "void*",
        "char*",
        "struct foo*",
        "unsigned int*",
        "float*); system(\\\"x\\\")",
        "float*){}; int evil(float*",
        "float* /* */",
        "float*\\n#include <stdlib.h>",
        "float*, float*",
        "__nv_bfloat16 *__restrict__",
        "FLOAT*",
        "",
        "   ",
        "float*\\r",
        "a_very_long_identifier_that_does_not_fit_anywhere_at_all*",
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        snprintf(json, sizeof json, "{\"entry\":\"k\",\"args\":[\"float*\",\"%s\"]}", types[i]);
        BAD(json, "args[1]");
        CHECK_CONTAINS(err, "not an allowed pointer type");
    }
}

int main(void)
{
    test_good();
    test_bad_json();
    test_bad_keys();
    test_bad_entry();
    test_bad_dims();
    test_bad_args();
    return check_done("test_compiler_launch");
}
