/* Limits for a caller without root (docs/cgroups.md#without-root): only a cgroup v2
 * subtree delegated to it can hold them (what systemd's Delegate=yes gives
 * user@UID.service and `systemd-run --user --scope -p Delegate=yes` makes). Here: the
 * pure verdict on what this process's cgroup offers, the line that says what is not
 * enforced and how to get it, and the plan that reads the facts and uses what it can. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/util.h"
#include "internal.h"

_Static_assert(AR_CGROUP_MEMORY == 1u << CG_MEMORY && AR_CGROUP_PIDS == 1u << CG_PIDS &&
		   AR_CGROUP_CPU == 1u << CG_CPU,
	       "the public limit bits are the controllers' bits");

#define SYSTEMD_RUN "`systemd-run --user --scope -p Delegate=yes agentrun ...`"

/* The needed controllers that DIR's cgroup.controllers lists. */
static unsigned offered_v2(const struct ar_cgroup_facts *f)
{
	unsigned m = 0;

	for (int c = 0; f->dir && f->controllers && c < CG_NCTRL; c++)
		if ((f->needed & (1u << c)) && ar_cgroup_list_has(f->controllers, cg_ctrl_names[c]))
			m |= 1u << c;
	return m;
}

/* The needed controllers mounted as cgroup v1 hierarchies for this process. */
static unsigned offered_v1(const struct ar_cgroup_facts *f)
{
	unsigned m = 0;

	for (int c = 0; c < CG_NCTRL; c++) {
		ar_autofree char *path = NULL;
		ar_autofree char *dir = NULL;
		if ((f->needed & (1u << c)) &&
		    ar_cgroup_parse_proc(f->self, cg_ctrl_names[c], &path) == 0 &&
		    ar_cgroup_find_dir(f->mountinfo, cg_ctrl_names[c], path, &dir) == 0)
			m |= 1u << c;
	}
	return m;
}

/* Does DIR hold a process other than us (or can we not tell)? */
static bool crowded(const struct ar_cgroup_facts *f)
{
	ar_autofree pid_t *pids = NULL;
	size_t n = 0;

	if (f->procs == NULL || ar_cgroup_parse_pids(f->procs, &pids, &n) == -1)
		return true;
	for (size_t i = 0; i < n; i++)
		if (pids[i] != f->pid)
			return true;
	return false;
}

enum ar_cgroup_deleg ar_cgroup_delegation(const struct ar_cgroup_facts *f, unsigned *usable)
{
	unsigned v2 = offered_v2(f), v1 = offered_v1(f);

	*usable = 0;
	if (f->dir == NULL)
		return v1 ? AR_CGROUP_V1 : AR_CGROUP_NO_V2;
	/* a hybrid host: its unified hierarchy exists but holds none of them */
	if (v2 == 0 && v1 != 0)
		return AR_CGROUP_V1;
	if (!f->writable)
		return AR_CGROUP_NOT_WRITABLE;
	if (!f->is_root && crowded(f))
		return AR_CGROUP_CROWDED;
	*usable = v2;
	return v2 == f->needed ? AR_CGROUP_DELEGATED : AR_CGROUP_PARTIAL;
}

/* "memory", "memory and pids", "memory, pids and cpu" */
static void controller_list(unsigned mask, char *buf, size_t len)
{
	size_t off = 0;
	int left = __builtin_popcount(mask);

	buf[0] = '\0';
	for (int c = 0; c < CG_NCTRL; c++) {
		if (!(mask & (1u << c)))
			continue;
		left--;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", cg_ctrl_names[c],
					left > 1    ? ", "
					: left == 1 ? " and "
						    : "");
		if (off >= len)
			return;
	}
}

/* "memory 256m, pids 64, cpus 1": the limits of `mask` as the policy or flags set them. */
static void limit_list(const struct ar_limits *l, unsigned mask, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (mask & AR_CGROUP_MEMORY)
		off += (size_t)snprintf(buf + off, len - off, "memory %s",
					l->memory_str ? l->memory_str : "?");
	if ((mask & AR_CGROUP_PIDS) && off < len)
		off += (size_t)snprintf(buf + off, len - off, "%spids %" PRId64, off ? ", " : "",
					l->pids);
	if ((mask & AR_CGROUP_CPU) && off < len)
		snprintf(buf + off, len - off, "%scpus %s", off ? ", " : "",
			 l->cpus_str ? l->cpus_str : "?");
}

void ar_cgroup_gap_explain(const struct ar_cgroup_facts *f, enum ar_cgroup_deleg d, unsigned usable,
			   const struct ar_limits *l, struct ar_cgroup_gap *gap)
{
	char ctl[64];
	size_t n = sizeof(gap->why);
	char *w = gap->why;
	bool many = __builtin_popcount(f->needed & ~usable) > 1;

	gap->missing = f->needed & ~usable;
	limit_list(l, gap->missing, gap->limits, sizeof(gap->limits));
	controller_list(gap->missing, ctl, sizeof(ctl));
	switch (d) {
	case AR_CGROUP_DELEGATED:
		w[0] = '\0';
		break;
	case AR_CGROUP_PARTIAL:
		snprintf(w, n,
			 "the %s controller%s not delegated to `%s`; have systemd delegate %s "
			 "(`systemctl edit user@.service`: `Delegate=cpu memory pids` under "
			 "[Service]) and run " SYSTEMD_RUN,
			 ctl, many ? "s are" : " is", f->dir, many ? "them" : "it");
		break;
	case AR_CGROUP_V1:
		snprintf(w, n,
			 "this host has the %s controller%s on cgroup v1, which is never delegated "
			 "to a user; on cgroup v2 (boot with systemd.unified_cgroup_hierarchy=1) "
			 "run " SYSTEMD_RUN,
			 ctl, many ? "s" : "");
		break;
	case AR_CGROUP_NO_V2:
		snprintf(w, n,
			 "no cgroup v2 hierarchy is mounted for this process; on cgroup v2 run "
			 "" SYSTEMD_RUN);
		break;
	case AR_CGROUP_NOT_WRITABLE:
		snprintf(w, n,
			 "cgroup `%s` is not delegated to uid %u (not writable); run " SYSTEMD_RUN,
			 f->dir, (unsigned)f->uid);
		break;
	case AR_CGROUP_CROWDED:
		snprintf(w, n,
			 "cgroup `%s` holds other processes, so it cannot hand controllers to a "
			 "child (the no-internal-processes rule); run " SYSTEMD_RUN
			 " (a cgroup of its own)",
			 f->dir);
		break;
	}
}

/* DIR/FILE writable by us (the effective ids: what the kernel will check). */
static bool writable(const char *dir, const char *file, int mode)
{
	ar_autofree char *path = ar_xasprintf("%s%s%s", dir, *file ? "/" : "", file);
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS) == 0;
}

struct facts_buf {
	char *dir, *controllers, *procs;
};

static void facts_release(struct facts_buf *b)
{
	free(b->dir);
	free(b->controllers);
	free(b->procs);
}

static void read_facts(const struct cg_host *h, struct ar_cgroup_facts *f, struct facts_buf *b)
{
	*f = (struct ar_cgroup_facts){.self = h->self,
				      .mountinfo = h->mountinfo,
				      .pid = getpid(),
				      .uid = geteuid(),
				      .needed = h->needed};
	b->dir = cg_v2_own(h);
	if (b->dir == NULL)
		return;
	f->dir = b->dir;
	if (cg_read(b->dir, "cgroup.controllers", &b->controllers, NULL) == 0)
		f->controllers = b->controllers;
	if (cg_read(b->dir, "cgroup.procs", &b->procs, NULL) == 0)
		f->procs = b->procs;
	f->writable = writable(b->dir, "", W_OK | X_OK) && writable(b->dir, "cgroup.procs", W_OK) &&
		      writable(b->dir, "cgroup.subtree_control", W_OK);
	f->is_root = !cg_exists(b->dir, "cgroup.type");
}

int ar_cgroup_plan_delegated(const struct ar_limits *l, const char *name, struct ar_cgroup **out,
			     struct ar_cgroup_gap *gap, ar_error_t *err)
{
	__attribute__((cleanup(facts_release))) struct facts_buf b = {0};
	struct ar_cgroup_facts f;
	struct cg_host h = {0};
	unsigned usable;

	*out = NULL;
	memset(gap, 0, sizeof(*gap));
	if (cg_host_plan(l, name, &h, err) == -1)
		return -1;
	read_facts(&h, &f, &b);
	enum ar_cgroup_deleg d = ar_cgroup_delegation(&f, &usable);
	ar_cgroup_gap_explain(&f, d, usable, l, gap);
	if (d != AR_CGROUP_DELEGATED && usable == 0) {
		cg_host_release(&h);
		return 0; /* nothing of ours to limit with: no cgroup */
	}
	h.needed = usable;
	*out = cg_handle_new(name, &cg_v2_ops, &h);
	return 0;
}
