/* Where the C tests find NVRTC and the CUDA headers when the usual places lack them.
 *
 *  - nvrtc_find_wheel: libnvrtc from the nvidia-cuda-nvrtc pip wheel of the python3 on PATH
 *    (the newest libnvrtc.so.* under nvidia/<cu*>/lib), for kf_compiler_nvrtc_create or dlopen
 *    when neither KFORGE_NVRTC, the loader path nor /usr/local/cuda has it;
 *  - nvrtc_find_include: the folder with <cuda_bf16.h> (and <cuda_fp16.h>): KFORGE_CUDA_INCLUDE
 *    when it has them, else /usr/local/cuda/include; NULL when neither. */
#ifndef KF_TESTS_NVRTC_FIND_H
#define KF_TESTS_NVRTC_FIND_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* 1 and the library's absolute path in out[cap] when python3 has the wheel, else 0. */
static inline int nvrtc_find_wheel(char *out, size_t cap)
{
    FILE *p = popen("python3 -c \"import glob, os, nvidia; "
                    "print(sorted(g for d in nvidia.__path__ "
                    "for g in glob.glob(os.path.join(d, '*', 'lib', 'libnvrtc.so.*')) "
                    "if 'builtins' not in g and 'alt' not in g)[-1])\" 2>/dev/null",
                    "r");
    if (!p) return 0;
    int ok = fgets(out, (int)cap, p) != NULL;
    pclose(p);
    if (!ok) return 0;
    out[strcspn(out, "\n")] = 0;
    return out[0] == '/';
}

static inline const char *nvrtc_find_include(void)
{
    const char *e = getenv("KFORGE_CUDA_INCLUDE");
    struct stat sb;
    char p[4200];
    if (e && *e) {
        snprintf(p, sizeof p, "%s/cuda_bf16.h", e);
        return stat(p, &sb) == 0 ? e : NULL;
    }
    return stat("/usr/local/cuda/include/cuda_bf16.h", &sb) == 0 ? "/usr/local/cuda/include"
                                                                 : NULL;
}

#endif
