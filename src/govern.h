/* Never slower: the governor that compares replaying with standing aside in
 * windows of wall time, and stands cgraft aside where replay does not pay. */
#ifndef CG_GOVERN_H
#define CG_GOVERN_H

#include <stdint.h>

#include "base.h"

#define CG_GOV_WINDOW_NS 25000000L /* a window: 25 ms of the program's wall time */
#define CG_GOV_MIN_CALLS 200       /* fewer stream calls in a window tell nothing */
#define CG_GOV_LEARN 8             /* windows replaying first, to learn */
#define CG_GOV_PROBE 8             /* windows of a probe, half standing aside */
#define CG_GOV_ON 80               /* windows replaying before the next probe, doubling */
#define CG_GOV_ASIDE 40            /* windows standing aside before the next, doubling */
#define CG_GOV_SLOWER 0.97         /* replay slower than this share of eager's speed */

enum cg_gov_state { CG_G_LEARN, CG_G_PROBE, CG_G_ON, CG_G_ASIDE };

struct cg_gov {
	enum cg_gov_state state;
	int aside;                /* the window now running stands aside */
	uint64_t n, until;        /* windows counted in this state, and its length */
	double probe[CG_GOV_PROBE]; /* ns per call of the probe's windows */
	int rounds, confirms;     /* probes found slower, faster in a row */
	int doubt;                /* the last probe found replay slower, replaying: probed again */
	int from_aside;           /* this probe came after standing aside */
	double ratio;             /* the last probe's: speed replaying / standing aside */
	uint64_t probes, slower, windows, aside_windows;
};

/* The decision, a pure function of the windows' times (unit-tested). */
void cg_gov_init(struct cg_gov *g) CG_HIDDEN;
/* A window that ran g->aside ended after ns with calls stream calls; returns
 * whether the next one stands aside. */
int cg_gov_step(struct cg_gov *g, uint64_t ns, uint64_t calls) CG_HIDDEN;

/* Starts the governor once the program does CUDA work (CGRAFT_BACKOFF_SLOW). */
void cg_govern_start(void) CG_HIDDEN;
/* For the report. */
const struct cg_gov *cg_govern_state(void) CG_HIDDEN;

#endif
