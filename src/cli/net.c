/* agentrun net up --policy P --name N | net down --name N: a persistent named network
 * namespace for runtimes that adopt a prepared one (gVisor's runsc copies the
 * interfaces and routes of the netns it starts in), bind-mounted at
 * AR_NETNS_DIR/N (the path `render --format oci --netns N` names) and wired to a
 * detached proxy for the policy, exactly as the OCI hook wires a container's netns
 * (src/net/detached.c): the same /30, AR_SPEC_PROXY_ADDR, that the rendered config's
 * proxy variables name. Its net state is netns-N: `ps` lists it, `gc` removes it
 * once its proxy is gone. See docs/oci.md. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/cli.h"
#include "agentrun/hook.h"
#include "agentrun/net.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

#define CMD	     "net"
#define AR_NETNS_DIR AR_NET_STATE_ROOT_SYSTEM "/netns" /* root only */
#define NAME_MAX_LEN 32				       /* netns-NAME fits the state's name */

struct args {
	bool up;
	const char *policy, *name;
};

static const struct ar_opt opts[] = {
    {"--policy", 'p', "FILE", "the policy (up)", ar_opt_str, offsetof(struct args, policy)},
    {"--name", 'n', "NAME", "letters, digits, `_.-`, at most 32", ar_opt_str,
     offsetof(struct args, name)},
    {NULL},
};

const struct ar_cli_cmd ar_cli_net = {
    .name = "net",
    .fn = ar_cmd_net,
    .summary = "a named netns wired to its proxy, for runsc (up, down)",
    .synopsis = "net up --policy FILE --name NAME\nnet down --name NAME",
    .about = "up: a network namespace bind-mounted at " AR_NETNS_DIR "/NAME,\n"
	     "wired to its own confined proxy for the policy (eth0 10.254.0.2/30, the proxy\n"
	     "at 10.254.0.1), for a runtime that adopts a prepared netns (runsc; render\n"
	     "--format oci --netns NAME names it). Prints the path. down: stops the proxy\n"
	     "and removes the namespace. `agentrun ps` lists them as netns-NAME.\n"
	     "See docs/oci.md.",
    .opts = opts,
    .operand = "the action: up or down",
    .exit_status = "0 ok, 1 the netns could not be built or removed (not root, netlink),\n"
		   "2 bad input or usage (a flag, the policy, no such netns).",
    .usage_exit = AR_EXIT_USAGE,
};

static int check_args(struct args *a, const char *stage)
{
	if (strcmp(stage, "up") != 0 && strcmp(stage, "down") != 0)
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE, "unknown action `%s` (up, down)",
					  stage);
	a->up = strcmp(stage, "up") == 0;
	if (a->name == NULL)
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE, "%s needs --name NAME", stage);
	if (strlen(a->name) > NAME_MAX_LEN || a->name[0] == '.' || !ar_hook_id_valid(a->name) ||
	    strchr(a->name, '+') != NULL)
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE,
					  "--name `%s`: letters, digits, `_.-`, at most %d, not "
					  "starting with a dot",
					  a->name, NAME_MAX_LEN);
	if (a->up && a->policy == NULL)
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE, "up needs --policy FILE");
	return 0;
}

static void state_name(const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "netns-%s", name);
}

static int up(const struct args *a, ar_error_t *err)
{
	char sname[AR_POLICY_NAME_MAX + 16];
	struct ar_net_plan plan;
	struct ar_net_state st;
	ar_autopolicy struct ar_policy *p = NULL;
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_NETNS_DIR, a->name);
	ar_autofree char *abs = NULL;

	if (ar_policy_load(a->policy, &p, err) < 0)
		return -AR_EXIT_USAGE;
	if (p->network != AR_NETWORK_PROXY)
		return ar_error_make(err, 0, "%s: network: none needs no prepared netns",
				     p->origin);
	if (geteuid() != 0)
		return ar_error_make(err, 0, "up needs root (a netns, a veth, a bind mount)");
	abs = ar_xstrdup(p->path);
	if ((mkdir(AR_NET_STATE_ROOT_SYSTEM, 0711) == -1 && errno != EEXIST) ||
	    (mkdir(AR_NETNS_DIR, 0755) == -1 && errno != EEXIST))
		return ar_error_make(err, errno, "create `%s`", AR_NETNS_DIR);
	if (access(path, F_OK) == 0)
		return ar_error_make(err, EEXIST, "`%s` exists (agentrun net down --name %s)", path,
				     a->name);
	/* a state owned by this process first: a `gc` meanwhile sees a live owner, not a
	 * netns without one (ar_net_wire_detached rewrites it, owned by the proxy) */
	state_name(a->name, sname, sizeof(sname));
	st = (struct ar_net_state){.owner = getpid(), .net_index = -1};
	snprintf(st.name, sizeof(st.name), "%s", sname);
	snprintf(st.network, sizeof(st.network), "proxy");
	st.owner_start = ar_net_proc_start(getpid());
	if (ar_net_state_write(&st, err) == -1)
		return -1;
	ar_autoclose int ns = ar_net_netns_create(path, err);
	if (ns == -1) {
		ar_net_state_remove(sname);
		return -1;
	}
	ar_hook_plan(p->proxy.port, &plan);
	struct ar_net_detached_opts o = {
	    .p = p, .name = sname, .policy_path = abs, .owner = 0, .pid = 0, .plan = &plan};
	if (ar_net_wire_detached(&o, ns, &st, err) == -1) {
		ar_net_netns_remove(path);
		return -1;
	}
	printf("%s\n", path);
	return 0;
}

static int down(const char *name, ar_error_t *err)
{
	char sname[AR_POLICY_NAME_MAX + 16];
	struct ar_net_state st;
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_NETNS_DIR, name);
	ar_auto_error ar_error_t none = NULL;

	state_name(name, sname, sizeof(sname));
	bool have_state = ar_net_state_read(sname, &st, &none) == 0;
	if (!have_state && access(path, F_OK) == -1) {
		ar_error_make(err, ENOENT, "no netns `%s` (%s)", name, path);
		return -AR_EXIT_USAGE; /* a name it never made: bad input */
	}
	if (have_state)
		ar_net_unwire(&st);
	ar_net_netns_remove(path);
	return 0;
}

int ar_netns_gc(void)
{
	DIR *d = opendir(AR_NETNS_DIR);
	struct dirent *e;
	int n = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char sname[AR_POLICY_NAME_MAX + 16];
		struct ar_net_state st;
		ar_auto_error ar_error_t none = NULL;
		if (e->d_name[0] == '.' || strlen(e->d_name) > NAME_MAX_LEN)
			continue;
		state_name(e->d_name, sname, sizeof(sname));
		if (ar_net_state_read(sname, &st, &none) == 0 &&
		    ar_net_proc_alive(st.owner, st.owner_start))
			continue;
		ar_error_release(&none);
		if (down(e->d_name, &none) == 0)
			n++;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

int ar_cmd_net(int argc, char **argv)
{
	struct args a = {0};
	ar_autoopts struct ar_opt_result res = {0};
	int r;
	if (ar_cli_parse(&ar_cli_net, argc, argv, &a, &res, &r) != 0)
		return r;
	if (check_args(&a, res.operands[0]) != 0)
		return AR_EXIT_USAGE;
	ar_auto_error ar_error_t err = NULL;
	r = a.up ? up(&a, &err) : down(a.name, &err);
	if (r < 0) {
		ar_error_wrap(&err, CMD);
		ar_error_print(&err);
		return r == -AR_EXIT_USAGE ? AR_EXIT_USAGE : 1;
	}
	return AR_EXIT_OK;
}
