/* host_reduce: the generic reduction over [O outputs][R reduced] (reduce_ops.h), one output at
 * a time (rows, KF_COLS 0: KF_LANES interleaved partial states merged at the end) or a tile of
 * KF_TILE adjacent outputs at a time walking R together (columns, KF_COLS 1: the innermost kept
 * dim is contiguous in the input, so each step reads KF_TILE adjacent elements). */

#if KF_COLS == 0
static inline void kf_reduce_row(const KF_TIN *restrict xo, long long o, KF_PARAMS_OUT)
{
    kf_acc m = 0;
    long long r;
    kf_st l[KF_LANES];
#if KF_PRE
    for (int u = 0; u < KF_LANES; u++) KF_PINIT(l[u]);
    for (r = 0; r + KF_LANES <= KF_R; r += KF_LANES)
        for (int u = 0; u < KF_LANES; u++) {
            kf_acc v = KF_LD(xo[kf_in_r(r + u)]);
            KF_PSTEP(l[u], v);
        }
    for (; r < KF_R; r++) {
        kf_acc v = KF_LD(xo[kf_in_r(r)]);
        KF_PSTEP(l[0], v);
    }
    for (int u = 1; u < KF_LANES; u++) KF_PMERGE(l[0], l[u]);
    m = KF_PFINAL(l[0]);
#endif
    (void)m;
    for (int u = 0; u < KF_LANES; u++) KF_INIT(l[u]);
    for (r = 0; r + KF_LANES <= KF_R; r += KF_LANES)
        for (int u = 0; u < KF_LANES; u++) {
            kf_acc v = KF_LD(xo[kf_in_r(r + u)]);
            KF_STEP(l[u], v, r + u);
        }
    for (; r < KF_R; r++) {
        kf_acc v = KF_LD(xo[kf_in_r(r)]);
        KF_STEP(l[0], v, r);
    }
    for (int u = 1; u < KF_LANES; u++) KF_MERGE(l[0], l[u]);
    KF_STORE(o, l[0]);
}

void kf_kernel(KF_PARAMS)
{
#if KF_OMP
#pragma omp parallel for schedule(static)
#endif
    for (long long o = 0; o < KF_O; o++) kf_reduce_row(x + kf_in_o(o), o, KF_ARGS_OUT);
}

#else
/* outputs oo * KF_K0 + k0 .. + n - 1: adjacent in the input (kept run 0 has stride 1) */
static inline void kf_reduce_tile(const KF_TIN *restrict x, long long oo, long long k0, int n,
                                  KF_PARAMS_OUT)
{
    const KF_TIN *restrict base = x + kf_in_o(oo * KF_K0 + k0);
    kf_st s[KF_TILE];
    kf_acc mm[KF_TILE];
    for (int t = 0; t < KF_TILE; t++) mm[t] = 0;
#if KF_PRE
    for (int t = 0; t < KF_TILE; t++) KF_PINIT(s[t]);
    for (long long r = 0; r < KF_R; r++) {
        const KF_TIN *restrict xr = base + kf_in_r(r);
        for (int t = 0; t < n; t++) {
            kf_acc v = KF_LD(xr[t]);
            KF_PSTEP(s[t], v);
        }
    }
    for (int t = 0; t < n; t++) mm[t] = KF_PFINAL(s[t]);
#endif
    for (int t = 0; t < KF_TILE; t++) KF_INIT(s[t]);
    for (long long r = 0; r < KF_R; r++) {
        const KF_TIN *restrict xr = base + kf_in_r(r);
        for (int t = 0; t < n; t++) {
            kf_acc v = KF_LD(xr[t]), m = mm[t];
            (void)m;
            KF_STEP(s[t], v, r);
        }
    }
    for (int t = 0; t < n; t++) {
        kf_acc m = mm[t];
        (void)m;
        KF_STORE(oo * KF_K0 + k0 + t, s[t]);
    }
}

void kf_kernel(KF_PARAMS)
{
    const long long kf_ntiles = (KF_K0 + KF_TILE - 1) / KF_TILE;
#if KF_OMP
#pragma omp parallel for schedule(static)
#endif
    for (long long q = 0; q < KF_O / KF_K0 * kf_ntiles; q++) {
        const long long oo = q / kf_ntiles, k0 = q % kf_ntiles * KF_TILE;
        const int n = KF_K0 - k0 < KF_TILE ? (int)(KF_K0 - k0) : KF_TILE;
        kf_reduce_tile(x, oo, k0, n, KF_ARGS_OUT);
    }
}
#endif
