// memcpy, memmove and memset for the HEIC module. Debian's wasi-libc has musl's, loops of loads
// and stores in WebAssembly; past a few bytes these use the bulk-memory instructions instead
// (memory.copy, memory.fill), which wazero runs as native memmove. Built with -fno-builtin so
// that the short loops stay loops and are not turned back into calls to these very functions.
#include <stddef.h>

#define BULK_THRESHOLD 32

void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    if (n >= BULK_THRESHOLD) {
        __builtin_memcpy(dst, src, n);
        return dst;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--) {
        *d++ = *s++;
    }
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    if (n >= BULK_THRESHOLD) {
        __builtin_memmove(dst, src, n);
        return dst;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s) {
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
    if (n >= BULK_THRESHOLD) {
        __builtin_memset(dst, c, n);
        return dst;
    }
    unsigned char *d = dst;
    while (n--) {
        *d++ = (unsigned char)c;
    }
    return dst;
}
