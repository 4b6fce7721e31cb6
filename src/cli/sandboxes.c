/* A live sandbox by a name `agentrun ps` shows, for check --name and audit NAME:
 * from either place ps reads, the proxy state (network: proxy) or the uid lease
 * record (network: none), so every name ps prints is found. NAME-PID is that
 * sandbox; a policy name is its newest live one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agentrun/cli.h"
#include "agentrun/net.h"
#include "agentrun/sandbox.h"

struct find {
	const char *arg;
	struct ar_net_state *out;
	size_t n; /* live sandboxes of policy arg */
	bool exact;
};

static void consider(struct find *f, const struct ar_net_state *s)
{
	if (!ar_net_proc_alive(s->owner, s->owner_start) || s->pid <= 0 || f->exact)
		return;
	if (strcmp(s->name, f->arg) == 0) {
		*f->out = *s;
		f->exact = true;
	} else if (ar_net_state_of_policy(s->name, f->arg) &&
		   (f->n++ == 0 || s->started >= f->out->started)) {
		*f->out = *s;
	}
}

/* A live network: none sandbox is found from its record, as ps lists it: its state,
 * when it has one, only keeps its cgroup for gc (docs/cgroups.md#cleanup). */
static int from_state(const struct ar_net_state *s, void *data)
{
	if (strcmp(s->network, "none") != 0)
		consider(data, s);
	return 0;
}

bool ar_cli_record_as_state(const struct ar_sandbox_record *r, struct ar_net_state *s)
{
	*s = (struct ar_net_state){
	    .owner = r->owner, .owner_start = r->owner_start, .pid = r->pid, .started = r->started};
	if (strcmp(r->network, "proxy") == 0) /* its state says more */
		return false;
	snprintf(s->name, sizeof(s->name), "%s", r->name);
	snprintf(s->network, sizeof(s->network), "%s", r->network);
	snprintf(s->policy, sizeof(s->policy), "%s", r->policy);
	return true;
}

static int from_record(const struct ar_sandbox_record *r, void *data)
{
	struct ar_net_state s;
	if (ar_cli_record_as_state(r, &s))
		consider(data, &s);
	return 0;
}

size_t ar_cli_sandbox_find(const char *arg, struct ar_net_state *out, bool *exact)
{
	struct find f = {.arg = arg, .out = out};
	ar_net_state_foreach(from_state, &f);
	ar_sandbox_record_foreach(from_record, &f);
	*exact = f.exact;
	return f.exact ? 1 : f.n;
}
