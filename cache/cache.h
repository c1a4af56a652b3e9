/* The kernel cache: verified kernels on disk, one manifest (JSON) and one blob per entry.
 *
 * Layout of a cache folder (created 0700):
 *   <dir>/entries/<key>.json   manifest: signature, source, launch record, errors, timings, ...
 *   <dir>/entries/<key>.blob   the compiled kernel (cubin for nvrtc, shared object for host)
 *   <dir>/generation           a decimal counter bumped by every insert/remove/mark (reload cue)
 *   <dir>/lock                 flock(2) around every change
 * <key> is the 32-hex-digit XXH3-128 key. Writes go to a temp file in the same folder, are
 * fsync'ed and renamed, blob first and manifest last, so a reader never sees a partial entry.
 * Everything read from disk or from a bundle is untrusted: every field is validated, and a bad
 * entry is skipped with one warning naming the file (once per handle, file and problem), never
 * served, never a crash. Validation proves a file intact, not its code good: see import. */
#ifndef KF_CACHE_CACHE_H
#define KF_CACHE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_CONTRACT_VERSION 1  /* the kernel contract (argument order, launch record) */
#define KF_CACHE_FORMAT 1      /* the manifest / bundle format */
#define KF_KEY_HEX 33          /* 32 hex digits + NUL */
#define KF_CACHE_MAX_BLOB (256u << 20)
#define KF_CACHE_MAX_MANIFEST (4u << 20)

typedef struct kf_cache_key {
    uint64_t hi, lo;
} kf_cache_key;

/* Everything that can change the binary or its meaning goes into the key. */
typedef struct kf_key_inputs {
    const uint8_t *sig;      /* canonical signature bytes (common/signature.h) */
    uint32_t sig_len;
    const char *backend;     /* "host" | "nvrtc" */
    const char *arch;        /* "sm_90" | host: "x86_64" + compiler target */
    const char *toolchain;   /* "nvrtc 13.0" | "cc: gcc 12.2.0; -O3 -march=native ..." */
    const char *torch_version;
    const char *plugin_version; /* KF_VERSION_STRING */
    int contract_version;       /* KF_CONTRACT_VERSION */
} kf_key_inputs;

kf_cache_key kf_cache_key_compute(const kf_key_inputs *in);
void kf_cache_key_hex(kf_cache_key k, char out[KF_KEY_HEX]);
/* Exactly 32 lowercase hex digits; anything else is KF_ERR_INVALID. */
kf_status kf_cache_key_parse(const char *hex, kf_cache_key *out);

/* One entry's manifest, parsed. Strings are owned by the entry (kf_cache_entry_free). */
typedef struct kf_cache_entry {
    kf_cache_key key;
    char key_hex[KF_KEY_HEX];
    int format, contract_version;
    char *op;               /* "aten::_softmax" */
    char *signature;        /* readable form */
    uint8_t *sig;           /* canonical bytes (hex in the JSON) */
    uint32_t sig_len;
    char *backend, *arch, *toolchain, *torch_version, *plugin_version;
    char *source;           /* kernel source text */
    char *launch;           /* launch record, JSON text */
    char *compile_options;
    char *outputs;          /* eager's output layout, JSON text (plugin/layout.h) */
    char *family;           /* the shape family it serves, JSON object text; NULL: its signature
                             * only (checked by plugin/family.c, docs/architecture.md) */
    char *chain;            /* a chain kernel's members and dataflow, JSON object text (op
                             * "kforge::chain", docs/chains.md); NULL: one op's kernel */
    double max_abs_err, max_rel_err, atol, rtol;
    double eager_us, kernel_us;
    char *proposer, *job;   /* where it came from ("hand-written", "builtin", "llm") */
    char blob_hash[KF_KEY_HEX]; /* XXH3-128 of the blob, hex */
    uint64_t blob_size;
    int disabled;           /* marked bad (e.g. failed a first-use check) */
    char *disabled_reason;
    double created;         /* unix time */
} kf_cache_entry;

void kf_cache_entry_free(kf_cache_entry *e);
/* Manifest JSON <-> entry. Parsing validates every field (types, sizes, hex, versions) and
 * recomputes nothing; it fails with a message in `err`. */
char *kf_cache_entry_to_json(const kf_cache_entry *e);
kf_status kf_cache_entry_from_json(const char *json, size_t len, kf_cache_entry **out,
                                   char *err, size_t errcap);

typedef struct kf_cache kf_cache;

/* Open (creating 0700 if missing, unless read_only) a cache folder. A folder (or entries/) that
 * is a symlink or not owned by the current user is refused; a missing one in read_only mode is
 * KF_ERR_NOT_FOUND. Like sqlite3_open, a failed open still sets *out (NULL only when out of
 * memory) to a handle that carries the reason for kf_cache_errmsg and must be kf_cache_free'd;
 * every other call on it fails. A handle is used by one thread at a time. */
kf_status kf_cache_open(kf_cache **out, const char *dir, int read_only);
/* A read-only cache held in memory, loaded from a bundle file (KFORGE_CACHE=FILE). Its structure
 * is validated first (as for kf_cache_import); any problem fails the whole open (failed handle as
 * for kf_cache_open). kf_cache_read_blob gives the shipped bytes: a host entry's must not be
 * loaded as they are (plugin/cachelink.c rebuilds it from its source). */
kf_status kf_cache_open_bundle(kf_cache **out, const char *bundle_path);
void kf_cache_free(kf_cache *c);
const char *kf_cache_errmsg(const kf_cache *c);
const char *kf_cache_dir(const kf_cache *c); /* NULL for a bundle */
/* With `on`, a call that needs the folder's lock while another process holds it fails at once
 * with KF_ERR_BUSY instead of waiting (the plugin's reload: a stopped writer must not hang it). */
void kf_cache_set_nowait(kf_cache *c, int on);

/* Insert (or replace) an entry: blob_hash/blob_size/created are filled in here. Atomic and
 * locked: two processes inserting at once leave two complete entries (or one, same key).
 * e->key / e->key_hex may be left zero / empty: the key is computed here from the entry's own
 * sig, backend, arch, toolchain, torch_version, plugin_version and contract_version (0 means
 * KF_CONTRACT_VERSION, format 0 means KF_CACHE_FORMAT); a key that is given must be that one.
 * Entries read back must satisfy the same rule, so a manifest cannot claim another's key.
 * key_hex (may be NULL) gets the key the entry was stored under. */
kf_status kf_cache_insert(kf_cache *c, const kf_cache_entry *e, const void *blob, size_t blob_len,
                          char key_hex[KF_KEY_HEX]);
/* The blob_hash an insert records for this blob. */
void kf_cache_blob_hash(const void *blob, size_t blob_len, char out[KF_KEY_HEX]);

/* Every valid entry (bad ones skipped, each with a warning naming the file the first time this
 * handle lists it with that problem). The array and the entries belong to the caller:
 * kf_cache_entries_free. */
kf_status kf_cache_list(kf_cache *c, kf_cache_entry ***entries, int *n);
void kf_cache_entries_free(kf_cache_entry **entries, int n);
kf_status kf_cache_get(kf_cache *c, const char *key_hex, kf_cache_entry **out);
/* The blob, checked against the manifest's size and hash (mismatch: KF_ERR_IO + message). */
kf_status kf_cache_read_blob(kf_cache *c, const kf_cache_entry *e, void **blob, size_t *len);

kf_status kf_cache_remove(kf_cache *c, const char *key_hex);
kf_status kf_cache_clear(kf_cache *c);
kf_status kf_cache_set_disabled(kf_cache *c, const char *key_hex, int disabled, const char *reason);
/* Cheap: the generation counter (0 if missing). Changes whenever the cache changes. */
uint64_t kf_cache_generation(kf_cache *c);

/* Bundles: one file holding the selected entries and a checksummed index. `ops` filters by op
 * name or, for an item of 32 hex digits, by entry key (NULL/0: all). Import checks the bundle's structure (checksums, sizes, names: no path
 * escapes, known formats and versions, every manifest's fields and its key, manifest <-> blob
 * hash) before installing anything; that proves the file is intact, not that its code is good.
 * So a host entry (a shared object: native code that would run in the user's process) is never
 * installed as shipped: `rebuild` builds its blob here from the entry's source, after the source
 * check, or refuses, and a refused entry is skipped with a warning (with rebuild NULL every host
 * entry is skipped). nvrtc cubins (device code only) are installed as shipped; every entry is
 * still checked against eager on first use (KFORGE_VALIDATE). An entry disabled here stays
 * disabled, with its local reason, when a bundle brings the same key. */
typedef kf_status (*kf_cache_rebuild_fn)(void *user, const kf_cache_entry *e, void **blob,
                                         size_t *len, char *err, size_t errcap);
kf_status kf_cache_export(kf_cache *c, const char *bundle_path, const char *const *ops, int n_ops,
                          int *n_exported);
kf_status kf_cache_import(kf_cache *c, const char *bundle_path, kf_cache_rebuild_fn rebuild,
                          void *user, int *n_installed);

/* Re-read and re-hash every entry; `report` gets one line per problem. Returns the problem count. */
typedef void (*kf_cache_report_fn)(void *user, const char *key_hex, const char *problem);
int kf_cache_verify(kf_cache *c, kf_cache_report_fn report, void *user);

#ifdef __cplusplus
}
#endif
#endif
