/* The routing half of transparent capture, spoken over rtnetlink with libnl from
 * inside the target netns: the rule and the local route in the proxy netns, the
 * default route in the sandbox netns. Nothing here touches the host netns, and no
 * sysctl, iptables or nftables is involved: policy routing alone makes the sandbox's
 * packets local to the proxy netns. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <netlink/netlink.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include "agentrun/capture.h"
#include "agentrun/util.h"

static void cleanup_nl_sockp(struct nl_sock **sk)
{
	if (*sk != NULL)
		nl_socket_free(*sk);
}
static void cleanup_rulep(struct rtnl_rule **r)
{
	if (*r != NULL)
		rtnl_rule_put(*r);
}
static void cleanup_routep(struct rtnl_route **r)
{
	if (*r != NULL)
		rtnl_route_put(*r);
}
static void cleanup_addrp(struct nl_addr **a)
{
	if (*a != NULL)
		nl_addr_put(*a);
}
static void cleanup_cachep(struct nl_cache **c)
{
	if (*c != NULL)
		nl_cache_free(*c);
}
#define autonlsock __attribute__((cleanup(cleanup_nl_sockp)))
#define autorule   __attribute__((cleanup(cleanup_rulep)))
#define autoroute  __attribute__((cleanup(cleanup_routep)))
#define autonladdr __attribute__((cleanup(cleanup_addrp)))
#define autocache  __attribute__((cleanup(cleanup_cachep)))

struct netns_job {
	int fd;
	int (*fn)(void *arg, ar_error_t *err);
	void *arg;
	ar_error_t *err;
	int ret;
};

static void *netns_thread(void *p)
{
	struct netns_job *j = p;
	/* setns(CLONE_NEWNET) moves this thread only; it ends with the job */
	if (setns(j->fd, CLONE_NEWNET) == -1) {
		j->ret =
		    ar_error_make(j->err, errno, "setns into the network namespace (fd %d)", j->fd);
		return NULL;
	}
	j->ret = j->fn(j->arg, j->err);
	return NULL;
}

int ar_capture_in_netns(int netns_fd, int (*fn)(void *arg, ar_error_t *err), void *arg,
			ar_error_t *err)
{
	if (netns_fd < 0)
		return fn(arg, err);
	struct netns_job j = {netns_fd, fn, arg, err, -1};
	pthread_t t;
	int e = pthread_create(&t, NULL, netns_thread, &j);
	if (e != 0)
		return ar_error_make(err, e, "start a thread to enter the network namespace");
	pthread_join(t, NULL);
	return j.ret;
}

/* A route socket in the current (the thread's) netns. */
static struct nl_sock *route_socket(ar_error_t *err)
{
	autonlsock struct nl_sock *sk = nl_socket_alloc();
	if (sk == NULL)
		return ar_error_make(err, ENOMEM, "netlink socket"), NULL;
	int e = nl_connect(sk, NETLINK_ROUTE);
	if (e < 0)
		return ar_error_make(err, 0, "netlink: connect: %s", nl_geterror(e)), NULL;
	return steal_pointer(&sk);
}

/* An EEXIST from the kernel means the piece is there already: setup is idempotent. */
static int nl_result(int e, const char *what, ar_error_t *err)
{
	if (e >= 0 || e == -NLE_EXIST)
		return 0;
	return ar_error_make(err, 0, "netlink: %s: %s", what, nl_geterror(e));
}

struct proxy_job {
	const char *veth;
	uint32_t table;
	const char *pool;
};

static int add_rule(struct nl_sock *sk, const struct proxy_job *pj, ar_error_t *err)
{
	autorule struct rtnl_rule *rule = rtnl_rule_alloc();
	char what[IF_NAMESIZE + 64];
	snprintf(what, sizeof(what), "ip rule add iif %s lookup %u", pj->veth, pj->table);
	if (rule == NULL)
		return ar_error_make(err, ENOMEM, "%s", what);
	rtnl_rule_set_family(rule, AF_INET);
	rtnl_rule_set_prio(rule, AR_CAPTURE_RULE_PRIO);
	rtnl_rule_set_table(rule, pj->table);
	rtnl_rule_set_action(rule, FR_ACT_TO_TBL);
	if (rtnl_rule_set_iif(rule, pj->veth) < 0)
		return ar_error_make(err, 0, "%s: bad interface name", what);
	return nl_result(rtnl_rule_add(sk, rule, NLM_F_CREATE | NLM_F_EXCL), what, err);
}

/* A route to dst_cidr of the given type in table, through one nexthop. */
static int add_route(struct nl_sock *sk, const char *dst_cidr, uint32_t table, uint8_t type,
		     uint8_t scope, int ifindex, const struct in_addr *gw, const char *what,
		     ar_error_t *err)
{
	autoroute struct rtnl_route *r = rtnl_route_alloc();
	autonladdr struct nl_addr *dst = NULL, *via = NULL;
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	if (r == NULL || nh == NULL || nl_addr_parse(dst_cidr, AF_INET, &dst) < 0) {
		if (nh != NULL)
			rtnl_route_nh_free(nh);
		return ar_error_make(err, ENOMEM, "%s", what);
	}
	rtnl_route_set_family(r, AF_INET);
	rtnl_route_set_table(r, table);
	rtnl_route_set_type(r, type);
	rtnl_route_set_scope(r, scope);
	rtnl_route_set_protocol(r, RTPROT_STATIC);
	rtnl_route_set_dst(r, dst);
	if (ifindex > 0)
		rtnl_route_nh_set_ifindex(nh, ifindex);
	if (gw != NULL) {
		via = nl_addr_build(AF_INET, gw, sizeof(*gw));
		if (via == NULL) {
			rtnl_route_nh_free(nh);
			return ar_error_make(err, ENOMEM, "%s", what);
		}
		rtnl_route_nh_set_gateway(nh, via);
	}
	rtnl_route_add_nexthop(r, nh); /* the route owns nh now */
	return nl_result(rtnl_route_add(sk, r, NLM_F_CREATE | NLM_F_EXCL), what, err);
}

static int proxy_netns_job(void *arg, ar_error_t *err)
{
	const struct proxy_job *pj = arg;
	autonlsock struct nl_sock *sk = route_socket(err);
	if (sk == NULL)
		return -1;
	if (add_rule(sk, pj, err) == -1)
		return -1;
	char what[128];
	/* lo is ifindex 1 in every netns, but ask rather than assume */
	int lo = (int)if_nametoindex("lo");
	snprintf(what, sizeof(what), "ip route add local 0.0.0.0/0 dev lo table %u", pj->table);
	if (add_route(sk, "0.0.0.0/0", pj->table, RTN_LOCAL, RT_SCOPE_HOST, lo, NULL, what, err) ==
	    -1)
		return -1;
	if (pj->pool == NULL)
		return 0;
	/* The kernel answers a SYN to a port nobody listens on with a RST from the dialled
	 * address, and a datagram to a closed port with an ICMP error; both are sent
	 * without a socket, so their source must pass the "is it local" check, which
	 * consults the local table only (not our rule). With the pool there, a client
	 * that dials an unlisted port of a synthetic address is refused at once instead
	 * of retrying its SYN for minutes. */
	snprintf(what, sizeof(what), "ip route add local %s dev lo table local", pj->pool);
	return add_route(sk, pj->pool, RT_TABLE_LOCAL, RTN_LOCAL, RT_SCOPE_HOST, lo, NULL, what,
			 err);
}

int ar_capture_setup_proxy_netns(int netns_fd, const char *veth, uint32_t table, const char *pool,
				 ar_error_t *err)
{
	struct ar_cidr c;
	if (veth == NULL || *veth == '\0' || strlen(veth) >= IF_NAMESIZE)
		return ar_error_make(err, 0, "capture: bad veth name");
	if (pool != NULL && (ar_cidr_parse(pool, &c) == -1 || c.family != AF_INET))
		return ar_error_make(
		    err, 0, "capture: synthetic address pool \"%s\": not an IPv4 CIDR range", pool);
	struct proxy_job pj = {veth, table != 0 ? table : AR_CAPTURE_TABLE, pool};
	if (ar_capture_in_netns(netns_fd, proxy_netns_job, &pj, err) == -1)
		return ar_error_wrap(err, "capture: set up the proxy netns");
	return 0;
}

int ar_capture_add_sandbox_route(struct nl_sock *sk, struct in_addr gw, ar_error_t *err)
{
	char what[64], gs[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &gw, gs, sizeof(gs));
	snprintf(what, sizeof(what), "ip route add default via %s", gs);
	if (add_route(sk, "0.0.0.0/0", RT_TABLE_MAIN, RTN_UNICAST, RT_SCOPE_UNIVERSE, 0, &gw, what,
		      err) == -1)
		return ar_error_wrap(err, "capture: set up the sandbox's default route");
	return 0;
}

static int sandbox_route_job(void *arg, ar_error_t *err)
{
	const struct in_addr *gw = arg;
	autonlsock struct nl_sock *sk = route_socket(err);
	if (sk == NULL)
		return ar_error_wrap(err, "capture: set up the sandbox's default route");
	return ar_capture_add_sandbox_route(sk, *gw, err);
}

int ar_capture_setup_sandbox_route(int netns_fd, struct in_addr gw, ar_error_t *err)
{
	return ar_capture_in_netns(netns_fd, sandbox_route_job, &gw, err);
}

struct verify_job {
	struct proxy_job pj;
	const char **what;
	bool rule, route;
};

static void check_rule(struct nl_object *o, void *arg)
{
	struct verify_job *v = arg;
	struct rtnl_rule *r = (struct rtnl_rule *)o;
	const char *iif = rtnl_rule_get_iif(r);
	if (rtnl_rule_get_table(r) == v->pj.table && iif != NULL && strcmp(iif, v->pj.veth) == 0 &&
	    rtnl_rule_get_action(r) == FR_ACT_TO_TBL)
		v->rule = true;
}

static void check_route(struct nl_object *o, void *arg)
{
	struct verify_job *v = arg;
	struct rtnl_route *r = (struct rtnl_route *)o;
	struct nl_addr *dst = rtnl_route_get_dst(r);
	if (rtnl_route_get_table(r) == v->pj.table && rtnl_route_get_type(r) == RTN_LOCAL &&
	    dst != NULL && nl_addr_get_prefixlen(dst) == 0)
		v->route = true;
}

static int verify_job(void *arg, ar_error_t *err)
{
	struct verify_job *v = arg;
	autonlsock struct nl_sock *sk = route_socket(err);
	autocache struct nl_cache *rules = NULL, *routes = NULL;
	if (sk == NULL)
		return -1;
	int e = rtnl_rule_alloc_cache(sk, AF_INET, &rules);
	if (e >= 0)
		e = rtnl_route_alloc_cache(sk, AF_INET, 0, &routes);
	if (e < 0)
		return ar_error_make(err, 0, "netlink: dump rules and routes: %s", nl_geterror(e));
	nl_cache_foreach(rules, check_rule, v);
	nl_cache_foreach(routes, check_route, v);
	if (!v->rule)
		*v->what = "the rule `iif VETH lookup TABLE`";
	else if (!v->route)
		*v->what = "the route `local 0.0.0.0/0 dev lo table TABLE`";
	return v->rule && v->route ? 1 : 0;
}

int ar_capture_verify_proxy_netns(int netns_fd, const char *veth, uint32_t table, const char **what,
				  ar_error_t *err)
{
	const char *ignored;
	struct verify_job v = {.pj = {veth, table != 0 ? table : AR_CAPTURE_TABLE, NULL},
			       .what = what != NULL ? what : &ignored};
	*v.what = NULL;
	int r = ar_capture_in_netns(netns_fd, verify_job, &v, err);
	if (r == -1)
		return ar_error_wrap(err, "capture: verify the proxy netns");
	return r;
}
