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
 * copies the window size over (sandbox_pty_resize). When the sandbox ends the master
 * reads EIO (every slave holder is gone with the PID namespace): the thread drains
 * what is left and ends, and the caller's terminal settings come back, on every path
 * out (sandbox_pty_stop runs from release_sandbox). --no-tty keeps plain pass-through. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "sandbox-internal.h"

struct sandbox_pty {
	int sock[2]; /* [0] the command's end, [1] agentrun's */
	int master;  /* agentrun's, once received */
	int out;     /* where the terminal's output goes: the caller's terminal */
	bool tty[3]; /* which of 0, 1, 2 were the caller's terminal */
	bool raw;    /* the caller's terminal is in raw mode: restore `saved` */
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
	t->master = -1;
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

static int send_fd(int sock, int fd)
{
	char ctl[CMSG_SPACE(sizeof(int))] = {0}, byte = 't';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return TEMP_FAILURE_RETRY(sendmsg(sock, &msg, MSG_NOSIGNAL)) == 1 ? 0 : -1;
}

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
	if (send_fd(t->sock[0], master) == -1)
		return ar_error_make(err, errno, "terminal: hand the pty to agentrun");
	return 0;
}

/* ---- agentrun's side ---- */

static int recv_fd(int sock)
{
	char ctl[CMSG_SPACE(sizeof(int))] = {0}, byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	int fd = -1;
	if (TEMP_FAILURE_RETRY(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) != 1)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static void copy_winsize(const struct sandbox_pty *t)
{
	struct winsize ws;
	if (t->master >= 0 && ioctl(0, TIOCGWINSZ, &ws) == 0)
		ioctl(t->master, TIOCSWINSZ, &ws);
}

/* Move what one read gives from `from` to `to`; 0 at the end of `from`. */
static int pump(int from, int to)
{
	char buf[16384];
	ssize_t n = TEMP_FAILURE_RETRY(read(from, buf, sizeof(buf)));
	if (n <= 0)
		return n == -1 && errno == EAGAIN ? 1 : 0;
	return ar_write_all(to, buf, (size_t)n) == -1 ? 0 : 1;
}

static void *relay(void *arg)
{
	struct sandbox_pty *t = arg;
	int master = recv_fd(t->sock[1]);
	if (master == -1)
		return NULL; /* the command never got that far */
	t->master = master;
	struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = master, .events = POLLIN}};
	for (;;) {
		if (TEMP_FAILURE_RETRY(poll(p, 2, -1)) == -1)
			break;
		if (p[0].revents && !pump(0, master))
			p[0].fd = -1; /* the caller's terminal hung up: output still flows */
		/* EIO: no slave is open any more, the sandbox is gone */
		if (p[1].revents && !pump(master, t->out))
			break;
	}
	return NULL;
}

int sandbox_pty_start(struct sandbox *sb, ar_error_t *err)
{
	struct sandbox_pty *t = sb->pty;
	sigset_t all, old;

	if (t == NULL)
		return 0;
	close_fd_keep(&t->sock[0]);
	if (tcgetattr(0, &t->saved) == 0) {
		struct termios raw = t->saved;
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
	/* wakes a relay still waiting for the master (the command never started) */
	shutdown(t->sock[1], SHUT_RDWR);
	if (t->running)
		pthread_join(t->thread, NULL);
	if (t->raw)
		tcsetattr(0, TCSADRAIN, &t->saved);
	close_fd_keep(&t->sock[0]);
	close_fd_keep(&t->sock[1]);
	close_fd_keep(&t->master);
	free(t);
	sb->pty = NULL;
}
