/* The one-rank NCCL stand-in's own call, for the scenarios. */
#ifndef SIMNCCL_H
#define SIMNCCL_H

#include <nccl.h>

/* Copies the element counts of the collectives in the order they ran (at
 * most max) into out; returns how many, or -1. */
int simNcclLog(ncclComm_t comm, int *out, int max);

#endif
