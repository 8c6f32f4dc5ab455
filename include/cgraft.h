/* cgraft's functions for programs that want to steer or measure it; cgraft
 * needs none of them. The library is preloaded, so look the symbol up at run time
 * and the program runs without cgraft too:
 *
 *     int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cgraft_set_enabled");
 *     if (set)
 *         set(0);
 *
 * or, from Python, ctypes.CDLL(None).cgraft_set_enabled (an AttributeError
 * where cgraft is not loaded). */
#ifndef CGRAFT_H
#define CGRAFT_H

#ifdef __cplusplus
extern "C" {
#endif

/* on = 0: whatever cgraft holds back is submitted now, in order, and every
 * CUDA call passes straight through until on = 1, from which cgraft replays
 * again the graphs it has built. Returns whether cgraft was on before, or -1
 * where it is off for the whole process (CGRAFT_ENABLE=0, or it found that
 * nothing repeats). Safe from any thread. */
int cgraft_set_enabled(int on);

/* on = 1 turns on timing of the program's CUDA calls that cgraft wraps
 * (stream work, synchronisation, allocation; not the getters it passes
 * straight on), 0 turns it off. Returns the host time spent inside those
 * calls while timing was on, in nanoseconds, since the process started:
 * with cgraft switched off (above), what an interposer could save at most.
 * on = 2 times the same calls whole, as cgraft handles them: its own work,
 * the graphs it launches and the calls it lets through (not the host's
 * waits in synchronisations); the sum is returned with the rest, and the
 * split is in CGRAFT_STATS (host_cost_ns) and the report.
 * Costs two clock reads a call while on, nothing while off. */
unsigned long long cgraft_call_time_ns(int on);

#ifdef __cplusplus
}
#endif

#endif
