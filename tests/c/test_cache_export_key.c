/* Exporting one entry by its key (what the fleet cache pushes): a 32-hex item of the op filter
 * picks exactly that entry; op names still work beside it; an unknown key exports nothing. */
#include "tests/c/test_cache_util.h"

int main(void)
{
    log_install();
    char *root = tmp_dir();
    char *dir = path_join(root, "src"), *bundle = path_join(root, "one.kfb");
    char *dst = path_join(root, "dst");
    kf_cache *c = NULL, *d = NULL;
    CHECK_EQ_INT(kf_cache_open(&c, dir, 0), KF_OK);
    test_entry t[3];
    const char *ops[3] = {"aten::_softmax", "aten::_softmax", "aten::gelu"};
    for (int i = 0; i < 3; i++) {
        test_entry_init(&t[i], ops[i], 70 + i);
        CHECK_EQ_INT(test_insert(c, &t[i]), KF_OK);
    }
    int n = -1;
    const char *one[] = {t[1].key_hex};
    CHECK_EQ_INT(kf_cache_export(c, bundle, one, 1, &n), KF_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(kf_cache_open(&d, dst, 0), KF_OK);
    CHECK_EQ_INT(kf_cache_import(d, bundle, test_rebuild, NULL, &n), KF_OK);
    CHECK_EQ_INT(n, 1);
    kf_cache_entry *e = NULL;
    CHECK_EQ_INT(kf_cache_get(d, t[1].key_hex, &e), KF_OK);
    kf_cache_entry_free(e);
    CHECK_EQ_INT(kf_cache_get(d, t[0].key_hex, &e), KF_ERR_NOT_FOUND);
    kf_cache_entry_free(e);

    const char *mixed[] = {"aten::gelu", t[0].key_hex};
    CHECK_EQ_INT(kf_cache_export(c, bundle, mixed, 2, &n), KF_OK);
    CHECK_EQ_INT(n, 2);
    const char *unknown[] = {"0123456789abcdef0123456789abcdef"};
    CHECK_EQ_INT(kf_cache_export(c, bundle, unknown, 1, &n), KF_OK);
    CHECK_EQ_INT(n, 0);
    kf_cache_free(c);
    kf_cache_free(d);
    free(dir), free(bundle), free(dst);
    rm_rf(root);
    return check_done("test_cache_export_key");
}
