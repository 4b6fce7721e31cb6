/* The proxy's event core, after redis's ae.c: epoll with a callback and argument per
 * descriptor, a binary heap of timers, deferred frees, and an eventfd to wake the loop
 * from another thread. It knows nothing of HTTP, clients or DNS: a new kind of socket
 * (a transparent listener, a DNS stub) is one more ev_io with its own callback. */
#ifndef AGENTRUN_PROXY_EV_H
#define AGENTRUN_PROXY_EV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"

struct ev_loop;

/* Called with the epoll events; `fn` NULL marks a stopped watcher whose events still
 * queued in the current batch are ignored. */
typedef void ev_io_fn(void *arg, uint32_t events);
struct ev_io {
	ev_io_fn *fn;
	void *arg;
};

typedef void ev_timer_fn(void *arg);
struct ev_timer {
	int64_t when;  /* CLOCK_MONOTONIC ms */
	uint32_t slot; /* index in the heap + 1; 0 when not armed */
	ev_timer_fn *fn;
	void *arg;
};

/* A deferred call: run after the current batch of events, before the loop waits again
 * (a completion that must not run its owner's driver from inside another call). */
typedef void ev_task_fn(void *arg);
struct ev_task {
	ev_task_fn *fn;
	void *arg;
	struct ev_task *next;
	bool queued;
};

/* Adaptive busy polling (ev_set_busy_poll): before it sleeps, the loop polls epoll for
 * up to `window` µs. On a virtual machine a sleeping process is woken through the
 * hypervisor (an IPI, a vCPU to schedule: tens of µs), which a request waiting on its
 * answer pays twice per round trip; a loop still polling takes the event at once. The
 * window adapts the way the kernel's haltpoll governor does: it grows (doubling from
 * EV_POLL_START up to `max`) when the loop slept for less than `max` (a longer poll
 * would have caught the event) and halves to nothing when it slept for longer (the poll
 * was wasted), so an idle proxy does not poll at all. */
#define EV_POLL_START 8 /* µs */
struct ev_poll {
	int64_t max, window;	/* µs; max 0: never poll */
	uint64_t polls, caught; /* polls made, and those that found an event */
};

struct ev_loop {
	int epfd;
	int wakefd;
	struct ev_io wake_io;
	ev_io_fn *on_wake; /* after the eventfd was drained */
	void *wake_arg;
	int64_t now; /* refreshed before every batch */
	struct ev_timer **heap;
	size_t n_heap, cap_heap;
	struct ev_task *tasks, **tasks_tail;
	void **grave;
	size_t n_grave, cap_grave;
	atomic_bool stop;
	struct ev_poll poll;
};

int64_t ev_clock_ms(void);
int ev_init(struct ev_loop *l, ar_error_t *err);
void ev_free(struct ev_loop *l);
/* Register / change / forget a descriptor (edge- or level-triggered as `events` says). */
int ev_add(struct ev_loop *l, int fd, uint32_t events, struct ev_io *io);
int ev_mod(struct ev_loop *l, int fd, uint32_t events, struct ev_io *io);
void ev_del(struct ev_loop *l, int fd, struct ev_io *io);
/* Arm (or move) a timer to fire at `when`; disarm it. */
void ev_timer_at(struct ev_loop *l, struct ev_timer *t, int64_t when);
void ev_timer_stop(struct ev_loop *l, struct ev_timer *t);
/* Queue t (once, however often it is posted before it runs); ev_cancel takes it back
 * (an object freed with a task queued). */
void ev_post(struct ev_loop *l, struct ev_task *t);
void ev_cancel(struct ev_loop *l, struct ev_task *t);
/* Run the queued tasks, and the ones they post, until none is left. */
void ev_run_tasks(struct ev_loop *l);
/* Free obj after the current batch: events already queued for it are still safe. */
void ev_defer_free(struct ev_loop *l, void *obj);
/* Free the deferred objects now (outside a batch: at shutdown). */
void ev_collect(struct ev_loop *l);
/* Wait at most max_ms (-1: until an event or the next timer; 0 while tasks are
 * queued), dispatch the events, run the tasks, fire due timers, run the tasks, free the
 * deferred objects. -1 on an epoll error. */
int ev_run_once(struct ev_loop *l, int max_ms, ar_error_t *err);
/* Milliseconds until the next timer (max_ms when none is sooner). */
int ev_next_timeout(const struct ev_loop *l, int max_ms);
/* Poll for up to max_us µs, adaptively (struct ev_poll), before sleeping; 0: never. */
void ev_set_busy_poll(struct ev_loop *l, int max_us);
/* The window after the loop waited (polled, then slept) waited_us µs for an event. */
void ev_poll_adapt(struct ev_poll *p, int64_t waited_us);
/* From any thread or a signal handler: make ev_run_once return soon. */
void ev_wake(struct ev_loop *l);

#endif
