/* agentrun ps [--all]: the caller's sandboxes (root's, or this user's: the state
 * directory is per user, ar_net_state_root): network: proxy ones from their state
 * (docs/network.md), with the proxy's allowed/denied counts
 * so far (read from the audit); the others from the record in their uid lease
 * (docs/sandbox.md). Name, PID, uptime, network. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agentrun/audit.h"
#include "agentrun/cli.h"
#include "agentrun/net.h"
#include "agentrun/sandbox.h"
#include "agentrun/util.h"

struct ps_ctx {
	bool all;
	time_t now;
	int rows;
};

static void uptime(int64_t secs, char *buf, size_t size)
{
	if (secs < 0)
		secs = 0;
	if (secs < 3600)
		snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", secs / 60, secs % 60);
	else
		snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", secs / 3600, secs / 60 % 60);
}

static void counts(const char *audit, uint64_t *allowed, uint64_t *denied)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *data = NULL;
	struct ar_audit_summary s;
	size_t len = 0;

	*allowed = *denied = 0;
	if (audit[0] == '\0' || ar_read_file(audit, 1u << 30, &data, &len, &err) < 0)
		return;
	ar_audit_summarize(data, len, &s);
	*allowed = s.allowed;
	*denied = s.denied;
	ar_audit_summary_free(&s);
}

static int row(const struct ar_net_state *s, void *data)
{
	struct ps_ctx *c = data;
	bool live = ar_net_proc_alive(s->owner, s->owner_start);
	char up[32], net[64];
	uint64_t allowed, denied;

	if (!live && !c->all)
		return 0;
	if (c->rows++ == 0)
		printf("%-24s %-8s %-8s %-30s %7s %7s%s\n", "NAME", "PID", "UPTIME", "NETWORK",
		       "ALLOWED", "DENIED", c->all ? "  STATE" : "");
	uptime((int64_t)c->now - s->started, up, sizeof(up));
	if (strcmp(s->network, "proxy") == 0)
		snprintf(net, sizeof(net), "%s via %s:%d", s->sandbox_ip, s->proxy_ip, s->port);
	else
		snprintf(net, sizeof(net), "%s", s->network);
	counts(s->audit, &allowed, &denied);
	if (strcmp(s->network, "none") == 0) /* no proxy: nothing to count */
		printf("%-24s %-8d %-8s %-30s %7s %7s%s\n", s->name, (int)s->pid, up, net, "-", "-",
		       c->all ? "  live" : "");
	else
		printf("%-24s %-8d %-8s %-30s %7" PRIu64 " %7" PRIu64 "%s\n", s->name, (int)s->pid,
		       up, net, allowed, denied,
		       c->all ? (live ? "  live" : "  dead (agentrun gc)") : "");
	return 0;
}

/* A sandbox without a proxy: its lease record (a proxy one is listed from its state). */
static int record_row(const struct ar_sandbox_record *r, void *data)
{
	struct ar_net_state s = {
	    .owner = r->owner, .owner_start = r->owner_start, .pid = r->pid, .started = r->started};

	if (strcmp(r->network, "proxy") == 0)
		return 0;
	snprintf(s.name, sizeof(s.name), "%s", r->name);
	snprintf(s.network, sizeof(s.network), "%s", r->network);
	return row(&s, data);
}

int ar_cmd_ps(int argc, char **argv)
{
	struct ps_ctx c = {.now = time(NULL)};

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf(
			    "Usage: agentrun ps [--all]\n\n"
			    "List the live sandboxes: name (as `agentrun audit NAME` and `agentrun "
			    "check\n--name NAME` take it), PID of the sandbox's init, uptime, "
			    "network "
			    "(none, or the\nsandbox's address and the proxy listener), and the "
			    "proxy's allowed and denied\nrequests. The caller's own sandboxes "
			    "only (root's, or\nyours: each user keeps its state apart).\n\n"
			    "  --all   also what dead sandboxes left (removed by `agentrun gc`)\n");
			return AR_EXIT_OK;
		}
		if (strcmp(argv[i], "--all") != 0)
			return ar_cli_usage_error("ps", AR_EXIT_USAGE, "unknown option `%s`",
						  argv[i]);
		c.all = true;
	}
	ar_net_state_foreach(row, &c);
	ar_sandbox_record_foreach(record_row, &c);
	if (c.rows == 0)
		printf("no sandboxes\n");
	return AR_EXIT_OK;
}
