            }
        }
    }
#if KF_TAIL > 0
    /* the last KF_TAIL elements (flat layouts only), one each */
    if (blockIdx.x == 0 && tid < KF_TAIL) {
        const kf_idx i = (kf_idx)(KF_NVEC * KF_VW + tid);
#if KF_NIN == 2
        y[i] = kf_from_f<kf_t>(kf_op(kf_to_f(a[i]), kf_to_f(b[i])));
#else
        y[i] = kf_from_f<kf_t>(kf_op(kf_to_f(a[i])));
#endif
    }
#endif
}
