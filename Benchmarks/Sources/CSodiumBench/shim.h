#ifndef E2EE_CSODIUM_BENCH_SHIM_H
#define E2EE_CSODIUM_BENCH_SHIM_H
#include <sodium.h>
#endif
