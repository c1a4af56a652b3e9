"""Writes render_chain.c: a driver around cuda_chain's render, built from the C test's job helpers
(load, job_text: tests/c/test_templates_chain.c), so that a chain job's JSON fields and knob
indices print the kernel source and its launch. Run from the repository root:
  python3 make_render_chain.py > /tmp/rc/rc.c
  gcc -O1 -I. -Iinclude -o /tmp/rc/rc /tmp/rc/rc.c build/ctest/libkf_worker.a build/ctest/libkf_core.a \
      -lcjson -ldl -lm -lcurl
  /tmp/rc/rc FIELDS.json N_IN N_OUT THREADS GRID ROWS VEC WARP   (knob indices; gen.py runs it)"""
src = open("tests/c/test_templates_chain.c").read()
helpers = src[src.index("static kf_job *load("):src.index("static int count_items(")]
inc = "\n".join(l for l in src.splitlines()
                if l.startswith("#include") and not any(t in l for t in ("check.h", "nvcc_ptx", "nvrtc_find")))
print(inc + r'''
static char tmpdir[] = "/tmp/kf_rcXXXXXX";
extern const kf_template kf_tmpl_cuda_chain;
''' + helpers + r'''
int main(int argc, char **argv)
{
    if (argc < 4 || !mkdtemp(tmpdir)) return 2;
    static char buf[1 << 16];
    FILE *f = fopen(argv[1], "r");
    if (!f) return 2;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    char err[512] = "";
    kf_job *job = load(job_text(buf, atoi(argv[2]), atoi(argv[3])), err, sizeof err);
    if (!job) return printf("load: %s\n", err), 1;
    int idx[8] = {0};
    for (int i = 4; i < argc && i < 12; i++) idx[i - 4] = atoi(argv[i]);
    char *s = NULL, *lj = NULL;
    if (kf_tmpl_cuda_chain.render(&job->sig, idx, &s, &lj, err, sizeof err) != KF_OK)
        return printf("render: %s\n", err), 1;
    printf("%s\n// launch %s\n", s, lj);
    return 0;
}''')
