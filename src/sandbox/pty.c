/* A terminal of the command's own. When stdin is the caller's terminal (and agentrun
 * runs in its foreground), the command gets a pseudo-terminal from the sandbox's own
 * devpts instance instead: nothing it does to its terminal (stty -echo, raw mode,
 * TIOCSTI into its own input) reaches the caller's, `tty` names a device that exists
 * inside, and it is the session's controlling terminal (^C makes SIGINT there).
 *
 * The command opens the pair itself (after setsid, inside its /dev/pts), makes the
 * slave its controlling terminal and its 0/1/2 where those were the caller's
 * terminal, and sends the master to agentrun over a socket (SCM_RIGHTS). agentrun
 * puts the caller's terminal in raw mode and relays both ways in a thread of its own,
 * so the launch sequence and its signal loop stay as they are; on SIGWINCH the loop
 * copies the window size over (sandbox_pty_resize). The relay never blocks: every
 * descriptor it writes is non-blocking (the caller's terminal opened again, so the
 * flag stays off the caller's own description) behind a bounded buffer per direction,
 * so a caller that reads nothing stalls the command's output alone, and a command that
 * reads nothing stalls its input alone. When the sandbox ends the master reads EIO
 * (every slave holder is gone with the PID namespace): the thread drains what is left
 * (for a second at most) and ends, and the caller's terminal settings come back, on
 * every path out (sandbox_pty_stop runs from release_sandbox) — and after a kill -9
 * of agentrun too, from a small watcher process that holds the saved settings. Only
 * with a terminal on stdin: a run without one pays for none of this. --no-tty keeps
 * plain pass-through. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "sandbox-internal.h"

struct sandbox_pty {
	int sock[2]; /* [0] the command's end, [1] agentrun's */
	int master;  /* agentrun's, once received */
	int out;     /* where the terminal's output goes: the caller's terminal */
	int stop;    /* eventfd: the sandbox has ended, the relay finishes */
	int in_fd;   /* 0 and `out` opened again, non-blocking (reopen_nonblock) */
	int out_fd;
	pid_t watcher; /* restores `saved` after a kill -9 of agentrun (start_watcher) */
	int watch_fd;  /* its "done" pipe */
	bool tty[3];   /* which of 0, 1, 2 were the caller's terminal */
	bool raw;      /* the caller's terminal is in raw mode: restore `saved` */
	struct termios saved;
	pthread_t thread;
	bool running;
};

static void close_fd_keep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static bool foreground_tty(int fd)
{
	pid_t fg = tcgetpgrp(fd);
	return isatty(fd) && fg != -1 && fg == getpgrp();
}

int sandbox_pty_prepare(struct sandbox *sb, ar_error_t *err)
{
	if (sb->o->no_tty || !foreground_tty(0))
		return 0;
	struct sandbox_pty *t = ar_xcalloc(1, sizeof(*t));
	t->master = t->in_fd = t->out_fd = t->watch_fd = t->stop = -1;
	for (int fd = 0; fd < 3; fd++)
		t->tty[fd] = isatty(fd);
	t->out = t->tty[1] ? 1 : t->tty[2] ? 2 : 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, t->sock) == -1) {
		free(t);
		return ar_error_make(err, errno, "terminal: socketpair");
	}
	sb->pty = t;
	return 0;
}

/* ---- the command's side (between fork and exec, as root, after setsid) ---- */

int sandbox_pty_attach(const struct sandbox *sb, ar_error_t *err)
{
	const struct sandbox_pty *t = sb->pty;
	int unlock = 0;

	if (t == NULL)
		return 0;
	ar_autoclose int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master == -1 || ioctl(master, TIOCSPTLCK, &unlock) == -1)
		return ar_error_make(err, errno, "terminal: open /dev/ptmx in the sandbox");
	ar_autoclose int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave == -1 || ioctl(slave, TIOCSCTTY, 0) == -1)
		return ar_error_make(err, errno, "terminal: make the pty the controlling terminal");
	/* the command's own, like a login's terminal: reopening /dev/pts/N works too */
	if (fchown(slave, sb->uid, (gid_t)-1) == -1)
		return ar_error_make(err, errno, "terminal: chown the pty");
	/* the caller's size before exec (the relay's copy would race with the start) */
	struct winsize ws;
	if (ioctl(0, TIOCGWINSZ, &ws) == 0)
		ioctl(master, TIOCSWINSZ, &ws);
	for (int fd = 0; fd < 3; fd++)
		if (t->tty[fd] && dup2(slave, fd) == -1)
			return ar_error_make(err, errno, "terminal: dup2 the pty to fd %d", fd);
	if (ar_send_fds(t->sock[0], 't', &master, 1) == -1)
		return ar_error_make(err, errno, "terminal: hand the pty to agentrun");
	return 0;
}

/* ---- agentrun's side ---- */

static int recv_fd(int sock)
{
	char byte;
	int fd = -1;
	size_t n = 0;
	return ar_recv_fds(sock, &byte, &fd, 1, &n) == 1 && n == 1 ? fd : -1;
}

static void copy_winsize(const struct sandbox_pty *t)
{
	struct winsize ws;
	if (t->master >= 0 && ioctl(0, TIOCGWINSZ, &ws) == 0)
		ioctl(t->master, TIOCSWINSZ, &ws);
}

/* A bounded buffer between two descriptors: the relay reads into it only while it has
 * room and writes from it only when the other side takes bytes (non-blocking), so a
 * slow reader on one side or a full pty input queue on the other stops that direction
 * alone and never the relay. */
#define RELAY_BUF 65536
struct relay_buf {
	char data[RELAY_BUF];
	size_t off, len;
};

static bool buf_room(const struct relay_buf *b)
{
	return b->len < RELAY_BUF;
}

/* Read what `from` has: 1, 0 at its end (or EIO: its other side is gone). */
static int buf_fill(int from, struct relay_buf *b)
{
	if (b->off > 0) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	ssize_t n = TEMP_FAILURE_RETRY(read(from, b->data + b->len, RELAY_BUF - b->len));
	if (n > 0)
		b->len += (size_t)n;
	return n > 0 || (n == -1 && errno == EAGAIN) ? 1 : 0;
}

/* Write what `to` takes now: 0, -1 when it is gone (the bytes are dropped). */
static int buf_flush(int to, struct relay_buf *b)
{
	ssize_t n = TEMP_FAILURE_RETRY(write(to, b->data + b->off, b->len));
	if (n == -1 && errno == EAGAIN)
		return 0;
	if (n <= 0) {
		b->len = 0;
		return -1;
	}
	b->off += (size_t)n;
	b->len -= (size_t)n;
	if (b->len == 0)
		b->off = 0;
	return 0;
}

struct relay_state {
	struct sandbox_pty *t;
	struct relay_buf in, out; /* caller -> command, command -> caller */
	bool caller_in;		  /* the caller's terminal still gives input */
	bool caller_out;	  /* and still takes output (else it is dropped) */
	bool stopping;		  /* the sandbox has ended: finish within a second */
};

/* One round; false once the sandbox is gone (the master reads EIO). */
static bool relay_round(struct relay_state *r)
{
	struct sandbox_pty *t = r->t;
	bool want_master = buf_room(&r->out) || r->in.len > 0;
	struct pollfd p[4] = {
	    {.fd = r->caller_in && buf_room(&r->in) ? t->in_fd : -1, .events = POLLIN},
	    {.fd = want_master ? t->master : -1,
	     .events = (short)((buf_room(&r->out) ? POLLIN : 0) | (r->in.len ? POLLOUT : 0))},
	    {.fd = r->out.len ? t->out_fd : -1, .events = POLLOUT},
	    {.fd = r->stopping ? -1 : t->stop, .events = POLLIN},
	};
	/* once stopping, a second without progress ends it: a caller's terminal that
	 * takes nothing (flow control, nobody reading) must not hold agentrun's exit */
	int n = TEMP_FAILURE_RETRY(poll(p, 4, r->stopping ? 1000 : -1));
	if (n <= 0)
		return false;
	if (p[3].revents)
		r->stopping = true;
	if (p[0].revents && buf_fill(t->in_fd, &r->in) == 0)
		r->caller_in = false; /* the caller's terminal hung up: output still flows */
	if ((p[1].revents & (POLLOUT | POLLERR | POLLHUP)) && r->in.len)
		buf_flush(t->master, &r->in);
	if ((p[1].revents & (POLLIN | POLLERR | POLLHUP)) && buf_room(&r->out) &&
	    buf_fill(t->master, &r->out) == 0)
		return false; /* EIO: no slave is open any more, the sandbox is gone */
	if (p[2].revents && buf_flush(t->out_fd, &r->out) == -1)
		r->caller_out = false;
	if (!r->caller_out)
		r->out.len = 0;
	return true;
}

/* What the command wrote last, while the caller's terminal takes it (bounded: a
 * terminal that takes nothing for a second gets no more). */
static void relay_drain(struct relay_state *r)
{
	while (r->caller_out && r->out.len > 0) {
		struct pollfd p = {.fd = r->t->out_fd, .events = POLLOUT};
		if (TEMP_FAILURE_RETRY(poll(&p, 1, 1000)) != 1 ||
		    buf_flush(r->t->out_fd, &r->out) == -1)
			break;
	}
}

static void *relay(void *arg)
{
	struct relay_state *r = ar_xcalloc(1, sizeof(*r));
	r->t = arg;
	r->caller_in = r->caller_out = true;
	int master = recv_fd(r->t->sock[1]);
	if (master != -1) {
		r->t->master = master;
		fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
		while (relay_round(r)) {
		}
		relay_drain(r);
	}
	free(r);
	return NULL;
}

/* The caller's terminal opened again, non-blocking: a description of our own, so the
 * flag never reaches the caller's (a shell reading a non-blocking stdin after us, or
 * after a kill -9, would see EAGAIN). */
static int reopen_nonblock(int fd, int flags)
{
	char path[32];
	pid_t sid = -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int r = open(path, flags | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (r >= 0)
		return r;
	/* a terminal the caller may not open by its name (another user's, after su or
	 * setpriv): through /dev/tty when it is our controlling terminal (TIOCGSID answers
	 * only for that one), which it is unless agentrun runs outside its session */
	if (ioctl(fd, TIOCGSID, &sid) == 0 && sid == getsid(0) &&
	    (r = open("/dev/tty", flags | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) >= 0)
		return r;
	return fcntl(fd, F_DUPFD_CLOEXEC, 3); /* no /proc: blocking, as before */
}

/* ---- the watcher: the caller's settings back when agentrun is killed ---- */

/* A process of its own that only waits: for agentrun's exit (its pidfd) or its "done"
 * byte. After a kill -9 nothing of agentrun runs, so the watcher puts the caller's
 * terminal back as agentrun found it. Every signal blocked: a ^C or a SIGTERM to the
 * process group must not end it first, and a blocked SIGTTOU lets it set the
 * terminal's modes once the shell has taken the terminal back. */
__attribute__((noreturn)) static void watcher_main(int done, int pidfd, const struct termios *saved)
{
	sigset_t all;
	char c;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	struct pollfd p[2] = {{.fd = done, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
	while (poll(p, pidfd >= 0 ? 2 : 1, -1) == -1 && errno == EINTR) {
	}
	if (read(done, &c, 1) == 1)
		_exit(0); /* agentrun restored the terminal itself */
	tcsetattr(0, TCSANOW, saved);
	_exit(0);
}

static int start_watcher(struct sandbox_pty *t, ar_error_t *err)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) == -1)
		return ar_error_make(err, errno, "terminal: pipe");
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0); /* -1: the pipe alone */
	pid_t pid = fork();
	if (pid == 0) {
		/* 0 stays (the terminal to restore); 1 and 2 may be a pipe whose reader
		 * must see its end when agentrun ends; the rest is the sandbox's */
		int lo = pidfd >= 0 && pidfd < pipefd[0] ? pidfd : pipefd[0];
		int hi = pidfd > pipefd[0] ? pidfd : pipefd[0];
		close(1);
		close(2);
		syscall(SYS_close_range, 3U, (unsigned)lo - 1, 0);
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0);
		syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0);
		fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
		watcher_main(pipefd[0], pidfd, &t->saved);
	}
	int e = errno;
	close(pipefd[0]);
	if (pidfd >= 0)
		close(pidfd);
	if (pid == -1) {
		close(pipefd[1]);
		return ar_error_make(err, e, "terminal: fork the watcher");
	}
	t->watcher = pid;
	t->watch_fd = pipefd[1];
	return 0;
}

static void stop_watcher(struct sandbox_pty *t)
{
	if (t->watcher <= 0)
		return;
	if (write(t->watch_fd, "d", 1) != 1) {
		/* it restores once more: the same settings */
	}
	close_fd_keep(&t->watch_fd);
	TEMP_FAILURE_RETRY(waitpid(t->watcher, NULL, 0));
	t->watcher = 0;
}

int sandbox_pty_start(struct sandbox *sb, ar_error_t *err)
{
	struct sandbox_pty *t = sb->pty;
	sigset_t all, old;

	if (t == NULL)
		return 0;
	close_fd_keep(&t->sock[0]);
	t->in_fd = reopen_nonblock(0, O_RDONLY);
	t->out_fd = reopen_nonblock(t->out, O_WRONLY);
	t->stop = eventfd(0, EFD_CLOEXEC);
	if (t->in_fd == -1 || t->out_fd == -1 || t->stop == -1)
		return ar_error_make(err, errno, "terminal: open the caller's terminal");
	if (tcgetattr(0, &t->saved) == 0) {
		struct termios raw = t->saved;
		if (start_watcher(t, err) == -1)
			return -1;
		cfmakeraw(&raw);
		t->raw = tcsetattr(0, TCSADRAIN, &raw) == 0;
	}
	/* the thread takes no signal: the launch sequence's loop takes them all, and a
	 * SIGPIPE meant for the thread stays its own and ends with it */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&t->thread, NULL, relay, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return ar_error_make(err, r, "terminal: start the relay");
	t->running = true;
	return 0;
}

void sandbox_pty_resize(const struct sandbox *sb)
{
	if (sb->pty != NULL)
		copy_winsize(sb->pty);
}

void sandbox_pty_stop(struct sandbox *sb)
{
	struct sandbox_pty *t = sb->pty;

	if (t == NULL)
		return;
	/* wakes a relay still waiting for the master (the command never started), and
	 * one that waits for a caller's terminal that takes nothing */
	shutdown(t->sock[1], SHUT_RDWR);
	if (t->stop >= 0 && eventfd_write(t->stop, 1) == -1) {
		/* the relay ends at the master's EIO */
	}
	if (t->running)
		pthread_join(t->thread, NULL);
	if (t->raw)
		tcsetattr(0, TCSADRAIN, &t->saved);
	stop_watcher(t);
	close_fd_keep(&t->in_fd);
	close_fd_keep(&t->out_fd);
	close_fd_keep(&t->stop);
	close_fd_keep(&t->sock[0]);
	close_fd_keep(&t->sock[1]);
	close_fd_keep(&t->master);
	free(t);
	sb->pty = NULL;
}
