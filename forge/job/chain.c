/* The chain spec of a chain job (chain.h), checked field by field: it is untrusted input. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "forge/job/chain.h"

static kf_status bad(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kf_status bad(char *err, size_t cap, const char *fmt, ...)
{
    int n = snprintf(err, cap, "job.json: chain: ");
    if (n >= 0 && (size_t)n < cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return KF_ERR_INVALID;
}

static int small_int(const cJSON *v, int lo, int hi, int *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < lo || v->valuedouble > hi)
        return 0;
    *out = (int)v->valuedouble;
    return 1;
}

int kf_job_chain_arg(const kf_job_chain *ch, int k, int i)
{
    const kf_chain_ref *r = &ch->m[k].ref[i];
    return r->kind == KF_CHAIN_HEAD ? r->a : r->kind == KF_CHAIN_EXT ? ch->n_head + r->a : -1;
}

/* One entry of a member's "inputs": ["head", i] | ["member", m, 0] | ["ext", e]. */
static kf_status parse_ref(const cJSON *v, int k, const char *op, int i, const kf_job_chain *ch,
                           int head_dest, kf_chain_ref *r, char *err, size_t cap)
{
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    const cJSON *kind = n ? cJSON_GetArrayItem(v, 0) : NULL;
    if (!cJSON_IsString(kind))
        return bad(err, cap, "member %d (%s): inputs[%d] must be [\"head\", i], [\"member\", m, o] "
                             "or [\"ext\", e]", k, op, i);
    const char *s = kind->valuestring;
    int want = !strcmp(s, "member") ? 3 : 2, x = 0, o = 0;
    if (strcmp(s, "head") && strcmp(s, "member") && strcmp(s, "ext"))
        return bad(err, cap, "member %d (%s): inputs[%d]: unknown kind \"%.16s\"", k, op, i, s);
    if (n != want) return bad(err, cap, "member %d (%s): inputs[%d]: \"%s\" takes %d numbers", k, op, i, s, want - 1);
    if (!strcmp(s, "head")) {
        if (!small_int(cJSON_GetArrayItem(v, 1), 0, ch->n_head - 1, &x))
            return bad(err, cap, "member %d (%s): inputs[%d]: head input out of range (the head has %d)",
                       k, op, i, ch->n_head);
        if (k > 0 && x == head_dest)
            return bad(err, cap, "member %d (%s): inputs[%d] reads the head's input %d, which the head "
                                 "writes in place: it must be [\"member\", 0, 0]", k, op, i, x);
        r->kind = KF_CHAIN_HEAD;
    } else if (!strcmp(s, "member")) {
        if (!small_int(cJSON_GetArrayItem(v, 1), 0, k - 1, &x))
            return bad(err, cap, "member %d (%s): inputs[%d]: [\"member\", m, o] must name an earlier "
                                 "member", k, op, i);
        if (!small_int(cJSON_GetArrayItem(v, 2), 0, 0, &o))
            return bad(err, cap, "member %d (%s): inputs[%d]: only member %d's first output is read "
                                 "by another member (o = 0)", k, op, i, x);
        r->kind = KF_CHAIN_MEMBER;
    } else {
        if (!small_int(cJSON_GetArrayItem(v, 1), 0, ch->n_ext - 1, &x))
            return bad(err, cap, "member %d (%s): inputs[%d]: external out of range (n_ext %d)", k,
                       op, i, ch->n_ext);
        r->kind = KF_CHAIN_EXT;
    }
    r->a = x;
    return KF_OK;
}

/* Which member each of the job's outputs is: the layout's "member" marks where every entry has
 * one (in member order, each member 1 + KF_CHAIN_EXTRA_OUTPUTS at most), else one per member and
 * the last member's extras. */
static kf_status out_owners(const cJSON *layout, int nm, const kf_job_sig *job, kf_job_chain *ch,
                            char *err, size_t cap)
{
    int n = job->n_out, marked = cJSON_IsArray(layout) && cJSON_GetArraySize(layout) == n;
    for (int j = 0; marked && j < n; j++)
        marked = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layout, j), "member") != NULL;
    if (!marked) {
        if (n < nm || n > nm + KF_CHAIN_EXTRA_OUTPUTS)
            return bad(err, cap, "%d members, but the job has %d outputs (one per member; the last "
                                 "may have %d more)", nm, n, KF_CHAIN_EXTRA_OUTPUTS);
        for (int j = 0; j < n; j++) ch->out_member[j] = j < nm ? j : nm - 1;
    }
    for (int j = 0; marked && j < n; j++) {
        int m = 0, prev = j ? ch->out_member[j - 1] : -1;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layout, j), "member");
        if (!small_int(v, 0, nm - 1, &m) || (m != prev && m != prev + 1))
            return bad(err, cap, "outputs_layout[%d]: \"member\" must be the member of each output, "
                                 "in member order, every member at least once", j);
        ch->out_member[j] = m;
    }
    if (ch->out_member[n - 1] != nm - 1)
        return bad(err, cap, "%d members, but the job's outputs end at member %d", nm, ch->out_member[n - 1]);
    for (int j = n - 1; j >= 0; j--) ch->out0[ch->out_member[j]] = j;
    for (int k = 0; k < nm; k++) {
        int cnt = (k + 1 < nm ? ch->out0[k + 1] : n) - ch->out0[k];
        if (cnt > 1 + KF_CHAIN_EXTRA_OUTPUTS)
            return bad(err, cap, "member %d has %d outputs (at most %d)", k, cnt, 1 + KF_CHAIN_EXTRA_OUTPUTS);
        ch->m[k].sig.n_out = cnt;
    }
    return KF_OK;
}

kf_status kf_job_chain_parse(const cJSON *spec, const cJSON *layout, const kf_job_sig *job,
                             kf_job_chain *ch, char *err, size_t cap)
{
    memset(ch, 0, sizeof *ch);
    if (!cJSON_IsObject(spec)) return bad(err, cap, "must be an object");
    int ver = 0;
    if (!small_int(cJSON_GetObjectItemCaseSensitive(spec, "version"), 1, 1, &ver))
        return bad(err, cap, "\"version\" must be 1");
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(spec, "members");
    int nm = cJSON_IsArray(mem) ? cJSON_GetArraySize(mem) : -1;
    if (nm < 2 || nm > KF_CHAIN_MAX_MEMBERS)
        return bad(err, cap, "\"members\" must be an array of 2..%d members", KF_CHAIN_MAX_MEMBERS);
    if (!small_int(cJSON_GetObjectItemCaseSensitive(spec, "n_head_inputs"), 0, KF_JOB_MAX_TENSORS,
                   &ch->n_head) ||
        !small_int(cJSON_GetObjectItemCaseSensitive(spec, "n_ext"), 0, KF_JOB_MAX_TENSORS, &ch->n_ext))
        return bad(err, cap, "\"n_head_inputs\" and \"n_ext\" must be integers in [0, %d]",
                   KF_JOB_MAX_TENSORS);
    if (ch->n_head + ch->n_ext != job->n_in)
        return bad(err, cap, "%d head inputs + %d externals, but the job has %d inputs", ch->n_head,
                   ch->n_ext, job->n_in);
    kf_status os = out_owners(layout, nm, job, ch, err, cap);
    if (os != KF_OK) return os;
    ch->n_members = nm;
    int head_dest = job->out_alias[0] ? job->out_alias[0] - 1 : -1;
    if (head_dest >= ch->n_head)
        return bad(err, cap, "outputs[0] aliases inputs[%d], which is not one of the head's", head_dest);
    int ext_used[KF_JOB_MAX_TENSORS] = {0};
    for (int k = 0; k < nm; k++) {
        const cJSON *m = cJSON_GetArrayItem(mem, k);
        kf_job_member *jm = &ch->m[k];
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
        if (!cJSON_IsString(op) || !op->valuestring[0] || strlen(op->valuestring) >= sizeof jm->sig.op)
            return bad(err, cap, "member %d: \"op\" must be a string of 1..%zu bytes", k,
                       sizeof jm->sig.op - 1);
        strcpy(jm->sig.op, op->valuestring);
        const char *opn = jm->sig.op;
        for (const char *f = "signature\0sig_hex\0"; *f; f += strlen(f) + 1) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, f);
            if (v && !cJSON_IsString(v))
                return bad(err, cap, "member %d (%s): \"%s\" must be a string", k, opn, f);
        }
        if (k > 0 && job->out_alias[ch->out0[k]] > 0)
            return bad(err, cap, "member %d (%s) writes an input in place: only the head may (its "
                                 "result would be visible between the two calls)", k, opn);
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(m, "inputs");
        int ni = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : -1;
        if (ni < 0 || ni > KF_JOB_MAX_TENSORS)
            return bad(err, cap, "member %d (%s): \"inputs\" must be an array of at most %d", k, opn,
                       KF_JOB_MAX_TENSORS);
        if (k == 0 && ni != ch->n_head)
            return bad(err, cap, "member 0 (%s) has %d inputs, n_head_inputs is %d", opn, ni, ch->n_head);
        for (int i = 0; i < ni; i++) {
            kf_status s = parse_ref(cJSON_GetArrayItem(in, i), k, opn, i, ch, head_dest, &jm->ref[i],
                                    err, cap);
            if (s != KF_OK) return s;
            if (k == 0 && (jm->ref[i].kind != KF_CHAIN_HEAD || jm->ref[i].a != i))
                return bad(err, cap, "member 0 (%s): inputs[%d] must be [\"head\", %d]", opn, i, i);
            const kf_chain_ref *r = &jm->ref[i];
            if (r->kind == KF_CHAIN_EXT) ext_used[r->a] = 1;
            jm->sig.in[i] = r->kind == KF_CHAIN_MEMBER ? job->out[ch->out0[r->a]]
                                                       : job->in[kf_job_chain_arg(ch, k, i)];
        }
        jm->sig.n_in = ni;
        /* deferred mode's in-place member (bn -> relu_): it writes its input 0, an earlier
         * member's output, which is the output it aliases (as that member's own may alias one) */
        const int own = job->out_alias[ch->out0[k]];
        if (own < 0) {
            int src = ni > 0 && jm->ref[0].kind == KF_CHAIN_MEMBER ? ch->out0[jm->ref[0].a] : -1;
            if (src >= 0 && job->out_alias[src] < 0) src = -job->out_alias[src] - 1;
            if (src != -own - 1)
                return bad(err, cap, "member %d (%s): its output aliases outputs[%d], which is not "
                                     "its input 0's", k, opn, -own - 1);
        }
        for (int j = 0; j < jm->sig.n_out; j++) {
            const int o = ch->out0[k] + j;
            if (j > 0 && job->out_alias[o])
                return bad(err, cap, "member %d (%s): outputs[%d] aliases an input", k, opn, o);
            jm->sig.out[j] = job->out[o];
            jm->sig.out_alias[j] = k == 0 && j == 0 ? job->out_alias[0] : j == 0 && own < 0 ? 1 : 0;
        }
    }
    for (int e = 0; e < ch->n_ext; e++)
        if (!ext_used[e]) return bad(err, cap, "external %d is read by no member", e);
    return KF_OK;
}
