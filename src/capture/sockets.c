/* The socket half of transparent capture: listeners with IP_TRANSPARENT, created
 * inside the proxy netns while the caller still has CAP_NET_ADMIN (the option is
 * checked only at setsockopt, so the proxy may drop every capability afterwards),
 * and the two I/O steps the proxy loop needs: the original destination of an accepted
 * connection (DNS datagrams are in dgram.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agentrun/capture.h"
#include "agentrun/dns.h"
#include "agentrun/util.h"

#define LISTEN_BACKLOG 1024

void ar_capture_ports(const struct ar_rules *rules, uint16_t **out, size_t *n)
{
	ar_dns_rule_ports(rules, out, n);
}

/* A socket bound to 0.0.0.0:port that may own any local address: IP_TRANSPARENT makes
 * the kernel accept a SYN (or a datagram) for an address that is not the netns's own,
 * and lets the reply leave from it. Without it the SYN-ACK finds no route (§11). */
static int transparent_socket(int type, uint16_t port, ar_error_t *err)
{
	const char *kind = type == SOCK_DGRAM ? "udp" : "tcp";
	ar_autoclose int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd == -1)
		return ar_error_make(err, errno, "capture: socket for %s port %u", kind, port);
	if (setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one)) == -1)
		return ar_error_make(err, errno,
				     "capture: IP_TRANSPARENT on %s port %u (needs CAP_NET_ADMIN "
				     "in the proxy netns)",
				     kind, port);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    (type == SOCK_DGRAM && setsockopt(fd, SOL_IP, IP_PKTINFO, &one, sizeof(one)) == -1))
		return ar_error_make(err, errno, "capture: socket options on %s port %u", kind,
				     port);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		return ar_error_make(err, errno, "capture: bind 0.0.0.0:%u/%s", port, kind);
	if (type == SOCK_STREAM && listen(fd, LISTEN_BACKLOG) == -1)
		return ar_error_make(err, errno, "capture: listen on 0.0.0.0:%u", port);
	return steal_fd(&fd);
}

struct listen_job {
	const uint16_t *ports;
	size_t n;
	struct ar_capture_listeners *out;
};

static int listen_job(void *arg, ar_error_t *err)
{
	struct listen_job *j = arg;
	struct ar_capture_listeners *l = j->out;
	l->dns_udp = transparent_socket(SOCK_DGRAM, AR_CAPTURE_DNS_PORT, err);
	if (l->dns_udp == -1)
		return -1;
	l->dns_tcp = transparent_socket(SOCK_STREAM, AR_CAPTURE_DNS_PORT, err);
	if (l->dns_tcp == -1)
		return -1;
	for (size_t i = 0; i < j->n; i++) {
		if (j->ports[i] == AR_CAPTURE_DNS_PORT || j->ports[i] == 0)
			continue;
		int fd = transparent_socket(SOCK_STREAM, j->ports[i], err);
		if (fd == -1)
			return -1;
		l->tcp[l->n_tcp] = fd;
		l->ports[l->n_tcp++] = j->ports[i];
	}
	return 0;
}

int ar_capture_listen(int netns_fd, const uint16_t *ports, size_t n,
		      struct ar_capture_listeners *out, ar_error_t *err)
{
	struct ar_capture_listeners l = {.dns_udp = -1, .dns_tcp = -1};
	l.tcp = ar_xcalloc(n + 1, sizeof(*l.tcp));
	l.ports = ar_xcalloc(n + 1, sizeof(*l.ports));
	struct listen_job j = {ports, n, &l};
	if (ar_capture_in_netns(netns_fd, listen_job, &j, err) == -1) {
		ar_capture_listeners_close(&l);
		return -1;
	}
	*out = l;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void ar_capture_listeners_close(struct ar_capture_listeners *l)
{
	for (size_t i = 0; l->tcp != NULL && i < l->n_tcp; i++)
		close_fd(&l->tcp[i]);
	free(l->tcp);
	free(l->ports);
	l->tcp = NULL;
	l->ports = NULL;
	l->n_tcp = 0;
	close_fd(&l->dns_udp);
	close_fd(&l->dns_tcp);
}

void ar_cleanup_capture_listenersp(struct ar_capture_listeners *l)
{
	ar_capture_listeners_close(l);
}

int ar_capture_original_dst(int fd, struct sockaddr_in *dst, ar_error_t *err)
{
	/* on a transparent listener the accepted socket's local address is the one the
	 * client dialled: no SO_ORIGINAL_DST, no conntrack */
	socklen_t len = sizeof(*dst);
	if (getsockname(fd, (struct sockaddr *)dst, &len) == -1)
		return ar_error_make(err, errno, "capture: getsockname");
	if (dst->sin_family != AF_INET)
		return ar_error_make(err, EAFNOSUPPORT, "capture: original destination");
	return 0;
}
