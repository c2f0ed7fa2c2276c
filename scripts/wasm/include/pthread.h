/* pthread.h for libde265 on wasm32-wasi, whose libc has no threads. libde265 declares its
 * thread pool's types with these; it is never started (libheif's plugin, patched, asks for no
 * worker threads), so only the mutex and condition calls of a single thread are made, and the
 * glue (heif.c.txt) defines them all as doing nothing. */
#ifndef HEIF_WASI_PTHREAD_H
#define HEIF_WASI_PTHREAD_H

/* wasi-libc defines the types (musl's), but declares none of the functions. */
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int pthread_join(pthread_t t, void **ret);
int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
int pthread_mutex_destroy(pthread_mutex_t *m);
int pthread_mutex_lock(pthread_mutex_t *m);
int pthread_mutex_unlock(pthread_mutex_t *m);
int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a);
int pthread_cond_destroy(pthread_cond_t *c);
int pthread_cond_signal(pthread_cond_t *c);
int pthread_cond_broadcast(pthread_cond_t *c);
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);

#ifdef __cplusplus
}
#endif

#endif
