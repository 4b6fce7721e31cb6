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

static int64_t clock_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ev_clock_ms(void)
{
	return clock_us() / 1000;
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

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

void ev_set_busy_poll(struct ev_loop *l, int max_us)
{
	l->poll.max = max_us > 0 ? max_us : 0;
	l->poll.window = 0;
}

void ev_poll_adapt(struct ev_poll *p, int64_t waited_us)
{
	if (waited_us <= p->max)
		p->window = p->window ? min64(p->window * 2, p->max) : min64(EV_POLL_START, p->max);
	else
		p->window = p->window / 2 >= EV_POLL_START ? p->window / 2 : 0;
}

/* epoll_wait for up to timeout ms, polling first (struct ev_poll); a poll that finds
 * an event leaves the window as it is. */
static int wait_events(struct ev_loop *l, struct epoll_event *evs, int timeout)
{
	struct ev_poll *p = &l->poll;
	if (timeout == 0 || p->max == 0)
		return epoll_wait(l->epfd, evs, BATCH, timeout);
	int64_t start = clock_us();
	if (p->window > 0) {
		p->polls++;
		do {
			int n = epoll_wait(l->epfd, evs, BATCH, 0);
			if (n != 0)
				return p->caught += n > 0, n;
		} while (clock_us() - start < p->window);
	}
	int n = epoll_wait(l->epfd, evs, BATCH, timeout);
	ev_poll_adapt(p, clock_us() - start);
	return n;
}

int ev_run_once(struct ev_loop *l, int max_ms, ar_error_t *err)
{
	struct epoll_event evs[BATCH];
	int n = wait_events(l, evs, l->tasks ? 0 : ev_next_timeout(l, max_ms));
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
