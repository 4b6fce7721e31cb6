/* The topology of one sandbox's network: a fresh proxy netns holding the proxy's
 * listener, and a veth pair whose ends are created where they live (the request is
 * issued from a route socket opened inside the sandbox netns, the peer carries the
 * proxy netns as its IFLA_NET_NS_FD): moving a link after creation costs 19-42 ms
 * here, creating it in place about 7. Nothing is created in the host netns, and
 * nothing is torn down link by link: closing the namespaces removes it all.
 *
 * Each netns is made by whoever lives in it, beside the others' work: the proxy child
 * makes the proxy netns and its sockets (net_proxy_netns_enter, _fill), run's sandbox init
 * its own (ar_net_sandbox_side); each sends agentrun the netns and a route socket
 * opened inside it, and agentrun only wires the veth between them. */
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

#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>

#include "agentrun/capture.h"
#include "agentrun/log.h"
#include "agentrun/net.h"
#include "agentrun/policy.h"
#include "agentrun/proxy.h"
#include "agentrun/rules.h"
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

/* A route socket of the current netns, bound (the kernel picks its port id), as a
 * plain descriptor: it can be made inside a netns and used from anywhere. */
static int route_fd(ar_error_t *err)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	ar_autoclose int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		return ar_error_make(err, errno, "network: route socket");
	return steal_fd(&fd);
}

/* libnl's handle on a route socket from route_fd (taken, closed on failure). */
static int adopt_route(int fd, struct nl_sock **out, ar_error_t *err)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (sk == NULL) {
		close(fd);
		return ar_error_make(err, ENOMEM, "network: netlink socket");
	}
	int r = nl_socket_set_fd(sk, NETLINK_ROUTE, fd);
	if (r < 0) {
		nl_socket_free(sk);
		close(fd);
		return nl_fail(err, r, "adopt a route socket");
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

/* The captured ports: 80, 443, every port a rule names. */
static int capture_ports(const struct ar_policy *p, uint16_t **ports, size_t *n, ar_error_t *err)
{
	struct ar_rules *rules = NULL;
	if (ar_rules_compile(p->allowed_hosts, p->n_allowed_hosts, p->origin, &rules, err) == -1)
		return -1;
	ar_capture_ports(rules, ports, n);
	ar_rules_free(rules);
	if (*n > AR_PROXY_MAX_CAPTURE)
		return ar_error_make(err, 0,
				     "%s: allowed_hosts name %zu ports; transparent capture "
				     "listens on at most %d (set proxy.transparent to false)",
				     p->origin, *n, AR_PROXY_MAX_CAPTURE);
	return 0;
}

int net_check_capture(const struct ar_policy *p, ar_error_t *err)
{
	ar_autofree uint16_t *ports = NULL;
	size_t n = 0;
	if (!p->proxy.transparent)
		return 0;
	if (capture_ports(p, &ports, &n, err) == -1)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (ports[i] == p->proxy.port)
			return ar_error_make(
			    err, 0,
			    "%s: proxy.port %d is a port transparent capture listens on (80, 443 "
			    "and "
			    "every port allowed_hosts names): the sandbox's connections to that "
			    "port "
			    "on any other address would be refused; choose another port or set "
			    "proxy.transparent to false",
			    p->origin, p->proxy.port);
	return 0;
}

/* Transparent capture, in the proxy netns (the current one) while privileged
 * (IP_TRANSPARENT): the DNS and captured TCP listeners, then the policy routing that
 * makes every packet from the sandbox local here (the rule names veth0, which comes a
 * moment later). */
static int capture_side(const struct ar_policy *p, const struct ar_net_plan *plan,
			struct net_proxy_netns *out, ar_error_t *err)
{
	__attribute__((cleanup(ar_cleanup_capture_listenersp))) struct ar_capture_listeners cap = {
	    .dns_udp = -1, .dns_tcp = -1};
	ar_autofree uint16_t *ports = NULL;
	size_t np = 0;
	const char *pool = p->proxy.dns_pool ? p->proxy.dns_pool : AR_DNS_POOL_DEFAULT;
	if (capture_ports(p, &ports, &np, err) == -1 ||
	    ar_capture_listen(-1, ports, np, &cap, err) == -1 ||
	    ar_capture_setup_proxy_netns(-1, AR_NET_PROXY_IF, 0, pool, err) == -1)
		return ar_error_wrap(err, "transparent capture");
	out->fds[out->n_fds++] = steal_fd(&cap.dns_udp);
	out->fds[out->n_fds++] = steal_fd(&cap.dns_tcp);
	for (size_t i = 0; i < cap.n_tcp; i++)
		out->fds[out->n_fds++] = steal_fd(&cap.tcp[i]);
	return 0;
}

void net_proxy_netns_close(struct net_proxy_netns *pn)
{
	int *fds[] = {&pn->host, &pn->ns, &pn->route};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	for (size_t i = 0; i < pn->n_fds; i++)
		if (pn->fds[i] >= 0)
			close(pn->fds[i]);
	*pn = (struct net_proxy_netns){.host = -1, .ns = -1, .route = -1};
}

static void back_home(struct net_proxy_netns *pn)
{
	if (pn->host < 0)
		return; /* made to stay (net_proxy_netns_enter) */
	if (setns(pn->host, CLONE_NEWNET) == -1)
		abort(); /* every later socket would be made in the wrong netns */
	close(pn->host);
	pn->host = -1;
}

/* What agentrun needs to wire the veth: the netns, IPv6 off for the links made from
 * now on, a route socket. */
static int proxy_ns_first(struct net_proxy_netns *pn, ar_error_t *err)
{
	pn->ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (pn->ns == -1)
		return ar_error_make(err, errno, "network: open the proxy netns");
	if (ipv6_off(err) == -1)
		return -1;
	pn->route = route_fd(err);
	return pn->route == -1 ? -1 : 0;
}

int net_proxy_netns_enter(struct net_proxy_netns *out, bool stay, ar_error_t *err)
{
	*out = (struct net_proxy_netns){.host = -1, .ns = -1, .route = -1};
	if (!stay)
		out->host = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (!stay && out->host == -1)
		return ar_error_make(err, errno, "network: open this process's netns");
	if (ar_net_unshare("the proxy netns", err) == -1) {
		net_proxy_netns_close(out);
		return ar_error_wrap(err, "network");
	}
	if (proxy_ns_first(out, err) == -1) {
		back_home(out);
		net_proxy_netns_close(out);
		return -1;
	}
	return 0;
}

int net_proxy_netns_fill(const struct ar_policy *p, const struct ar_net_plan *plan,
			 struct net_proxy_netns *pn, ar_error_t *err)
{
	int r = net_lo_up(err);
	if (r == 0 && (pn->fds[pn->n_fds++] = make_listener(plan, err)) == -1)
		r = -1;
	if (r == 0 && p->proxy.transparent)
		r = capture_side(p, plan, pn, err);
	back_home(pn);
	return r;
}

int ar_net_topology_adopt(struct ar_net_topology *t, const struct ar_net_plan *plan, int proxy_ns,
			  int route, ar_error_t *err)
{
	*t = (struct ar_net_topology){.proxy_ns = proxy_ns, .sandbox_ns = -1, .plan = *plan};
	return adopt_route(route, &t->nl_proxy, err);
}

int ar_net_unshare(const char *which, ar_error_t *err)
{
	if (unshare(CLONE_NEWNET) == -1)
		return ar_error_make(err, errno, "unshare (%s%s)", which,
				     errno == ENOSPC ? ": user.max_net_namespaces is reached" : "");
	return 0;
}

int ar_net_sandbox_side(ar_error_t *err)
{
	if (ipv6_off(err) == -1)
		return -1;
	return route_fd(err);
}

static int sandbox_side(void *data, ar_error_t *err)
{
	int *fd = data;
	return (*fd = ar_net_sandbox_side(err)) == -1 ? -1 : 0;
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

int ar_net_topology_wire(struct ar_net_topology *t, int sandbox_ns_fd, int route, ar_error_t *err)
{
	t->sandbox_ns = fcntl(sandbox_ns_fd, F_DUPFD_CLOEXEC, 3);
	if (t->sandbox_ns == -1) {
		if (route >= 0)
			close(route);
		return ar_error_make(err, errno, "network: the sandbox netns");
	}
	/* else made on a thread of its own (capture.h): this one never leaves the host netns */
	if (route == -1 && ar_capture_in_netns(t->sandbox_ns, sandbox_side, &route, err) == -1)
		return -1;
	if (adopt_route(route, &t->nl_sandbox, err) == -1 || add_veth(t, err) == -1)
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
	int *fds[] = {&t->proxy_ns, &t->sandbox_ns};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}
