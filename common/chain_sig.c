/* A chain's canonical bytes from its spec (chain_sig.h). */
#include "common/chain_sig.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/signature.h"

static kf_status fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kf_status fail(char *err, size_t cap, const char *fmt, ...)
{
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return KF_ERR_INVALID;
}

/* An integer-valued JSON number in [lo, hi]. */
static int int_in(const cJSON *v, int lo, int hi, int *out)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= lo && d <= hi) || floor(d) != d) return 0;
    *out = (int)d;
    return 1;
}

/* One input ref into 3 bytes; 0 with err set when it is malformed or out of range. */
static int parse_ref(const cJSON *ref, int m, int h, int e, uint8_t b[3], char *err, size_t cap)
{
    const cJSON *kind = cJSON_GetArrayItem(ref, 0);
    const int n = cJSON_IsArray(ref) ? cJSON_GetArraySize(ref) : 0;
    int a = 0, o = 0;
    if (!cJSON_IsString(kind)) goto bad;
    if (!strcmp(kind->valuestring, "head")) {
        if (n != 2 || !int_in(cJSON_GetArrayItem(ref, 1), 0, h - 1, &a)) goto bad;
        b[0] = KF_CHAIN_IN_HEAD;
    } else if (!strcmp(kind->valuestring, "member")) {
        if (n != 3 || !int_in(cJSON_GetArrayItem(ref, 1), 0, m - 1, &a) ||
            !int_in(cJSON_GetArrayItem(ref, 2), 0, KF_CHAIN_SPEC_MAX_OUTPUTS - 1, &o))
            goto bad;
        b[0] = KF_CHAIN_IN_MEMBER;
    } else if (!strcmp(kind->valuestring, "ext")) {
        if (n != 2 || !int_in(cJSON_GetArrayItem(ref, 1), 0, e - 1, &a)) goto bad;
        b[0] = KF_CHAIN_IN_EXT;
    } else {
        goto bad;
    }
    b[1] = (uint8_t)a;
    b[2] = (uint8_t)o;
    return 1;
bad:
    fail(err, cap, "member %d: an input is not [\"head\", i < %d], [\"member\", m < %d, o] or "
                   "[\"ext\", e < %d]", m, h, m, e);
    return 0;
}

kf_status kf_chain_sig_bytes_obj(const cJSON *spec, uint8_t **out, uint32_t *out_len, char *err,
                                 size_t err_cap)
{
    *out = NULL;
    *out_len = 0;
    if (err && err_cap) err[0] = 0;
    int version = 0, h = 0, e = 0;
    if (!cJSON_IsObject(spec)) return fail(err, err_cap, "chain spec is not a JSON object");
    if (!int_in(cJSON_GetObjectItemCaseSensitive(spec, "version"), 1, 1, &version))
        return fail(err, err_cap, "chain spec: version is not 1");
    if (!int_in(cJSON_GetObjectItemCaseSensitive(spec, "n_head_inputs"), 0, KF_CHAIN_SPEC_MAX_INPUTS, &h) ||
        !int_in(cJSON_GetObjectItemCaseSensitive(spec, "n_ext"), 0, KF_CHAIN_SPEC_MAX_EXT, &e))
        return fail(err, err_cap, "chain spec: n_head_inputs or n_ext missing or out of range");
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(spec, "members");
    const int n = cJSON_IsArray(members) ? cJSON_GetArraySize(members) : -1;
    if (n < 2 || n > KF_CHAIN_SPEC_MAX_MEMBERS)
        return fail(err, err_cap, "chain spec: members is not an array of 2..%d", KF_CHAIN_SPEC_MAX_MEMBERS);
    /* an upper bound: header, then per member its length, bytes, input count and refs */
    size_t cap = 9 + (size_t)n * (4 + KF_SIG_MAX_BYTES + 1 + 3 * KF_CHAIN_SPEC_MAX_INPUTS);
    uint8_t *buf = malloc(cap);
    if (!buf) return KF_ERR_NOMEM;
    kf_status st = KF_ERR_INVALID;
    size_t len = 0;
    memcpy(buf, "KFCHAIN1", 8);
    len = 8;
    buf[len++] = (uint8_t)n;
    for (int m = 0; m < n; m++) {
        const cJSON *mem = cJSON_GetArrayItem(members, m);
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(mem, "op");
        const cJSON *hex = cJSON_GetObjectItemCaseSensitive(mem, "sig_hex");
        const cJSON *ins = cJSON_GetObjectItemCaseSensitive(mem, "inputs");
        if (!cJSON_IsObject(mem) || !cJSON_IsString(op) || !cJSON_IsString(hex) || !cJSON_IsArray(ins)) {
            fail(err, err_cap, "chain spec: member %d lacks op, sig_hex or inputs", m);
            goto out;
        }
        const size_t hl = strlen(hex->valuestring);
        if (hl == 0 || hl % 2 || hl / 2 > KF_SIG_MAX_BYTES) {
            fail(err, err_cap, "chain spec: member %d (%s): sig_hex is not 1..%d bytes of hex", m,
                 op->valuestring, KF_SIG_MAX_BYTES);
            goto out;
        }
        const uint32_t sl = (uint32_t)(hl / 2);
        buf[len] = (uint8_t)(sl & 0xff), buf[len + 1] = (uint8_t)((sl >> 8) & 0xff);
        buf[len + 2] = (uint8_t)((sl >> 16) & 0xff), buf[len + 3] = (uint8_t)(sl >> 24);
        len += 4;
        if (kf_hex_decode(hex->valuestring, hl, buf + len) != 0) {
            fail(err, err_cap, "chain spec: member %d (%s): sig_hex is not lowercase hex", m, op->valuestring);
            goto out;
        }
        char name[256];
        kf_sig_op_name(buf + len, sl, name, sizeof name);
        if (strcmp(name, op->valuestring) != 0) {
            fail(err, err_cap, "chain spec: member %d: op %s differs from its signature's (%s)", m,
                 op->valuestring, name);
            goto out;
        }
        len += sl;
        const int ni = cJSON_GetArraySize(ins);
        if (ni > KF_CHAIN_SPEC_MAX_INPUTS || (m == 0 && ni != h)) {
            fail(err, err_cap, "chain spec: member %d (%s) has %d inputs (at most %d; the head: "
                 "n_head_inputs)", m, op->valuestring, ni, KF_CHAIN_SPEC_MAX_INPUTS);
            goto out;
        }
        buf[len++] = (uint8_t)ni;
        for (int i = 0; i < ni; i++, len += 3) {
            if (!parse_ref(cJSON_GetArrayItem(ins, i), m, h, e, buf + len, err, err_cap)) goto out;
            if (m == 0 && (buf[len] != KF_CHAIN_IN_HEAD || buf[len + 1] != i)) {
                fail(err, err_cap, "chain spec: the head's input %d is not [\"head\", %d]", i, i);
                goto out;
            }
        }
    }
    const cJSON *views = cJSON_GetObjectItemCaseSensitive(spec, "views");
    if (views) {
        const int nv = cJSON_IsArray(views) ? cJSON_GetArraySize(views) : -1;
        if (nv < 1 || nv > e) {
            fail(err, err_cap, "chain spec: views is not an array of 1..n_ext");
            goto out;
        }
        uint8_t *grown = realloc(buf, len + 2 + (size_t)nv * 10);
        if (!grown) {
            st = KF_ERR_NOMEM;
            goto out;
        }
        buf = grown;
        buf[len++] = 'V';
        buf[len++] = (uint8_t)nv;
        uint64_t taken = 0;
        for (int v = 0; v < nv; v++) {
            const cJSON *w = cJSON_GetArrayItem(views, v);
            const cJSON *off = cJSON_GetArrayItem(w, 2);
            int x = 0, hi = 0;
            if (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != 3 || !int_in(cJSON_GetArrayItem(w, 0), 0, e - 1, &x) ||
                !int_in(cJSON_GetArrayItem(w, 1), 0, h - 1, &hi) || !cJSON_IsNumber(off) ||
                !(fabs(off->valuedouble) <= 9007199254740992.0) || floor(off->valuedouble) != off->valuedouble ||
                (taken >> x & 1)) {
                fail(err, err_cap, "chain spec: view %d is not [ext e < %d (once), head input i < %d, "
                     "byte offset]", v, e, h);
                goto out;
            }
            taken |= (uint64_t)1 << x;
            const int64_t o = (int64_t)off->valuedouble;
            buf[len++] = (uint8_t)x;
            buf[len++] = (uint8_t)hi;
            for (int k = 0; k < 8; k++) buf[len++] = (uint8_t)((uint64_t)o >> (8 * k));
        }
    }
    const cJSON *deferred = cJSON_GetObjectItemCaseSensitive(spec, "deferred");
    if (deferred) {
        if (!cJSON_IsTrue(deferred)) {
            fail(err, err_cap, "chain spec: deferred, when present, is true");
            goto out;
        }
        uint8_t *grown = realloc(buf, len + 1);
        if (!grown) {
            st = KF_ERR_NOMEM;
            goto out;
        }
        buf = grown;
        buf[len++] = 'D';
    }
    *out = buf;
    *out_len = (uint32_t)len;
    buf = NULL;
    st = KF_OK;
out:
    free(buf);
    return st;
}

kf_status kf_chain_sig_bytes(const char *spec_json, uint8_t **out, uint32_t *out_len, char *err,
                             size_t err_cap)
{
    *out = NULL;
    *out_len = 0;
    cJSON *spec = spec_json ? cJSON_Parse(spec_json) : NULL;
    if (!spec) return fail(err, err_cap, "chain spec is not valid JSON");
    kf_status st = kf_chain_sig_bytes_obj(spec, out, out_len, err, err_cap);
    cJSON_Delete(spec);
    return st;
}

char *kf_chain_sig_hex(const char *spec_json, char *err, size_t err_cap)
{
    uint8_t *bytes = NULL;
    uint32_t len = 0;
    if (kf_chain_sig_bytes(spec_json, &bytes, &len, err, err_cap) != KF_OK) return NULL;
    char *hex = malloc(2 * (size_t)len + 1);
    if (hex) kf_hex_encode(bytes, len, hex);
    else if (err && err_cap) snprintf(err, err_cap, "out of memory");
    free(bytes);
    return hex;
}
