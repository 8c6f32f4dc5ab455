/* The engine's lock and its waits, on futexes: taking and giving an
 * uncontended lock is one atomic instruction each (a pthread mutex costs
 * several times that on every held launch), and a wait costs nothing to
 * announce when nobody waits. */
#ifndef CG_LOCK_H
#define CG_LOCK_H

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct cg_lock {
	atomic_int state; /* 0 free, 1 taken, 2 taken with waiters */
};

struct cg_cond {
	atomic_uint seq;
	atomic_int waiters;
};

static inline long cg_futex(void *addr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static inline void cg_lock_slow(struct cg_lock *l, int c)
{
	if (c != 2)
		c = atomic_exchange(&l->state, 2);
	while (c != 0) {
		cg_futex(&l->state, FUTEX_WAIT_PRIVATE, 2, NULL);
		c = atomic_exchange(&l->state, 2);
	}
}

static inline void cg_lock_take(struct cg_lock *l)
{
	int c = 0;
	if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&l->state, &c, 1, memory_order_acquire,
								       memory_order_relaxed), 0))
		cg_lock_slow(l, c);
}

static inline void cg_lock_give(struct cg_lock *l)
{
	if (__builtin_expect(atomic_fetch_sub_explicit(&l->state, 1, memory_order_release) != 1, 0)) {
		atomic_store(&l->state, 0);
		cg_futex(&l->state, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
}

/* Waits for a broadcast, the lock given meanwhile; timeout_ns 0: forever.
 * Spurious returns happen: callers check their condition again. */
static inline void cg_cond_wait(struct cg_cond *c, struct cg_lock *l, uint64_t timeout_ns)
{
	unsigned seq = atomic_load(&c->seq);
	atomic_fetch_add(&c->waiters, 1);
	cg_lock_give(l);
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull) };
	cg_futex(&c->seq, FUTEX_WAIT_PRIVATE, (int)seq, timeout_ns ? &ts : NULL);
	atomic_fetch_sub(&c->waiters, 1);
	cg_lock_take(l);
}

static inline void cg_cond_broadcast(struct cg_cond *c)
{
	atomic_fetch_add(&c->seq, 1);
	if (atomic_load(&c->waiters))
		cg_futex(&c->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

#endif
