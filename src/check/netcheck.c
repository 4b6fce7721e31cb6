/* The network half of `check` for agentrun sandboxes (docs/network.md, DESIGN §8):
 * facts read from the sandbox's netns and from the proxy netns its proxy listens in,
 * and a pure comparison. The addresses expected come from the address plan
 * (src/net/plan.c), never from a pattern here. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "agentrun/capture.h"
#include "agentrun/check.h"
#include "agentrun/dns.h"
#include "agentrun/net.h"
#include "agentrun/util.h"

static void strv_push(char ***v, const char *s)
{
	size_t n = ar_strv_len(*v);
	*v = ar_xrealloc(*v, (n + 2) * sizeof(char *));
	(*v)[n] = ar_xstrdup(s);
	(*v)[n + 1] = NULL;
}

static char *read_text(const char *path)
{
	ar_auto_error ar_error_t err = NULL;
	char *text = NULL;
	if (ar_read_file(path, 1 << 22, &text, NULL, &err) == -1)
		return NULL;
	return text;
}

/* /proc/.../net/route: every route but lo's and the default (reported elsewhere). */
static void routes4(const char *text, char ***out)
{
	char line[512];
	const char *p = text;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1),
			 p);
		p = nl ? nl + 1 : NULL;
		char dev[IFNAMSIZ + 1];
		unsigned dst, gw, flags, mask;
		if (sscanf(line, "%16s %x %x %x %*d %*d %*d %x", dev, &dst, &gw, &flags, &mask) !=
			5 ||
		    strcmp(dev, "lo") == 0 || (dst == 0 && mask == 0))
			continue;
		char d[INET_ADDRSTRLEN], buf[96];
		inet_ntop(AF_INET, &dst, d, sizeof(d));
		snprintf(buf, sizeof(buf), "%s/%d dev %s", d, __builtin_popcount(mask), dev);
		strv_push(out, buf);
	}
}

/* ipv6_route: any route not on lo (eth0 has IPv6 off, so none is expected). */
static void routes6(const char *text, char ***out)
{
	const char *p = text;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		char dst[33], dev[IFNAMSIZ + 1], buf[96];
		unsigned plen;
		if (sscanf(p, "%32s %x %*s %*s %*s %*s %*s %*s %*s %16s", dst, &plen, dev) == 3 &&
		    strcmp(dev, "lo") != 0 && !(plen == 0 && strspn(dst, "0") == 32)) {
			snprintf(buf, sizeof(buf), "%s/%u dev %s", dst, plen, dev);
			strv_push(out, buf);
		}
		p = nl ? nl + 1 : NULL;
	}
}

/* eth0's address, asked from a socket made inside the sandbox netns. */
static int eth0_address(int ns, int host, struct ar_check_net_facts *f, ar_error_t *err)
{
	if (setns(ns, CLONE_NEWNET) == -1)
		return ar_error_make(err, errno, "setns into the sandbox netns");
	ar_autoclose int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (setns(host, CLONE_NEWNET) == -1)
		abort(); /* every later socket would be made in the sandbox */
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", AR_NET_SANDBOX_IF);
	if (s == -1 || ioctl(s, SIOCGIFADDR, &ifr) == -1)
		return 0; /* no eth0 or no address: the findings say so */
	struct in_addr a = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr;
	inet_ntop(AF_INET, &a, f->eth0_ip, sizeof(f->eth0_ip));
	if (ioctl(s, SIOCGIFNETMASK, &ifr) == 0)
		f->eth0_prefix =
		    __builtin_popcount(((struct sockaddr_in *)&ifr.ifr_netmask)->sin_addr.s_addr);
	return 0;
}

/* The proxy's listeners, taken from the proxy (pidfd_getfd) before this process enters
 * a user's sandbox's user namespace (ar_check_enter_userns): a user's proxy lives in a
 * user namespace of its own, beside that one, where the caller has every capability
 * from its own namespace only. Held for the one check this process makes. */
static int held[AR_FDS_MAX];
static size_t n_held;

static void hold_listeners(pid_t proxy)
{
	char dir[64];
	int pidfd = (int)syscall(SYS_pidfd_open, proxy, 0);
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)proxy);
	DIR *d = pidfd == -1 ? NULL : opendir(dir);
	struct dirent *e;
	while (d && n_held < AR_ARRAY_SIZE(held) && (e = readdir(d)) != NULL) {
		int yes = 0;
		socklen_t ylen = sizeof(yes);
		int fd = e->d_name[0] == '.'
			     ? -1
			     : (int)syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
		if (fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &yes, &ylen) == 0 && yes)
			held[n_held++] = fd;
		else if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	if (pidfd >= 0)
		close(pidfd);
}

/* The listener on ip:port among the proxy's gives its netns. */
static int proxy_netns(pid_t proxy, const char *ip, int port)
{
	int ns = -1;
	if (n_held == 0)
		hold_listeners(proxy);
	for (size_t i = 0; i < n_held && ns == -1; i++) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);
		char name[INET_ADDRSTRLEN];
		if (getsockname(held[i], (struct sockaddr *)&sa, &len) == -1 ||
		    sa.sin_family != AF_INET)
			continue;
		inet_ntop(AF_INET, &sa.sin_addr, name, sizeof(name));
		if (strcmp(name, ip) == 0 && ntohs(sa.sin_port) == port)
			ns = ioctl(held[i], SIOCGSKNS);
	}
	return ns;
}

/* /proc/thread-self/net/{tcp,udp}: sockets, "tcp listen A:P" or "udp A:P". */
static void sockets(const char *file, const char *kind, char ***out)
{
	ar_autofree char *text = read_text(file);
	const char *p = text ? strchr(text, '\n') : NULL;
	while (p && *++p) {
		unsigned addr, port, st;
		char a[INET_ADDRSTRLEN], buf[64];
		if (sscanf(p, "%*d: %x:%x %*x:%*x %x", &addr, &port, &st) == 3) {
			inet_ntop(AF_INET, &addr, a, sizeof(a));
			/* accepted connections share the listener's address: only listeners */
			bool tcp = strncmp(kind, "tcp", 3) == 0;
			snprintf(buf, sizeof(buf), "%s%s %s:%u", kind, tcp ? " listen" : "", a,
				 port);
			if (!tcp || st == 0x0A)
				strv_push(out, buf);
		}
		p = strchr(p, '\n');
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void peer_facts(int ns, int host, struct ar_check_net_facts *f)
{
	if (setns(ns, CLONE_NEWNET) == -1)
		return;
	ar_autofree char *dev = read_text("/proc/thread-self/net/dev");
	f->peer_links = ar_check_parse_netdev(dev ? dev : "");
	sockets("/proc/thread-self/net/tcp", "tcp", &f->peer_sockets);
	sockets("/proc/thread-self/net/udp", "udp", &f->peer_sockets);
	sockets("/proc/thread-self/net/tcp6", "tcp6", &f->peer_sockets);
	sockets("/proc/thread-self/net/udp6", "udp6", &f->peer_sockets);
	if (setns(host, CLONE_NEWNET) == -1)
		abort();
	/* /proc/net/tcp is in hash order: sorted, a finding reads the same every time */
	if (f->peer_sockets != NULL)
		qsort(f->peer_sockets, ar_strv_len(f->peer_sockets), sizeof(char *), cmp_str);
	f->peer_read = true;
}

static void expected_plan(struct ar_check_net_facts *f, int port)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_net_range r;
	struct ar_net_plan plan;
	struct in_addr a;
	if (f->eth0_ip[0] == '\0' || inet_pton(AF_INET, f->eth0_ip, &a) != 1 ||
	    ar_net_range_current(&r, &err) == -1 || ar_net_plan_of(&r, a, port, &plan) == -1)
		return;
	snprintf(f->proxy_url, sizeof(f->proxy_url), "%s", plan.proxy_url);
	snprintf(f->peer_expected, sizeof(f->peer_expected), "tcp listen %s:%d", plan.proxy_ip,
		 port);
}

/* Not root: a user's sandbox's netns, and its proxy netns, belong to the sandbox's
 * user namespace, and setns into a netns needs CAP_SYS_ADMIN over it and over our own
 * user namespace. The owner of that namespace (the caller) may enter it, with every
 * capability there: for good (check is short-lived and single-threaded here), and
 * undumpable first, so that nothing in the sandbox could trace this process by its
 * uid. There, the caller's own netns is out of reach for good: "home" between the reads
 * becomes a fresh, empty netns of that namespace, where a later socket reaches
 * nothing. A namespace not ours is left alone (setns: EPERM): the reads then get what a
 * process outside may read, and say what they could not. */
int ar_check_enter_userns(pid_t pid, pid_t proxy, ar_error_t *err)
{
	char path[64];
	struct stat ours, theirs;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if (geteuid() == 0 || stat(path, &theirs) == -1 ||
	    stat("/proc/self/ns/user", &ours) == -1 ||
	    (ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev))
		return 0;
	ar_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (proxy > 0 && n_held == 0)
		hold_listeners(proxy);
	if (fd == -1 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return 0; /* read from here what may be read */
	if (setns(fd, CLONE_NEWUSER) == -1)
		return errno == EPERM
			   ? 0 /* not the caller's: as above */
			   : ar_error_make(err, errno, "enter the user namespace of pid %d",
					   (int)pid);
	if (unshare(CLONE_NEWNET) == -1)
		return ar_error_make(err, errno, "a netns of pid %d's user namespace", (int)pid);
	return 0;
}

int ar_check_net_read(pid_t pid, pid_t proxy_pid, int port, struct ar_check_net_facts **out,
		      ar_error_t *err)
{
	char path[64];
	if (ar_check_enter_userns(pid, proxy_pid, err) == -1)
		return -1;
	struct ar_check_net_facts *f = ar_xcalloc(1, sizeof(*f));
	f->capture = -1;
	ar_autoclose int host = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	ar_autoclose int ns = open(path, O_RDONLY | O_CLOEXEC);

	if (host == -1 || ns == -1 || eth0_address(ns, host, f, err) == -1) {
		ar_check_net_facts_free(f);
		return ns == -1 ? ar_error_make(err, errno, "open `%s`", path) : -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/net/route", (int)pid);
	ar_autofree char *r4 = read_text(path);
	snprintf(path, sizeof(path), "/proc/%d/net/ipv6_route", (int)pid);
	ar_autofree char *r6 = read_text(path);
	f->routes = ar_xcalloc(1, sizeof(char *));
	routes4(r4, &f->routes);
	routes6(r6, &f->routes);
	expected_plan(f, port);
	const char *ip = f->peer_expected[0] ? strrchr(f->peer_expected, ' ') + 1 : NULL;
	if (proxy_pid > 0 && ip != NULL) {
		char ipbuf[INET_ADDRSTRLEN];
		snprintf(ipbuf, sizeof(ipbuf), "%.*s", (int)(strchr(ip, ':') - ip), ip);
		ar_autoclose int pns = proxy_netns(proxy_pid, ipbuf, port);
		if (pns >= 0)
			peer_facts(pns, host, f);
		ar_auto_error ar_error_t cerr = NULL;
		if (pns >= 0)
			f->capture = ar_capture_verify_proxy_netns(pns, AR_NET_PROXY_IF, 0,
								   &f->capture_missing, &cerr);
	}
	*out = f;
	return 0;
}

void ar_check_net_facts_free(struct ar_check_net_facts *f)
{
	if (f == NULL)
		return;
	ar_strv_free(f->routes);
	ar_strv_free(f->peer_links);
	ar_strv_free(f->peer_sockets);
	free(f);
}

static char *joined(char *const *v)
{
	ar_autobuf struct ar_buf b = {0};
	for (size_t i = 0; v && v[i]; i++)
		ar_buf_printf(&b, "%s%s", i ? "," : "", v[i]);
	return b.len ? ar_buf_steal(&b) : ar_xstrdup("none");
}

static bool only(char *const *v, const char *a, const char *b)
{
	size_t n = 0;
	for (; v && v[n]; n++)
		if (strcmp(v[n], a) != 0 && (b == NULL || strcmp(v[n], b) != 0))
			return false;
	return n == (b ? 2u : 1u);
}

/* "NET/30 dev eth0" of eth0's own /30: the one route expected. */
static bool own_route(const struct ar_check_net_facts *f, const char *route)
{
	struct in_addr a;
	char net[INET_ADDRSTRLEN], want[64];
	if (inet_pton(AF_INET, f->eth0_ip, &a) != 1)
		return false;
	a.s_addr &= htonl(~3u);
	inet_ntop(AF_INET, &a, net, sizeof(net));
	snprintf(want, sizeof(want), "%s/30 dev %s", net, AR_NET_SANDBOX_IF);
	return strcmp(route, want) == 0;
}

bool ar_check_net_is_proxy_url(const struct ar_check_net_facts *f, const char *v, int port)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_net_range r;
	struct ar_net_plan plan;
	struct in_addr a;
	char ip[INET_ADDRSTRLEN];
	unsigned got;
	int end = 0;

	if (f != NULL && f->proxy_url[0])
		return strcmp(v, f->proxy_url) == 0;
	/* without the sandbox's netns: any /30's first address of the range will do */
	if (sscanf(v, "http://%15[0-9.]:%u%n", ip, &got, &end) != 2 || v[end] != '\0' ||
	    got != (unsigned)port || inet_pton(AF_INET, ip, &a) != 1 ||
	    ar_net_range_current(&r, &err) == -1)
		return false;
	a.s_addr = htonl(ntohl(a.s_addr) + 1);
	return ar_net_plan_of(&r, a, port, &plan) == 0 && strcmp(plan.proxy_url, v) == 0;
}

/* The sockets the proxy netns should hold: the listener, and with transparent capture
 * the DNS stub's and one TCP listener on 0.0.0.0 per captured port (80, 443, each
 * port a rule names, but the listener's own), sorted as the facts are. */
static char **expected_sockets(const struct ar_policy *p, const struct ar_check_net_facts *f)
{
	char **v = ar_xcalloc(1, sizeof(char *));
	struct ar_rules *rules = NULL;
	ar_auto_error ar_error_t err = NULL;
	strv_push(&v, f->peer_expected);
	if (!p->proxy.transparent ||
	    ar_rules_compile(p->allowed_hosts, p->n_allowed_hosts, p->origin, &rules, &err) == -1)
		return v;
	uint16_t *ports = NULL;
	size_t n = 0;
	ar_dns_rule_ports(rules, &ports, &n);
	ar_rules_free(rules);
	for (size_t i = 0; i < n; i++) {
		char buf[48];
		snprintf(buf, sizeof(buf), "tcp listen 0.0.0.0:%u", ports[i]);
		if (ports[i] != p->proxy.port && ports[i] != AR_CAPTURE_DNS_PORT)
			strv_push(&v, buf);
	}
	free(ports);
	strv_push(&v, "tcp listen 0.0.0.0:53");
	strv_push(&v, "udp 0.0.0.0:53");
	qsort(v, ar_strv_len(v), sizeof(char *), cmp_str);
	return v;
}

static bool same_set(char *const *a, char *const *b)
{
	if (ar_strv_len((char **)a) != ar_strv_len((char **)b))
		return false;
	for (size_t i = 0; a && a[i]; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/* Transparent capture: its rule and routes in the proxy netns (the sandbox's default
 * route is proccheck.c's). */
static void check_capture(const struct ar_policy *p, const struct ar_check_net_facts *f,
			  struct ar_findings *out)
{
	if (!p->proxy.transparent || f->capture != 0)
		return;
	ar_findings_add(out, "transparent capture", "rule and routes in the proxy netns",
			f->capture_missing ? f->capture_missing : "missing",
			"restart it with agentrun run (the capture is made with the proxy netns)");
}

#define FIX_RESTART "restart it with agentrun run (the sandbox netns is made with only lo and eth0)"

void ar_check_net(const struct ar_policy *p, char *const *netdevs,
		  const struct ar_check_net_facts *f, struct ar_findings *out)
{
	if (p->network != AR_NETWORK_PROXY || f == NULL)
		return;
	if (!only(netdevs, "lo", AR_NET_SANDBOX_IF)) {
		ar_autofree char *have = joined(netdevs);
		ar_findings_add(out, "network interfaces", "lo,eth0", have,
				"remove the extra interface (ip link del) or " FIX_RESTART);
	}
	if (f->proxy_url[0] == '\0' || f->eth0_prefix != 30) {
		ar_autofree char *have = f->eth0_ip[0]
					     ? ar_xasprintf("%s/%d", f->eth0_ip, f->eth0_prefix)
					     : ar_xstrdup("none");
		ar_findings_add(out, "eth0 address", "the second address of a /30 of the range",
				have, FIX_RESTART);
	}
	for (size_t i = 0; f->routes && f->routes[i]; i++) {
		if (own_route(f, f->routes[i]))
			continue;
		ar_autofree char *what = ar_xasprintf("route %s", f->routes[i]);
		ar_findings_add(out, what, "absent", "present",
				"ip route del (only the /30 is routed; the proxy is the way out)");
	}
	if (!f->peer_read) {
		ar_findings_add(out, "proxy netns", "reached through the proxy's listener",
				"not found", "is the sandbox's proxy running? " FIX_RESTART);
		return;
	}
	if (!only(f->peer_links, "lo", AR_NET_PROXY_IF)) {
		ar_autofree char *have = joined(f->peer_links);
		ar_findings_add(out, "proxy netns interfaces", "lo,veth0", have,
				"remove the extra interface from the proxy netns or " FIX_RESTART);
	}
	ar_autostrv char **want = expected_sockets(p, f);
	if (!same_set(f->peer_sockets, want)) {
		ar_autofree char *have = joined(f->peer_sockets);
		ar_autofree char *w = joined(want);
		ar_findings_add(out, "proxy netns sockets", w, have,
				"close what else listens there; only the proxy's listeners belong");
	}
	check_capture(p, f, out);
}
