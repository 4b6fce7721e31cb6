/* The event core's deferred tasks (conn.c's completions run the driver through them):
 * a task posted during a batch runs after it, once however often it was posted, tasks
 * posted by tasks run in the same round, and a cancelled task never runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../src/proxy/ev.h"

struct probe {
	struct ev_loop *l;
	struct ev_task task, *then;
	int runs;
	int order; /* when it ran, counting from 1 */
};

static int clock_tick;

static void task_fn(void *arg)
{
	struct probe *p = arg;
	p->runs++;
	p->order = ++clock_tick;
	if (p->then)
		ev_post(p->l, p->then);
}

static void io_fn(void *arg, uint32_t events)
{
	struct probe *p = arg;
	(void)events;
	/* posted twice from inside the batch: runs once, after the batch */
	ev_post(p->l, &p->task);
	ev_post(p->l, &p->task);
	assert_int_equal(p->runs, 0);
}

static void test_tasks(void **state)
{
	(void)state;
	struct ev_loop l;
	assert_int_equal(ev_init(&l, NULL), 0);
	struct probe a = {.l = &l}, b = {.l = &l}, gone = {.l = &l};
	a.task = (struct ev_task){.fn = task_fn, .arg = &a};
	b.task = (struct ev_task){.fn = task_fn, .arg = &b};
	gone.task = (struct ev_task){.fn = task_fn, .arg = &gone};
	a.then = &b.task; /* a task posting another: same round */
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct ev_io io = {io_fn, &a};
	assert_int_equal(ev_add(&l, sv[0], EPOLLIN, &io), 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	ev_post(&l, &gone.task);
	ev_cancel(&l, &gone.task);
	assert_int_equal(ev_run_once(&l, 1000, NULL), 0);
	assert_int_equal(a.runs, 1);
	assert_int_equal(b.runs, 1);
	assert_true(a.order < b.order);
	assert_int_equal(gone.runs, 0);
	/* nothing queued: the next round waits (here: its 10 ms) and runs nothing */
	ev_del(&l, sv[0], &io);
	assert_int_equal(ev_run_once(&l, 10, NULL), 0);
	assert_int_equal(a.runs, 1);
	close(sv[0]);
	close(sv[1]);
	ev_free(&l);
}

/* The busy poll's window (struct ev_poll): it opens after a short wait, doubles up to
 * its cap while waits stay short, and halves to nothing once they are long. */
static void test_poll_adapt(void **state)
{
	(void)state;
	struct ev_poll p = {.max = 100};
	static const struct {
		int64_t waited, window;
	} steps[] = {
	    {30, EV_POLL_START}, {30, 16}, {100, 32}, {5, 64},	 {80, 100}, {1, 100}, {101, 50},
	    {5000, 25},		 {40, 50}, {900, 25}, {900, 12}, {900, 0},  {900, 0},
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ev_poll_adapt(&p, steps[i].waited);
		assert_int_equal(p.window, steps[i].window);
	}
	/* a cap below the first step: the window is the cap */
	p = (struct ev_poll){.max = 3};
	ev_poll_adapt(&p, 2);
	assert_int_equal(p.window, 3);
	ev_poll_adapt(&p, 2);
	assert_int_equal(p.window, 3);
}

static void drain_fn(void *arg, uint32_t events)
{
	char b[16];
	(void)events;
	assert_true(read(*(int *)arg, b, sizeof(b)) > 0);
}

/* The loop itself: off, it never polls; on, an event already waiting opens the window,
 * the next wait is a poll that finds its event, and a wait with nothing to find (10 ms
 * here) polls once and closes the window again. */
static void test_busy_poll(void **state)
{
	(void)state;
	struct ev_loop l;
	int sv[2];
	assert_int_equal(ev_init(&l, NULL), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct ev_io io = {drain_fn, &sv[0]};
	assert_int_equal(ev_add(&l, sv[0], EPOLLIN, &io), 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(ev_run_once(&l, 1000, NULL), 0);
	assert_int_equal(l.poll.polls, 0);
	assert_int_equal(l.poll.window, 0);

	ev_set_busy_poll(&l, 100);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(ev_run_once(&l, 1000, NULL), 0);
	assert_int_equal(l.poll.polls, 0);
	assert_int_equal(l.poll.window, EV_POLL_START);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(ev_run_once(&l, 1000, NULL), 0);
	assert_int_equal(l.poll.polls, 1);
	assert_int_equal(l.poll.caught, 1);
	assert_int_equal(l.poll.window, EV_POLL_START);
	assert_int_equal(ev_run_once(&l, 10, NULL), 0);
	assert_int_equal(l.poll.polls, 2);
	assert_int_equal(l.poll.caught, 1);
	assert_int_equal(l.poll.window, 0);
	assert_int_equal(ev_run_once(&l, 10, NULL), 0);
	assert_int_equal(l.poll.polls, 2);
	ev_del(&l, sv[0], &io);
	close(sv[0]);
	close(sv[1]);
	ev_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tasks),
	    cmocka_unit_test(test_poll_adapt),
	    cmocka_unit_test(test_busy_poll),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
