/* The topology of one sandbox's network: a fresh proxy netns holding the proxy's
 * listener, and a veth pair whose ends are created where they live (the request is
 * issued from a route socket opened inside the sandbox netns, the peer carries the
 * proxy netns as its IFLA_NET_NS_FD): moving a link after creation costs 19-42 ms
 * here, creating it in place about 7. Nothing is created in the host netns, and
 * nothing is torn down link by link: closing the namespaces removes it all. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>

#include "agentrun/capture.h"
#include "agentrun/log.h"
#include "agentrun/net.h"
#include "agentrun/util.h"
#include "net-internal.h"

static void free_nl(struct nl_sock **sk)
{
	if (*sk != NULL)
		nl_socket_free(*sk);
	*sk = NULL;
}

static void put_link(struct rtnl_link **l)
{
	if (*l != NULL)
		rtnl_link_put(*l);
}

static void put_addr(struct rtnl_addr **a)
{
	if (*a != NULL)
		rtnl_addr_put(*a);
}

static void put_nladdr(struct nl_addr **a)
{
	if (*a != NULL)
		nl_addr_put(*a);
}

static int nl_fail(ar_error_t *err, int nlerr, const char *what)
{
	return ar_error_make(err, 0, "network: %s: %s", what, nl_geterror(nlerr));
}

/* IPv6 off for links created from now on in the current netns: no link-local address,
 * so no router solicitation either. Absent without IPv6 in the kernel. */
static int ipv6_off(ar_error_t *err)
{
	const char *path = "/proc/sys/net/ipv6/conf/default/disable_ipv6";
	ar_autoclose int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : ar_error_make(err, errno, "network: open `%s`", path);
	if (ar_write_all(fd, "1", 1) == -1)
		return ar_error_make(err, errno, "network: write `%s`", path);
	return 0;
}

int net_lo_up(ar_error_t *err)
{
	struct ifreq ifr = {0};
	ar_autoclose int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	strcpy(ifr.ifr_name, "lo");
	if (fd == -1 || ioctl(fd, SIOCGIFFLAGS, &ifr) == -1)
		return ar_error_make(err, errno, "network: lo flags");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) == -1)
		return ar_error_make(err, errno, "network: lo up");
	return 0;
}

static int open_route(struct nl_sock **out, ar_error_t *err)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (sk == NULL)
		return ar_error_make(err, ENOMEM, "network: netlink socket");
	int r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		nl_socket_free(sk);
		return nl_fail(err, r, "netlink connect");
	}
	*out = sk;
	return 0;
}

/* The listener: TCP, bound with IP_FREEBIND since the address comes with the veth. */
static int make_listener(const struct ar_net_plan *plan, ar_error_t *err)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)plan->port),
				 .sin_addr = plan->proxy};
	int one = 1;
	ar_autoclose int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) == -1)
		return ar_error_make(err, errno, "network: proxy listener socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		return ar_error_make(err, errno, "network: bind the proxy listener to %s:%d",
				     plan->proxy_ip, plan->port);
	if (listen(fd, 1024) == -1)
		return ar_error_make(err, errno, "network: listen on %s:%d", plan->proxy_ip,
				     plan->port);
	return steal_fd(&fd);
}

/* Inside the new proxy netns: everything that must be made there. */
static int proxy_side(void *data, ar_error_t *err)
{
	struct ar_net_topology *t = data;

	t->proxy_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (t->proxy_ns == -1)
		return ar_error_make(err, errno, "network: open the proxy netns");
	if (ipv6_off(err) == -1 || net_lo_up(err) == -1)
		return -1;
	if (open_route(&t->nl_proxy, err) == -1)
		return -1;
	t->listener = make_listener(&t->plan, err);
	return t->listener == -1 ? -1 : 0;
}

int ar_net_topology_open(struct ar_net_topology *t, const struct ar_net_plan *plan, ar_error_t *err)
{
	*t = (struct ar_net_topology){
	    .host_ns = -1, .proxy_ns = -1, .listener = -1, .sandbox_ns = -1, .plan = *plan};
	t->host_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (t->host_ns == -1)
		return ar_error_make(err, errno, "network: open this process's netns");
	if (unshare(CLONE_NEWNET) == -1)
		return ar_error_make(err, errno, "network: unshare (the proxy netns%s)",
				     errno == ENOSPC ? ": user.max_net_namespaces is reached" : "");
	int r = proxy_side(t, err);
	if (setns(t->host_ns, CLONE_NEWNET) == -1)
		abort();
	return r;
}

static int sandbox_side(void *data, ar_error_t *err)
{
	struct ar_net_topology *t = data;
	if (ipv6_off(err) == -1)
		return -1;
	return open_route(&t->nl_sandbox, err);
}

/* eth0 in the sandbox netns, veth0 made directly in the proxy netns. Up comes after:
 * this kernel answers ENOTCONN to a veth created up with its peer in another netns. */
static int add_veth(struct ar_net_topology *t, ar_error_t *err)
{
	__attribute__((cleanup(put_link))) struct rtnl_link *link = rtnl_link_veth_alloc();
	if (link == NULL)
		return ar_error_make(err, ENOMEM, "network: veth");
	struct rtnl_link *peer = rtnl_link_veth_get_peer(link);
	rtnl_link_set_name(link, AR_NET_SANDBOX_IF);
	rtnl_link_set_name(peer, AR_NET_PROXY_IF);
	/* one queue each from the start: without the counts the kernel makes one per CPU
	 * and then cuts them to one, which waits for an RCU grace period per end */
	rtnl_link_set_num_tx_queues(link, 1);
	rtnl_link_set_num_rx_queues(link, 1);
	rtnl_link_set_num_tx_queues(peer, 1);
	rtnl_link_set_num_rx_queues(peer, 1);
	rtnl_link_set_ns_fd(peer, t->proxy_ns);
	rtnl_link_put(peer);
	int r = rtnl_link_add(t->nl_sandbox, link, NLM_F_CREATE | NLM_F_EXCL);
	if (r < 0)
		return nl_fail(err, r,
			       "create the veth pair " AR_NET_SANDBOX_IF "/" AR_NET_PROXY_IF);
	return 0;
}

/* Its ifindex, and up. */
static int link_up(struct nl_sock *sk, const char *name, int *ifindex, ar_error_t *err)
{
	__attribute__((cleanup(put_link))) struct rtnl_link *l = NULL;
	__attribute__((cleanup(put_link))) struct rtnl_link *up = rtnl_link_alloc();
	int r = rtnl_link_get_kernel(sk, 0, name, &l);
	if (r < 0)
		return nl_fail(err, r, name);
	*ifindex = rtnl_link_get_ifindex(l);
	if (up == NULL)
		return ar_error_make(err, ENOMEM, "network: link");
	rtnl_link_set_flags(up, IFF_UP);
	r = rtnl_link_change(sk, l, up, 0);
	return r < 0 ? nl_fail(err, r, name) : 0;
}

static int add_address(struct nl_sock *sk, int index, struct in_addr ip, ar_error_t *err)
{
	__attribute__((cleanup(put_addr))) struct rtnl_addr *a = rtnl_addr_alloc();
	__attribute__((cleanup(put_nladdr))) struct nl_addr *local =
	    nl_addr_build(AF_INET, &ip, sizeof(ip));
	if (a == NULL || local == NULL)
		return ar_error_make(err, ENOMEM, "network: address");
	nl_addr_set_prefixlen(local, 30);
	rtnl_addr_set_ifindex(a, index);
	if (rtnl_addr_set_local(a, local) < 0)
		return ar_error_make(err, EINVAL, "network: address");
	int r = rtnl_addr_add(sk, a, 0);
	return r < 0 ? nl_fail(err, r, "add the /30 address") : 0;
}

int ar_net_topology_wire(struct ar_net_topology *t, int sandbox_ns_fd, ar_error_t *err)
{
	t->sandbox_ns = fcntl(sandbox_ns_fd, F_DUPFD_CLOEXEC, 3);
	if (t->sandbox_ns == -1)
		return ar_error_make(err, errno, "network: the sandbox netns");
	/* on a thread of its own (capture.h): this one never leaves the host netns */
	if (ar_capture_in_netns(t->sandbox_ns, sandbox_side, t, err) == -1)
		return -1;
	if (add_veth(t, err) == -1)
		return -1;
	if (link_up(t->nl_sandbox, AR_NET_SANDBOX_IF, &t->sandbox_ifindex, err) == -1 ||
	    link_up(t->nl_proxy, AR_NET_PROXY_IF, &t->proxy_ifindex, err) == -1)
		return -1;
	if (add_address(t->nl_sandbox, t->sandbox_ifindex, t->plan.sandbox, err) == -1 ||
	    add_address(t->nl_proxy, t->proxy_ifindex, t->plan.proxy, err) == -1)
		return -1;
	return 0;
}

void ar_net_topology_close(struct ar_net_topology *t)
{
	free_nl(&t->nl_proxy);
	free_nl(&t->nl_sandbox);
	int *fds[] = {&t->host_ns, &t->proxy_ns, &t->listener, &t->sandbox_ns};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}
