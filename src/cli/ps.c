/* agentrun ps [--all]: the caller's sandboxes (root's, or this user's: the state
 * directory is per user, ar_net_state_root): network: proxy ones from their state
 * (docs/network.md), with the proxy's allowed/denied counts
 * so far (read from the audit); the others from the record in their uid lease
 * (docs/sandbox.md). Name, PID, uptime, network. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentrun/audit.h"
#include "agentrun/cli.h"
#include "agentrun/net.h"
#include "agentrun/sandbox.h"
#include "agentrun/util.h"

/* One line of the listing, gathered first so the columns fit the longest value. */
struct ps_row {
	char name[AR_POLICY_NAME_MAX + 16];
	int pid;
	int64_t uptime_s;
	char up[32];
	char net[96];
	struct ar_net_state st;
	bool counted; /* a proxy to count: allowed and denied mean something */
	uint64_t allowed, denied;
	bool live;
};

struct ps_ctx {
	bool all, json;
	time_t now;
	struct ps_row *rows;
	size_t n;
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
	if (!live && !c->all)
		return 0;
	c->rows = ar_xrealloc(c->rows, (c->n + 1) * sizeof(*c->rows));
	struct ps_row *r = &c->rows[c->n++];
	*r = (struct ps_row){.pid = (int)s->pid, .st = *s, .live = live};
	snprintf(r->name, sizeof(r->name), "%s", s->name);
	r->uptime_s = (int64_t)c->now - s->started;
	uptime(r->uptime_s, r->up, sizeof(r->up));
	if (strcmp(s->network, "proxy") == 0)
		snprintf(r->net, sizeof(r->net), "%s via %s:%d", s->sandbox_ip, s->proxy_ip,
			 s->port);
	else
		snprintf(r->net, sizeof(r->net), "%s", s->network);
	r->counted = strcmp(s->network, "none") != 0; /* no proxy: nothing to count */
	if (r->counted)
		counts(s->audit, &r->allowed, &r->denied);
	return 0;
}

static int width(const struct ps_ctx *c, size_t off, int least)
{
	int w = least;
	for (size_t i = 0; i < c->n; i++) {
		int len = (int)strlen((const char *)&c->rows[i] + off);
		w = len > w ? len : w;
	}
	return w;
}

static void print_table(const struct ps_ctx *c)
{
	int wn = width(c, offsetof(struct ps_row, name), 4);
	int wnet = width(c, offsetof(struct ps_row, net), 7);
	printf("%-*s  %-8s %-8s %-*s  %7s %7s%s\n", wn, "NAME", "PID", "UPTIME", wnet, "NETWORK",
	       "ALLOWED", "DENIED", c->all ? "  STATE" : "");
	for (size_t i = 0; i < c->n; i++) {
		const struct ps_row *r = &c->rows[i];
		char a[24] = "-", d[24] = "-";
		if (r->counted) {
			snprintf(a, sizeof(a), "%" PRIu64, r->allowed);
			snprintf(d, sizeof(d), "%" PRIu64, r->denied);
		}
		printf("%-*s  %-8d %-8s %-*s  %7s %7s%s\n", wn, r->name, r->pid, r->up, wnet,
		       r->net, a, d,
		       !c->all	 ? ""
		       : r->live ? "  live"
				 : "  dead (agentrun gc)");
	}
}

static void print_json(const struct ps_ctx *c)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < c->n; i++) {
		const struct ps_row *r = &c->rows[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r->name);
		cJSON_AddNumberToObject(o, "pid", r->pid);
		cJSON_AddNumberToObject(o, "uptime_s", (double)r->uptime_s);
		cJSON_AddStringToObject(o, "network", r->st.network);
		if (strcmp(r->st.network, "proxy") == 0) {
			cJSON_AddStringToObject(o, "address", r->st.sandbox_ip);
			cJSON_AddStringToObject(o, "proxy", r->st.proxy_ip);
			cJSON_AddNumberToObject(o, "port", r->st.port);
		}
		if (r->counted) {
			cJSON_AddNumberToObject(o, "allowed", (double)r->allowed);
			cJSON_AddNumberToObject(o, "denied", (double)r->denied);
		}
		cJSON_AddStringToObject(o, "policy", r->st.policy);
		cJSON_AddBoolToObject(o, "live", r->live);
		cJSON_AddItemToArray(arr, o);
	}
	ar_autofree char *text = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	printf("%s\n", text);
}

/* A state file. A live network: none sandbox is listed from its record instead: its
 * state, when it has one, only keeps its cgroup for gc (docs/cgroups.md#cleanup). */
static int state_row(const struct ar_net_state *s, void *data)
{
	if (strcmp(s->network, "none") == 0 && ar_net_proc_alive(s->owner, s->owner_start))
		return 0;
	return row(s, data);
}

/* A sandbox without a proxy: its lease record (a proxy one is listed from its state). */
static int record_row(const struct ar_sandbox_record *r, void *data)
{
	struct ar_net_state s;
	return ar_cli_record_as_state(r, &s) ? row(&s, data) : 0;
}

static const struct ar_opt opts[] = {
    {"--all", 'a', NULL, "also what dead sandboxes left (removed by `agentrun gc`)", ar_opt_true,
     offsetof(struct ps_ctx, all)},
    {"--json", 0, NULL,
     "a JSON array: name, pid, uptime_s, network, address,\nproxy, port, allowed, denied, "
     "policy, live",
     ar_opt_true, offsetof(struct ps_ctx, json)},
    {NULL},
};

const struct ar_cli_cmd ar_cli_ps = {
    .name = "ps",
    .fn = ar_cmd_ps,
    .summary = "list the live sandboxes",
    .synopsis = "ps [--all] [--json]",
    .about = "List the live sandboxes: name (as `agentrun audit NAME` and `agentrun check\n"
	     "--name NAME` take it), PID of the sandbox's init, uptime, network (none, or the\n"
	     "sandbox's address and the proxy listener), and the proxy's allowed and denied\n"
	     "requests. The caller's own sandboxes only (root's, or yours: each user keeps\n"
	     "its state apart).",
    .opts = opts,
    .exit_status = "0 ok, 2 usage.",
    .usage_exit = AR_EXIT_USAGE,
};

int ar_cmd_ps(int argc, char **argv)
{
	struct ps_ctx c = {.now = time(NULL)};
	ar_autoopts struct ar_opt_result r = {0};
	int status;
	if (ar_cli_parse(&ar_cli_ps, argc, argv, &c, &r, &status) != 0)
		return status;
	ar_net_state_foreach(state_row, &c);
	ar_sandbox_record_foreach(record_row, &c);
	if (c.json)
		print_json(&c);
	else if (c.n == 0)
		printf("no sandboxes\n");
	else
		print_table(&c);
	free(c.rows);
	return AR_EXIT_OK;
}
