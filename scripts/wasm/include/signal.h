/* signal.h for libde265 on wasm32-wasi, which has none (wasi-libc's refuses to be included):
 * libde265's motion.cc and slice.cc include it but call nothing of it. */
