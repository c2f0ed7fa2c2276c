// memcpy, memmove and memset for the HEIC module. Debian's wasi-libc has musl's, loops of loads
// and stores in WebAssembly. wazero runs memory.copy as one call of the Go runtime's memmove, and
// memory.fill as a memmove per doubling of the filled span (a 2 KiB fill is eleven calls), so a
// call only pays for itself on long spans: shorter ones are 16-byte SIMD loads and stores, which
// wazero compiles to the machine's own, with one overlapping store for the tail. Built with
// -fno-builtin so that the loops stay loops and are not turned back into calls to these very
// functions.
#include <stddef.h>
#include <wasm_simd128.h>

// Spans up to these sizes are copied or filled by the loops below.
#define COPY_LOOP_MAX 256
#define FILL_LOOP_MAX 16384

// copy16 copies n >= 16 bytes between spans that do not overlap.
static inline void copy16(unsigned char *d, const unsigned char *s, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        wasm_v128_store(d + i, wasm_v128_load(s + i));
    }
    if (i < n) {
        wasm_v128_store(d + n - 16, wasm_v128_load(s + n - 16));
    }
}

void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n > COPY_LOOP_MAX) {
        __builtin_memcpy(dst, src, n);
    } else if (n >= 16) {
        copy16(d, s, n);
    } else {
        while (n--) {
            *d++ = *s++;
        }
    }
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n > COPY_LOOP_MAX || (n >= 16 && d < s + n && s < d + n)) {
        __builtin_memmove(dst, src, n);
    } else if (n >= 16) {
        copy16(d, s, n);
    } else if (d < s) {
        while (n--) {
            *d++ = *s++;
        }
    } else {
        while (n--) {
            d[n] = s[n];
        }
    }
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    if (n > FILL_LOOP_MAX) {
        __builtin_memset(dst, c, n);
    } else if (n >= 16) {
        v128_t v = wasm_i8x16_splat((char)c);
        size_t i = 0;
        for (; i + 16 <= n; i += 16) {
            wasm_v128_store(d + i, v);
        }
        if (i < n) {
            wasm_v128_store(d + n - 16, v);
        }
    } else {
        while (n--) {
            *d++ = (unsigned char)c;
        }
    }
    return dst;
}
