/* The event core (ev.h): epoll, a timer heap, deferred frees, a wakeup eventfd. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "ev.h"

#define BATCH 256

int64_t ev_clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void drain_wake(void *arg, uint32_t events)
{
	struct ev_loop *l = arg;
	uint64_t v;
	(void)events;
	if (read(l->wakefd, &v, sizeof(v)) == -1) {
		/* spurious: whoever woke us left state to look at */
	}
	if (l->on_wake)
		l->on_wake(l->wake_arg, events);
}

int ev_init(struct ev_loop *l, ar_error_t *err)
{
	memset(l, 0, sizeof(*l));
	l->wakefd = -1;
	l->now = ev_clock_ms();
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd == -1)
		return ar_error_make(err, errno, "epoll_create1");
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	l->wake_io = (struct ev_io){drain_wake, l};
	if (l->wakefd == -1 || ev_add(l, l->wakefd, EPOLLIN, &l->wake_io) == -1)
		return ar_error_make(err, errno, "eventfd");
	return 0;
}

void ev_collect(struct ev_loop *l)
{
	for (size_t i = 0; i < l->n_grave; i++)
		free(l->grave[i]);
	l->n_grave = 0;
}

void ev_free(struct ev_loop *l)
{
	ev_collect(l);
	free(l->grave);
	free(l->heap);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->wakefd >= 0)
		close(l->wakefd);
	l->epfd = l->wakefd = -1;
	l->grave = NULL;
	l->heap = NULL;
}

int ev_add(struct ev_loop *l, int fd, uint32_t events, struct ev_io *io)
{
	struct epoll_event ev = {.events = events, .data.ptr = io};
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int ev_mod(struct ev_loop *l, int fd, uint32_t events, struct ev_io *io)
{
	struct epoll_event ev = {.events = events, .data.ptr = io};
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void ev_del(struct ev_loop *l, int fd, struct ev_io *io)
{
	if (fd >= 0)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (io)
		io->fn = NULL;
}

void ev_defer_free(struct ev_loop *l, void *obj)
{
	if (l->n_grave == l->cap_grave) {
		l->cap_grave = l->cap_grave ? l->cap_grave * 2 : 64;
		l->grave = ar_xrealloc(l->grave, l->cap_grave * sizeof(void *));
	}
	l->grave[l->n_grave++] = obj;
}

/* ---- the timer heap (a min-heap on `when`; slot is the 1-based index) ---- */

static void heap_set(struct ev_loop *l, size_t i, struct ev_timer *t)
{
	l->heap[i] = t;
	t->slot = (uint32_t)i + 1;
}

static void sift_up(struct ev_loop *l, size_t i)
{
	struct ev_timer *t = l->heap[i];
	while (i > 0 && l->heap[(i - 1) / 2]->when > t->when) {
		heap_set(l, i, l->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(l, i, t);
}

static void sift_down(struct ev_loop *l, size_t i)
{
	struct ev_timer *t = l->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= l->n_heap)
			break;
		if (c + 1 < l->n_heap && l->heap[c + 1]->when < l->heap[c]->when)
			c++;
		if (l->heap[c]->when >= t->when)
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, t);
}

void ev_timer_stop(struct ev_loop *l, struct ev_timer *t)
{
	if (t->slot == 0)
		return;
	size_t i = t->slot - 1;
	t->slot = 0;
	struct ev_timer *last = l->heap[--l->n_heap];
	if (i == l->n_heap)
		return;
	heap_set(l, i, last);
	sift_up(l, i);
	sift_down(l, last->slot - 1);
}

void ev_timer_at(struct ev_loop *l, struct ev_timer *t, int64_t when)
{
	if (t->slot != 0) {
		int64_t old = t->when;
		t->when = when;
		if (when < old)
			sift_up(l, t->slot - 1);
		else
			sift_down(l, t->slot - 1);
		return;
	}
	if (l->n_heap == l->cap_heap) {
		l->cap_heap = l->cap_heap ? l->cap_heap * 2 : 64;
		l->heap = ar_xrealloc(l->heap, l->cap_heap * sizeof(*l->heap));
	}
	t->when = when;
	heap_set(l, l->n_heap++, t);
	sift_up(l, l->n_heap - 1);
}

int ev_next_timeout(const struct ev_loop *l, int max_ms)
{
	if (l->n_heap == 0)
		return max_ms;
	int64_t d = l->heap[0]->when - ev_clock_ms();
	if (d < 0)
		d = 0;
	return max_ms >= 0 && d > max_ms ? max_ms : (int)d;
}

void ev_post(struct ev_loop *l, struct ev_task *t)
{
	if (t->queued)
		return;
	t->queued = true;
	t->next = NULL;
	if (l->tasks == NULL)
		l->tasks_tail = &l->tasks;
	*l->tasks_tail = t;
	l->tasks_tail = &t->next;
}

void ev_cancel(struct ev_loop *l, struct ev_task *t)
{
	if (!t->queued)
		return;
	struct ev_task **pp = &l->tasks;
	while (*pp != t)
		pp = &(*pp)->next;
	*pp = t->next;
	if (l->tasks_tail == &t->next)
		l->tasks_tail = pp;
	t->queued = false;
}

void ev_run_tasks(struct ev_loop *l)
{
	while (l->tasks) {
		struct ev_task *t = l->tasks;
		l->tasks = t->next;
		if (l->tasks == NULL)
			l->tasks_tail = &l->tasks;
		t->queued = false;
		t->fn(t->arg); /* may post tasks, itself included */
	}
}

static void fire_timers(struct ev_loop *l)
{
	while (l->n_heap > 0 && l->heap[0]->when <= l->now) {
		struct ev_timer *t = l->heap[0];
		ev_timer_stop(l, t);
		t->fn(t->arg); /* may re-arm itself or others */
	}
}

int ev_run_once(struct ev_loop *l, int max_ms, ar_error_t *err)
{
	struct epoll_event evs[BATCH];
	int n = epoll_wait(l->epfd, evs, BATCH, l->tasks ? 0 : ev_next_timeout(l, max_ms));
	if (n == -1 && errno != EINTR)
		return ar_error_make(err, errno, "epoll_wait");
	l->now = ev_clock_ms();
	for (int i = 0; i < n; i++) {
		struct ev_io *io = evs[i].data.ptr;
		if (io->fn)
			io->fn(io->arg, evs[i].events);
	}
	ev_run_tasks(l);
	fire_timers(l);
	ev_run_tasks(l);
	ev_collect(l);
	return 0;
}

void ev_wake(struct ev_loop *l)
{
	uint64_t one = 1;
	if (l->wakefd >= 0 && write(l->wakefd, &one, sizeof(one)) == -1) {
		/* the counter is full: the loop is awake already */
	}
}
