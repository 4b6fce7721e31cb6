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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tasks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
